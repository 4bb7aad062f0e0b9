#include "runtime/sweep/run_job.h"

#ifdef COMMSIM_HAVE_MPI
#include <fcntl.h>
#include <mpi.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include "collectives/host/mpi_check.h"
#include "model/error.h"
#include "model/placement.h"
#include "runtime/h5/results_file.h"
#include "runtime/job/cpu_binding.h"
#include "runtime/job/mpi_session.h"
#include "runtime/job/watchdog.h"
#include "runtime/output/caveats.h"
#include "runtime/output/progress.h"
#include "runtime/sweep/backend.h"

namespace commsim {

bool agree(int rank, std::string_view command, const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const std::exception& e) {
    error = e.what();
  }
  int mine = error.empty() ? INT_MAX : rank, first = INT_MAX;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
  if (first == INT_MAX) return true;
  if (rank == first) {
    std::fprintf(stderr, "commsim %.*s: error: %s\n", static_cast<int>(command.size()), command.data(), error.c_str());
    std::fflush(stderr);
  }
  return false;
}

namespace {

bool agree_run(int rank, const std::function<void()>& step) {
  return agree(rank, "run", step);
}

std::vector<std::string> gather_hostnames() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  COMMSIM_MPI_CHECK(MPI_Get_processor_name(name, &len));
  return gather_strings(std::string(name, static_cast<std::size_t>(std::max(len, 0))));
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  COMMSIM_MPI_CHECK(MPI_Get_library_version(text, &len));
  std::string v(text, static_cast<std::size_t>(len));
  if (auto nl = v.find_first_of("\n,"); nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

// The ranks must fit the topology they are predicted on.
void check_placement(const Placement& pl, const std::vector<std::string>& hosts, const Topology& topo) {
  for (int node = 0; node < pl.nnodes; ++node) {
    if (pl.node_size[static_cast<std::size_t>(node)] <= topo.ranks_per_node) continue;
    std::string host;
    for (int r = 0; r < pl.nranks; ++r)
      if (pl.node_of_rank[static_cast<std::size_t>(r)] == node) host = hosts[static_cast<std::size_t>(r)];
    throw Error(std::to_string(pl.node_size[static_cast<std::size_t>(node)]) + " ranks run on host " + host +
                ", but topology '" + topo.name + "' has " + std::to_string(topo.ranks_per_node) +
                " ranks per node; start at most " + std::to_string(topo.ranks_per_node) +
                " ranks per node (e.g. mpirun --map-by ppr:" + std::to_string(topo.ranks_per_node) +
                ":node) or use a topology that describes this machine");
  }
  if (topo.max_nodes > 0 && pl.nnodes > topo.max_nodes)
    throw Error("the ranks run on " + std::to_string(pl.nnodes) + " nodes, but topology '" + topo.name +
                "' has at most " + std::to_string(topo.max_nodes));
}

// Points fd at /dev/null when nobody reads it any more (a write would block), so that the last
// messages and the flush at exit cannot hang the process after the results file is closed.
void detach_if_blocked(int fd) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 200) == 1 && (p.revents & POLLOUT)) return;
  const int null_fd = open("/dev/null", O_WRONLY);
  if (null_fd < 0) return;
  dup2(null_fd, fd);
  close(null_fd);
}

// Where the ranks run, the backend started on them, and the points planned (the same on every rank).
struct Setup {
  std::vector<std::string> hosts;
  Placement placement;
  std::unique_ptr<Backend> backend;
  SweepSettings settings;
  std::vector<PlannedPoint> plan;
};

