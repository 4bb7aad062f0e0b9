// The elementwise kernels (kernels.h) against a host computation, for every dtype and reduction,
// at lengths that exercise the vector body, the scalar head and tail, and misaligned pairs.
// Without a GPU every test prints "SKIPPED (no GPU)" and is skipped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/cuda/kernels.h"
#include "collectives/elements/dtype.h"

namespace commsim::cuda {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_GPU()                     \
  do {                                    \
    if (!have_gpu()) {                    \
      std::printf("SKIPPED (no GPU)\n");  \
      GTEST_SKIP() << "SKIPPED (no GPU)"; \
    }                                     \
  } while (0)

// Host value <-> element bytes for each dtype (values are small integers, exact everywhere).
void store(DType t, void* p, std::size_t i, double v) {
  switch (t) {
    case DType::Float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::Float64: static_cast<double*>(p)[i] = v; break;
    case DType::Int32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
    case DType::BFloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
    case DType::Float16: static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
  }
}
double load(DType t, const void* p, std::size_t i) {
  switch (t) {
    case DType::Float32: return static_cast<const float*>(p)[i];
    case DType::Float64: return static_cast<const double*>(p)[i];
    case DType::Int32: return static_cast<const std::int32_t*>(p)[i];
    case DType::BFloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::Float16: return __half2float(static_cast<const __half*>(p)[i]);
  }
  return 0;
}
double apply(RedOp op, double a, double b) {
  switch (op) {
    case RedOp::Sum: return a + b;
    case RedOp::Min: return a < b ? a : b;
    case RedOp::Max: return a > b ? a : b;
  }
  return 0;
}

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~Device() { cudaFree(p); }
  char* c() const { return static_cast<char*>(p); }
};

constexpr DType kTypes[] = {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16, DType::Float16};
constexpr RedOp kOps[] = {RedOp::Sum, RedOp::Min, RedOp::Max};

TEST(CudaKernels, ReduceMatchesHostForEveryTypeOpLengthAndAlignment) {
  REQUIRE_GPU();
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> small(-50, 50);
  const std::size_t lengths[] = {1, 7, 8, 9, 1000, 4096 + 3, (1u << 20) + 5};
  const std::size_t offsets[][2] = {{0, 0}, {1, 1}, {3, 3}, {1, 2}, {0, 5}};
  for (DType t : kTypes) {
    const std::size_t es = dtype_size(t);
    for (RedOp op : kOps) {
      for (std::size_t n : lengths) {
        for (const auto& off : offsets) {
          const std::size_t guard = 16;  // elements after the range that must stay untouched
          const std::size_t total = n + 8 + guard;
          std::vector<unsigned char> a(total * es), b(total * es), out(total * es);
          for (std::size_t i = 0; i < total; ++i) {
            store(t, a.data(), i, small(rng));
            store(t, b.data(), i, small(rng));
          }
          Device da(total * es), db(total * es);
          ASSERT_EQ(cudaMemcpy(da.p, a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(db.p, b.data(), b.size(), cudaMemcpyHostToDevice), cudaSuccess);
          launch_reduce(da.c() + off[0] * es, db.c() + off[1] * es, n, t, op, nullptr);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(out.data(), da.p, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < total; ++i) {
            const bool inside = i >= off[0] && i < off[0] + n;
            const double want =
                inside ? apply(op, load(t, a.data(), i), load(t, b.data(), i - off[0] + off[1])) : load(t, a.data(), i);
            if (load(t, out.data(), i) != want) ++wrong;
          }
          EXPECT_EQ(wrong, 0u) << to_string(t) << " " << to_string(op) << " n=" << n << " dst+" << off[0] << " src+"
                               << off[1];
        }
      }
    }
  }
}

TEST(CudaKernels, CopyMovesExactlyTheRangeAtAnyAlignment) {
  REQUIRE_GPU();
  std::mt19937 rng(7);
  const std::size_t lengths[] = {1, 15, 16, 17, 100000, (8u << 20) + 3};
  const std::size_t offsets[][2] = {{0, 0}, {3, 3}, {8, 8}, {1, 2}, {4, 0}};
  for (std::size_t n : lengths) {
    for (const auto& off : offsets) {
      const std::size_t total = n + 64;
      std::vector<unsigned char> src(total), dst(total), out(total);
      for (auto& x : src) x = static_cast<unsigned char>(rng());
      for (auto& x : dst) x = static_cast<unsigned char>(rng());
      Device ds(total), dd(total);
      ASSERT_EQ(cudaMemcpy(ds.p, src.data(), total, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dd.p, dst.data(), total, cudaMemcpyHostToDevice), cudaSuccess);
      launch_copy(dd.c() + off[0], ds.c() + off[1], n, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(out.data(), dd.p, total, cudaMemcpyDeviceToHost), cudaSuccess);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < total; ++i) {
        const bool inside = i >= off[0] && i < off[0] + n;
        if (out[i] != (inside ? src[i - off[0] + off[1]] : dst[i])) ++wrong;
      }
      EXPECT_EQ(wrong, 0u) << "n=" << n << " dst+" << off[0] << " src+" << off[1];
    }
  }
}

TEST(CudaKernels, FillGivesSmallNonZeroVaryingIntegers) {
  REQUIRE_GPU();
  for (DType t : kTypes) {
    const std::size_t n = 100003, es = dtype_size(t);
    Device d(n * es);
    launch_fill_random(d.p, n, t, 42, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> h(n * es);
    ASSERT_EQ(cudaMemcpy(h.data(), d.p, h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::size_t zeros = 0, distinct_bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = load(t, h.data(), i);
      if (v == 0) ++zeros;
      if (v < -8 || v > 7 || v != static_cast<int>(v)) ++distinct_bad;
    }
    EXPECT_EQ(distinct_bad, 0u) << to_string(t);
    EXPECT_LT(zeros, n / 8) << to_string(t);  // about 1/16 are zero
  }
}

}  // namespace
}  // namespace commsim::cuda
