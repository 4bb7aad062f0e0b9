#include "runtime/probe/gpu.h"

#include <array>
#include <cstdio>
#include <memory>

#include "model/error.h"

#if defined(COMMSIM_HAVE_CUDA) && __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define COMMSIM_PROBE_CUDA 1
#endif

namespace commsim {

std::string nvidia_smi_topology() {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("nvidia-smi topo -m 2>/dev/null", "r"), pclose);
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  return out;
}

#ifdef COMMSIM_PROBE_CUDA
namespace {

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error(std::string("probe: ") + what + ": " + cudaGetErrorString(rc));
}

}  // namespace

GpuInventory probe_gpu_inventory() {
  GpuInventory inv;
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess || n == 0) {
    inv.note = rc == cudaSuccess ? "no CUDA device visible" : std::string("no usable CUDA device (") + cudaGetErrorString(rc) + ")";
    return inv;
  }
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
    inv.names.push_back(prop.name);
    char bus[32] = {};
    inv.bus_ids.push_back(cudaDeviceGetPCIBusId(bus, sizeof bus, d) == cudaSuccess ? bus : "");
  }
  return inv;
}

std::vector<double> time_gpu_copy(const std::string& kind, int device, Bytes bytes, int samples, int warmup) {
  int n = 0;
  cuda_check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  if (device >= n) throw Error("probe: no CUDA device " + std::to_string(device));
  if (kind == "peer" && device + 1 >= n) throw Error("probe: peer copies need two devices");
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  std::size_t len = bytes ? bytes : 1;
  void* src = nullptr;
  void* dst = nullptr;
  cudaMemcpyKind dir = cudaMemcpyDeviceToDevice;
  if (kind == "d2d") {
    cuda_check(cudaMalloc(&src, len), "cudaMalloc");
    cuda_check(cudaMalloc(&dst, len), "cudaMalloc");
  } else if (kind == "h2d") {
    cuda_check(cudaMallocHost(&src, len), "cudaMallocHost");
    cuda_check(cudaMalloc(&dst, len), "cudaMalloc");
    dir = cudaMemcpyHostToDevice;
  } else if (kind == "d2h") {
    cuda_check(cudaMalloc(&src, len), "cudaMalloc");
    cuda_check(cudaMallocHost(&dst, len), "cudaMallocHost");
    dir = cudaMemcpyDeviceToHost;
  } else if (kind == "peer") {
    cuda_check(cudaMalloc(&src, len), "cudaMalloc");
    cuda_check(cudaSetDevice(device + 1), "cudaSetDevice");
    cuda_check(cudaMalloc(&dst, len), "cudaMalloc");
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    int can = 0;
    cudaDeviceCanAccessPeer(&can, device, device + 1);
    if (can) {
      cudaError_t rc = cudaDeviceEnablePeerAccess(device + 1, 0);
      if (rc == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
    }
  } else {
    throw Error("probe: unknown GPU copy kind '" + kind + "' (d2d, h2d, d2h, peer)");
  }
  auto release = [&] {
    bool pinned_src = kind == "h2d", pinned_dst = kind == "d2h";
    if (pinned_src) cudaFreeHost(src); else cudaFree(src);
    if (pinned_dst) cudaFreeHost(dst); else cudaFree(dst);
  };
  std::vector<double> out;
  try {
    cudaEvent_t start, stop;
    cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    auto copy = [&] {
      if (kind == "peer")
        cuda_check(cudaMemcpyPeerAsync(dst, device + 1, src, device, bytes, nullptr), "cudaMemcpyPeerAsync");
      else
        cuda_check(cudaMemcpyAsync(dst, src, bytes, dir, nullptr), "cudaMemcpyAsync");
    };
    for (int i = 0; i < warmup; ++i) copy();
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    // Small copies are repeated inside one pair of events so the event resolution (~0.5 us) does
    // not dominate; the time is divided back per copy.
    int reps = bytes < (1u << 20) ? 20 : 1;
    for (int s = 0; s < samples; ++s) {
      cuda_check(cudaEventRecord(start, nullptr), "cudaEventRecord");
      for (int r = 0; r < reps; ++r) copy();
      cuda_check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      out.push_back(ms * 1e-3 / reps);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  } catch (...) {
    release();
    throw;
  }
  release();
  return out;
}

#else

GpuInventory probe_gpu_inventory() {
#ifdef COMMSIM_HAVE_CUDA
  return {{}, "this build cannot reach the CUDA runtime from the probe (no cuda_runtime.h on the include path)", {}};
#else
  return {{}, "this build has no CUDA support (rebuild with CUDA to probe GPUs)", {}};
#endif
}

std::vector<double> time_gpu_copy(const std::string&, int, Bytes, int, int) {
  throw Error("probe: this build has no CUDA support; GPU copies cannot be timed");
}

#endif

}  // namespace commsim
