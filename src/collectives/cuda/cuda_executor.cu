// The executor kernel: one rank's schedule, run inside one kernel, talking to its peers through
// flags in device memory (see executor_program.h for the layout).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/device_ops.cuh"
#include "collectives/cuda/executor_program.h"
#include "model/error.h"

namespace cg = cooperative_groups;

namespace commsim::cuda::detail {
namespace {

// Receives a block watches at once in one round; larger rounds are taken in windows of this size.
constexpr unsigned kRecvWindow = 256;
static_assert(kRecvWindow <= kExecutorThreads, "one thread marks each receive of a window");

__device__ __forceinline__ void fail(const ExecParams& p, int code, int round, int peer, std::uint64_t waited) {
  p.error->waited_ns = waited;
  p.error->round = round;
  p.error->peer = peer;
  p.error->code = code;
  __threadfence_system();
  __trap();
}

// This rank's buffer b without indexing the parameter array at run time (which would copy the
// parameters to local memory).
__device__ __forceinline__ char* own_buffer(const ExecParams& p, unsigned b) {
  return b == 0 ? p.buf[0] : (b == 1 ? p.buf[1] : p.buf[2]);
}

// Runs rank p.me's rounds in order. Per round:
//   1. local Copy/Reduce ops, each split over all blocks; a grid barrier when there were any;
//   2. block 0 publishes each Send (ready flag in the receiver's memory = cumulative send count);
//   3. every block of the receive's group (p.groups: one group per channel of a multi-channel
//      schedule, one group of all blocks otherwise) pulls its slice of the Receive from the
//      sender's buffer once the sender's ready flag shows the matching send (receives of one round
//      are served in whatever order their data becomes ready, so no receive order can deadlock),
//      combining for RecvReduce, then acknowledges it: the group's blocks add gridDim.x to the
//      sender's ack word together (its first block the share of the blocks outside the group), so
//      every receive counts gridDim.x whatever its group's size;
//   4. block 0 waits until every block of each receiver has acknowledged this rank's sends (the
//      send buffers may be reused), then a grid barrier ends the round.
// At the end, block 0 adds this launch's transfers to the counts the next launch starts from.
// Requires: a cooperative launch with the same number of blocks on every rank; every rank of the
// schedule running the matching kernel; peer_buf/peer_flags mapped; T-aligned offsets.
// A wait longer than p.timeout_ns writes p.error and traps.
template <typename T, typename Op>
__global__ void __launch_bounds__(kExecutorThreads) execute_kernel(const ExecParams p) {
  cg::grid_group grid = cg::this_grid();
  const int nranks = p.nranks;
  std::uint64_t* ready = p.flags + kReady * nranks;
  std::uint64_t* ack = p.flags + kAck * nranks;
  const std::uint64_t* sent = p.flags + kSent * nranks;
  const std::uint64_t* recvd = p.flags + kRecvd * nranks;
  const std::uint64_t* acked = p.flags + kAcked * nranks;
  __shared__ unsigned char done[kRecvWindow];
  __shared__ int go;
  // This block's group and its place in it (ExecParams::groups).
  const unsigned groups = static_cast<unsigned>(p.groups);
  const unsigned group = blockIdx.x % groups, member = blockIdx.x / groups;
  const unsigned members = (gridDim.x - group + groups - 1) / groups;
  const std::uint64_t ack_share = member == 0 ? gridDim.x - members + 1 : 1;

  for (std::uint32_t r = 0; r < p.nrounds; ++r) {
    const DevRound rd = p.rounds[r];
    const DevOp* ops = p.ops + rd.first;
    for (std::uint32_t i = 0; i < rd.n_local; ++i) {
      const DevOp op = ops[i];
      T* dst = reinterpret_cast<T*>(own_buffer(p, op.dst_buf) + op.dst_off);
      const T* src = reinterpret_cast<const T*>(own_buffer(p, op.src_buf) + op.src_off);
      if (op.code == kCopy)
        dev::block_pass<T, Op, false>(dst, src, op.count, blockIdx.x, gridDim.x);
      else
        dev::block_pass<T, Op, true>(dst, src, op.count, blockIdx.x, gridDim.x);
    }
    if (rd.n_local > 0) grid.sync();
    if (rd.n_send + rd.n_recv == 0) continue;

    const DevOp* sends = ops + rd.n_local;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      __threadfence_system();
      for (std::uint32_t i = 0; i < rd.n_send; ++i) {
        const DevOp& op = sends[i];
        dev::store_release_sys(p.peer_flags[op.peer] + kReady * nranks + p.me, sent[op.peer] + op.seq);
      }
    }

    const DevOp* recvs = sends + rd.n_send;
    for (std::uint32_t w = 0; w < rd.n_recv; w += kRecvWindow) {
      const std::uint32_t nw = min(kRecvWindow, rd.n_recv - w);
      // The window's receives of this block's group are left to do; the others are another's.
      const bool mine = threadIdx.x < nw && recvs[w + threadIdx.x].channel % groups == group;
      if (threadIdx.x < nw) done[threadIdx.x] = mine ? 0 : 1;
      std::uint32_t left = static_cast<std::uint32_t>(__syncthreads_count(mine));
      std::uint64_t since = 0;
      while (left > 0) {
        const std::uint32_t before = left;
        for (std::uint32_t j = 0; j < nw; ++j) {
          if (done[j]) continue;
          const DevOp op = recvs[w + j];
          if (threadIdx.x == 0) go = dev::load_acquire_sys(ready + op.peer) >= recvd[op.peer] + op.seq;
          __syncthreads();
          const bool ok = go;
          __syncthreads();
          if (!ok) continue;
          T* dst = reinterpret_cast<T*>(own_buffer(p, op.dst_buf) + op.dst_off);
          const T* src = reinterpret_cast<const T*>(p.peer_buf[op.peer * kBuffers + op.src_buf] + op.src_off);
          if (op.code == kRecv)
            dev::block_pass<T, Op, false>(dst, src, op.count, member, members);
          else
            dev::block_pass<T, Op, true>(dst, src, op.count, member, members);
          __syncthreads();
          if (threadIdx.x == 0) {
            done[j] = 1;
            __threadfence_system();
            dev::add_release_sys(p.peer_flags[op.peer] + kAck * nranks + p.me, ack_share);
          }
          __syncthreads();
          --left;
        }
        if (left == before && threadIdx.x == 0) {
          const std::uint64_t now = dev::global_timer_ns();
          if (since == 0) since = now;
          if (now - since > p.timeout_ns) {
            int peer = -1;
            for (std::uint32_t j = 0; j < nw && peer < 0; ++j)
              if (!done[j]) peer = recvs[w + j].peer;
            fail(p, 1, static_cast<int>(r), peer, now - since);
          }
        } else {
          since = 0;
        }
      }
    }

    if (blockIdx.x == 0 && threadIdx.x == 0) {
      for (std::uint32_t i = 0; i < rd.n_send; ++i) {
        const DevOp& op = sends[i];
        const std::uint64_t want = acked[op.peer] + op.seq * gridDim.x;
        std::uint64_t since = 0;
        while (dev::load_acquire_sys(ack + op.peer) < want) {
          const std::uint64_t now = dev::global_timer_ns();
          if (since == 0) since = now;
          if (now - since > p.timeout_ns) fail(p, 2, static_cast<int>(r), op.peer, now - since);
        }
      }
    }
    grid.sync();
  }

