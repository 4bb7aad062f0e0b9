#pragma once
// Which ranks `commsim probe` pairs up on each tier of the machine, from the placement of ranks on
// hosts alone (no MPI here, so the plan is tested directly).
//  intra-node: the first node with two ranks; its first two ranks form the pair, and the ring shift
//              runs on every node with two ranks or more, over its own ranks.
//  network:    rank 0 and the first rank of the next node form the pair; the ring shift sends from
//              each rank to the rank of the same local index on the next node (only the local
//              indices every node has take part).
#include <string>
#include <vector>

#include "model/placement.h"

namespace commsim {

// Who does what in one measurement: a rank sends to `to` and receives from `from` (-1: none).
struct Role {
  int to = -1;
  int from = -1;
  bool active() const { return to >= 0 || from >= 0; }
};

struct ProbeTier {
  std::string name;    // "intra-node" or "network"
  int a = -1, b = -1;  // the pair of ranks of the ping-pong and stream
  Role ring;           // this rank's role in the ring shift
  int ring_ranks = 0;  // ranks taking part in the ring shift
};

// The ranks of each node, in rank order.
std::vector<std::vector<int>> ranks_by_node(const Placement& placement);

// The tiers there is something to measure on, as seen by `rank` (its ring role differs per rank):
// none with one rank per node on one node; intra-node needs a node with two ranks, network two nodes.
std::vector<ProbeTier> plan_probe_tiers(const Placement& placement, int rank);

// `rank`'s role in the pair of `tier`: the two ranks of the pair send to each other; the others idle.
Role pair_role(const ProbeTier& tier, int rank);

}  // namespace commsim
