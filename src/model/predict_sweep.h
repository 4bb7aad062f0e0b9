#pragma once
// `commsim predict` as pure data: every (collective, algorithm, protocol) of a sweep over node
// counts and sizes priced by the closed forms (model/cost/cost.h), with the predicted winner of
// each size and the crossover sizes in words. No I/O: the command (runtime/sweep/predictions.h)
// and the Python module (src/python/) turn the rows into table rows or a DataFrame.
#include <string>
#include <utility>
#include <vector>

#include "model/cost/cost.h"
#include "model/select.h"
#include "model/topology/topology.h"

namespace commsim {

// "ring", "ring/LL128": a candidate as predict names it.
std::string candidate_name(const Candidate& c);

struct PredictSweep {
  Topology topo;
  // Ranks per node of every node count (1 to the topology's).
  int gpus_per_node = 0;
  std::vector<int> nodes;
  std::vector<Bytes> sizes;
  std::vector<std::pair<Collective, std::vector<Algorithm>>> plan;
  std::vector<Protocol> protocols;
  int channels = 0;  // CostQuery::channels; 0: the topology's default
};

// Throws Error naming the option (--gpus-per-node, --nodes, --protocols) when the sweep does not
// fit the topology.
void validate(const PredictSweep& s);

// One collective's candidates: ours (the hand-written schedules, which compete for the winner) and
// NCCL's own model (priced beside them, never the winner while ours are there).
struct SweepCandidates {
  Collective collective;
  std::vector<Candidate> ours;
  std::vector<Candidate> nccl;
  const std::vector<Candidate>& contenders() const { return ours.empty() ? nccl : ours; }
};

// The candidates of each collective of s.plan that the model can price; what it cannot is added to
// `skipped` ("allreduce nccl-nvls: ..."). Throws Error when it can price none of a collective's.
std::vector<SweepCandidates> priced_collectives(const PredictSweep& s, std::vector<std::string>& skipped);

// One priced point of the sweep.
struct PredictedPoint {
  Collective collective = Collective::AllReduce;
  Candidate candidate;
  int nodes = 1;
  int ranks = 1;  // nodes * gpus_per_node
  Bytes bytes = 0;
  Cost cost;         // time_s; for Algorithm::Nccl the algorithm and protocol NCCL's model picks
  Candidate winner;  // the fastest contender at this (collective, nodes, bytes)
};

struct PredictedRows {
  std::vector<PredictedPoint> points;  // collective, node count, size, candidate order
  // "on 16 nodes (128 ranks), allreduce: tree beats ring below 2MiB", per change of winner.
  std::vector<std::string> crossovers;
  // A point the model refuses (a forced NCCL algorithm NCCL cannot run at that node count) is left
  // out and said once per node count here.
  std::vector<std::string> skipped;
};

// Every point of the sweep with its winner, and the crossover lines.
PredictedRows predict_sweep(const PredictSweep& s, const std::vector<SweepCandidates>& priced);

}  // namespace commsim
