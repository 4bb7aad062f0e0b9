#pragma once
// Prices a schedule on a topology: each transfer costs alpha + bytes * beta of the tier it crosses
// (same node or network), transfers that share a rank's link or a node's NICs share their
// bandwidth, reductions cost bytes * gamma, local copies bytes / memory bandwidth. Ranks advance
// round by round and wait only for their own transfers (a discrete-event simulation of the
// schedule). On a uniform topology this equals the closed form of model/cost/cost.h.
#include "model/placement.h"
#include "model/schedule.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {

struct PriceBreakdown {
  Seconds time_s = 0;       // completion time of the slowest rank
  Seconds copy_s = 0;       // time spent in local copies on the slowest rank's critical path (included in time_s)
  std::uint64_t messages = 0;        // transfers in the schedule
  std::uint64_t intra_bytes = 0;     // bytes sent between ranks of one node
  std::uint64_t inter_bytes = 0;     // bytes sent across the network
};

// placement.nranks must equal schedule.nranks.
PriceBreakdown price_schedule(const Schedule& schedule, const Topology& topo, const Placement& placement);

}  // namespace commsim
