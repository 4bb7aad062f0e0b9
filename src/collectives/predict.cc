#include "collectives/predict.h"

#include "model/cost/cost.h"
#include "model/price.h"

namespace commsim {

PricedSchedule build_and_price(const Topology& topology, const Placement& placement, Collective c, Algorithm a,
                               std::uint64_t count, std::uint32_t elem_size, int root, std::uint64_t chunk_bytes,
                               int channels) {
  const CostQuery query{c,       a, Protocol::None, placement.nnodes, placement.max_ranks_per_node(), count * elem_size,
                        channels};
  PricedSchedule out;
  out.request = ScheduleRequest{
      c,         a,    placement.nranks, count,
      elem_size, root, &placement,       chunk_bytes > 0 ? chunk_bytes : pipeline_chunk_bytes(topology, query)};
  out.request.channels = channels_for(topology, query);
  out.schedule = make_schedule(out.request);
  out.time_s = price_schedule(out.schedule, topology, placement).time_s;
  return out;
}

}  // namespace commsim