// Collective; false (the error printed once) when the job does not fit the ranks, the backend cannot
// start, or a point needs more memory than a rank has.
bool set_up(const RunJob& job, int rank, int nranks, Setup& s) {
  s.hosts = gather_hostnames();
  s.placement = Placement::from_hostnames(s.hosts);
  if (!agree_run(rank, [&] { check_placement(s.placement, s.hosts, job.topology); })) return false;
  BackendContext bctx;
  bctx.rank = rank;
  bctx.nranks = nranks;
  bctx.local_rank = s.placement.local_rank[static_cast<std::size_t>(rank)];
  bctx.local_ranks =
      s.placement.node_size[static_cast<std::size_t>(s.placement.node_of_rank[static_cast<std::size_t>(rank)])];
  bctx.placement = &s.placement;
  bctx.transport = job.transport;
  bctx.piece_bytes = job.piece_bytes;
  bctx.share_gpu = job.share_gpu;
  bctx.graph = job.graph;
  if (!agree_run(rank, [&] { s.backend = make_backend(job.backend, bctx); })) return false;
  s.settings = job.settings;
  s.settings.mpi_library = {mpi_library_version(), selected_environment()};
  if (!agree_run(rank,
                 [&] { s.plan = plan_sweep(job.pairs, job.sizes, s.settings, job.topology, s.placement, *s.backend); }))
    return false;
  std::string error;
  try {
    check_memory(s.plan, *s.backend);  // collective; throws the same on every rank
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (error.empty()) return true;
  if (rank == 0) std::fprintf(stderr, "commsim run: error: %s\n", error.c_str());
  return false;
}

// The run's context: this rank's, completed with the job's hosts, binding, backend and topology.
// What a resumed run must share with the file it continues (check_resumable compares it).
std::string measure_settings_text(const SweepSettings& st) {
  // What the rows measure, beyond their own columns: the element types and reductions of the sweep.
  // Iterations and warm-up are not part of it: each row records its own `iters`, and a preempted
  // sweep may be finished with fewer of them.
  std::string text = "dtypes";
  for (std::size_t i = 0; i < st.dtypes.size(); ++i) text += (i ? "," : " ") + std::string(to_string(st.dtypes[i]));
  text += ", ops";
  for (std::size_t i = 0; i < st.ops.size(); ++i) text += (i ? "," : " ") + std::string(to_string(st.ops[i]));
  return text;
}

RunContext run_context(const RunJob& job, const Setup& s, RunContext ctx, int nranks, std::string& oversubscribed) {
  ctx.hostnames = s.hosts;
  const BindingSummary binding = gather_binding(s.hosts, ctx.cpus);
  ctx.cpu_binding = binding.text;
  oversubscribed = binding.oversubscribed;
  ctx.ranks = nranks;
  ctx.nodes = s.placement.nnodes;
  ctx.backend = std::string(s.backend->name());
  ctx.transport = std::string(s.backend->transport());
  ctx.mpi_version = s.settings.mpi_library.version;
  ctx.topology_name = job.topology.name;
  ctx.topology_path = job.topology.source_path;
  ctx.topology_text = job.topology.text;
  if (job.backend == "host") ctx.piece_bytes = job.topology.piece();
  ctx.measure_settings = measure_settings_text(job.settings);
  return ctx;
}

}  // namespace

