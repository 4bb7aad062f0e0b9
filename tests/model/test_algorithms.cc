// The table of model/algorithms.h: one row per (collective, algorithm), every hand-written row with
// a generator (src/collectives/registry.cc) and a closed form, and what each row says holds in the
// closed forms and the schedules.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/generators.h"
#include "model/algorithms.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

std::string name(Collective c, Algorithm a) {
  return std::string(to_string(c)) + " " + std::string(to_string(a));
}

TEST(AlgorithmTable, OneRowPerPair) {
  std::set<std::pair<Collective, Algorithm>> seen;
  for (const AlgorithmRow& row : algorithm_table()) {
    EXPECT_TRUE(seen.insert({row.collective, row.algorithm}).second) << name(row.collective, row.algorithm);
    EXPECT_EQ(find_algorithm(row.collective, row.algorithm), &row);
  }
  for (Collective c : kAllCollectives)
    for (Algorithm a : kAllAlgorithms) EXPECT_EQ(applies(c, a), seen.count({c, a}) == 1) << name(c, a);
}

// A generator without a row, or a hand-written row without a generator, fails here.
TEST(AlgorithmTable, HandWrittenRowsAreExactlyTheGenerators) {
  for (Collective c : kAllCollectives)
    for (Algorithm a : kAllAlgorithms) {
      const AlgorithmRow* row = find_algorithm(c, a);
      EXPECT_EQ(has_generator(c, a), row != nullptr && row->hand_written()) << name(c, a);
    }
}

TEST(AlgorithmTable, HandWrittenAlgorithmsAreTheEnumsHandWrittenValues) {
  const std::vector<Algorithm> expected(kHandWrittenAlgorithms.begin(), kHandWrittenAlgorithms.end());
  EXPECT_EQ(hand_written_algorithms(), expected);
  // An algorithm is hand-written for every collective it applies to, or for none.
  for (const AlgorithmRow& row : algorithm_table())
    EXPECT_EQ(row.hand_written(), is_hand_written(row.algorithm)) << name(row.collective, row.algorithm);
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c)) EXPECT_TRUE(find_algorithm(c, a)->hand_written());
}

TEST(AlgorithmTable, FlagsAgreeWithTheKindOfRow) {
  for (const AlgorithmRow& row : algorithm_table()) {
    const std::string what = name(row.collective, row.algorithm);
    EXPECT_EQ(row.nccl_model(), is_nccl_algorithm(row.algorithm)) << what;
    if (row.nccl_model()) {
      EXPECT_TRUE(row.protocols()) << what;
    }
    if (!row.hand_written()) {
      EXPECT_EQ(row.copies, nullptr) << what;
      EXPECT_FALSE(row.pipelined() || row.takes_channels()) << what;
    }
    // The pipelines price their copies in their stages.
    if (row.pipelined()) {
      EXPECT_EQ(row.copies, nullptr) << what;
    }
    EXPECT_EQ(is_pipelined(row.collective, row.algorithm), row.pipelined()) << what;
    EXPECT_EQ(takes_channels(row.collective, row.algorithm), row.takes_channels()) << what;
  }
}

// Every row with a model is priced; the protocols are accepted exactly where the row says.
TEST(AlgorithmTable, ClosedFormsFollowTheRows) {
  const Topology t = load_topology(resolve_topology_path("dgx-h100"));
  ASSERT_TRUE(t.nccl.present);
  for (const AlgorithmRow& row : algorithm_table()) {
    const Collective c = row.collective;
    const Algorithm a = row.algorithm;
    const std::string what = name(c, a);
    const bool modelled = row.hand_written() || row.nccl_model();
    EXPECT_EQ(has_closed_form(t, c, a, Protocol::None), modelled) << what;
    EXPECT_EQ(has_closed_form(t, c, a, Protocol::LL128), modelled && row.protocols()) << what;
    if (!modelled) continue;
    const CostQuery q{c, a, Protocol::None, 2, 8, Bytes{1} << 20};
    // NCCL runs some of its algorithms only on some machines (NVLS across nodes needs CollNet,
    // CollNet needs SHARP, PAT one GPU per node): those say why instead of pricing.
    const bool nccl_may_refuse = row.nccl_model() && a != Algorithm::Nccl && a != Algorithm::NcclRing;
    if (nccl_may_refuse) {
      try {
        EXPECT_GT(closed_form(t, q).time_s, 0.0) << what;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("NCCL"), std::string::npos) << what << ": " << e.what();
      }
    } else {
      EXPECT_GT(closed_form(t, q).time_s, 0.0) << what;
    }
    EXPECT_EQ(pipeline_chunk_bytes(t, q) > 0, row.pipelined()) << what;
  }
}

// The schedules take channels exactly where the row says.
TEST(AlgorithmTable, SchedulesTakeChannelsWhereTheRowsSay) {
  for (const AlgorithmRow& row : algorithm_table()) {
    if (!row.hand_written()) continue;
    ScheduleRequest request;
    request.collective = row.collective;
    request.algorithm = row.algorithm;
    request.nranks = 4;
    request.count = 1 << 12;
    request.channels = 2;
    EXPECT_EQ(make_schedule(request).channels, row.takes_channels() ? 2 : 1) << name(row.collective, row.algorithm);
  }
}

}  // namespace
}  // namespace commsim
