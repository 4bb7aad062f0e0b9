#pragma once
// The schedule as the executor kernel reads it: one rank's rounds flattened into plain structs in
// device memory, with every transfer already matched to its partner (host side: cuda_executor.cc,
// device side: cuda_executor.cu). Plain C++: no CUDA types.
#include <cstdint>

#include "collectives/elements/dtype.h"

struct CUstream_st;

namespace commsim::cuda::detail {

enum OpCode : std::uint8_t { kCopy, kReduce, kSend, kRecv, kRecvReduce };

struct DevOp {
  std::uint64_t src_off = 0;  // bytes. Copy/Reduce/Send: into this rank's src buffer;
                              // Recv/RecvReduce: into the *sender's* src buffer (the matched Send)
  std::uint64_t dst_off = 0;  // bytes into this rank's dst buffer
  std::uint64_t count = 0;    // elements
  std::uint64_t seq = 0;      // Send: 1-based number among this schedule's sends to `peer`;
                              // Recv*: among this schedule's receives from `peer`
  std::int32_t peer = -1;     // rank index in the executor's communicator
  std::uint8_t code = kCopy;
  std::uint8_t src_buf = 0;  // BufferId: Input 0, Output 1, Scratch 2 (of the sender for Recv*)
  std::uint8_t dst_buf = 0;
  std::uint8_t channel = 0;  // the schedule's channel (Op::channel): served by block group channel % groups
};

// Ops of a round are stored local ops first, then sends, then receives.
struct DevRound {
  std::uint32_t first = 0;
  std::uint32_t n_local = 0;
  std::uint32_t n_send = 0;
  std::uint32_t n_recv = 0;
};

// Flag words of one rank (device memory, mapped by every peer), each an array of nranks words:
//   ready[a]  written by rank a: how many sends a -> this rank a has posted, ever
//   ack[b]    added to by rank b's blocks: (receives b completed from this rank, ever) x blocks
//   sent[b]   this rank's own count of sends to b before the current launch
//   recvd[a]  this rank's own count of receives from a before the current launch
//   acked[b]  this rank's own count of the ack words b had added before the current launch (the
//             number of blocks may change from one launch to the next, so it is not sent[b] x blocks)
inline constexpr int kFlagArrays = 5;
enum FlagArray { kReady = 0, kAck = 1, kSent = 2, kRecvd = 3, kAcked = 4 };

// Why a kernel stopped, in host-mapped memory so it can be read after the context died.
struct ErrorRecord {
  std::int32_t code = 0;  // 0 none, 1 timed out waiting for a peer's data, 2 for a peer's acknowledgement
  std::int32_t round = -1;
  std::int32_t peer = -1;
  std::int32_t pad = 0;
  std::uint64_t waited_ns = 0;
};

inline constexpr int kBuffers = 3;

struct ExecParams {
  const DevRound* rounds = nullptr;
  const DevOp* ops = nullptr;
  const std::uint64_t* send_total = nullptr;  // [nranks] sends to each peer in this schedule
  const std::uint64_t* recv_total = nullptr;  // [nranks] receives from each peer
  std::uint32_t nrounds = 0;
  std::int32_t nranks = 1;
  std::int32_t me = 0;
  char* buf[kBuffers] = {nullptr, nullptr, nullptr};  // this rank's Input, Output, Scratch
  char* const* peer_buf = nullptr;                    // [nranks * kBuffers], mapped with IPC
  std::uint64_t* flags = nullptr;                     // this rank's flags
  std::uint64_t* const* peer_flags = nullptr;         // [nranks], mapped with IPC
  std::uint64_t timeout_ns = 0;
  ErrorRecord* error = nullptr;
  // Block groups: block b is member b / groups of group b % groups, and group g moves the receives
  // of the schedule's channels c with c % groups == g, split over its members; 1: every block moves
  // a slice of every receive.
  std::int32_t groups = 1;
};

inline constexpr int kExecutorThreads = 512;

// Most blocks the executor kernel may use so that all are resident at once (cooperative launch):
// one per multiprocessor of the current device.
int executor_max_blocks();

// Launches the executor kernel for (dtype, op) with `blocks` blocks as a cooperative launch.
void launch_executor(const ExecParams& params, DType dtype, RedOp op, int blocks, CUstream_st* stream);

}  // namespace commsim::cuda::detail
