// The planning library as `commsim plan` calls it: the candidate algorithms, the compute rate, the
// ranking order, and what plan_layouts says with its numbers (assumptions, warnings, exclusions),
// on the preset topologies and models.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "plan_test_util.h"

namespace commsim {
namespace {

using test::preset_model;
using test::preset_topology;

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, needle); });
}

// Llama 3 70B at 8K tokens on 16 DGX H100 nodes, with the options `commsim plan` defaults to.
PlanOptions llama_options() {
  PlanOptions o;
  o.nodes = 16;
  o.global_batch = 1024;
  o.micro_batch = 1;
  o.seq = 8192;
  o.sequence_parallel = true;
  o.recompute = Recompute::Selective;
  o.zero = 1;
  o.max_virtual_stages = kDefaultMaxVirtualStages;
  o.checkpoint_every = kDefaultCheckpointEvery;
  return o;
}

bool has(const std::vector<Candidate>& cs, Algorithm a, Protocol p = Protocol::None) {
  return std::any_of(cs.begin(), cs.end(), [&](const Candidate& c) { return c.algorithm == a && c.protocol == p; });
}

TEST(PlanCandidates, NamedAlgorithmsKeepDirectForThePipeline) {
  const Topology topo = preset_topology("dgx-h100");
  std::vector<Candidate> ring = candidates_for({Algorithm::Ring}, topo);
  EXPECT_TRUE(has(ring, Algorithm::Ring));
  EXPECT_TRUE(has(ring, Algorithm::Direct)) << "pipeline send/recv needs an algorithm that runs it";

  std::vector<Candidate> nccl = candidates_for({Algorithm::NcclRing}, topo);
  for (Protocol p : kNcclProtocols) EXPECT_TRUE(has(nccl, Algorithm::NcclRing, p));
  EXPECT_TRUE(std::any_of(nccl.begin(), nccl.end(),
                          [](const Candidate& c) { return applies(Collective::SendRecv, c.algorithm); }));

  EXPECT_EQ(our_candidates(topo).size(), kHandWrittenAlgorithms.size() + 2 * kNcclProtocols.size());
  ASSERT_EQ(default_candidates(topo).size(), 1u);
  EXPECT_EQ(default_candidates(topo).front().algorithm, Algorithm::Nccl) << "NCCL's choice, as training runs";
  EXPECT_FALSE(prices_with_nccl_choice(preset_topology("local-cpu")));
}

TEST(PlanCandidates, NcclNeedsTheTopologysNcclConstants) {
  Topology topo = preset_topology("dgx-h100");
  topo.nccl.present = false;
  try {
    candidates_for({Algorithm::NcclTree}, topo);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "has no NCCL constants")) << e.what();
  }
}

TEST(PlanComputeRate, PeakTimesUtilisationUnlessGiven) {
  const Topology topo = preset_topology("dgx-h100");
  PlanOptions o = llama_options();
  o.rank_by = RankBy::Step;
  std::string note = apply_compute_rate(topo, 0.5, false, o);
  EXPECT_DOUBLE_EQ(o.gpu_tflops, topo.peak_tflops * 0.5);
  EXPECT_EQ(o.rank_by, RankBy::Step);
  EXPECT_TRUE(contains(note, "989 TFLOP/s peak (device.peak_tflops of 'dgx-h100') x 50% (--mfu) = 494 TFLOP/s"))
      << note;

  PlanOptions given = llama_options();
  given.gpu_tflops = 400;
  note = apply_compute_rate(topo, 0.5, false, given);
  EXPECT_DOUBLE_EQ(given.gpu_tflops, 400);
  EXPECT_EQ(note, "compute rate: 400 TFLOP/s per GPU (--gpu-tflops)");
}

TEST(PlanComputeRate, WithoutAPeakRankByStepFallsBackUnlessAskedFor) {
  Topology topo = preset_topology("dgx-h100");
  topo.peak_tflops = 0;
  PlanOptions o = llama_options();
  o.rank_by = RankBy::Step;
  std::string note = apply_compute_rate(topo, 0.5, false, o);
  EXPECT_EQ(o.rank_by, RankBy::Comm);
  EXPECT_EQ(o.gpu_tflops, 0);
  EXPECT_TRUE(contains(note, "no compute estimate, ranked by communication")) << note;

  PlanOptions asked = llama_options();
  asked.rank_by = RankBy::Step;
  EXPECT_THROW(apply_compute_rate(topo, 0.5, true, asked), Error);
}

