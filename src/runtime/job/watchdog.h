#pragma once
// Faults around a sweep: a point that hangs (a peer that never arrives) and the signals a batch
// system sends at its time limit.
//
// Watchdog: a thread on every rank, armed from the first point to the last write. Each rank tells rank 0, outside the
// timed iterations, when it begins and ends a point (small messages on a private communicator). When rank 0's current
// point has run longer than the timeout, rank 0's watchdog thread reads those reports, prints
//   point <collective> <algorithm> <size> timed out after N s; ranks that did not arrive: ...
// calls the timeout handler (which closes the results file as far as it can) and MPI_Aborts the
// job. The other ranks abort by themselves if rank 0 has not after twice the timeout (rank 0
// stopped, or its node lost). Needs MPI_THREAD_MULTIPLE: the reports are read while the main thread
// may be blocked inside MPI.
//
// Stop signals: SIGTERM and SIGINT (Slurm sends SIGTERM at the time limit, then SIGKILL after
// KillWait) only set a flag; the sweep checks it before every iteration, all ranks agree, and the
// run ends cleanly with the finished points written.
#include <functional>
#include <memory>
#include <string>

namespace commsim {

// Blocks SIGTERM and SIGINT in the calling thread; threads it starts afterwards inherit the block.
// Call first thing on the main thread, before MPI and the other libraries start their threads, so
// that the signals reach the main thread only and interrupt the call it is blocked in (such as a
// write into a pipe that mpirun stopped reading when it was signalled). Until
// install_stop_handlers() a signal stays pending.
void block_stop_signals();
// Installs the SIGTERM/SIGINT handlers and unblocks the signals in the calling thread (idempotent).
void install_stop_handlers();
// The signal received, 0 when none.
int stop_signal();

// Adds a function the watchdog thread calls just before it aborts the job (on every rank that
// aborts), e.g. to abort NCCL communicators so GPU kernels stop instead of hanging. Hooks run on
// the watchdog thread while the main thread may be blocked: they must be thread-safe and must not
// throw. They stay registered for the life of the process.
void add_abort_hook(std::function<void()> hook);
// Runs the hooks added so far (abort_job and the watchdog call it just before MPI_Abort).
void run_abort_hooks() noexcept;

class Watchdog {
 public:
  // Called on rank 0's watchdog thread just before the job is aborted; the main thread is stuck
  // inside the point, so the handler may use what the main thread only touches between points.
  using TimeoutHandler = std::function<void(const std::string& message)>;

  // Collective over MPI_COMM_WORLD (duplicates it). timeout_s <= 0: no thread, no reports.
  Watchdog(double timeout_s, TimeoutHandler on_timeout);
  // Stops the thread. Frees MPI resources only after finish().
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Every rank, in the same order: a point with this index (unique, increasing) and label starts
  // or has ended on this rank.
  void begin_point(int index, const std::string& label);
  void end_point(int index);
  // This rank alone, between points: a step only it takes (rank 0 writing a point, closing the
  // file) starts or has ended. Taking longer than the timeout ends the job naming this rank, its
  // host and `label` ("writing point allreduce ring 1MiB to r.h5"). No reports are sent.
  void begin_local(const std::string& label);
  void end_local();
  // Rank 0: reads the reports that have arrived (call between points to keep the queue short).
  void drain();
  // Collective, on the normal path at the end: completes the reports and frees the communicator.
  void finish();

  double timeout_s() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace commsim
