#pragma once
// Which node each rank runs on. The model prices every message by whether its two ends share a
// node; the runtime builds the placement from the real hostnames of the ranks.
#include <string>
#include <vector>

namespace commsim {

struct Placement {
  int nranks = 0;
  int nnodes = 0;
  std::vector<int> node_of_rank;  // [rank] -> node index 0..nnodes-1
  std::vector<int> local_rank;    // [rank] -> index among the ranks of its node
  std::vector<int> node_size;     // [node] -> ranks on that node

  // nodes x per_node ranks, block order (ranks 0..per_node-1 on node 0, ...).
  static Placement uniform(int nodes, int per_node);
  // Groups ranks by hostname, nodes numbered in order of first appearance.
  static Placement from_hostnames(const std::vector<std::string>& hostname_of_rank);

  bool same_node(int a, int b) const { return node_of_rank[a] == node_of_rank[b]; }
  // Largest number of ranks on one node.
  int max_ranks_per_node() const;
  // True when every node holds the same number of ranks.
  bool is_uniform() const;
};

}  // namespace commsim
