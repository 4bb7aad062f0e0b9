#include "model/placement.h"

#include <algorithm>
#include <map>

#include "model/error.h"

namespace commsim {

Placement Placement::uniform(int nodes, int per_node) {
  if (nodes < 1 || per_node < 1)
    throw Error("placement needs at least one node and one rank per node (got " + std::to_string(nodes) +
                " nodes x " + std::to_string(per_node) + " ranks)");
  Placement p;
  p.nranks = nodes * per_node;
  p.nnodes = nodes;
  p.node_of_rank.resize(p.nranks);
  p.local_rank.resize(p.nranks);
  p.node_size.assign(nodes, per_node);
  for (int r = 0; r < p.nranks; ++r) {
    p.node_of_rank[r] = r / per_node;
    p.local_rank[r] = r % per_node;
  }
  return p;
}

Placement Placement::from_hostnames(const std::vector<std::string>& hostname_of_rank) {
  if (hostname_of_rank.empty()) throw Error("placement needs at least one rank");
  Placement p;
  p.nranks = static_cast<int>(hostname_of_rank.size());
  std::map<std::string, int> index;
  for (const auto& h : hostname_of_rank) {
    auto [it, inserted] = index.emplace(h, p.nnodes);
    if (inserted) {
      ++p.nnodes;
      p.node_size.push_back(0);
    }
    p.node_of_rank.push_back(it->second);
    p.local_rank.push_back(p.node_size[it->second]++);
  }
  return p;
}

int Placement::max_ranks_per_node() const { return node_size.empty() ? 0 : *std::max_element(node_size.begin(), node_size.end()); }

bool Placement::is_uniform() const {
  return std::all_of(node_size.begin(), node_size.end(), [&](int s) { return s == node_size.front(); });
}

}  // namespace commsim
