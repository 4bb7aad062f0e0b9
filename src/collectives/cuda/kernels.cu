// The elementwise kernels behind kernels.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/device_ops.cuh"
#include "collectives/cuda/kernels.h"
#include "model/error.h"

namespace commsim::cuda {
namespace {

// Computes dst[i] = dst[i] op src[i], i < n. Requires: dst and src device pointers aligned to
// sizeof(T), ranges not overlapping. Each block takes one contiguous slice (block_pass).
template <typename T, typename Op>
__global__ void __launch_bounds__(kElementwiseThreads) reduce_kernel(T* dst, const T* src, std::uint64_t n) {
  dev::block_pass<T, Op, true>(dst, src, n, blockIdx.x, gridDim.x);
}

// Computes dst[i] = src[i], i < n, for an element type chosen only for its width. Requires the
// same as reduce_kernel.
template <typename T>
__global__ void __launch_bounds__(kElementwiseThreads) copy_kernel(T* dst, const T* src, std::uint64_t n) {
  dev::block_pass<T, dev::Sum<T>, false>(dst, src, n, blockIdx.x, gridDim.x);
}

// Computes p[i] = (hash(seed, i) mod 16) - 8 converted to T, i < n: small integers, so sums of
// them stay exact in every dtype. Requires p aligned to sizeof(T).
template <typename T>
__global__ void __launch_bounds__(kElementwiseThreads) fill_kernel(T* p, std::uint64_t n, std::uint32_t seed) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(seed) << 32 | seed);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const int v = static_cast<int>(h & 15) - 8;
    if constexpr (std::is_same_v<T, int>)
      p[i] = v;
    else
      p[i] = static_cast<T>(static_cast<float>(v));
  }
}

// Blocks worth launching for n elements of T: one thread handles kUnroll vectors per pass.
template <typename T>
int blocks_for(std::uint64_t n, int requested) {
  const std::uint64_t per_block = static_cast<std::uint64_t>(kElementwiseThreads) * dev::kUnroll * (16 / sizeof(T));
  const std::uint64_t useful = std::max<std::uint64_t>(1, (n + per_block - 1) / per_block);
  const int limit = requested > 0 ? requested : fill_blocks();
  return static_cast<int>(std::min<std::uint64_t>(useful, static_cast<std::uint64_t>(limit)));
}

template <typename T, typename Op>
void reduce_as(void* dst, const void* src, std::uint64_t n, Stream stream, int blocks) {
  reduce_kernel<T, Op><<<blocks_for<T>(n, blocks), kElementwiseThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                                     static_cast<const T*>(src), n);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void reduce_typed(void* dst, const void* src, std::uint64_t n, RedOp op, Stream stream, int blocks) {
  switch (op) {
    case RedOp::Sum: return reduce_as<T, dev::Sum<T>>(dst, src, n, stream, blocks);
    case RedOp::Min: return reduce_as<T, dev::Min<T>>(dst, src, n, stream, blocks);
    case RedOp::Max: return reduce_as<T, dev::Max<T>>(dst, src, n, stream, blocks);
  }
}

template <typename T>
void copy_as(void* dst, const void* src, std::uint64_t bytes, Stream stream, int blocks) {
  const std::uint64_t n = bytes / sizeof(T);
  copy_kernel<T><<<blocks_for<T>(n, blocks), kElementwiseThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                               static_cast<const T*>(src), n);
  CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void fill_as(void* dst, std::uint64_t n, std::uint32_t seed, Stream stream) {
  fill_kernel<T><<<fill_blocks(), kElementwiseThreads, 0, stream>>>(static_cast<T*>(dst), n, seed);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int fill_blocks() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int sms = 0, per_sm = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_kernel<float, dev::Sum<float>>,
                                                           kElementwiseThreads, 0));
  return std::max(1, sms * std::max(1, per_sm));
}

void launch_copy(void* dst, const void* src, std::uint64_t bytes, Stream stream, int blocks) {
  if (bytes == 0) return;
  // The widest element that divides the size and both addresses keeps the scalar path rare.
  const auto bits = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src) | bytes;
  if (bits % 8 == 0) return copy_as<unsigned long long>(dst, src, bytes, stream, blocks);
  if (bits % 4 == 0) return copy_as<unsigned int>(dst, src, bytes, stream, blocks);
  if (bits % 2 == 0) return copy_as<unsigned short>(dst, src, bytes, stream, blocks);
  copy_as<unsigned char>(dst, src, bytes, stream, blocks);
}

void launch_reduce(void* dst, const void* src, std::uint64_t count, DType dtype, RedOp op, Stream stream, int blocks) {
  if (count == 0) return;
  switch (dtype) {
    case DType::Float32: return reduce_typed<float>(dst, src, count, op, stream, blocks);
    case DType::Float64: return reduce_typed<double>(dst, src, count, op, stream, blocks);
    case DType::Int32: return reduce_typed<int>(dst, src, count, op, stream, blocks);
    case DType::BFloat16: return reduce_typed<__nv_bfloat16>(dst, src, count, op, stream, blocks);
    case DType::Float16: return reduce_typed<__half>(dst, src, count, op, stream, blocks);
  }
  throw Error("launch_reduce: unknown dtype");
}

void launch_fill_random(void* dst, std::uint64_t count, DType dtype, std::uint32_t seed, Stream stream) {
  if (count == 0) return;
  switch (dtype) {
    case DType::Float32: return fill_as<float>(dst, count, seed, stream);
    case DType::Float64: return fill_as<double>(dst, count, seed, stream);
    case DType::Int32: return fill_as<int>(dst, count, seed, stream);
    case DType::BFloat16: return fill_as<__nv_bfloat16>(dst, count, seed, stream);
    case DType::Float16: return fill_as<__half>(dst, count, seed, stream);
  }
  throw Error("launch_fill_random: unknown dtype");
}

}  // namespace commsim::cuda
