#pragma once
// A hand-written point's schedule, built once and priced once. `run` plans every point with it and
// then uses the same schedule three ways: its price is the point's prediction, the prices of the
// algorithms at one size pick the model's winner, and the schedule itself is what the executor runs.
#include <cstdint>
#include <optional>

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

// The traffic of a schedule: per rank, per round (and its step), the multiset of (op kind, peer,
// element count) — which ranks exchange how much in which round and how much local work each
// round does, not which buffer offsets move. Two schedules with the same fingerprint move the same
// messages in the same rounds, so they cost the same and no measurement can tell them apart (at
// two ranks, ring and Rabenseifner allreduce are one schedule). An FNV-1a hash of that traffic.
std::uint64_t schedule_fingerprint(const Schedule& schedule);

// The fingerprint of the schedule a stored point ran: `ranks` placed evenly on `nodes` (block
// order), `count` elements of `elem_size` bytes, the pipeline chunk it ran with (0: the generator's
// default), one channel. nullopt when that cannot be rebuilt (an algorithm that does not apply,
// ranks not divisible by nodes, more than kFingerprintMaxRanks ranks: the schedule would be large
// and identical schedules are a matter of few ranks).
inline constexpr int kFingerprintMaxRanks = 256;
std::optional<std::uint64_t> point_schedule_fingerprint(Collective c, Algorithm a, int nodes, int ranks,
                                                        std::uint64_t count, std::uint32_t elem_size, int root,
                                                        std::uint64_t chunk_bytes);

}  // namespace commsim
