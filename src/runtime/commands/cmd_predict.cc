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

#include "collectives/dtype.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/select.h"
#include "model/topology/topology.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/output/reporter.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"

namespace commsim {
namespace {

constexpr const char* kSummary =
    "Predict collective times on a topology with the closed-form alpha-beta-gamma model (no MPI, no GPU).\n"
    "The summary (the default for large sweeps) gives, per node count, the fastest of our schedules per\n"
    "size band with the crossover sizes, ring vs tree, the time of the smallest size and the busbw of the\n"
    "largest, and NCCL's own choice from NCCL's cost model on topologies with NCCL constants. The table\n"
    "(--format table, or --detail) gives every algorithm at every size: predicted time (us), algbw and\n"
    "busbw (GB/s, nccl-tests definitions), the predicted winner, then the crossover sizes.";

constexpr const char* kExamples =
    "commsim predict                      # summary: 1 to 64 nodes of dgx-h100, 8B to 4GiB\n"
    "commsim predict --nodes 16 --algorithms ring,tree --sizes 4GiB\n"
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


// One collective's candidates: ours (the hand-written schedules, which compete for the winner) and
// NCCL's own model (priced beside them, never the winner while ours are there).
struct Priced {
  Collective collective;
  std::vector<Candidate> ours;
  std::vector<Candidate> nccl;
  const std::vector<Candidate>& contenders() const { return ours.empty() ? nccl : ours; }
};

// A size-dependent label (the winner at a size) as bands: each band's label and the first size of
// the next band (0 for the last), the change found by bisection to within 1% between grid sizes.
struct Band {
  std::string label;
  Bytes next = 0;
};
std::vector<Band> bands(const std::vector<Bytes>& sizes, const std::function<std::string(Bytes)>& label) {
  std::vector<Band> out;
  std::string prev = label(sizes.front());
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    std::string next = label(sizes[i + 1]);
    if (next == prev) continue;
    Bytes lo = sizes[i], hi = sizes[i + 1];
    while (hi - lo > 1 && static_cast<double>(hi) > 1.01 * static_cast<double>(lo)) {
      Bytes mid = static_cast<Bytes>(std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
      if (mid <= lo || mid >= hi) mid = lo + (hi - lo) / 2;
      (label(mid) == prev ? lo : hi) = mid;
    }
    out.push_back({prev, hi});
    prev = std::move(next);
  }
  out.push_back({prev, 0});
  return out;
}

std::string fixed(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string busbw_text(const Settings& s, Collective c, int nodes, Bytes bytes, Seconds t) {
  if (t <= 0) return "-";
  const double gbps = static_cast<double>(bytes) / t / 1e9 * busbw_factor(c, nodes * s.gpus_per_node);
  return fixed(gbps, gbps < 10 ? "%.2f GB/s" : "%.0f GB/s");
}

std::string pad(std::string text, std::size_t width, bool right = false) {
  if (text.size() >= width) return text;
  return right ? std::string(width - text.size(), ' ') + text : text + std::string(width - text.size(), ' ');
}

// Sizes in the summary: two significant digits below 10 of a unit ("4.4MiB", "485KiB").
std::string short_bytes(Bytes bytes) { return format_bytes(bytes, 2); }

// "tree < 24KiB < ring": each label, and between two the size where the second takes over.
std::string band_text(const std::vector<Band>& bs) {
  std::string s;
  for (const Band& b : bs) {
    s += b.label;
    if (b.next) s += " < " + short_bytes(b.next) + " < ";
  }
  return s;
}

// NCCL's pick without the "nccl-" of the forced variants: "ring/LL128".
std::string nccl_pick_name(const Cost& c) {
  std::string a(to_string(c.algorithm));
  if (a.rfind("nccl-", 0) == 0) a = a.substr(5);
  return c.protocol == Protocol::None ? a : a + "/" + std::string(to_string(c.protocol));
}

// The summary: per collective, a table of our schedules and one of NCCL's own choice, one line per
// node count, then what the columns mean and where the full table is.
void print_summary(std::ostream& os, const Settings& s, const std::vector<Priced>& priced, std::size_t rows) {
  const Topology& t = s.topo;
  const Bytes small = s.sizes.front(), large = s.sizes.back();
  const std::string at_small = "time at " + short_bytes(small), at_large = "busbw at " + short_bytes(large);
  auto head = [&](const std::string& last) {
    return "# " + pad("nodes", 5, true) + "  " + pad("ranks", 5, true) + "  " + pad(at_small, 11, true) + "  " +
           pad(at_large, 14, true) + "  " + last + "\n";
  };
  auto row = [&](int nodes, Seconds t_small, Seconds t_large, Collective c, const std::string& rest) {
    return "  " + pad(std::to_string(nodes), 5, true) + "  " + pad(std::to_string(nodes * s.gpus_per_node), 5, true) +
           "  " + pad(format_time(t_small), 11, true) + "  " + pad(busbw_text(s, c, nodes, large, t_large), 14, true) +
           "  " + rest + "\n";
  };
  bool any_nccl = false, any_versus = false;
  for (const Priced& p : priced) {
    const Collective c = p.collective;
    os << "# " << to_string(c) << " on " << t.name << ": " << s.gpus_per_node
       << (t.gpu ? " x " + t.device_name : std::string(" ranks")) << " per node, " << to_string(s.dtype) << ", "
       << short_bytes(small) << " to " << short_bytes(large) << " (closed-form model)\n#\n";
    std::vector<Candidate> ring, tree;
    for (const Candidate& cand : p.ours) {
      if (cand.algorithm == Algorithm::Ring) ring.push_back(cand);
      if (cand.algorithm == Algorithm::Tree) tree.push_back(cand);
    }
    const bool versus = !ring.empty() && !tree.empty();
    any_versus = any_versus || versus;
    const std::vector<Candidate>& mine = p.contenders();
    // Per node count: ring vs tree (when both are there) and the fastest, by size.
    std::vector<std::string> versus_text, fastest_text;
    std::vector<Seconds> t_small, t_large;
    std::size_t versus_width = std::string("ring vs tree").size();
    for (int nodes : s.nodes) {
      auto best_of = [&](const std::vector<Candidate>& cands, Bytes b) {
        return best_candidate(t, c, nodes, s.gpus_per_node, b, cands, s.channels);
      };
      if (versus) {
        auto rb = bands(s.sizes, [&](Bytes b) {
          return best_of(ring, b).cost.time_s <= best_of(tree, b).cost.time_s ? "ring" : "tree";
        });
        versus_text.push_back(rb.size() == 1 ? rb.front().label + " at every size" : band_text(rb));
        versus_width = std::max(versus_width, versus_text.back().size());
      }
      fastest_text.push_back(band_text(bands(s.sizes, [&](Bytes b) { return candidate_name(best_of(mine, b).candidate); })));
      t_small.push_back(best_of(mine, small).cost.time_s);
      t_large.push_back(best_of(mine, large).cost.time_s);
    }
    os << (p.ours.empty() ? "# NCCL's algorithms named\n" : "# our schedules (what `commsim run` executes)\n")
       << head((versus ? pad("ring vs tree", versus_width) + "  " : "") + "fastest, by size");
    for (std::size_t i = 0; i < s.nodes.size(); ++i)
      os << row(s.nodes[i], t_small[i], t_large[i], c,
                (versus ? pad(versus_text[i], versus_width) + "  " : std::string()) + fastest_text[i]);
    if (!p.ours.empty() && !p.nccl.empty()) {
      any_nccl = true;
      os << "#\n# NCCL's own choice (NCCL's tuning model, priced with the topology's nccl: constants)\n"
         << head("NCCL picks, by size");
      for (int nodes : s.nodes) {
        auto pick = [&](Bytes b) {
          return closed_form(t, CostQuery{c, Algorithm::Nccl, Protocol::None, nodes, s.gpus_per_node, b, s.channels});
        };
        os << row(nodes, pick(small).time_s, pick(large).time_s, c,
                  band_text(bands(s.sizes, [&](Bytes b) { return nccl_pick_name(pick(b)); })));
      }
    }
    os << "#\n";
  }
  os << "# fastest, by size: the fastest at each size and, between two, the size where the next takes over;\n"
        "#   the time at the smallest size and the busbw (nccl-tests definition) at the largest are the fastest's.\n";
  if (any_versus) os << "# ring vs tree: the faster of our ring and our tree at each size, and the size where that changes.\n";
  if (any_nccl)
    os << "# NCCL picks: the algorithm/protocol NCCL's own tuning model chooses; `commsim run --algorithms nccl`\n"
          "#   measures it.\n";
  os << "# every algorithm at every size (" << rows << " rows): add --format table; into a file: --out pred.h5\n";
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
       "a preset name from configs/topologies (dgx-h100, dgx-a100, h200-node, gb200-nvl72, "
       "consumer-pcie-4090, local-cpu) or the path of a topology YAML file")
      ("gpus-per-node", po::value(&gpus_per_node)->value_name("N"),
       "ranks (GPUs) per node, at most the topology's (default: all of them)");
  add_sweep_options(cli.options(), sweep, /*with_nodes=*/true);
  cli.options().add_options()("dtype", po::value(&dtype_name)->default_value(dtype_name)->value_name("TYPE"),
                              "element type, for the element counts: float32, float64, int32, bfloat16, float16");
  add_output_options(cli.options(), output, /*with_resume=*/false);
  cli.options().add_options()("detail", po::bool_switch(&detail), "print the full table (the same as --format table)");
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

  // With `all` on a topology with NCCL constants, NCCL's own choice is priced beside our schedules.
  if (sel.all && s.topo.nccl.present)
    for (auto& [c, algs] : s.plan)
      if (has_closed_form(s.topo, c, Algorithm::Nccl, Protocol::None)) algs.push_back(Algorithm::Nccl);
  std::vector<Priced> priced;
  std::size_t rows = 0;
  for (const auto& [c, algs] : s.plan) {
    Priced p{c, {}, {}};
    for (const Candidate& cand : priceable_candidates(s, c, algs, skipped))
      (is_nccl_algorithm(cand.algorithm) ? p.nccl : p.ours).push_back(cand);
    rows += (p.ours.size() + p.nccl.size()) * s.sizes.size() * s.nodes.size();
    priced.push_back(std::move(p));
  }
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

  std::vector<std::string> notes;
  for (const Priced& pr : priced) {
    const Collective c = pr.collective;
    std::vector<Candidate> cands = pr.ours;
    cands.insert(cands.end(), pr.nccl.begin(), pr.nccl.end());
    for (int nodes : s.nodes) {
      std::vector<Candidate> winners;
      winners.reserve(s.sizes.size());
      for (Bytes bytes : s.sizes) {
        Choice best = best_candidate(s.topo, c, nodes, s.gpus_per_node, bytes, pr.contenders(), s.channels);
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
  if (summary) print_summary(std::cout, s, priced, rows);
  if (file) file->finish(RunStatus::Complete);
  return 0;
}

}  // namespace commsim
