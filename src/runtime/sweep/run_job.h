#pragma once
// The procedure of `commsim run`, apart from its options: place the ranks, start the backend, plan
// the sweep (every point predicted before anything runs), open the results file, run the points
// and hand each finished row to the reporters (the HDF5 file first, then the console), and close
// the file with the run's status. Collective over MPI_COMM_WORLD: every rank calls it with the
// same job.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/topology/topology.h"
#include "runtime/output/reporter.h"
#include "runtime/output/run_context.h"
#include "runtime/sweep/sweep.h"

namespace commsim {

// Exit statuses of `run` (its --help says them).
inline constexpr int kRunExitUsage = 2;   // bad options or a setup that does not fit: nothing ran
inline constexpr int kRunExitFailed = 1;  // wrong results or failed points: everything was written

// What `run` was asked for, its options parsed and checked (the same on every rank).
struct RunJob {
  std::string backend = "host";  // "host" or "cuda"
  std::string transport;         // "mpi", "ucx" (host); "ipc", "nccl" or "" for the backend's choice (cuda)
  SweepSettings settings;
  Topology topology;  // piece_bytes set to what the host executor cuts transfers into
  std::vector<std::pair<Collective, std::vector<Algorithm>>> pairs;
  std::vector<std::string> skipped_pairs;  // the pairs 'all' left out, in words
  std::vector<Bytes> sizes;
  std::uint64_t piece_bytes = kHostPieceBytes;  // the host executor's largest message; 0: not cut
  bool share_gpu = false;
  bool graph = false;
  double timeout_s = 300;  // the watchdog's limit per point; 0: none
  OutputFormat format = OutputFormat::Table;
  std::string out;      // the results file ("" for none) ...
  bool resume = false;  // ... continued (--resume) rather than created
  bool force = false;
  bool quiet = false;  // no progress on stderr (--quiet)
};

// Runs `step` on every rank and agrees on its outcome: when it threw anywhere, the lowest failing
// rank prints its message ("commsim <command>: error: ...", one message, not one per rank) and
// every rank gets false. A step must not call MPI collectives after a point where it may throw.
bool agree(int rank, std::string_view command, const std::function<void()>& step);

// The job on every rank; `local` is this rank's part of the run's context (RunContext::collect_local:
// the command line, versions, Slurm, environment), which the job completes. Returns the exit status: 0 when every point
// ran and was right; kRunExitFailed when a point was wrong or failed; kRunExitUsage when the setup did not fit (nothing
// ran); 128+N when stopped by signal N.
int run_job(const RunJob& job, RunContext local, int rank, int nranks);

}  // namespace commsim