int run_job(const RunJob& job, RunContext local, int rank, int nranks) {
  Setup s;
  if (!set_up(job, rank, nranks, s)) return kRunExitUsage;
  std::string oversubscribed;
  const RunContext ctx = run_context(job, s, std::move(local), nranks, oversubscribed);

  // Rank 0 writes the results file: created, or continued with the points already there skipped.
  std::optional<ResultsFile> file;
  std::vector<char> already(s.plan.size(), 0);
  if (!agree_run(rank, [&] {
        if (rank != 0 || job.out.empty()) return;
        file.emplace(job.resume ? ResultsFile::resume(job.out, ctx) : ResultsFile::create(job.out, job.force, ctx));
        for (std::size_t i = 0; i < s.plan.size(); ++i) already[i] = file->contains(key_of(s.plan[i].row)) ? 1 : 0;
      }))
    return kRunExitUsage;
  COMMSIM_MPI_CHECK(MPI_Bcast(already.data(), static_cast<int>(already.size()), MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<PlannedPoint> todo;
  for (std::size_t i = 0; i < s.plan.size(); ++i)
    if (!already[i]) todo.push_back(std::move(s.plan[i]));

  // Rank 0 reports. Rows go to the results file first, then to the console; once a stop signal has
  // arrived nothing more is printed, because mpirun stops reading the ranks' output when it is
  // signalled, and a write into the full pipe would block rank 0 before it closes the file.
  std::unique_ptr<Reporter> to_file, console;
  std::mutex report_mu;  // the watchdog's timeout handler writes from its own thread
  const Point* current = nullptr;
  ProgressReporter progress(stderr, isatty(STDERR_FILENO) != 0, rank == 0 && !job.quiet);
  if (rank == 0) {
    if (file) to_file = std::make_unique<Hdf5Reporter>(*file);
    console = make_console_reporter(job.format, std::cout, TableReporter::Columns::Measured);
    console->context(ctx);
    for (const std::string& p : job.skipped_pairs) std::fprintf(stderr, "commsim run: skipped: %s\n", p.c_str());
    if (!oversubscribed.empty()) std::fprintf(stderr, "commsim run: note: %s\n", oversubscribed.c_str());
    if (!job.topology.calibrated.present)
      std::fprintf(stderr, "commsim run: note: %s\n", uncalibrated_note(job.topology.name).c_str());
    if (job.resume)
      std::fprintf(stderr, "commsim run: resuming %s: %zu of %zu points already there, %zu to go\n", job.out.c_str(),
                   s.plan.size() - todo.size(), s.plan.size(), todo.size());
    std::fflush(stderr);
  }

  std::optional<Watchdog> watchdog;
  auto on_timeout = [&](const std::string& message) {
    // Rank 0's watchdog thread, the main thread stuck in the point: record it and close the file.
    std::lock_guard lock(report_mu);
    if (!file) return;
    if (current) {
      Point row = *current;
      row.status = "timeout";
      row.note = message;
      to_file->point(row);
    }
    file->finish(RunStatus::Failed);
    std::fprintf(stderr, "commsim run: %s holds every point finished before the timeout\n", file->path().c_str());
  };
  if (!agree_run(rank, [&] { watchdog.emplace(job.timeout_s, on_timeout); })) return kRunExitUsage;
  install_stop_handlers();  // after the last thread started: only this one takes the signals

  SweepCallbacks callbacks;
  callbacks.progress = [&](const Point& p, int ordinal, int total, int pass, int passes) {
    std::lock_guard lock(report_mu);
    current = &p;
    if (!stop_signal()) progress.point_started(point_label(p), ordinal, total, pass, passes);
  };
  std::vector<Point> finished;  // rank 0: every point of this run, for the noise verdict at its end
  callbacks.point_done = [&](const Point& p) {
    std::lock_guard lock(report_mu);
    current = nullptr;
    if (to_file) {
      // A write that hangs (a stuck file system) is this rank's alone: the watchdog ends the job.
      watchdog->begin_local("writing point " + point_label(p) + " to " + file->partial_path());
      to_file->point(p);
      watchdog->end_local();
    }
    finished.push_back(p);
    finished.back().samples_us.clear();
    if (stop_signal()) return;
    progress.clear();
    console->point(p);
  };
  progress.start();
  const SweepOutcome outcome = run_sweep(todo, s.settings, *s.backend, *watchdog, callbacks);
  s.backend.reset();
  // Rank 0 closes the file under the watchdog: it covers the run from the first point to the last write.
  auto finish_file = [&](RunStatus status) {
    watchdog->begin_local("closing " + file->partial_path());
    file->finish(status);
    watchdog->end_local();
  };

  int exit_code = 0;
  if (outcome.stop_signal != 0) {
    const int sig = stop_signal() != 0 ? stop_signal() : SIGTERM;
    exit_code = 128 + sig;
    if (rank == 0) {
      if (file) finish_file(RunStatus::Interrupted);  // before any output that might block
      // A launcher that stopped reading our output would block the writes below and at exit.
      detach_if_blocked(STDOUT_FILENO);
      detach_if_blocked(STDERR_FILENO);
      progress.finish(/*complete=*/false);
      console->finalize();
      std::fprintf(stderr, "commsim run: stopped by signal %d after %d of %zu points", sig, outcome.finished,
                   todo.size());
      if (file)
        std::fprintf(stderr, "; %s holds every finished point, continue with --resume %s", file->path().c_str(),
                     file->path().c_str());
      std::fprintf(stderr, "\n");
    }
  } else {
    if (rank == 0) {
      if (file) finish_file(RunStatus::Complete);
      progress.finish(/*complete=*/true);
      console->finalize();
      const std::vector<std::string> noisy = noisy_point_lines(finished);
      for (std::size_t i = 0; i < noisy.size(); ++i)
        std::fprintf(stderr, "commsim run: %s%s\n", i == 0 ? "note: " : "", noisy[i].c_str());
      if (outcome.wrong > 0 || outcome.errors > 0)
        std::fprintf(stderr, "commsim run: %d point(s) with wrong results, %d failed (see status and note)\n",
                     outcome.wrong, outcome.errors);
    }
    // Only rank 0 knows which points were wrong: share the verdict so every rank exits the same.
    int failed = rank == 0 && (outcome.wrong > 0 || outcome.errors > 0) ? 1 : 0;
    COMMSIM_MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (failed) exit_code = kRunExitFailed;
  }
  watchdog->finish();
  std::fflush(stdout);
  std::fflush(stderr);
  return exit_code;
}

}  // namespace commsim

#endif  // COMMSIM_HAVE_MPI
