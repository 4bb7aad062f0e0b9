#pragma once
// Device-side building blocks shared by the elementwise kernels (kernels.cu) and the schedule
// executor (cuda_executor.cu): reduction operators per element type, 16-byte vector passes over
// a slice of a range, and the system-scope flag accesses used between ranks.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace commsim::cuda::dev {

template <typename T>
struct Sum {
  __device__ __forceinline__ static T apply(T a, T b) { return a + b; }
};
template <typename T>
struct Min {
  __device__ __forceinline__ static T apply(T a, T b) { return b < a ? b : a; }
};
template <typename T>
struct Max {
  __device__ __forceinline__ static T apply(T a, T b) { return a < b ? b : a; }
};

// Applies Op to each of the 16 / sizeof(T) elements packed in two 16-byte vectors.
template <typename T, typename Op>
__device__ __forceinline__ uint4 vec_apply(uint4 a, const uint4& b) {
  constexpr int kN = 16 / sizeof(T);
  T* pa = reinterpret_cast<T*>(&a);
  const T* pb = reinterpret_cast<const T*>(&b);
#pragma unroll
  for (int i = 0; i < kN; ++i) pa[i] = Op::apply(pa[i], pb[i]);
  return a;
}

// Independent 16-byte loads each thread keeps in flight before its first store.
inline constexpr unsigned kUnroll = 4;

// One block's share of an elementwise pass over n elements: the calling block is part `part` of
// `nparts` blocks that together cover [0, n) (all threads of the block must call it with the same
// arguments).   kReduce: dst[i] = dst[i] op src[i];  otherwise dst[i] = src[i].
// Requires dst and src aligned to sizeof(T) and the two ranges not overlapping. When dst and src
// agree modulo 16 bytes, the aligned body moves 16-byte vectors and the few elements before and
// after it go one per thread; otherwise every element goes one per thread. The parts interleave
// (grid-stride): at any moment all threads work on one compact window of memory, which keeps HBM
// pages and channels evenly busy. Loads bypass L1 (ld.global.cg) because src may be a peer's
// buffer that changed since this kernel last read it.
template <typename T, typename Op, bool kReduce>
__device__ __forceinline__ void block_pass(T* dst, const T* src, std::uint64_t n, std::uint32_t part,
                                           std::uint32_t nparts) {
  constexpr std::uint64_t kV = 16 / sizeof(T);
  const auto da = reinterpret_cast<std::uintptr_t>(dst);
  const auto sa = reinterpret_cast<std::uintptr_t>(src);
  std::uint64_t head = 0, nvec = 0;
  if (((da ^ sa) & 15) == 0) {
    head = ((16 - (da & 15)) & 15) / sizeof(T);
    if (head > n) head = n;
    nvec = (n - head) / kV;
  }
  const std::uint64_t first = static_cast<std::uint64_t>(part) * blockDim.x + threadIdx.x;
  const std::uint64_t stride = static_cast<std::uint64_t>(nparts) * blockDim.x;
  if (nvec > 0) {
    const uint4* s = reinterpret_cast<const uint4*>(src + head);
    uint4* d = reinterpret_cast<uint4*>(dst + head);
    std::uint64_t i = first;
    // Full rounds of kUnroll vectors per thread, no bounds checks inside.
    for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
      uint4 b[kUnroll], a[kUnroll];
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) {
        b[u] = __ldcg(s + i + u * stride);
        if constexpr (kReduce) a[u] = __ldcg(d + i + u * stride);
      }
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) {
        if constexpr (kReduce)
          d[i + u * stride] = vec_apply<T, Op>(a[u], b[u]);
        else
          d[i + u * stride] = b[u];
      }
    }
    for (; i < nvec; i += stride) {
      const uint4 b = __ldcg(s + i);
      if constexpr (kReduce)
        d[i] = vec_apply<T, Op>(__ldcg(d + i), b);
      else
        d[i] = b;
    }
  }
  // The elements outside the vector body: [0, head) and [tail, n), numbered 0..nscalar-1.
  const std::uint64_t tail = head + nvec * kV;
  const std::uint64_t nscalar = head + (n - tail);
  for (std::uint64_t k = first; k < nscalar; k += stride) {
    const std::uint64_t e = k < head ? k : tail + (k - head);
    const T v = __ldcg(src + e);
    if constexpr (kReduce)
      dst[e] = Op::apply(dst[e], v);
    else
      dst[e] = v;
  }
}

// Flags between ranks live in device memory that peers map with CUDA IPC; these accesses are
// ordered at system scope so they also hold between GPUs.
__device__ __forceinline__ std::uint64_t load_acquire_sys(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_sys(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void add_release_sys(std::uint64_t* p, std::uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace commsim::cuda::dev
