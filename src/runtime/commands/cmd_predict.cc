// `commsim predict`: the closed-form model's time, algbw and busbw of every (collective,
// algorithm, protocol) over node counts and sizes on a topology, the predicted winner, and the
// crossover sizes in words. By default a one-screen summary (per node count: the fastest schedule
// per size band, ring vs tree, NCCL's own choice); the full table with --format table. No MPI, no GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "collectives/elements/dtype.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/select.h"
#include "model/topology/topology.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/output/reporter.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/predict_summary.h"
#include "runtime/sweep/predictions.h"
#include "model/nccl/versions.h"
#include "runtime/output/run_context.h"

namespace commsim {
namespace {

constexpr const char* kSummary =
    "Predict collective times on a topology with the closed-form alpha-beta-gamma model (no MPI, no GPU).\n"
    "The summary (the default for large sweeps) gives, per node count, the fastest of our schedules per\n"
    "size band with the crossover sizes, ring vs tree, the time of the smallest size and the busbw of the\n"
    "largest, and NCCL's own choice from NCCL's tuning model (all of its algorithms, NVLS included) on GPU\n"
    "topologies; --nccl-version picks the NCCL release whose model is used. The table\n"
    "(--format table, or --detail) gives every algorithm at every size: predicted time (us), algbw and\n"
    "busbw (GB/s, nccl-tests definitions), the predicted winner, then the crossover sizes.";

constexpr const char* kExamples =
    "commsim predict                      # summary: 1 to 64 nodes of dgx-h100, 8B to 4GiB\n"
    "commsim predict --nodes 16 --algorithms ring,tree --sizes 4GiB\n"
    "commsim predict --topology configs/topologies/dgx-h100.yaml --nodes 1,2,4,8,16 \\\n"
    "    --collectives allreduce,allgather --algorithms all --sizes 8B:4GiB --out pred.h5\n"
    "commsim predict --topology dgx-a100 --nodes 1:64 --algorithms ring,tree --protocols all \\\n    --format csv";

}  // namespace

int cmd_predict(int argc, char** argv) {
  CommandLine cli("predict", kSummary, kExamples);
  std::string topology = "dgx-h100";
  std::string nccl_version;
  int gpus_per_node = 0;
  std::string dtype_name = "float32";
  SweepOptions sweep;
  sweep.collectives = "allreduce";
  sweep.algorithms = "all";
  sweep.sizes = "8B:4GiB";
  sweep.nodes = "1,2,4,8,16,32,64";
  OutputOptions output;
  output.format = "auto";
  output.format_help =
      "what to print on stdout: summary (per node count: the fastest per size band, ring vs tree, NCCL's "
      "choice), table (nccl-tests-like, every point), csv, json; auto: the summary when the table would "
      "run past 60 rows, else the table";
  bool detail = false;
  cli.options().add_options()
      ("topology", po::value(&topology)->default_value(topology)->value_name("NAME|FILE"),
       "a preset name from configs/topologies (dgx-h100, dgx-a100, h200-node, gb200-nvl72, gb300-nvl72, "
       "aws-p4d, oci-a100, polaris, consumer-pcie-4090, local-cpu) or the path of a topology YAML file")
      ("gpus-per-node", po::value(&gpus_per_node)->value_name("N"),
       "ranks (GPUs) per node, at most the topology's (default: all of them)")
      ("nccl-version", po::value(&nccl_version)->value_name("X.Y[.Z]"),
       "the NCCL release whose tuning model prices NCCL's collectives, 2.18 to 2.28 (default: the topology's "
       "nccl.version, else the newest)");
  add_sweep_options(cli.options(), sweep, /*with_nodes=*/true);
  cli.options().add_options()("dtype", po::value(&dtype_name)->default_value(dtype_name)->value_name("TYPE"),
                              "element type, for the element counts: float32, float64, int32, bfloat16, float16");
  add_output_options(cli.options(), output, /*with_resume=*/false);
  cli.options().add_options()("detail", po::bool_switch(&detail), "print the full table (the same as --format table)");
  if (!cli.parse(argc, argv)) return 0;

  PredictSettings s;
  s.topo = load_topology(resolve_topology_path(topology));
  s.gpus_per_node = cli.given("gpus-per-node") ? gpus_per_node : s.topo.ranks_per_node;
  if (cli.given("nccl-version")) {
    try {
      (void)nccl::find_version(nccl_version);  // an unknown release: the error lists the known ones
      s.topo.nccl.machine.version = nccl_version;
    } catch (const Error& e) {
      throw Error("--nccl-version: " + std::string(e.what()));
    }
  }
  s.nodes = parse_nodes(sweep.nodes);
  s.sizes = parse_sizes(sweep.sizes);
  s.protocols = parse_protocols(sweep.protocols);
  s.channels = sweep.channels;
  auto dt = parse_dtype(dtype_name);
  if (!dt) throw Error("--dtype: unknown type '" + dtype_name + "'; valid: float32, float64, int32, bfloat16, float16");
  s.dtype = *dt;
  if (detail && cli.given("format") && output.format != "table")
    throw Error("--detail is --format table; it cannot go with --format " + output.format);
  if (detail) output.format = "table";
  const bool auto_format = output.format == "auto";
  bool summary = output.format == "summary";
  OutputFormat format = auto_format || summary ? OutputFormat::Table : parse_format(output.format);
  std::vector<Collective> collectives = parse_collectives(sweep.collectives);
  // `all` means the hand-written algorithms; NCCL's own model is there when named.
  const std::vector<Algorithm> hand = hand_written_algorithms();
  std::vector<Algorithm> allowed = hand;
  for (Algorithm a : kAllAlgorithms)
    if (is_nccl_algorithm(a)) allowed.push_back(a);
  AlgorithmSelection sel = parse_algorithms(sweep.algorithms, allowed);
  std::vector<std::string> skipped;
  s.plan = pair_algorithms(collectives, sel, sel.all ? hand : allowed, &skipped);
  validate(s);
  if (output.force && output.out.empty()) throw Error("--force is given without --out FILE.h5");

  // With `all` on a GPU topology, NCCL's own choice is priced beside our schedules.
  if (sel.all)
    for (auto& [c, algs] : s.plan)
      if (has_closed_form(s.topo, c, Algorithm::Nccl, Protocol::None)) algs.push_back(Algorithm::Nccl);
  const std::vector<SweepCandidates> priced = priced_collectives(s, skipped);
  std::size_t rows = 0;
  for (const SweepCandidates& p : priced) rows += (p.ours.size() + p.nccl.size()) * s.sizes.size() * s.nodes.size();
  for (const std::string& line : skipped) std::cerr << "commsim predict: note: skipped " << line << "\n";
  if (auto_format) summary = rows > 60;

  std::vector<const char*> full_argv = {"commsim"};
  for (int i = 0; i < argc; ++i) full_argv.push_back(argv[i]);
  RunContext ctx = RunContext::collect_local(static_cast<int>(full_argv.size()), full_argv.data());
  ctx.backend = "model";
  ctx.topology_name = s.topo.name;
  ctx.topology_path = s.topo.source_path;
  ctx.topology_text = s.topo.text;

  MultiReporter out;
  if (!summary) out.add(make_console_reporter(format, std::cout, TableReporter::Columns::Predicted));
  std::unique_ptr<ResultsFile> file;
  if (!output.out.empty()) {
    file = std::make_unique<ResultsFile>(ResultsFile::create(output.out, output.force, ctx));
    file->set_flush_interval(1.0);  // predictions are cheap to redo: write in batches
    out.add(std::make_unique<Hdf5Reporter>(*file));
  }
  out.context(ctx);

  std::vector<std::string> skipped_points;
  const std::vector<std::string> notes = predict_points(s, priced, out, skipped_points);
  if (format == OutputFormat::Table && !notes.empty()) out.note("#\n# crossovers (predicted winner changes):");
  for (const std::string& line : notes) out.note(format == OutputFormat::Table ? "#   " + line : line);
  out.finalize();
  for (const std::string& line : skipped_points) std::cerr << "commsim predict: note: skipped " << line << "\n";
  if (summary) print_predict_summary(std::cout, s, priced, rows);
  if (file) file->finish(RunStatus::Complete);
  return 0;
}

}  // namespace commsim
