// commsim run: measure collectives under mpirun/srun, beside the model's
// prediction.
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/command.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "collectives/elements/dtype.h"
#include "model/error.h"
#include "model/topology/topology.h"
#include "model/units.h"
#include "runtime/commands/cli.h"
#include "runtime/job/mpi_session.h"
#include "runtime/job/watchdog.h"
#include "runtime/output/run_context.h"
#include "runtime/sweep/backend.h"
#include "runtime/sweep/run_job.h"
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

// Algorithm names: every explicitly named (collective, algorithm) pair must
// exist; 'all' on either list lets the pairs that do not exist drop out (listed
// in `skipped`).
std::vector<std::pair<Collective, std::vector<Algorithm> > > choose_pairs(const SweepOptions& o,
                                                                          const std::string& backend,
                                                                          std::vector<std::string>* skipped) {
  // The baselines of the backend: the MPI library's on host memory, NCCL's on the GPU.
  std::vector<Algorithm> allowed(kHandWrittenAlgorithms.begin(), kHandWrittenAlgorithms.end());
  if (backend == "cuda") {
    allowed.push_back(Algorithm::Nccl);
    allowed.insert(allowed.end(), kNcclForcedAlgorithms.begin(), kNcclForcedAlgorithms.end());
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

// The options as typed.
struct RunOptions {
  std::string topology = "local-cpu", backend = "host", dtype = "float32", op = "sum";
  std::string transport, pipeline_chunk, piece_size, timing, placement;
  int root = 0, iters = 20, warmup = 5, passes = 1, inject_error = -1, inject_hang = -1;
  bool check = false, no_check = false, share_gpu = false, graph = false, quiet = false;
  NcclTestsOptions nccl_tests;
  double timeout_s = 300;
  SweepOptions sweep{"allreduce", "all", "8B:64MiB"};
  OutputOptions output;
};

void add_run_options(CommandLine& cli, RunOptions& o) {
  auto add = [&cli](const char* name, const po::value_semantic* value, const char* help) {
    cli.options().add_options()(name, value, help);
  };
  add("topology", po::value(&o.topology)->default_value(o.topology)->value_name("NAME|FILE"),
      "topology the predictions use: a preset name (configs/topologies/NAME.yaml) or a YAML file");
  add("backend", po::value(&o.backend)->default_value(o.backend)->value_name("NAME"),
      "where the collectives run: host (host memory; baseline algorithm 'mpi') or cuda (GPU memory; "
      "baselines 'nccl' and NCCL with its algorithm forced through NCCL_ALGO: 'nccl-ring', 'nccl-tree', 'nccl-nvls', "
      "'nccl-nvlstree', 'nccl-collnet-direct', 'nccl-collnet-chain', 'nccl-pat'), as built");
  add("transport", po::value(&o.transport)->value_name("NAME"),
      "how hand-written schedules move bytes: host: mpi (default) or ucx (when built with UCX); cuda: ipc "
      "inside a node or nccl "
      "(default: ipc when all ranks share a node, else nccl)");
  add_sweep_options(cli.options(), o.sweep, /*with_nodes=*/false);
  add("dtype", po::value(&o.dtype)->default_value(o.dtype)->value_name("TYPES"),
      "element types, comma-separated, or all: float32, float64, int32, bfloat16, float16 (the inputs are small "
      "integers, so every result is checked exactly, in 16-bit types too)");
  add("op", po::value(&o.op)->default_value(o.op)->value_name("OPS"),
      "reductions, comma-separated, or all: sum, min, max");
  add("root", po::value(&o.root)->default_value(o.root)->value_name("RANK"), "root of broadcast and reduce");
  add("iters", po::value(&o.iters)->default_value(o.iters)->value_name("N"), "timed iterations per point");
  add("warmup", po::value(&o.warmup)->default_value(o.warmup)->value_name("N"),
      "untimed iterations before them (in every pass)");
  add("passes", po::value(&o.passes)->default_value(o.passes)->value_name("N"),
      "go over all points N times, each pass timing its share of --iters, and take the statistics over "
      "all of a point's samples: a slow spell of a shared machine then touches every point a little "
      "instead of a few points wholly (results are written after the last pass)");
  add("check", po::bool_switch(&o.check),
      "run one more iteration per point and count the elements that differ from the exact expected result "
      "(the default, as in nccl-tests)");
  add("no-check", po::bool_switch(&o.no_check), "do not check the results (#wrong then reads N/A)");
  add("placement", po::value(&o.placement)->value_name("WHERE"),
      "out-of-place (the output in its own buffer), in-place (the output over the input, as MPI_IN_PLACE) or "
      "both, each a row with in_place set, as nccl-tests measures both; in place runs on the host backend's mpi "
      "baseline. Default: both on the host backend when an nccl-tests option is given, else out-of-place");
  add("timing", po::value(&o.timing)->value_name("MODE"),
      "how a point is timed: per-iteration (each iteration after a barrier, its time the slowest rank's; the "
      "point's time is the median over iterations) or nccl-tests (--iters iterations launched back to back, "
      "their wall time over their count, averaged over ranks as -a says: nccl-tests' own definition). Default: "
      "nccl-tests when an nccl-tests option (-b -e -f -i -n -w -c -d -o -r -a -z -G -N) is given, else "
      "per-iteration");
  add("timeout", po::value(&o.timeout_s)->default_value(o.timeout_s)->value_name("SECONDS"),
      "abort the job when a point, or rank 0's write of it, takes longer than this (seconds, up to 1e6), naming "
      "the ranks that did not arrive; 0: never");
  add("pipeline-chunk", po::value(&o.pipeline_chunk)->value_name("BYTES"),
      "chunk size of the pipelined algorithms (tree, ring broadcast/reduce); default: the chunk the model's "
      "closed form assumes");
  add("piece-size", po::value(&o.piece_size)->value_name("BYTES"),
      "host: largest message; longer transfers are cut so that reductions overlap arrivals, and the model "
      "prices each piece's combine (default 512KiB; 0: do not cut)");
  add("share-gpu", po::bool_switch(&o.share_gpu),
      "cuda: let several ranks share a GPU (hand-written kernels only; for testing on one GPU)");
  add("graph", po::bool_switch(&o.graph), "cuda: capture each iteration in a CUDA graph (points up to 16MiB)");
  add_output_options(cli.options(), o.output, /*with_resume=*/true);
  add("quiet", po::bool_switch(&o.quiet),
      "no progress on stderr (by default rank 0 shows a bar with the time left on a terminal, and a line at "
      "every quarter of the points and at most every 5 s otherwise)");
  po::options_description nccl_tests(
      "nccl-tests' options (NVIDIA/nccl-tests). With any of them the defaults are nccl-tests': -b/-e 32M, -w 1,\n"
      "--algorithms the backend's library (mpi or nccl), --timing nccl-tests, --placement both (host)",
      kHelpWidth, kHelpWidth * 2 / 5);
  add_nccl_tests_options(nccl_tests, o.nccl_tests);
  cli.options().add(nccl_tests);
  add("inject-error", po::value(&o.inject_error)->value_name("RANK"),
      "for testing only: RANK flips one element of its output before the --check count");
  add("inject-hang", po::value(&o.inject_hang)->value_name("RANK"),
      "for testing only: RANK never arrives at the second point, so the --timeout watchdog ends the job");
}

// "float32,int32" or "all" (every type commsim runs).
std::vector<DType> parse_dtypes(const std::string& text) {
  const std::vector<DType> all = {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16, DType::Float16};
  if (text == "all") return all;
  std::vector<DType> out;
  std::stringstream list(text);
  for (std::string name; std::getline(list, name, ',');) {
    auto dt = parse_dtype(name);
    if (!dt)
      throw Error("--dtype: unknown type '" + name + "'; valid: float32, float64, int32, bfloat16, float16, all");
    if (std::find(out.begin(), out.end(), *dt) == out.end()) out.push_back(*dt);
  }
  if (out.empty()) throw Error("--dtype: give a type");
  return out;
}

// "sum,max" or "all" (nccl-tests' order: sum, max, min).
std::vector<RedOp> parse_ops(const std::string& text) {
  if (text == "all") return {RedOp::Sum, RedOp::Max, RedOp::Min};
  std::vector<RedOp> out;
  std::stringstream list(text);
  for (std::string name; std::getline(list, name, ',');) {
    auto op = parse_redop(name);
    if (!op)
      throw Error("--op: unknown operation '" + name + "'; valid: sum, min, max, all" +
                  (name == "prod" || name == "avg" ? " (commsim's kernels and exact checks have no " + name + ")"
                                                   : std::string()));
    if (std::find(out.begin(), out.end(), *op) == out.end()) out.push_back(*op);
  }
  if (out.empty()) throw Error("--op: give an operation");
  return out;
}

// An nccl-tests command line: its options read as nccl-tests reads them, each written into the
// long option it stands for (naming both is an error), and nccl-tests' defaults for the rest: its
// sizes, warm-up, the library's own collective, its timing. Returns the sizes.
std::vector<Bytes> apply_nccl_tests(RunOptions& o, const CommandLine& cli, SweepSettings& settings) {
  const NcclTestsOptions& nt = o.nccl_tests;
  const NcclTestsSettings s = resolve_nccl_tests(nt);
  auto take = [&cli](const std::string& short_value, const char* short_name, const char* long_name) {
    if (short_value.empty()) return false;
    if (cli.given(long_name))
      throw Error(std::string(short_name) + " and --" + long_name + " say the same thing: give one of them");
    return true;
  };
  if (take(nt.n, "-n", "iters")) o.iters = s.iters;
  if (take(nt.w, "-w", "warmup") || !cli.given("warmup")) o.warmup = s.warmup;
  if (take(nt.c, "-c", "check") || take(nt.c, "-c", "no-check")) o.no_check = !s.check;
  if (take(nt.d, "-d", "dtype")) o.dtype = s.dtype;
  if (take(nt.o, "-o", "op")) o.op = s.op;
  if (take(nt.r, "-r", "root")) o.root = s.root;
  if (s.graph_launches > 0) o.graph = true;
  settings.rank_combine = static_cast<RankCombine>(s.average);
  settings.blocking = s.blocking;
  if (!cli.given("algorithms")) o.sweep.algorithms = o.backend == "cuda" ? "nccl" : "mpi";
  if (o.timing.empty()) o.timing = "nccl-tests";
  if (o.placement.empty() && o.backend == "host") o.placement = "both";
  const bool sizes_given = !(nt.b.empty() && nt.e.empty() && nt.i.empty() && nt.f.empty());
  if (sizes_given && cli.given("sizes")) throw Error("-b/-e/-i/-f and --sizes both give the sizes: give one of them");
  return cli.given("sizes") ? parse_sizes(o.sweep.sizes) : s.sizes;
}

// The options checked and turned into the job (the same on every rank). Throws Error naming the
// option that is wrong.
RunJob resolve(RunOptions o, const CommandLine& cli, int nranks) {
  RunJob job;
  std::optional<std::vector<Bytes> > nccl_tests_sizes;
  if (o.nccl_tests.any()) nccl_tests_sizes = apply_nccl_tests(o, cli, job.settings);
  if (o.check && o.no_check) throw Error("--check and --no-check (or -c 0) contradict each other");
  if (o.timing.empty()) o.timing = "per-iteration";
  if (o.placement.empty()) o.placement = "out-of-place";
  if (o.placement != "out-of-place" && o.placement != "in-place" && o.placement != "both")
    throw Error("--placement: unknown placement '" + o.placement + "'; valid: out-of-place, in-place, both");
  if (o.timing != "per-iteration" && o.timing != "nccl-tests")
    throw Error("--timing: unknown mode '" + o.timing + "'; valid: per-iteration, nccl-tests");
  if (o.timing != "nccl-tests" && !o.nccl_tests.a.empty())
    throw Error("-a combines the ranks' times of --timing nccl-tests; per-iteration timing takes the slowest rank's");
  if (o.backend != "host" && o.backend != "cuda")
    throw Error("--backend: unknown backend '" + o.backend + "'; valid: host" +
                std::string(built_backends().find("cuda") != std::string::npos ? ", cuda" : ""));
  job.backend = o.backend;
  job.format = parse_format(o.output.format);
  const std::vector<DType> dtypes = parse_dtypes(o.dtype);
  const std::vector<RedOp> ops = parse_ops(o.op);
  if (o.iters < 1) throw Error("--iters must be at least 1");
  if (o.warmup < 0) throw Error("--warmup must not be negative");
  if (o.passes < 1) throw Error("--passes must be at least 1");
  if (o.passes > o.iters)
    throw Error("--passes " + std::to_string(o.passes) + " is more than --iters " + std::to_string(o.iters) +
                ": every pass times at least one iteration");
  check_range(o.timeout_s, 0, kMaxTime_s, "--timeout", "s");
  if (o.root < 0 || o.root >= nranks)
    throw Error("--root " + std::to_string(o.root) + " is not a rank (there are " + std::to_string(nranks) + ")");
  if (o.inject_error >= nranks || o.inject_hang >= nranks)
    throw Error("--inject-error/--inject-hang: rank " + std::to_string(std::max(o.inject_error, o.inject_hang)) +
                " does not exist");
  if (o.transport.empty() && o.backend == "host") o.transport = "mpi";
  if (o.backend == "host" && o.transport != "mpi" && o.transport != "ucx")
    throw Error("--transport: '" + o.transport + "' is not available for the host backend; valid: mpi, ucx");
  job.transport = o.transport;
  SweepSettings& settings = job.settings;
  settings.protocols = parse_protocols(o.sweep.protocols);
  if (o.backend != "cuda" && settings.protocols != std::vector<Protocol>{Protocol::None})
    throw Error("--protocols: protocols are forced on the NCCL baselines only (--backend cuda)");
  const OutputOptions& out = o.output;
  if (!out.resume.empty() && !out.out.empty() && out.out != out.resume)
    throw Error("--out " + out.out + " and --resume " + out.resume +
                " name different files; --resume appends to its file");
  if (!out.resume.empty() && out.force) throw Error("--force and --resume contradict each other");
  job.out = out.resume.empty() ? out.out : out.resume;
  job.resume = !out.resume.empty();
  job.force = out.force;
  settings.dtypes = dtypes;
  settings.ops = ops;
  settings.timing = o.timing == "nccl-tests" ? Timing::NcclTests : Timing::PerIteration;
  settings.placements = o.placement == "both"       ? std::vector<bool>{false, true}
                        : o.placement == "in-place" ? std::vector<bool>{true}
                                                    : std::vector<bool>{false};
  settings.root = o.root;
  settings.iters = o.iters;
  settings.warmup = o.warmup;
  settings.passes = o.passes;
  settings.check = !o.no_check;
  settings.inject_error_rank = o.inject_error;
  settings.inject_hang_rank = o.inject_hang;
  settings.channels = o.sweep.channels;
  if (!o.pipeline_chunk.empty()) {
    settings.pipeline_chunk_bytes = parse_bytes(o.pipeline_chunk);
    if (settings.pipeline_chunk_bytes == 0) throw Error("--pipeline-chunk must be positive");
  }
  // Cutting transfers into pieces lets the reduction of one piece run while the next arrives and
  // keeps the received piece in cache for it (see tests/bench/bench_host.sh); the model prices it.
  if (!o.piece_size.empty()) job.piece_bytes = parse_bytes(o.piece_size);
  job.pairs = choose_pairs(o.sweep, o.backend, &job.skipped_pairs);
  job.sizes = nccl_tests_sizes ? *nccl_tests_sizes : parse_sizes(o.sweep.sizes);
  job.topology = load_topology(resolve_topology_path(o.topology));
  // What the model prices: the host executor's pieces; GPU schedules combine whole transfers.
  job.topology.piece_bytes = o.backend == "host" ? job.piece_bytes : 0;
  job.share_gpu = o.share_gpu;
  job.graph = o.graph;
  job.timeout_s = o.timeout_s;
  job.quiet = o.quiet;
  return job;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  block_stop_signals();                  // before MPI starts its threads: the signals must reach this thread
  MpiSession mpi(MpiThreads::Multiple);  // the watchdog thread may call MPI
  const int rank = mpi.rank();
  const int nranks = mpi.size();

  CommandLine cli(
      "run",
      "Measure collectives under mpirun or srun, each point beside the model's prediction for the same schedule\n"
      "on the real placement of ranks on hosts. Algorithms: the hand-written ones (see --algorithms) and the\n"
      "backend's library baseline ('mpi' on host: predicted as the algorithm the MPI library itself picks where\n"
      "that is known (Open MPI 4.1), named in the point's note). Per point: --warmup untimed iterations, then\n"
      "--iters timed ones, each after a barrier; an iteration's time is the maximum over ranks (--timing\n"
      "nccl-tests: launched back to back and averaged over ranks, as nccl-tests times them); then one more\n"
      "iteration whose results are checked exactly (--no-check skips it). nccl-tests' own options work too:\n"
      "`commsim run -b 8 -e 1G -f 2 -n 20 -w 5` reads as all_reduce_perf reads it, and the table ends with\n"
      "its '# Out of bounds values' and '# Avg bus bandwidth' lines. Every\n"
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
      "mpirun -np 8 commsim run --collectives all --algorithms ring,tree,recursive-doubling,mpi \\\n"
      "    --sizes 8B:64MiB --iters 20 --warmup 5 --check --out run.h5\n"
      "mpirun -np 8 commsim run --backend cuda -b 8 -e 8G -f 2 -g 1    # all_reduce_perf's command line\n"
      "srun -N 2 --ntasks-per-node 4 commsim run --topology my-cluster.yaml --resume run.h5");
  RunOptions options;
  add_run_options(cli, options);

  bool help_only = false;
  RunJob job;
  if (!agree(rank, "run", [&] {
        // --help under mpirun: printed once, by rank 0.
        const bool help = std::any_of(argv + 1, argv + argc, [](const char* a) {
          return std::string_view(a) == "--help" || std::string_view(a) == "-h";
        });
        if ((help && rank != 0) || !cli.parse(argc, argv)) {
          help_only = true;
          return;
        }
        job = resolve(options, cli, nranks);
      }))
    return kRunExitUsage;
  if (help_only) return 0;
  // argv[-1] is main's argv[0]: the binary, as the run's command line names it.
  return run_job(job, RunContext::collect_local(argc + 1, argv - 1), rank, nranks);
}

#endif

}  // namespace commsim
