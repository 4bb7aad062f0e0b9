#include "collectives/predict.h"

#include <algorithm>
#include <exception>
#include <tuple>
#include <vector>

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

namespace commsim {
namespace {

struct Fnv1a {
  std::uint64_t h = 14695981039346656037ull;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
};

}  // namespace

std::uint64_t schedule_fingerprint(const Schedule& schedule) {
  Fnv1a f;
  f.add(static_cast<std::uint64_t>(schedule.nranks));
  f.add(schedule.elem_size);
  std::vector<std::tuple<int, int, std::uint64_t>> ops;  // kind, peer, count
  for (const RankProgram& rank : schedule.ranks) {
    f.add(rank.rounds.size());
    for (std::size_t i = 0; i < rank.rounds.size(); ++i) {
      const Round& round = rank.rounds[i];
      f.add(round.step == Round::kStepIsIndex ? i : round.step);
      ops.clear();
      for (const Op& op : round.ops) {
        const bool transfer = op.kind == OpKind::Send || op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce;
        const std::uint64_t count = op.kind == OpKind::Send ? op.src.count : op.dst.count;
        ops.emplace_back(static_cast<int>(op.kind), transfer ? op.peer : -1, count);
      }
      std::sort(ops.begin(), ops.end());  // the ops of a round run at once: their order says nothing
      f.add(ops.size());
      for (const auto& [kind, peer, count] : ops) {
        f.add(static_cast<std::uint64_t>(kind));
        f.add(static_cast<std::uint64_t>(static_cast<std::int64_t>(peer)));
        f.add(count);
      }
    }
  }
  return f.h;
}

std::optional<std::uint64_t> point_schedule_fingerprint(Collective c, Algorithm a, int nodes, int ranks,
                                                        std::uint64_t count, std::uint32_t elem_size, int root,
                                                        std::uint64_t chunk_bytes) {
  if (!has_generator(c, a) || nodes < 1 || ranks < 1 || ranks % nodes != 0 || ranks > kFingerprintMaxRanks ||
      elem_size == 0)
    return std::nullopt;
  const Placement placement = Placement::uniform(nodes, ranks / nodes);
  ScheduleRequest request{c, a, ranks, count, elem_size, root, &placement, chunk_bytes};
  try {
    return schedule_fingerprint(make_schedule(request));
  } catch (const std::exception&) {
    return std::nullopt;  // does not apply at this rank count (a power of two needed, ...)
  }
}

}  // namespace commsim
