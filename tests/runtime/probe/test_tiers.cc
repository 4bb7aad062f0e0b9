// Which ranks the probe pairs up on each tier, from the placement alone.
#include <gtest/gtest.h>

#include "runtime/probe/tiers.h"

namespace commsim {
namespace {

TEST(ProbeTiers, OneRankPerNodeOnOneNodeHasNothingToMeasure) {
  EXPECT_TRUE(plan_probe_tiers(Placement::from_hostnames({"a"}), 0).empty());
}

TEST(ProbeTiers, OneNodeHasOnlyTheIntraNodeTierWithARingOverItsRanks) {
  const Placement p = Placement::from_hostnames({"a", "a", "a"});
  const auto tiers = plan_probe_tiers(p, 1);
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].name, "intra-node");
  EXPECT_EQ(tiers[0].a, 0);
  EXPECT_EQ(tiers[0].b, 1);
  EXPECT_EQ(tiers[0].ring_ranks, 3);
  EXPECT_EQ(tiers[0].ring.to, 2);
  EXPECT_EQ(tiers[0].ring.from, 0);
}

TEST(ProbeTiers, TwoNodesPairTheFirstRanksAndRingTheSameLocalIndex) {
  // Node a: ranks 0, 2; node b: ranks 1, 3, 4 (only local indices 0 and 1 take part in the ring).
  const Placement p = Placement::from_hostnames({"a", "b", "a", "b", "b"});
  const auto tiers = plan_probe_tiers(p, 3);
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0].name, "intra-node");
  EXPECT_EQ(tiers[0].a, 0);
  EXPECT_EQ(tiers[0].b, 2);
  EXPECT_EQ(tiers[0].ring_ranks, 5);
  const ProbeTier& net = tiers[1];
  EXPECT_EQ(net.name, "network");
  EXPECT_EQ(net.a, 0);
  EXPECT_EQ(net.b, 1);
  EXPECT_EQ(net.ring_ranks, 4);
  EXPECT_EQ(net.ring.to, 2);  // rank 3 is node b's local index 1; node a's index 1 is rank 2
  EXPECT_EQ(net.ring.from, 2);
  EXPECT_FALSE(plan_probe_tiers(p, 4)[1].ring.active());  // local index 2 exists on node b only
}

TEST(ProbeTiers, OnlyThePairTakesPartInThePairRole) {
  ProbeTier t;
  t.a = 0;
  t.b = 3;
  EXPECT_EQ(pair_role(t, 0).to, 3);
  EXPECT_EQ(pair_role(t, 3).from, 0);
  EXPECT_FALSE(pair_role(t, 1).active());
}

}  // namespace
}  // namespace commsim
