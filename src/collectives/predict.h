#pragma once
// A hand-written point's schedule, built once and priced once. `run` plans every point with it and
// then uses the same schedule three ways: its price is the point's prediction, the prices of the
// algorithms at one size pick the model's winner, and the schedule itself is what the executor runs.
#include <cstdint>

#include "collectives/generators.h"
#include "model/placement.h"
#include "model/schedule.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {

struct PricedSchedule {
  ScheduleRequest request;  // what was built (its chunk and channels resolved)
  Schedule schedule;
  Seconds time_s = 0;  // price_schedule's time on the topology it was priced on
};

// Builds the schedule of hand-written algorithm `a` for collective `c`: `count` elements of
// `elem_size` bytes, `root`, the ranks of `placement`; pipelined with `chunk_bytes` (0: the chunk
// the closed form assumes on `topology`, pipeline_chunk_bytes in model/cost/cost.h) and on
// `channels` (0: the topology's default, channels_for); then prices it on `topology`, which must
// already carry the transport's values (with_transport). Throws Error when the schedule cannot be
// built (an algorithm that does not apply, or needs a power-of-two rank count).
PricedSchedule build_and_price(const Topology& topology, const Placement& placement, Collective c, Algorithm a,
                               std::uint64_t count, std::uint32_t elem_size, int root, std::uint64_t chunk_bytes = 0,
                               int channels = 0);

}  // namespace commsim
