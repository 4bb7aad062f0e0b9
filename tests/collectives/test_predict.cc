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

namespace commsim {
namespace {

std::uint64_t fingerprint(Algorithm a, int ranks, std::uint64_t bytes) {
  auto f = point_schedule_fingerprint(Collective::AllReduce, a, 1, ranks, bytes / 4, 4, 0, 0);
  EXPECT_TRUE(f.has_value()) << to_string(a) << " ranks=" << ranks;
  return f.value_or(0);
}

// At two ranks ring and Rabenseifner allreduce exchange the same two halves in the same two rounds:
// one schedule. At eight ranks they differ (7 + 7 ring steps against 3 + 3 halving and doubling).
TEST(ScheduleFingerprint, SameTrafficIsOneSchedule) {
  for (std::uint64_t bytes : {std::uint64_t{1024}, std::uint64_t{4} << 20}) {
    EXPECT_EQ(fingerprint(Algorithm::Ring, 2, bytes), fingerprint(Algorithm::Rabenseifner, 2, bytes)) << bytes;
    EXPECT_NE(fingerprint(Algorithm::Ring, 8, bytes), fingerprint(Algorithm::Rabenseifner, 8, bytes)) << bytes;
    EXPECT_NE(fingerprint(Algorithm::Ring, 2, bytes), fingerprint(Algorithm::Ring, 2, 2 * bytes)) << bytes;
  }
  // Recursive doubling at two ranks sends everything at once: another schedule than ring's halves.
  EXPECT_NE(fingerprint(Algorithm::Ring, 2, 1024), fingerprint(Algorithm::RecursiveDoubling, 2, 1024));
  // Nothing to rebuild: ranks not divisible by nodes, an algorithm without a generator.
  EXPECT_FALSE(point_schedule_fingerprint(Collective::AllReduce, Algorithm::Ring, 2, 3, 256, 4, 0, 0));
  EXPECT_FALSE(point_schedule_fingerprint(Collective::AllReduce, Algorithm::Mpi, 1, 2, 256, 4, 0, 0));
}

// The double tree at two ranks: each half reduced to one rank and sent back, ring's two rounds,
// as long as the data is one pipeline chunk; with more chunks it is a pipeline of many messages.
TEST(ScheduleFingerprint, TreeAtTwoRanksIsRingUntilItPipelines) {
  EXPECT_EQ(fingerprint(Algorithm::Tree, 2, 1024), fingerprint(Algorithm::Ring, 2, 1024));
  EXPECT_NE(fingerprint(Algorithm::Tree, 2, 4 << 20), fingerprint(Algorithm::Ring, 2, 4 << 20));
}

}  // namespace
}  // namespace commsim