  // This launch's transfers become the base of the next launch's sequence numbers.
  if (blockIdx.x == 0) {
    std::uint64_t* sent_w = p.flags + kSent * nranks;
    std::uint64_t* recvd_w = p.flags + kRecvd * nranks;
    std::uint64_t* acked_w = p.flags + kAcked * nranks;
    for (int q = threadIdx.x; q < nranks; q += blockDim.x) {
      sent_w[q] += p.send_total[q];
      recvd_w[q] += p.recv_total[q];
      acked_w[q] += p.send_total[q] * gridDim.x;
    }
  }
}

template <typename T, typename Op>
void launch_as(const ExecParams& params, int blocks, cudaStream_t stream) {
  void* args[] = {const_cast<ExecParams*>(&params)};
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&execute_kernel<T, Op>), dim3(blocks),
                                         dim3(kExecutorThreads), args, 0, stream));
}

template <typename T>
void launch_typed(const ExecParams& params, RedOp op, int blocks, cudaStream_t stream) {
  switch (op) {
    case RedOp::Sum: return launch_as<T, dev::Sum<T>>(params, blocks, stream);
    case RedOp::Min: return launch_as<T, dev::Min<T>>(params, blocks, stream);
    case RedOp::Max: return launch_as<T, dev::Max<T>>(params, blocks, stream);
  }
}

}  // namespace

int executor_max_blocks() {
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, execute_kernel<double, dev::Sum<double>>,
                                                           kExecutorThreads, 0));
  if (per_sm < 1) throw Error("the executor kernel cannot be resident on " + where() + " (too many registers?)");
  return sms;
}

void launch_executor(const ExecParams& params, DType dtype, RedOp op, int blocks, CUstream_st* stream) {
  switch (dtype) {
    case DType::Float32: return launch_typed<float>(params, op, blocks, stream);
    case DType::Float64: return launch_typed<double>(params, op, blocks, stream);
    case DType::Int32: return launch_typed<int>(params, op, blocks, stream);
    case DType::BFloat16: return launch_typed<__nv_bfloat16>(params, op, blocks, stream);
    case DType::Float16: return launch_typed<__half>(params, op, blocks, stream);
  }
  throw Error("launch_executor: unknown dtype");
}

}  // namespace commsim::cuda::detail
