// build_and_price: the schedule a point runs, built once, and its price, the same as building and
// pricing it by hand with the chunk and channels the closed form assumes.
#include <gtest/gtest.h>

#include "collectives/predict.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/price.h"

namespace commsim {
namespace {

Topology host_topology() {
  Topology t;
  t.name = "uniform";
  t.gpu = false;
  t.ranks_per_node = 64;
  t.memory_bw_Bps = 1e30;
  t.intra = {"shared-memory", 2e-6, 10e9};
  t.reduce_bw_Bps = 20e9;
  return t;
}

TEST(BuildAndPrice, IsTheScheduleAndPriceOfTheClosedFormsChunk) {
  const Topology t = host_topology();
  const Placement pl = Placement::uniform(1, 4);
  const std::uint64_t count = (4u << 20) / 4;
  const PricedSchedule built = build_and_price(t, pl, Collective::Broadcast, Algorithm::Ring, count, 4, 1);
  const CostQuery q{Collective::Broadcast, Algorithm::Ring, Protocol::None, 1, 4, count * 4};
  EXPECT_EQ(built.request.pipeline_chunk_bytes, pipeline_chunk_bytes(t, q));
  EXPECT_EQ(built.request.root, 1);
  EXPECT_EQ(built.schedule.nranks, 4);
  EXPECT_EQ(built.schedule.count, count);
  ScheduleRequest by_hand = built.request;
  EXPECT_DOUBLE_EQ(built.time_s, price_schedule(make_schedule(by_hand), t, pl).time_s);
  EXPECT_GT(built.time_s, 0);
}

TEST(BuildAndPrice, AGivenChunkIsUsed) {
  const Topology t = host_topology();
  const Placement pl = Placement::uniform(1, 4);
  const PricedSchedule built =
      build_and_price(t, pl, Collective::Broadcast, Algorithm::Ring, (4u << 20) / 4, 4, 0, 64 << 10);
  EXPECT_EQ(built.request.pipeline_chunk_bytes, 64u << 10);
}

TEST(BuildAndPrice, AScheduleThatCannotBeBuiltThrows) {
  ASSERT_FALSE(applies(Collective::AllToAll, Algorithm::Tree));
  const Placement pl = Placement::uniform(1, 4);
  EXPECT_THROW(build_and_price(host_topology(), pl, Collective::AllToAll, Algorithm::Tree, 4 * 1024, 4, 0), Error);
}

}  // namespace
}  // namespace commsim
