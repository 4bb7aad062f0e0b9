#pragma once
// MPI for the length of a command that runs under mpirun/srun (run, probe), and the job-wide
// helpers built on it. Commands start their session after parsing their options, so `--help` and
// bad options never start MPI. Every MPI call goes through COMMSIM_MPI_CHECK (mpi_check.h); on an
// error `main` prints the message and calls abort_job_on_error(), so a failing rank does not leave
// the others waiting. Without MPI support the session is one rank and the helpers work on it alone.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace commsim {

// True when this binary was built with MPI.
bool have_mpi();
// True when MPI_Init has run and MPI_Finalize has not.
bool mpi_active();
// On an error in a command running under MPI with more than one rank: MPI_Abort so the job does
// not hang waiting for this rank. Does nothing otherwise.
void abort_job_on_error();
// The one way a rank-local failure ends a command: prints "commsim <command>: error: <cause>" on
// stderr, naming this rank and its host when the job has more than one rank, runs the abort hooks
// (watchdog.h) and MPI_Aborts the job with `exit_code` so no rank waits for this one. Returns
// (after printing) only when there is no job of several ranks to end.
void abort_job(std::string_view command, const std::string& cause, int exit_code = 1);
// Every rank's `mine`, in rank order, on every rank (collective over MPI_COMM_WORLD; {mine} without
// MPI or before MPI_Init).
std::vector<std::string> gather_strings(const std::string& mine);

// The thread support a command asks MPI for: Multiple where a second thread calls MPI (run's
// watchdog), Single otherwise (the cheapest locking inside MPI, for measurements).
enum class MpiThreads { Single, Multiple };

class MpiSession {
 public:
  // Starts MPI unless it is running already (then this session joins it and leaves MPI_Finalize to
  // whoever started it), sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so that errors come back to
  // COMMSIM_MPI_CHECK, and gathers every rank's host name (collective).
  explicit MpiSession(MpiThreads threads);
  // MPI_Finalize when this session started MPI; not while an exception unwinds in a job of more
  // than one rank (main then calls abort_job_on_error(), which MPI_Aborts the job).
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank's host name, in rank order.
  const std::vector<std::string>& hostnames() const { return hostnames_; }

  // Collective: every rank's error message ("" for none); on every rank, the lowest failing rank's
  // as "rank R (host): message", or "" when no rank failed.
  std::string first_error(const std::string& mine) const;
  // Collective: runs `step` on every rank and agrees on its outcome, as first_error() of what it
  // threw (std::exception). A step must not call MPI collectives after a point where it may throw.
  std::string agree(const std::function<void()>& step) const;

  // The MPI library's version line, e.g. "Open MPI v4.1.4"; "" without MPI.
  static std::string library_version();

 private:
  bool started_ = false;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hostnames_;
};

}  // namespace commsim
