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

// The options as typed.
struct RunOptions {
  std::string topology = "local-cpu", backend = "host", dtype = "float32", op = "sum";
  std::string transport, pipeline_chunk, piece_size;
  int root = 0, iters = 20, warmup = 5, passes = 1, inject_error = -1, inject_hang = -1;
  bool check = false, share_gpu = false, graph = false;
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
      "baselines 'nccl', 'nccl-ring', 'nccl-tree'), as built");
  add("transport", po::value(&o.transport)->value_name("NAME"),
      "how hand-written schedules move bytes: host: mpi (default) or ucx (when built with UCX); cuda: ipc "
      "inside a node or nccl "
      "(default: ipc when all ranks share a node, else nccl)");
  add_sweep_options(cli.options(), o.sweep, /*with_nodes=*/false);
  add("dtype", po::value(&o.dtype)->default_value(o.dtype)->value_name("TYPE"),
      "element type: float32, float64, int32, bfloat16, float16 (the inputs are small integers, so every "
      "result is checked exactly, in 16-bit types too)");
  add("op", po::value(&o.op)->default_value(o.op)->value_name("OP"), "reduction: sum, min, max");
  add("root", po::value(&o.root)->default_value(o.root)->value_name("RANK"), "root of broadcast and reduce");
  add("iters", po::value(&o.iters)->default_value(o.iters)->value_name("N"), "timed iterations per point");
  add("warmup", po::value(&o.warmup)->default_value(o.warmup)->value_name("N"),
      "untimed iterations before them (in every pass)");
  add("passes", po::value(&o.passes)->default_value(o.passes)->value_name("N"),
      "go over all points N times, each pass timing its share of --iters, and take the statistics over "
      "all of a point's samples: a slow spell of a shared machine then touches every point a little "
      "instead of a few points wholly (results are written after the last pass)");
  add("check", po::bool_switch(&o.check),
      "run one more iteration per point and count the elements that differ from the exact expected result");
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
  add("inject-error", po::value(&o.inject_error)->value_name("RANK"),
      "for testing only: RANK flips one element of its output before the --check count");
  add("inject-hang", po::value(&o.inject_hang)->value_name("RANK"),
      "for testing only: RANK never arrives at the second point, so the --timeout watchdog ends the job");
}

// The options checked and turned into the job (the same on every rank). Throws Error naming the
// option that is wrong.
RunJob resolve(RunOptions o, int nranks) {
  RunJob job;
  if (o.backend != "host" && o.backend != "cuda")
    throw Error("--backend: unknown backend '" + o.backend + "'; valid: host" +
                std::string(built_backends().find("cuda") != std::string::npos ? ", cuda" : ""));
  job.backend = o.backend;
  job.format = parse_format(o.output.format);
  auto dt = parse_dtype(o.dtype);
  if (!dt) throw Error("--dtype: unknown type '" + o.dtype + "'; valid: float32, float64, int32, bfloat16, float16");
  auto op = parse_redop(o.op);
  if (!op) throw Error("--op: unknown operation '" + o.op + "'; valid: sum, min, max");
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
  settings.dtype = *dt;
  settings.op = *op;
  settings.root = o.root;
  settings.iters = o.iters;
  settings.warmup = o.warmup;
  settings.passes = o.passes;
  settings.check = o.check;
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
  job.sizes = parse_sizes(o.sweep.sizes);
  job.topology = load_topology(resolve_topology_path(o.topology));
  // What the model prices: the host executor's pieces; GPU schedules combine whole transfers.
  job.topology.piece_bytes = o.backend == "host" ? job.piece_bytes : 0;
  job.share_gpu = o.share_gpu;
  job.graph = o.graph;
  job.timeout_s = o.timeout_s;
  return job;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  block_stop_signals();  // before MPI starts its threads: the signals must reach this thread
  MpiSession mpi(MpiThreads::Multiple);  // the watchdog thread may call MPI
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
        job = resolve(options, nranks);
      }))
    return kRunExitUsage;
  if (help_only) return 0;
  // argv[-1] is main's argv[0]: the binary, as the run's command line names it.
  return run_job(job, RunContext::collect_local(argc + 1, argv - 1), rank, nranks);
}

#endif

}  // namespace commsim
