#pragma once
// Algorithm selection and crossover sizes on the closed-form model.
#include <optional>
#include <vector>

#include "model/cost/cost.h"

namespace commsim {

struct Candidate {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::None;
};

// The fastest candidate for (collective, nodes, ranks_per_node, bytes); ties go to the earlier
// candidate. Candidates that do not apply to the collective are skipped.
struct Choice {
  Candidate candidate;
  Cost cost;
};
// `channels`: CostQuery::channels (0: the topology's default).
Choice best_candidate(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes,
                      const std::vector<Candidate>& candidates, int channels = 0);

// Sizes where the faster of a and b changes, between lo and hi bytes, found by bisection to within
// 1% (or 1 byte). `below` is the winner just below the crossover.
struct Crossover {
  Bytes bytes = 0;
  Candidate below;
  Candidate above;
};
std::vector<Crossover> crossovers(const Topology& topo, Collective c, int nodes, int ranks_per_node,
                                  const Candidate& a, const Candidate& b, Bytes lo, Bytes hi, int channels = 0);

}  // namespace commsim