TEST(PlanRanking, ByStepThenCommOrByCommThenBubble) {
  LayoutPlan a, b;
  a.comm_s = 1.0;
  b.comm_s = 2.0;
  a.step_s = 3.0;
  b.step_s = 2.0;
  EXPECT_TRUE(ranks_before(a, b, RankBy::Comm));
  EXPECT_TRUE(ranks_before(b, a, RankBy::Step));
  b.comm_s = 1.0;
  a.bubble_fraction = 0.1;
  b.bubble_fraction = 0.2;
  EXPECT_TRUE(ranks_before(a, b, RankBy::Comm));
  EXPECT_FALSE(ranks_before(b, a, RankBy::Comm));
}

TEST(PlanLayouts, RanksLayoutsAndStatesWhatItAssumes) {
  const Topology topo = preset_topology("dgx-h100");
  PlanOptions o = llama_options();
  apply_compute_rate(topo, kDefaultMfu, false, o);
  o.rank_by = RankBy::Step;
  PlanResult r = plan_layouts(topo, preset_model("llama3-70b"), o);
  EXPECT_EQ(r.gpus, 128);
  ASSERT_FALSE(r.ranked.empty());
  for (std::size_t i = 1; i < r.ranked.size(); ++i) EXPECT_FALSE(ranks_before(r.ranked[i], r.ranked[i - 1], o.rank_by));
  for (const auto& lp : r.ranked) {
    EXPECT_EQ(lp.shape.gpus(), 128);
    EXPECT_LE(lp.memory.total_bytes(), static_cast<double>(r.memory_limit_bytes));
    EXPECT_GT(lp.step_s, lp.comm_s);
    EXPECT_EQ(lp.checkpoint.every, 100);
  }
  EXPECT_GT(r.distinct_prices, 0u);
  EXPECT_LE(r.distinct_prices, r.price_lookups);
  EXPECT_TRUE(any_contains(r.assumptions, "TP: 4 reduce-scatter + allgather pairs")) << r.assumptions.front();
  EXPECT_TRUE(any_contains(r.assumptions, "ZeRO-1: reduce-scatter + allgather of parameters"));
  EXPECT_TRUE(any_contains(r.assumptions, "ranking: by estimated step time"));
  EXPECT_TRUE(any_contains(r.assumptions, "; every 100 steps"));
  EXPECT_TRUE(any_contains(r.warnings, "topology 'dgx-h100' carries no calibrated range"));
}

TEST(PlanLayouts, NothingFitsSaysWhyAndWhatToChange) {
  const Topology topo = preset_topology("dgx-h100");
  PlanOptions o = llama_options();
  // Attention scores of 8K tokens stored, no sequence parallelism, replicated optimizer.
  o.recompute = Recompute::None;
  o.sequence_parallel = false;
  o.zero = 0;
  PlanResult r = plan_layouts(topo, preset_model("llama3-70b"), o);
  EXPECT_TRUE(r.ranked.empty());
  std::size_t memory = 0;
  for (const auto& e : r.excluded)
    if (e.memory) {
      ++memory;
      EXPECT_TRUE(contains(e.reason, "needs ")) << e.reason;
      EXPECT_TRUE(contains(e.reason, " per GPU > 80.0 GiB (stage ")) << e.reason;
    }
  EXPECT_GT(memory, 0u);
  EXPECT_TRUE(any_contains(r.warnings, "no layout fits in 80.0 GiB per GPU; the closest, "));
  EXPECT_TRUE(any_contains(r.warnings, "it fits with --recompute selective ("));
}

TEST(PlanLayouts, OptionsThatAdmitNoLayoutAreErrors) {
  const Topology topo = preset_topology("dgx-h100");
  const LlmModel m = preset_model("llama3-70b");
  PlanOptions o = llama_options();
  o.zero = 4;
  EXPECT_THROW(plan_layouts(topo, m, o), Error);
  o = llama_options();
  o.global_batch = 1023;
  o.micro_batch = 2;
  EXPECT_THROW(plan_layouts(topo, m, o), Error);
  o = llama_options();
  o.rank_by = RankBy::Step;  // without a compute rate
  EXPECT_THROW(plan_layouts(topo, m, o), Error);
}

}  // namespace
}  // namespace commsim
