// `commsim predict`: the closed-form model's time, algbw and busbw of every (collective,
// algorithm, protocol) over node counts and sizes on a topology, the predicted winner, and the
// crossover sizes in words. No MPI, no GPU.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "collectives/dtype.h"
#include "model/cost.h"
#include "model/error.h"
#include "model/select.h"
#include "model/topology.h"
#include "runtime/cli_common.h"
#include "runtime/command.h"
#include "runtime/reporter.h"
#include "runtime/results_file.h"
#include "runtime/run_context.h"

namespace commsim {
namespace {

constexpr const char* kSummary =
    "Predict collective times on a topology with the closed-form alpha-beta-gamma model (no MPI, no GPU).\n"
    "For each node count, size and algorithm: predicted time (us), algbw and busbw (GB/s, nccl-tests\n"
    "definitions), the predicted winner among the algorithms asked for, then the crossover sizes.";

constexpr const char* kExamples =
    "commsim predict\n"
    "commsim predict --topology configs/topologies/dgx-h100.yaml --nodes 1,2,4,8,16 \\\n"
    "    --collectives allreduce,allgather --algorithms all --sizes 8B:4GiB --out pred.h5\n"
    "commsim predict --topology dgx-a100 --nodes 1:64 --algorithms ring,tree --protocols all --format csv";

std::string candidate_name(const Candidate& c) {
  std::string s(to_string(c.algorithm));
  if (c.protocol != Protocol::None) s += "/" + std::string(to_string(c.protocol));
  return s;
}

struct Settings {
  Topology topo;
  int gpus_per_node = 0;
  std::vector<int> nodes;
  std::vector<Bytes> sizes;
  std::vector<std::pair<Collective, std::vector<Algorithm>>> plan;
  std::vector<Protocol> protocols;
  DType dtype = DType::Float32;
  int channels = 0;  // --channels (CostQuery::channels)
};

void validate(const Settings& s) {
  const Topology& t = s.topo;
  if (s.gpus_per_node < 1 || s.gpus_per_node > t.ranks_per_node)
    throw Error("--gpus-per-node " + std::to_string(s.gpus_per_node) + ": topology " + t.name + " has " +
                std::to_string(t.ranks_per_node) + (t.gpu ? " GPUs" : " ranks") + " per node; use 1 to " +
                std::to_string(t.ranks_per_node));
  for (int n : s.nodes) {
    if (t.max_nodes > 0 && n > t.max_nodes)
      throw Error("--nodes " + std::to_string(n) + ": topology " + t.name + " allows at most " +
                  std::to_string(t.max_nodes) + " nodes (its max_nodes)");
    if (n > 1 && !t.network.present())
      throw Error("--nodes " + std::to_string(n) + ": topology " + t.name +
                  " has no network between nodes; use --nodes 1");
  }
  for (Protocol p : s.protocols)
    if (p != Protocol::None && !t.nccl.present)
      throw Error("--protocols " + std::string(to_string(p)) + ": topology " + t.name +
                  " has no NCCL protocol constants (an `nccl:` section); use --protocols none");
}

// The candidates of one collective that the model can price; the others are reported once.
std::vector<Candidate> priceable_candidates(const Settings& s, Collective c, const std::vector<Algorithm>& algs,
                                            std::vector<std::string>& skipped) {
  std::vector<Candidate> out;
  std::string first_error;
  for (Algorithm a : algs)
    for (Protocol p : s.protocols) {
      CostQuery q{c, a, p, s.nodes.front(), s.gpus_per_node, s.sizes.front(), s.channels};
      try {
        (void)closed_form(s.topo, q);
        out.push_back({a, p});
      } catch (const Error& e) {
        skipped.push_back(std::string(to_string(c)) + " " + candidate_name({a, p}) + ": " + e.what());
        if (first_error.empty()) first_error = e.what();
      }
    }
  if (out.empty())
    throw Error("the model can price none of the algorithms asked for " + std::string(to_string(c)) + ": " +
                first_error);
  return out;
}

Point make_point(const Settings& s, Collective c, const Candidate& cand, int nodes, Bytes bytes, const Cost& cost) {
  Point p;
  p.collective = c;
  p.algorithm = cand.algorithm;
  p.protocol = cand.protocol;
  p.backend = "model";
  p.transport = "";
  p.dtype = std::string(to_string(s.dtype));
  p.redop = reduces(c) ? "sum" : "none";
  p.nodes = nodes;
  p.ranks = nodes * s.gpus_per_node;
  p.bytes = bytes;
  p.count = bytes / dtype_size(s.dtype);
  p.predicted_us = cost.time_s * 1e6;
  p.predicted_busbw_gbps =
      cost.time_s > 0 ? static_cast<double>(bytes) / cost.time_s / 1e9 * busbw_factor(c, p.ranks) : kNaN;
  p.status = "predicted";
  if (cand.algorithm == Algorithm::Nccl)
    p.note = "NCCL's model picks " + candidate_name({cost.algorithm, cost.protocol});
  return p;
}

// "on 16 nodes, allreduce: tree beats ring below 2MiB" for every change of winner along the sizes.
std::vector<std::string> crossover_lines(const Settings& s, Collective c, int nodes,
                                         const std::vector<Candidate>& winners) {
  std::string where = "on " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + " (" +
                      std::to_string(nodes * s.gpus_per_node) + " ranks), " + std::string(to_string(c)) + ": ";
  std::vector<std::string> lines;
  for (std::size_t i = 0; i + 1 < winners.size(); ++i) {
    const Candidate& lo = winners[i];
    const Candidate& hi = winners[i + 1];
    if (lo.algorithm == hi.algorithm && lo.protocol == hi.protocol) continue;
    auto found = crossovers(s.topo, c, nodes, s.gpus_per_node, lo, hi, s.sizes[i], s.sizes[i + 1], s.channels);
    if (found.empty()) {
      lines.push_back(where + candidate_name(lo) + " wins at " + format_bytes(s.sizes[i]) + ", " + candidate_name(hi) +
                      " at " + format_bytes(s.sizes[i + 1]));
      continue;
    }
    for (const Crossover& x : found)
      lines.push_back(where + candidate_name(x.below) + " beats " + candidate_name(x.above) + " below " +
                      format_bytes(x.bytes));
  }
  if (lines.empty() && !winners.empty())
    lines.push_back(where + candidate_name(winners.front()) + " wins at every size from " +
                    format_bytes(s.sizes.front()) + " to " + format_bytes(s.sizes.back()));
  return lines;
}

}  // namespace

int cmd_predict(int argc, char** argv) {
  CommandLine cli("predict", kSummary, kExamples);
  std::string topology = "dgx-h100";
  int gpus_per_node = 0;
  std::string dtype_name = "float32";
  SweepOptions sweep;
  sweep.collectives = "allreduce";
  sweep.algorithms = "all";
  sweep.sizes = "8B:4GiB";
  sweep.nodes = "1,4,16";
  OutputOptions output;
  cli.options().add_options()
      ("topology", po::value(&topology)->default_value(topology)->value_name("NAME|FILE"),
       "a preset name from configs/topologies (dgx-h100, dgx-a100, h200-node, gb200-nvl72, "
       "consumer-pcie-4090, local-cpu) or the path of a topology YAML file")
      ("gpus-per-node", po::value(&gpus_per_node)->value_name("N"),
       "ranks (GPUs) per node, at most the topology's (default: all of them)");
  add_sweep_options(cli.options(), sweep, /*with_nodes=*/true);
  cli.options().add_options()("dtype", po::value(&dtype_name)->default_value(dtype_name)->value_name("TYPE"),
                              "element type, for the element counts: float32, float64, int32, bfloat16, float16");
  add_output_options(cli.options(), output, /*with_resume=*/false);
  if (!cli.parse(argc, argv)) return 0;

  Settings s;
  s.topo = load_topology(resolve_topology_path(topology));
  s.gpus_per_node = cli.given("gpus-per-node") ? gpus_per_node : s.topo.ranks_per_node;
  s.nodes = parse_nodes(sweep.nodes);
  s.sizes = parse_sizes(sweep.sizes);
  s.protocols = parse_protocols(sweep.protocols);
  s.channels = sweep.channels;
  auto dt = parse_dtype(dtype_name);
  if (!dt) throw Error("--dtype: unknown type '" + dtype_name + "'; valid: float32, float64, int32, bfloat16, float16");
  s.dtype = *dt;
  OutputFormat format = parse_format(output.format);
  std::vector<Collective> collectives = parse_collectives(sweep.collectives);
  // `all` means the hand-written algorithms; NCCL's own model is there when named.
  const std::vector<Algorithm> hand(kHandWrittenAlgorithms.begin(), kHandWrittenAlgorithms.end());
  std::vector<Algorithm> allowed = hand;
  for (Algorithm a : {Algorithm::Nccl, Algorithm::NcclRing, Algorithm::NcclTree}) allowed.push_back(a);
  AlgorithmSelection sel = parse_algorithms(sweep.algorithms, allowed);
  std::vector<std::string> skipped;
  s.plan = pair_algorithms(collectives, sel, sel.all ? hand : allowed, &skipped);
  validate(s);
  if (output.force && output.out.empty()) throw Error("--force is given without --out FILE.h5");

  std::vector<std::pair<Collective, std::vector<Candidate>>> candidates;
  for (const auto& [c, algs] : s.plan) candidates.emplace_back(c, priceable_candidates(s, c, algs, skipped));
  for (const std::string& line : skipped) std::cerr << "commsim predict: note: skipped " << line << "\n";

  std::vector<const char*> full_argv = {"commsim"};
  for (int i = 0; i < argc; ++i) full_argv.push_back(argv[i]);
  RunContext ctx = RunContext::collect_local(static_cast<int>(full_argv.size()), full_argv.data());
  ctx.backend = "model";
  ctx.topology_name = s.topo.name;
  ctx.topology_path = s.topo.source_path;
  ctx.topology_text = s.topo.text;

  MultiReporter out;
  out.add(make_console_reporter(format, std::cout, TableReporter::Columns::Predicted));
  std::unique_ptr<ResultsFile> file;
  if (!output.out.empty()) {
    file = std::make_unique<ResultsFile>(ResultsFile::create(output.out, output.force, ctx));
    file->set_flush_interval(1.0);  // predictions are cheap to redo: write in batches
    out.add(std::make_unique<Hdf5Reporter>(*file));
  }
  out.context(ctx);

  std::vector<std::string> notes;
  for (const auto& [c, cands] : candidates) {
    for (int nodes : s.nodes) {
      std::vector<Candidate> winners;
      winners.reserve(s.sizes.size());
      for (Bytes bytes : s.sizes) {
        Choice best = best_candidate(s.topo, c, nodes, s.gpus_per_node, bytes, cands, s.channels);
        winners.push_back(best.candidate);
        const std::string winner = candidate_name(best.candidate);
        for (const Candidate& cand : cands) {
          Cost cost = closed_form(
              s.topo, CostQuery{c, cand.algorithm, cand.protocol, nodes, s.gpus_per_node, bytes, s.channels});
          Point p = make_point(s, c, cand, nodes, bytes, cost);
          p.predicted_winner = winner;
          out.point(p);
        }
      }
      for (std::string& line : crossover_lines(s, c, nodes, winners)) notes.push_back(std::move(line));
    }
  }
  if (format == OutputFormat::Table && !notes.empty()) out.note("#\n# crossovers (predicted winner changes):");
  for (const std::string& line : notes) out.note(format == OutputFormat::Table ? "#   " + line : line);
  out.finalize();
  if (file) file->finish(RunStatus::Complete);
  return 0;
}

}  // namespace commsim
