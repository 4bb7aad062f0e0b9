#pragma once
// Where a point's iterations run: a Backend owns the buffers of one point on this rank and runs
// one iteration of a collective on them. `host` runs on host memory (hand-written schedules over
// MPI point-to-point, or the MPI library's collectives); a GPU backend keeps its buffers on the
// device and times with device events. The sweep (sweep.h) owns everything around a point: the
// barrier before each iteration, the max over ranks, the statistics, the check summed over ranks.
//
// Every call below is made by all ranks together, in the same order, with the same arguments
// (except where a rank is named), so a backend may communicate inside any of them.
//
// No MPI, CUDA or HDF5 in this header.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "collectives/elements/dtype.h"
#include "model/collective.h"
#include "model/placement.h"
#include "model/schedule.h"
#include "model/topology/topology.h"

namespace commsim {

// This rank's place in the job, as the sweep sees it.
struct BackendContext {
  int rank = 0;
  int nranks = 1;
  int local_rank = 0;                    // index among the ranks of this node (GPU binding)
  int local_ranks = 1;                   // ranks on this node
  const Placement* placement = nullptr;  // every rank's node; outlives the backend
  std::string transport = "mpi";         // what moves the bytes of hand-written schedules
  // Host executor: largest message in bytes (longer transfers are cut so reductions overlap
  // arrivals; commsim run's default is kHostPieceBytes); 0: not cut.
  std::uint64_t piece_bytes = kHostPieceBytes;
  // cuda: allow more ranks on a node than it has GPUs (they share GPUs round-robin); hand-written
  // kernels only, for testing (NCCL refuses two ranks on one GPU).
  bool share_gpu = false;
  // cuda: capture each point's iteration in a CUDA graph and replay it (small messages only).
  bool graph = false;
};

// One point as the backend runs it.
struct PointSetup {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;  // hand-written, or a library baseline (Mpi, Nccl, ...)
  std::uint64_t count = 0;                // elements, generators.h meaning
  DType dtype = DType::Float32;
  RedOp op = RedOp::Sum;
  int root = 0;
  // The schedule of a hand-written algorithm (all ranks' programs); nullptr for a baseline. Owned
  // by the caller and alive until release().
  const Schedule* schedule = nullptr;
  // Testing only: this rank flips one element of its Output after the check iteration, so the
  // wrong-result path can be exercised. -1: none.
  int inject_error_rank = -1;
  // Library baselines with a forced protocol (cuda: NCCL_PROTO); None = the library's choice.
  Protocol protocol = Protocol::None;
  // The output buffer is the input buffer (MPI_IN_PLACE; nccl-tests' in-place columns).
  bool in_place = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;       // Point::backend: "host", "cuda"
  virtual std::string_view transport() const = 0;  // Point::transport: "mpi", "ucx", "ipc", "nccl"

  // "" when this backend can run the point; otherwise a short reason (the point is reported as
  // skipped with it). Cheap and local: called for every point before anything runs.
  virtual std::string unsupported(const PointSetup& setup) const = 0;
  // Bytes this rank would allocate for the point (Input, Output, scratch, receive buffers), and
  // the bytes this rank may use (its share of the node's free host or device memory). The sweep
  // refuses a point, before anything runs, when the first exceeds the second.
  virtual std::uint64_t bytes_needed(const PointSetup& setup) const = 0;
  virtual std::uint64_t bytes_available() const = 0;

  // Allocates the point's buffers and fills this rank's Input with fill_input (reduce.h).
  virtual void prepare(const PointSetup& setup) = 0;
  // Runs one iteration and returns this rank's time for it, seconds: from the call to the moment
  // this rank's part is complete (host: MPI_Wtime around the work; GPU: device events around the
  // launch, synchronised before returning). The sweep puts a barrier before each call.
  virtual double run_once() = 0;
  // Runs `n` iterations launched back to back (with `blocking`, each finished before the next is
  // launched) and returns this rank's wall time from the first launch until all have finished,
  // seconds: nccl-tests' timed loop. The default calls run_once n times (right where run_once
  // returns when the work is done, as host MPI calls do).
  virtual double run_back_to_back(int n, bool blocking);
  // Clears this rank's Output, runs one iteration, and returns the number of wrong elements of
  // this rank's Output (count_wrong, reduce.h), after PointSetup::inject_error_rank's flip.
  virtual std::uint64_t check() = 0;
  // Frees the point's buffers.
  virtual void release() = 0;
  // A remark about the point last run, for Point::note (e.g. what NCCL forced or picked); read on
  // rank 0 after check()/the timed iterations and before release(). "" when there is none.
  virtual std::string note() const { return {}; }
  // What NCCL ran for the point last run, for Point::nccl_algo, nccl_proto and nccl_channels
  // (NCCL baselines: from NCCL's TUNING log); read on rank 0 like note(). Empty (channels 0) when
  // the backend ran no NCCL collective or NCCL logged no choice.
  struct NcclRan {
    std::string algorithm, protocol;
    int channels = 0;
  };
  virtual NcclRan nccl_ran() const { return {}; }
};

// The backends of this build: "host" (when built with MPI), "cuda" (when built with CUDA).
// Throws Error naming the backend and listing those built. Must be called by all ranks together
// after MPI is initialised.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendContext& ctx);
std::unique_ptr<Backend> make_host_backend(const BackendContext& ctx);
// The cuda backend (cuda_backend.cc): throws Error when no CUDA GPU is visible, or when a node has
// more ranks than GPUs without share_gpu.
std::unique_ptr<Backend> make_cuda_backend(const BackendContext& ctx);
// "host", "cuda", ... as built, comma separated (for messages).
std::string built_backends();

}  // namespace commsim
