// Bandwidth of the reduce kernel against a device-to-device copy of the same size, in one run on
// one GPU. Bandwidth counts bytes read plus bytes written: a copy of n bytes moves 2n, a reduce
// dst = dst op src of n bytes moves 3n. Data: small random integers (never zeros). Times: CUDA
// events around each launch after warm-up; the median of the repetitions.
//
//   bench_reduce_copy [--bytes N] [--reps R] [--csv FILE]
//
// Prints one line per variant and, last, the reduce/copy ratio against the 85% goal.
// Without a GPU it prints "SKIPPED (no GPU)" and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/kernels.h"

using namespace commsim;
using namespace commsim::cuda;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds of `reps` timed launches after 3 warm-ups.
double time_median(const std::function<void()>& launch, int reps) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    CUDA_CHECK(cudaEventRecord(a));
    launch();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  return median(t);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t bytes = 1ull << 30;
  int reps = 20;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bytes" && i + 1 < argc)
      bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--csv" && i + 1 < argc)
      csv = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_reduce_copy [--bytes N] [--reps R] [--csv FILE]\n");
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIPPED (no GPU)\n");
    return 0;
  }
  try {
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs, L2 %d MiB; buffers of %llu MiB (> L2), %d reps, median\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, static_cast<unsigned long long>(bytes >> 20), reps);
    void *x = nullptr, *y = nullptr;
    CUDA_CHECK(cudaMalloc(&x, bytes));
    CUDA_CHECK(cudaMalloc(&y, bytes));

    struct Row {
      std::string name;
      double seconds;
      double moved_bytes;
    };
    std::vector<Row> rows;
    // The copy baselines.
    launch_fill_random(x, bytes / 4, DType::Float32, 1, nullptr);
    launch_fill_random(y, bytes / 4, DType::Float32, 2, nullptr);
    rows.push_back({"cudaMemcpy D2D",
                    time_median([&] { CUDA_CHECK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice)); }, reps),
                    2.0 * bytes});
    rows.push_back({"copy kernel", time_median([&] { launch_copy(y, x, bytes, nullptr); }, reps), 2.0 * bytes});
    // The reductions, y = y op x. Sums of small integers grow by at most 8 per launch: over the
    // warm-up and repetitions they stay exact and far from overflow in every type but float16/
    // bfloat16, whose values then stop being exact (the bytes moved are the same).
    const DType types[] = {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64, DType::Int32};
    for (DType t : types) {
      const std::uint64_t n = bytes / dtype_size(t);
      launch_fill_random(x, n, t, 3, nullptr);
      launch_fill_random(y, n, t, 4, nullptr);
      rows.push_back({"reduce sum " + std::string(to_string(t)),
                      time_median([&] { launch_reduce(y, x, n, t, RedOp::Sum, nullptr); }, reps), 3.0 * bytes});
    }
    // Grid size sensitivity of the float32 reduction (the default is fill_blocks()).
    {
      const std::uint64_t n = bytes / 4;
      launch_fill_random(x, n, DType::Float32, 5, nullptr);
      launch_fill_random(y, n, DType::Float32, 6, nullptr);
      for (int factor : {1, 2, 4}) {
        const int blocks = fill_blocks() * factor / 2;
        rows.push_back({"reduce f32 " + std::to_string(blocks) + " blocks",
                        time_median([&] { launch_reduce(y, x, n, DType::Float32, RedOp::Sum, nullptr, blocks); }, reps),
                        3.0 * bytes});
      }
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    const double copy_bw = std::max(rows[0].moved_bytes / rows[0].seconds, rows[1].moved_bytes / rows[1].seconds);
    std::FILE* f = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
    if (f) std::fprintf(f, "variant,bytes,median_us,GBps_read_plus_written,ratio_to_best_copy\n");
    std::printf("%-22s %12s %14s %8s\n", "variant", "median us", "GB/s (r+w)", "vs copy");
    double worst_reduce = 1e30;
    for (const Row& r : rows) {
      const double bw = r.moved_bytes / r.seconds;
      std::printf("%-22s %12.1f %14.1f %7.1f%%\n", r.name.c_str(), r.seconds * 1e6, bw * 1e-9, 100.0 * bw / copy_bw);
      if (f)
        std::fprintf(f, "%s,%llu,%.3f,%.2f,%.4f\n", r.name.c_str(), static_cast<unsigned long long>(bytes),
                     r.seconds * 1e6, bw * 1e-9, bw / copy_bw);
      if (r.name.rfind("reduce sum", 0) == 0) worst_reduce = std::min(worst_reduce, bw / copy_bw);
    }
    if (f) std::fclose(f);
    std::printf("reduce/copy bandwidth, worst dtype: %.1f%% (goal >= 85%%): %s\n", 100.0 * worst_reduce,
                worst_reduce >= 0.85 ? "MET" : "NOT MET");
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_reduce_copy: %s\n", e.what());
    return 1;
  }
  return 0;
}
