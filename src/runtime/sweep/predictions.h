#pragma once
// `commsim predict` as a library: every (collective, algorithm, protocol) of a sweep over node
// counts and sizes priced by the closed forms, handed to reporters as rows, with the predicted
// winner of each size and the crossover sizes in words. No MPI, no GPU.
#include <string>
#include <utility>
#include <vector>

#include "collectives/elements/dtype.h"
#include "model/cost/cost.h"
#include "model/select.h"
#include "model/topology/topology.h"
#include "runtime/output/reporter.h"

namespace commsim {

// "ring", "ring/LL128": a candidate as predict names it.
std::string candidate_name(const Candidate& c);

struct PredictSettings {
  Topology topo;
  // Ranks per node of every node count (1 to the topology's).
  int gpus_per_node = 0;
  std::vector<int> nodes;
  std::vector<Bytes> sizes;
  std::vector<std::pair<Collective, std::vector<Algorithm>>> plan;
  std::vector<Protocol> protocols;
  DType dtype = DType::Float32;
  int channels = 0;  // --channels (CostQuery::channels)
};


// Throws Error naming the option when the settings do not fit the topology.
void validate(const PredictSettings& s);

// One collective's candidates: ours (the hand-written schedules, which compete for the winner) and
// NCCL's own model (priced beside them, never the winner while ours are there).
struct PricedCollective {
  Collective collective;
  std::vector<Candidate> ours;
  std::vector<Candidate> nccl;
  const std::vector<Candidate>& contenders() const { return ours.empty() ? nccl : ours; }
};

// The candidates of each collective of s.plan that the model can price; what it cannot is added to
// `skipped` ("allreduce nccl-nvls: ..."). Throws Error when it can price none of a collective's.
std::vector<PricedCollective> priced_collectives(const PredictSettings& s, std::vector<std::string>& skipped);

// Every point of the sweep to `out` (in collective, node count, size, candidate order), each with
// the predicted winner of its size; returns the crossover lines ("on 16 nodes (128 ranks),
// allreduce: tree beats ring below 2MiB"). A point the model refuses (a forced NCCL algorithm NCCL
// cannot run at that node count) is left out and said once per node count in `skipped`.
std::vector<std::string> predict_points(const PredictSettings& s, const std::vector<PricedCollective>& priced,
                                        Reporter& out, std::vector<std::string>& skipped);

}  // namespace commsim
