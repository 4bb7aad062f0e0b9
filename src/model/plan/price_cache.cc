#include "model/plan/price_cache.h"

namespace commsim::plan_detail {

const Choice& PriceCache::price(Collective c, const GroupPlacement& g, Bytes bytes) {
  ++lookups_;
  Key key{c, g.nodes, g.ranks_per_node, g.nodes > 1 ? g.sharing : 1, bytes};
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  // The groups that use a node's network at once share its NICs: closed_form() gives a group of
  // fewer ranks per node than the node's GPUs only the NICs next to its GPUs (model/cost/shape.h).
  Choice choice = best_candidate(topo_, c, g.nodes, g.ranks_per_node, bytes, candidates_);
  // NCCL's own choice: name the algorithm and protocol its model picked (send/recv and all-to-all
  // are point-to-point in NCCL, with no algorithm to name).
  const bool p2p = c == Collective::SendRecv || c == Collective::AllToAll;
  if (!p2p && choice.candidate.algorithm == Algorithm::Nccl && is_nccl_algorithm(choice.cost.algorithm) &&
      choice.cost.algorithm != Algorithm::Nccl)
    choice.candidate = {choice.cost.algorithm, choice.cost.protocol};
  return cache_.emplace(key, choice).first->second;
}

std::size_t PriceCache::KeyHash::operator()(const Key& k) const {
  std::size_t h = static_cast<std::size_t>(std::get<0>(k));
  h = h * 1000003u ^ static_cast<std::size_t>(std::get<1>(k));
  h = h * 1000003u ^ static_cast<std::size_t>(std::get<2>(k));
  h = h * 1000003u ^ static_cast<std::size_t>(std::get<3>(k));
  h = h * 1000003u ^ std::hash<Bytes>()(std::get<4>(k));
  return h;
}

const GroupPlacement& PlacementCache::get(int size, int stride) {
  auto key = std::make_pair(size, stride);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(key, group_placement(size, stride, ranks_per_node_, total_ranks_)).first->second;
}

}  // namespace commsim::plan_detail
