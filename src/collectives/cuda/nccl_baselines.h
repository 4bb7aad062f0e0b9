#pragma once
// NCCL's own collectives, measured beside the hand-written schedules: all seven collectives, with
// NCCL's own choice or with its algorithm and/or protocol forced. Each forced setting gets its own
// communicator (NCCL reads NCCL_ALGO / NCCL_PROTO when a communicator is created), created on
// first use and cached.
//
// What NCCL ran (its own pick, or what a forced setting gave) comes from NCCL's own TUNING log:
// unless the user set NCCL_DEBUG, the constructor turns on NCCL_DEBUG=INFO
// NCCL_DEBUG_SUBSYS=TUNING into a private file (NCCL_DEBUG_FILE; in $COMMSIM_NCCL_LOG_DIR and
// kept when that is set, else in $TMPDIR and removed) and picked() parses the lines written since
// mark() (collectives/libraries/nccl_tuning_log.h). NCCL writes them on rank 0 only and not for one rank or
// point-to-point operations; closest_forced() is the fallback that matches an unforced time
// against the forced runs.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/cuda/kernels.h"
#include "collectives/cuda/nccl_comm.h"
#include "collectives/elements/dtype.h"
#include "collectives/libraries/nccl_tuning_log.h"
#include "model/collective.h"

namespace commsim::cuda {

struct NcclRequest {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Nccl;  // Nccl, or one of kNcclForcedAlgorithms (NCCL_ALGO)
  Protocol protocol = Protocol::None;     // None = NCCL's choice
  DType dtype = DType::Float32;
  RedOp op = RedOp::Sum;
  std::uint64_t count = 0;  // elements, nccl-tests meaning (generators.h)
  int root = 0;
};

class NcclBaselines {
 public:
  // Collective over `comm`. Construct it before any other NCCL communicator of the process so the
  // TUNING log can still be switched on.
  NcclBaselines(MPI_Comm comm, double timeout_s);
  ~NcclBaselines();
  NcclBaselines(const NcclBaselines&) = delete;
  NcclBaselines& operator=(const NcclBaselines&) = delete;

  // The environment a request forces (empty for NCCL's own choice). Throws Error for an algorithm
  // that is not an NCCL baseline.
  static NcclSetting setting_for(const NcclRequest& request);
  // Enqueues the collective on `stream` (the first use of a setting creates its communicator:
  // collective over the MPI communicator). input/output: device buffers of at least
  // buffer_counts() elements (collectives/generators.h). Throws Error when NCCL refuses the request.
  void enqueue(const NcclRequest& request, const void* input, void* output, Stream stream);

  // Starts the window picked() looks at.
  void mark();
  // What NCCL ran for `c` in the window, from its TUNING lines; empty when the log has no line for
  // it (not rank 0, one rank, point-to-point, NCCL_DEBUG set by the user). Lines NCCL wrote as
  // warnings are echoed to stderr.
  NcclChoice picked(Collective c);
  // The path of the TUNING log this object reads ("" when NCCL_DEBUG was set by the user).
  const std::string& log_path() const { return log_path_; }

  // Aborts every communicator of this object (watchdog). Never throws.
  void abort() noexcept;

 private:
  NcclComm& comm_for(const NcclSetting& setting);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, nranks_ = 1;
  double timeout_s_ = 60;
  std::map<NcclSetting, std::unique_ptr<NcclComm>> comms_;
  std::string log_path_;  // "" when the TUNING log is not ours
  bool keep_log_ = false;  // COMMSIM_NCCL_LOG_DIR: the log stays for the user
  long log_offset_ = 0;
};

// Fallback for the picked setting: the forced run whose median time is nearest the unforced one.
// forced: (description, median seconds). Returns e.g. "nearest forced run: Ring/LL (3% slower)",
// "" when forced is empty.
std::string closest_forced(double unforced_s, const std::vector<std::pair<std::string, double>>& forced);

}  // namespace commsim::cuda
