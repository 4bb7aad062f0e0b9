// commsim run: measure collectives under mpirun/srun, beside the model's
// prediction.
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/command.h"

#ifdef COMMSIM_HAVE_MPI
#include <fcntl.h>
#include <mpi.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "collectives/dtype.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"
#include "model/placement.h"
#include "model/topology/topology.h"
#include "model/units.h"
#include "runtime/sweep/backend.h"
#include "runtime/commands/cli.h"
#include "runtime/job/cpu_binding.h"
#include "runtime/job/mpi_session.h"
#include "runtime/output/reporter.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"
#include "runtime/sweep/sweep.h"
#include "runtime/job/watchdog.h"
#endif

namespace commsim {

#ifndef COMMSIM_HAVE_MPI

int cmd_run(int, char**) {
  std::fprintf(stderr,
               "commsim run: this build has no MPI (configure with MPI "
               "installed to measure)\n");
  return 2;
}

#else

namespace {

constexpr int kExitUsage = 2;   // bad options or a setup that does not fit: nothing ran
constexpr int kExitFailed = 1;  // wrong results or failed points: everything was written

// Runs a setup step on every rank and agrees on its outcome: when it failed
// anywhere, the lowest failing rank prints its message (one message, not one
// per rank) and every rank gets false. Steps must not call MPI collectives
// after a point where they may throw.
bool agree(int rank, const std::function<void()>& step) {
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
    std::fprintf(stderr, "commsim run: error: %s\n", error.c_str());
    std::fflush(stderr);
  }
  return false;
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

// Algorithm names: every explicitly named (collective, algorithm) pair must
// exist; 'all' on either list lets the pairs that do not exist drop out (listed
// in `skipped`).
std::vector<std::pair<Collective, std::vector<Algorithm> > > choose_pairs(const SweepOptions& o,
                                                                          const std::string& backend,
                                                                          std::vector<std::string>* skipped) {
  // The baselines of the backend: the MPI library's on host memory, NCCL's on the GPU.
  std::vector<Algorithm> allowed = hand_written_algorithms();
  if (backend == "cuda") {
    for (Algorithm a : {Algorithm::Nccl, Algorithm::NcclRing, Algorithm::NcclTree}) allowed.push_back(a);
  } else {
    allowed.push_back(Algorithm::Mpi);
  }
  const std::vector<Collective> colls = parse_collectives(o.collectives);
  const AlgorithmSelection sel = parse_algorithms(o.algorithms, allowed);
  const bool collectives_all = o.collectives == "all" || o.collectives == "ALL";
  if (!sel.all && !collectives_all) {
    std::string bad;
    for (Collective c : colls)
      for (Algorithm a : sel.named)
        if (!applies(c, a)) {
          std::vector<Algorithm> ok;
          for (Algorithm x : allowed)
            if (applies(c, x)) ok.push_back(x);
          bad += (bad.empty() ? "" : "; ") + std::string(to_string(a)) + " does not apply to " +
                 std::string(to_string(c)) + " (" + std::string(to_string(c)) + ": " + join_names(ok) + ")";
        }
    if (!bad.empty())
      throw Error("--algorithms: " + bad + "; name only algorithms that apply, or use --algorithms all");
  }
  return pair_algorithms(colls, sel, allowed, skipped);
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

// The progress line on stderr: rewritten in place on a terminal, one line each
// otherwise.
class Progress {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) != 0) {}
  void show(const Point& p, int ordinal, int total, int pass, int passes) {
    const std::string of_pass = passes > 1 ? " (pass " + std::to_string(pass) + " of " + std::to_string(passes) + ")" : "";
    if (tty_)
      std::fprintf(stderr, "\r[%d/%d] %s%s ...\x1b[K", ordinal, total, point_label(p).c_str(), of_pass.c_str());
    else
      std::fprintf(stderr, "[%d/%d] %s%s ...\n", ordinal, total, point_label(p).c_str(), of_pass.c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (tty_) std::fprintf(stderr, "\r\x1b[K");
  }

 private:
  bool tty_;
};

}  // namespace

int cmd_run(int argc, char** argv) {
  block_stop_signals();  // before MPI starts its threads: the signals must reach this thread
  // Threads: the watchdog reads reports while the main thread may be blocked in MPI.
  MpiSession mpi(MpiThreads::Multiple);
  const int rank = mpi.rank();
  const int nranks = mpi.size();

  CommandLine cli(
      "run",
      "Measure collectives under mpirun or srun, each point beside the model's prediction for the same schedule\n"
      "on the real placement of ranks on hosts. Algorithms: the hand-written ones (see --algorithms) and the\n"
      "backend's library baseline ('mpi' on host: predicted as the algorithm the MPI library itself picks where\n"
      "that is known (Open MPI 4.1), named in the point's note). Per point: --warmup untimed iterations, then\n"
      "--iters timed ones, each after a barrier; an iteration's time is the maximum over ranks. Every\n"
      "finished point is appended to --out and flushed at once (with --passes N, a point finishes in the last\n"
      "pass; stopped earlier, the points keep the samples of the passes that ran, and their note says so).\n"
      "\n"
      "SIGTERM/SIGINT (what Slurm sends at the time limit) end the run after the current iteration, the file\n"
      "closed with status 'interrupted'; continue it with --resume. mpirun kills its ranks 1 s after it\n"
      "forwards a SIGTERM: set OMPI_MCA_odls_base_sigkill_timeout=30 to give them time to close the file\n"
      "(killed earlier, FILE.h5.partial still holds every finished point and --resume continues it).\n"
      "\n"
      "Exit status: 0 when every point ran and was right; 1 when a point had wrong results or failed (after\n"
      "writing everything); 2 for bad options or a setup that does not fit (nothing ran); 124 when the\n"
      "watchdog ended a hung point; 128+N when stopped by signal N (SIGTERM: 143).",
      "mpirun -np 8 commsim run --collectives all --algorithms ring,tree,recursive-doubling,rabenseifner,mpi \\\n"
      "    --sizes 8B:64MiB --iters 20 --warmup 5 --check --out run.h5\n"
      "srun -N 2 --ntasks-per-node 4 commsim run --topology my-cluster.yaml --resume run.h5");
  std::string topology_name = "local-cpu", backend_name = "host", dtype_name = "float32", op_name = "sum";
  std::string transport_name, pipeline_chunk, piece_size;
  int root = 0, iters = 20, warmup = 5, passes = 1, inject_error = -1, inject_hang = -1;
  bool check = false, share_gpu = false, graph = false;
  double timeout_s = 300;
  SweepOptions sweep;
  sweep.algorithms = "all";
  sweep.sizes = "8B:64MiB";
  OutputOptions output;
  auto add = [&cli](const char* name, const po::value_semantic* value, const char* help) {
    cli.options().add_options()(name, value, help);
  };
  add("topology", po::value(&topology_name)->default_value(topology_name)->value_name("NAME|FILE"),
      "topology the predictions use: a preset name (configs/topologies/NAME.yaml) or a YAML file");
  add("backend", po::value(&backend_name)->default_value(backend_name)->value_name("NAME"),
      "where the collectives run: host (host memory; baseline algorithm 'mpi') or cuda (GPU memory; "
      "baselines 'nccl', 'nccl-ring', 'nccl-tree'), as built");
  add("transport", po::value(&transport_name)->value_name("NAME"),
      "how hand-written schedules move bytes: host: mpi (default) or ucx (when built with UCX); cuda: ipc "
      "inside a node or nccl "
      "(default: ipc when all ranks share a node, else nccl)");
  add_sweep_options(cli.options(), sweep, /*with_nodes=*/false);
  add("dtype", po::value(&dtype_name)->default_value(dtype_name)->value_name("TYPE"),
      "element type: float32, float64, int32, bfloat16, float16 (the inputs are small integers, so every "
      "result is checked exactly, in 16-bit types too)");
  add("op", po::value(&op_name)->default_value(op_name)->value_name("OP"), "reduction: sum, min, max");
  add("root", po::value(&root)->default_value(root)->value_name("RANK"), "root of broadcast and reduce");
  add("iters", po::value(&iters)->default_value(iters)->value_name("N"), "timed iterations per point");
  add("warmup", po::value(&warmup)->default_value(warmup)->value_name("N"),
      "untimed iterations before them (in every pass)");
  add("passes", po::value(&passes)->default_value(passes)->value_name("N"),
      "go over all points N times, each pass timing its share of --iters, and take the statistics over "
      "all of a point's samples: a slow spell of a shared machine then touches every point a little "
      "instead of a few points wholly (results are written after the last pass)");
  add("check", po::bool_switch(&check),
      "run one more iteration per point and count the elements that differ from the exact expected result");
  add("timeout", po::value(&timeout_s)->default_value(timeout_s)->value_name("SECONDS"),
      "abort the job when a point takes longer than this, naming the ranks that did not arrive; 0: never");
  add("pipeline-chunk", po::value(&pipeline_chunk)->value_name("BYTES"),
      "chunk size of the pipelined algorithms (tree, ring broadcast/reduce); default: the chunk the model's "
      "closed form assumes");
  add("piece-size", po::value(&piece_size)->value_name("BYTES"),
      "host: largest message; longer transfers are cut so that reductions overlap arrivals, and the model "
      "prices each piece's combine (default 512KiB; 0: do not cut)");
  add("share-gpu", po::bool_switch(&share_gpu),
      "cuda: let several ranks share a GPU (hand-written kernels only; for testing on one GPU)");
  add("graph", po::bool_switch(&graph), "cuda: capture each iteration in a CUDA graph (points up to 16MiB)");
  add_output_options(cli.options(), output, /*with_resume=*/true);
  add("inject-error", po::value(&inject_error)->value_name("RANK"),
      "for testing only: RANK flips one element of its output before the --check count");
  add("inject-hang", po::value(&inject_hang)->value_name("RANK"),
      "for testing only: RANK never arrives at the second point, so the --timeout watchdog ends the job");

  // ---- options and topology (local, the same on every rank)
  bool help_only = false;
  SweepSettings settings;
  Topology topology;
  std::vector<std::pair<Collective, std::vector<Algorithm> > > pairs;
  std::vector<std::string> skipped_pairs;
  std::vector<Bytes> sizes;
  OutputFormat format = OutputFormat::Table;
  // Cutting transfers into pieces lets the reduction of one piece run while the next arrives and
  // keeps the received piece in cache for it (see tests/bench/bench_host.sh); the model prices it.
  std::uint64_t piece_bytes = kHostPieceBytes;
  if (!agree(rank, [&] {
        // --help under mpirun: printed once, by rank 0.
        const bool help = std::any_of(argv + 1, argv + argc, [](const char* a) {
          return std::string_view(a) == "--help" || std::string_view(a) == "-h";
        });
        if (help && rank != 0) {
          help_only = true;
          return;
        }
        if (!cli.parse(argc, argv)) {
          help_only = true;
          return;
        }
        if (backend_name != "host" && backend_name != "cuda")
          throw Error("--backend: unknown backend '" + backend_name + "'; valid: host" +
                      std::string(built_backends().find("cuda") != std::string::npos ? ", cuda" : ""));
        format = parse_format(output.format);
        auto dt = parse_dtype(dtype_name);
        if (!dt)
          throw Error("--dtype: unknown type '" + dtype_name + "'; valid: float32, float64, int32, bfloat16, float16");
        auto op = parse_redop(op_name);
        if (!op) throw Error("--op: unknown operation '" + op_name + "'; valid: sum, min, max");
        if (iters < 1) throw Error("--iters must be at least 1");
        if (warmup < 0) throw Error("--warmup must not be negative");
        if (passes < 1) throw Error("--passes must be at least 1");
        if (passes > iters)
          throw Error("--passes " + std::to_string(passes) + " is more than --iters " + std::to_string(iters) +
                      ": every pass times at least one iteration");
        if (timeout_s < 0) throw Error("--timeout must not be negative");
        if (root < 0 || root >= nranks)
          throw Error("--root " + std::to_string(root) + " is not a rank (there are " + std::to_string(nranks) + ")");
        if (inject_error >= nranks || inject_hang >= nranks)
          throw Error("--inject-error/--inject-hang: rank " + std::to_string(std::max(inject_error, inject_hang)) +
                      " does not exist");
        if (transport_name.empty() && backend_name == "host") transport_name = "mpi";
        if (backend_name == "host" && transport_name != "mpi" && transport_name != "ucx")
          throw Error("--transport: '" + transport_name + "' is not available for the host backend; valid: mpi, ucx");
        settings.protocols = parse_protocols(sweep.protocols);
        if (backend_name != "cuda" && settings.protocols != std::vector<Protocol>{Protocol::None})
          throw Error("--protocols: protocols are forced on the NCCL baselines only (--backend cuda)");
        if (!output.resume.empty() && !output.out.empty() && output.out != output.resume)
          throw Error("--out " + output.out + " and --resume " + output.resume +
                      " name different files; --resume appends to its file");
        if (!output.resume.empty() && output.force) throw Error("--force and --resume contradict each other");
        settings.dtype = *dt;
        settings.op = *op;
        settings.root = root;
        settings.iters = iters;
        settings.warmup = warmup;
        settings.passes = passes;
        settings.check = check;
        settings.inject_error_rank = inject_error;
        settings.inject_hang_rank = inject_hang;
        settings.channels = sweep.channels;
        if (!pipeline_chunk.empty()) {
          settings.pipeline_chunk_bytes = parse_bytes(pipeline_chunk);
          if (settings.pipeline_chunk_bytes == 0) throw Error("--pipeline-chunk must be positive");
        }
        if (!piece_size.empty()) piece_bytes = parse_bytes(piece_size);
        pairs = choose_pairs(sweep, backend_name, &skipped_pairs);
        sizes = parse_sizes(sweep.sizes);
        topology = load_topology(resolve_topology_path(topology_name));
        // What the model prices: the host executor's pieces; GPU schedules combine whole transfers.
        topology.piece_bytes = backend_name == "host" ? piece_bytes : 0;
      }))
    return kExitUsage;
  if (help_only) return 0;

  // ---- where the ranks run
  const std::vector<std::string> hosts = gather_hostnames();
  const Placement placement = Placement::from_hostnames(hosts);
  if (!agree(rank, [&] { check_placement(placement, hosts, topology); })) return kExitUsage;

  // ---- the backend and the plan (every rank plans the same points)
  BackendContext bctx;
  bctx.rank = rank;
  bctx.nranks = nranks;
  bctx.local_rank = placement.local_rank[static_cast<std::size_t>(rank)];
  bctx.local_ranks =
      placement.node_size[static_cast<std::size_t>(placement.node_of_rank[static_cast<std::size_t>(rank)])];
  bctx.placement = &placement;
  bctx.transport = transport_name;
  bctx.piece_bytes = piece_bytes;
  bctx.share_gpu = share_gpu;
  bctx.graph = graph;
  std::unique_ptr<Backend> backend;
  if (!agree(rank, [&] { backend = make_backend(backend_name, bctx); })) return kExitUsage;
  settings.mpi_library = {mpi_library_version(), selected_environment()};
  std::vector<PlannedPoint> plan;
  if (!agree(rank, [&] { plan = plan_sweep(pairs, sizes, settings, topology, placement, *backend); }))
    return kExitUsage;
  {
    std::string error;
    try {
      check_memory(plan, *backend);  // collective; throws the same on every rank
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!error.empty()) {
      if (rank == 0) std::fprintf(stderr, "commsim run: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }

  // ---- the context, the results file and the reporters (rank 0)
  RunContext ctx = RunContext::collect_local(argc + 1, argv - 1);  // argv[-1] is main's argv[0]: the binary
  ctx.hostnames = hosts;
  const BindingSummary binding = gather_binding(hosts, ctx.cpus);
  ctx.cpu_binding = binding.text;
  ctx.ranks = nranks;
  ctx.nodes = placement.nnodes;
  ctx.backend = std::string(backend->name());
  ctx.transport = std::string(backend->transport());
  ctx.mpi_version = settings.mpi_library.version;
  ctx.topology_name = topology.name;
  ctx.topology_path = topology.source_path;
  ctx.topology_text = topology.text;
  if (backend_name == "host") ctx.piece_bytes = topology.piece();

  std::optional<ResultsFile> file;
  std::vector<char> already(plan.size(), 0);
  const std::string out_path = output.resume.empty() ? output.out : output.resume;
  if (!agree(rank, [&] {
        if (rank != 0 || out_path.empty()) return;
        file.emplace(output.resume.empty() ? ResultsFile::create(out_path, output.force, ctx)
                                           : ResultsFile::resume(out_path, ctx));
        for (std::size_t i = 0; i < plan.size(); ++i) already[i] = file->contains(key_of(plan[i].row)) ? 1 : 0;
      }))
    return kExitUsage;
  COMMSIM_MPI_CHECK(MPI_Bcast(already.data(), static_cast<int>(already.size()), MPI_CHAR, 0, MPI_COMM_WORLD));
  std::vector<PlannedPoint> todo;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (!already[i]) todo.push_back(std::move(plan[i]));

  // Rank 0 reports. Rows go to the results file first, then to the console; once a stop signal has
  // arrived nothing more is printed, because mpirun stops reading the ranks' output when it is
  // signalled, and a write into the full pipe would block rank 0 before it closes the file.
  std::unique_ptr<Reporter> console;
  std::mutex report_mu;  // the watchdog's timeout handler writes from its own thread
  const Point* current = nullptr;
  Progress progress;
  if (rank == 0) {
    console = make_console_reporter(format, std::cout, TableReporter::Columns::Measured);
    console->context(ctx);
    for (const std::string& s : skipped_pairs) std::fprintf(stderr, "commsim run: skipped: %s\n", s.c_str());
    if (!binding.oversubscribed.empty()) std::fprintf(stderr, "commsim run: note: %s\n", binding.oversubscribed.c_str());
    if (!output.resume.empty())
      std::fprintf(stderr, "commsim run: resuming %s: %zu of %zu points already there, %zu to go\n", out_path.c_str(),
                   plan.size() - todo.size(), plan.size(), todo.size());
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
      file->append(row);
    }
    file->finish(RunStatus::Failed);
    std::fprintf(stderr, "commsim run: %s holds every point finished before the timeout\n", file->path().c_str());
  };
  if (!agree(rank, [&] { watchdog.emplace(timeout_s, on_timeout); })) return kExitUsage;
  install_stop_handlers();  // after the last thread started: only this one takes the signals

  SweepCallbacks callbacks;
  callbacks.progress = [&](const Point& p, int ordinal, int total, int pass, int passes) {
    std::lock_guard lock(report_mu);
    current = &p;
    if (!stop_signal()) progress.show(p, ordinal, total, pass, passes);
  };
  callbacks.point_done = [&](const Point& p) {
    std::lock_guard lock(report_mu);
    current = nullptr;
    if (file) file->append(p);
    if (stop_signal()) return;
    progress.clear();
    console->point(p);
  };
  const SweepOutcome outcome = run_sweep(todo, settings, *backend, *watchdog, callbacks);
  watchdog->finish();
  backend.reset();

  int exit_code = 0;
  if (outcome.stop_signal != 0) {
    const int sig = stop_signal() != 0 ? stop_signal() : SIGTERM;
    exit_code = 128 + sig;
    if (rank == 0) {
      if (file) file->finish(RunStatus::Interrupted);  // before any output that might block
      // A launcher that stopped reading our output would block the writes below and at exit.
      detach_if_blocked(STDOUT_FILENO);
      detach_if_blocked(STDERR_FILENO);
      progress.clear();
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
      if (file) file->finish(RunStatus::Complete);
      console->finalize();
      if (outcome.wrong > 0 || outcome.errors > 0)
        std::fprintf(stderr, "commsim run: %d point(s) with wrong results, %d failed (see status and note)\n",
                     outcome.wrong, outcome.errors);
    }
    // Only rank 0 knows which points were wrong: share the verdict so every rank exits the same.
    int failed = rank == 0 && (outcome.wrong > 0 || outcome.errors > 0) ? 1 : 0;
    COMMSIM_MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (failed) exit_code = kExitFailed;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return exit_code;
}

#endif

}  // namespace commsim
