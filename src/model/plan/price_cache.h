#pragma once
// Caches of one plan: layouts share most of their collectives (the same TP allreduce appears in
// every layout with that TP and micro-batch), so each distinct (collective, placement, bytes) is
// priced once, and each group shape is placed once.
#include <cstddef>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/plan/plan.h"

namespace commsim::plan_detail {

class PriceCache {
 public:
  // Keeps references: topo and candidates must outlive the cache.
  PriceCache(const Topology& topo, const std::vector<Candidate>& candidates) : topo_(topo), candidates_(candidates) {}

  // The fastest candidate for collective c of `bytes` on group placement g.
  const Choice& price(Collective c, const GroupPlacement& g, Bytes bytes);
  std::size_t distinct() const { return cache_.size(); }  // best_candidate calls
  std::size_t lookups() const { return lookups_; }        // price calls

 private:
  using Key = std::tuple<Collective, int, int, int, Bytes>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };

  const Topology& topo_;
  const std::vector<Candidate>& candidates_;
  std::unordered_map<Key, Choice, KeyHash> cache_;
  std::size_t lookups_ = 0;
};

// group_placement is evaluated for few distinct (size, stride) pairs per plan.
class PlacementCache {
 public:
  PlacementCache(int ranks_per_node, int total_ranks) : ranks_per_node_(ranks_per_node), total_ranks_(total_ranks) {}
  const GroupPlacement& get(int size, int stride);

 private:
  int ranks_per_node_, total_ranks_;
  std::map<std::pair<int, int>, GroupPlacement> cache_;
};

}  // namespace commsim::plan_detail
