#include "model/predict_sweep.h"

#include <fmt/format.h>

#include "model/error.h"

namespace commsim {
namespace {

// The candidates of one collective that the model can price; the others are reported once.
std::vector<Candidate> priceable_candidates(const PredictSweep& s, Collective c, const std::vector<Algorithm>& algs,
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

// "on 16 nodes, allreduce: tree beats ring below 2MiB" for every change of winner along the sizes.
std::vector<std::string> crossover_lines(const PredictSweep& s, Collective c, int nodes,
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

std::string candidate_name(const Candidate& c) {
  if (c.protocol == Protocol::None) return std::string(to_string(c.algorithm));
  return fmt::format("{}/{}", to_string(c.algorithm), to_string(c.protocol));
}

void validate(const PredictSweep& s) {
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

std::vector<SweepCandidates> priced_collectives(const PredictSweep& s, std::vector<std::string>& skipped) {
  std::vector<SweepCandidates> priced;
  for (const auto& [c, algs] : s.plan) {
    SweepCandidates p{c, {}, {}};
    for (const Candidate& cand : priceable_candidates(s, c, algs, skipped))
      (is_nccl_algorithm(cand.algorithm) ? p.nccl : p.ours).push_back(cand);
    priced.push_back(std::move(p));
  }
  return priced;
}

PredictedRows predict_sweep(const PredictSweep& s, const std::vector<SweepCandidates>& priced) {
  PredictedRows rows;
  for (const SweepCandidates& pr : priced) {
    const Collective c = pr.collective;
    std::vector<Candidate> cands = pr.ours;
    cands.insert(cands.end(), pr.nccl.begin(), pr.nccl.end());
    for (int nodes : s.nodes) {
      std::vector<Candidate> winners;
      winners.reserve(s.sizes.size());
      for (Bytes bytes : s.sizes) {
        Choice best = best_candidate(s.topo, c, nodes, s.gpus_per_node, bytes, pr.contenders(), s.channels);
        winners.push_back(best.candidate);
        for (const Candidate& cand : cands) {
          Cost cost;
          try {
            cost = closed_form(s.topo,
                               CostQuery{c, cand.algorithm, cand.protocol, nodes, s.gpus_per_node, bytes, s.channels});
          } catch (const Error& e) {
            // A forced NCCL algorithm NCCL cannot run at this node count (NVLS across nodes without
            // SHARP, PAT with several GPUs per node): said once, the other points go on.
            const std::string line = std::string(to_string(c)) + " " + candidate_name(cand) + " on " +
                                     std::to_string(nodes) + (nodes == 1 ? " node: " : " nodes: ") + e.what();
            if (rows.skipped.empty() || rows.skipped.back() != line) rows.skipped.push_back(line);
            continue;
          }
          rows.points.push_back({c, cand, nodes, nodes * s.gpus_per_node, bytes, cost, best.candidate});
        }
      }
      for (std::string& line : crossover_lines(s, c, nodes, winners)) rows.crossovers.push_back(std::move(line));
    }
  }
  return rows;
}

}  // namespace commsim
