#pragma once
// Runs hand-written schedules (model/schedule.h) on GPUs, one rank per process, each on its
// current CUDA device.
//
// Inside a node (every rank of the communicator on one host) the transport is CUDA IPC: each
// rank's Input, Output, Scratch and flag words are mapped into every peer, and one cooperative
// kernel per rank runs the whole schedule: a receiver pulls the matching Send's data straight from
// the sender's buffer (combining for RecvReduce), and ranks synchronise through flags in device
// memory, never through the host. The kernel's blocks are the channels: each moves its own slice
// of every transfer, or, for a schedule of several channels, of every transfer of its group's
// channels (one group of blocks per schedule channel).
//
// Across nodes the transport is NCCL point-to-point: each round's transfers go as ncclSend /
// ncclRecv in one group, RecvReduce receives into a staging area and our reduce kernel combines it.
// Everything is enqueued on the caller's stream; the host waits for nothing per step.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/cuda/kernels.h"
#include "collectives/elements/dtype.h"
#include "model/schedule.h"

namespace commsim::cuda {

class IpcMap;
class NcclComm;

struct ExecutorOptions {
  int max_channels = 0;     // blocks per rank for the IPC kernel; 0 = one per multiprocessor
  double timeout_s = 60;    // a kernel waiting longer than this for a peer stops with an error
  bool force_nccl = false;  // carry transfers with NCCL even inside one node (needs NCCL)
};

class CudaExecutor {
 public:
  // Collective over `comm` (duplicated inside). Picks the transport: "ipc" when all ranks share a
  // host and force_nccl is off, "nccl" otherwise (Error when this build has no NCCL).
  explicit CudaExecutor(MPI_Comm comm, ExecutorOptions options = {});
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  const std::string& transport() const { return transport_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Collective: makes each of this rank's buffers at least this large (bytes), reallocating and
  // re-mapping where needed. Contents of reallocated buffers are lost.
  void reserve(std::uint64_t input_bytes, std::uint64_t output_bytes, std::uint64_t scratch_bytes);
  void* input() const { return buf_[0].ptr; }
  void* output() const { return buf_[1].ptr; }
  std::uint64_t input_bytes() const { return buf_[0].bytes; }
  std::uint64_t output_bytes() const { return buf_[1].bytes; }

  // Collective the first time (it may reserve): checks the schedule against this communicator,
  // matches every receive to its send, uploads this rank's program and returns its handle.
  // Schedules are cached by (collective, algorithm, nranks, root, elem_size, count, channels). A
  // schedule of several channels (Schedule::channels) gets one group of blocks per channel, each
  // moving its channel's receives (at least one block per channel, as the device allows).
  int prepare(const Schedule& schedule);

  // Enqueues one run of a prepared schedule on `stream`; all ranks must enqueue the same
  // schedules in the same order. No host synchronisation (the NCCL transport polls NCCL's
  // enqueue state only).
  void enqueue(int handle, DType dtype, RedOp op, Stream stream);

  // Channels (blocks) the IPC kernel of a prepared schedule uses.
  int channels(int handle) const;

  // After a CUDA error from a synchronisation: the reason a kernel of this executor left, or ""
  // (e.g. "rank 2 waited 60.0 s in round 3 for data from rank 1").
  std::string device_error() const;

  // Aborts the NCCL communicator of the nccl transport, if any (for the watchdog). Never throws.
  void abort() noexcept;

 private:
  struct Buffer {
    void* ptr = nullptr;
    std::uint64_t bytes = 0;
  };
  struct Program;

  void map_all();
  void release_buffers() noexcept;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, nranks_ = 1;
  ExecutorOptions options_;
  std::string transport_;
  int max_blocks_ = 1;
  Buffer buf_[3];
  Buffer staging_;
  std::uint64_t* flags_ = nullptr;
  void* error_record_ = nullptr;            // ErrorRecord in host-mapped memory
  char** d_peer_buf_ = nullptr;             // [nranks * 3] device array
  std::uint64_t** d_peer_flags_ = nullptr;  // [nranks] device array
  std::unique_ptr<IpcMap> ipc_;
  std::unique_ptr<NcclComm> nccl_;
  std::vector<std::unique_ptr<Program>> programs_;
  std::map<std::tuple<int, int, int, int, std::uint32_t, std::uint64_t, int>, int> program_index_;
};

}  // namespace commsim::cuda
