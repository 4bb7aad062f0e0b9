#pragma once
// The elementwise kernels of the CUDA backend, behind a plain host header: copy, reduce and a
// fill for benchmarks. Every launch is asynchronous on `stream` and checks the launch error.
//
// Pointers are device pointers (local memory or a peer's buffer mapped with CUDA IPC). Where
// dst and src share their address modulo 16 bytes the body moves 16-byte vectors; otherwise the
// kernel falls back to one element per thread (still correct, slower).
#include <cstdint>

#include "collectives/elements/dtype.h"

struct CUstream_st;

namespace commsim::cuda {

using Stream = CUstream_st*;  // the same type as cudaStream_t; nullptr = the legacy default stream

inline constexpr int kElementwiseThreads = 512;

// Blocks that fill every multiprocessor of the current device with kElementwiseThreads-thread
// blocks (multiprocessors x resident blocks per multiprocessor).
int fill_blocks();

// dst = src for `bytes` bytes. blocks <= 0: as many as the size can use, up to fill_blocks().
void launch_copy(void* dst, const void* src, std::uint64_t bytes, Stream stream, int blocks = 0);

// dst[i] = dst[i] op src[i] for i < count elements of dtype.
void launch_reduce(void* dst, const void* src, std::uint64_t count, DType dtype, RedOp op, Stream stream,
                   int blocks = 0);

// dst[i] = a small integer in [-8, 8) drawn from (seed, i) by a hash, as dtype: data for
// benchmarks that is neither zero nor trivially compressible, and exact in every dtype.
void launch_fill_random(void* dst, std::uint64_t count, DType dtype, std::uint32_t seed, Stream stream);

}  // namespace commsim::cuda
