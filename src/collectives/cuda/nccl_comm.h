#pragma once
// A non-blocking NCCL communicator (ncclConfig_t blocking = 0) over the ranks of an MPI
// communicator, optionally created with NCCL's algorithm and/or protocol forced (NCCL_ALGO /
// NCCL_PROTO are read when a communicator is created, so each forced setting needs its own
// communicator). Every NCCL call on it is followed by wait(), which polls ncclCommGetAsyncError:
// errors become commsim::Error, and a communicator that stays busy longer than the timeout is
// aborted. Every live communicator is registered so a watchdog can abort them all.
#include <mpi.h>

#include <string>

struct ncclComm;

namespace commsim::cuda {

struct NcclSetting {
  std::string algo;   // value for NCCL_ALGO ("Ring", "Tree"); "" = NCCL's choice
  std::string proto;  // value for NCCL_PROTO ("LL", "LL128", "Simple"); "" = NCCL's choice
  bool forced() const { return !algo.empty() || !proto.empty(); }
  // "NCCL_ALGO=Ring NCCL_PROTO=LL", or "" when nothing is forced.
  std::string describe() const;
  bool operator<(const NcclSetting& o) const { return algo != o.algo ? algo < o.algo : proto < o.proto; }
};

class NcclComm {
 public:
  // Collective over `comm`: rank 0 makes the unique id, every rank joins on the current CUDA
  // device. Throws Error (naming host and rank) when NCCL refuses, e.g. two ranks on one GPU.
  NcclComm(MPI_Comm comm, const NcclSetting& setting, double timeout_s);
  ~NcclComm();  // ncclCommFinalize + ncclCommDestroy, or ncclCommAbort after an error
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm* get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const NcclSetting& setting() const { return setting_; }

  // After an NCCL call that returned `result` (ncclSuccess or ncclInProgress): waits until the
  // communicator is no longer in progress. Throws Error naming `what` on any NCCL error, or when
  // it stays in progress longer than the timeout (the communicator is then aborted).
  void wait(int result, const char* what);
  // Throws Error when the communicator has recorded an asynchronous error (e.g. a peer failed).
  void check_async(const char* what);
  // ncclCommAbort; safe to call from another thread; idempotent.
  void abort() noexcept;

 private:
  ncclComm* comm_ = nullptr;
  int rank_ = 0, size_ = 1;
  NcclSetting setting_;
  double timeout_s_ = 0;
  bool aborted_ = false;
};

// Aborts every live NcclComm of this process. For the watchdog: call it before MPI_Abort so that
// NCCL kernels and proxy threads stop instead of hanging the GPU. Never throws.
void abort_all_nccl_comms() noexcept;

// The NCCL library version this process runs with, "2.28.3".
std::string nccl_version();

}  // namespace commsim::cuda
