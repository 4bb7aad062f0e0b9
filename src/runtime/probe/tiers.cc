#include "runtime/probe/tiers.h"

#include <algorithm>

namespace commsim {

std::vector<std::vector<int>> ranks_by_node(const Placement& placement) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(placement.nnodes));
  for (int r = 0; r < placement.nranks; ++r) out[placement.node_of_rank[r]].push_back(r);
  return out;
}

std::vector<ProbeTier> plan_probe_tiers(const Placement& placement, int rank) {
  const auto by_node = ranks_by_node(placement);
  std::vector<ProbeTier> tiers;
  ProbeTier intra;
  intra.name = "intra-node";
  for (const auto& node : by_node)
    if (node.size() >= 2 && intra.a < 0) intra.a = node[0], intra.b = node[1];
  for (const auto& node : by_node) {
    if (node.size() < 2) continue;
    intra.ring_ranks += static_cast<int>(node.size());
    for (std::size_t i = 0; i < node.size(); ++i)
      if (node[i] == rank) intra.ring = {node[(i + 1) % node.size()], node[(i + node.size() - 1) % node.size()]};
  }
  if (intra.a >= 0) tiers.push_back(intra);
  if (by_node.size() >= 2) {
    ProbeTier net;
    net.name = "network";
    net.a = by_node[0][0];
    net.b = by_node[1][0];
    const int nn = static_cast<int>(by_node.size());
    int common = placement.max_ranks_per_node();
    for (const auto& node : by_node) common = std::min<int>(common, static_cast<int>(node.size()));
    for (int n = 0; n < nn; ++n)
      for (int i = 0; i < common; ++i)
        if (by_node[n][i] == rank) net.ring = {by_node[(n + 1) % nn][i], by_node[(n + nn - 1) % nn][i]};
    net.ring_ranks = common * nn;
    tiers.push_back(net);
  }
  return tiers;
}

Role pair_role(const ProbeTier& tier, int rank) {
  if (rank == tier.a) return {tier.b, tier.b};
  if (rank == tier.b) return {tier.a, tier.a};
  return {};
}

}  // namespace commsim
