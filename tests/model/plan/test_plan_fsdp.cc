// ZeRO-3 / FSDP priced per layer: an allgather of each layer's parameters before its forward and
// before its backward, a reduce-scatter of its gradients after it, on every micro-batch, on the
// whole data-parallel group; with prefetch the gathers hide behind the previous layer's compute
// and only what exceeds it is exposed. And tensor-parallel communication overlapped with the GEMMs.
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

// GPT-3 175B without model parallelism, as Narayanan et al. 2021 ran ZeRO-3 (Table 2: batch 1536,
// sequence 2048, micro-batch 4 / 2 / 1 on 384 / 768 / 1536 A100 GPUs, one micro-batch per GPU).
PlanOptions zero3(const Topology& topo, int gpus, Overlap overlap) {
  PlanOptions o = test::plan_command_defaults(topo);
  o.nodes = gpus / topo.ranks_per_node;
  o.global_batch = 1536;
  o.micro_batch = 1536 / gpus;
  o.seq = 2048;
  o.zero = 3;
  o.sequence_parallel = false;
  o.recompute = Recompute::Full;
  o.overlap = overlap;
  o.memory_limit_bytes = 80ull << 30;
  return o;
}

const LayoutPlan* data_parallel_only(const PlanResult& r) {
  auto it = std::find_if(r.ranked.begin(), r.ranked.end(),
                         [](const LayoutPlan& lp) { return lp.shape.tp == 1 && lp.shape.pp == 1; });
  return it == r.ranked.end() ? nullptr : &*it;
}

std::vector<const PricedCollective*> dp(const LayoutPlan& lp) {
  std::vector<const PricedCollective*> out;
  for (const auto& pc : lp.collectives)
    if (pc.dim == Dim::DP) out.push_back(&pc);
  return out;
}

// GPT-3 175B planned on DGX A100: the data-parallel-only layout and its DP collectives (pointers
// into `result`, so a Zero3Plan is filled in place and not copied).
struct Zero3Plan {
  PlanResult result;
  const LayoutPlan* layout = nullptr;
  std::vector<const PricedCollective*> dp;
};
void plan_gpt3(const PlanOptions& o, Zero3Plan& out) {
  out.result = plan_layouts(preset_topology("dgx-a100"), preset_model("gpt3-175b"), o);
  out.layout = data_parallel_only(out.result);
  if (out.layout) out.dp = dp(*out.layout);
}

TEST(PlanFsdp, EveryLayerGatheredTwiceAndReducedOncePerMicroBatch) {
  const LlmModel model = preset_model("gpt3-175b");
  PlanOptions o = zero3(preset_topology("dgx-a100"), 384, Overlap::None);
  Zero3Plan plan;
  plan_gpt3(o, plan);
  ASSERT_NE(plan.layout, nullptr);
  const LayoutPlan* lp = plan.layout;
  const std::vector<const PricedCollective*>& c = plan.dp;
  ASSERT_EQ(c.size(), 3u);
  const double layer_params = stage_params(model, lp->shape, 0).dense / model.layers;
  for (const PricedCollective* pc : c) {
    EXPECT_TRUE(pc->per_layer);
    EXPECT_EQ(pc->group, 384);
    EXPECT_DOUBLE_EQ(pc->calls, lp->shape.micro_batches * model.layers) << pc->what;
    EXPECT_EQ(pc->bytes, static_cast<Bytes>(std::llround(layer_params * 2))) << pc->what;
    EXPECT_DOUBLE_EQ(pc->exposed_s, pc->total_s) << "without overlap every call waits";
  }
  EXPECT_EQ(c[0]->collective, Collective::AllGather);
  EXPECT_EQ(c[1]->collective, Collective::AllGather);
  EXPECT_EQ(c[2]->collective, Collective::ReduceScatter);

  // Gradient accumulation regathers every layer on every micro-batch: twice the micro-batches,
  // twice the calls.
  o.micro_batch = 2;
  Zero3Plan two;
  plan_gpt3(o, two);
  ASSERT_NE(two.layout, nullptr);
  ASSERT_EQ(two.layout->shape.micro_batches, 2 * lp->shape.micro_batches);
  EXPECT_DOUBLE_EQ(two.dp[0]->calls, 2 * c[0]->calls);
}

TEST(PlanFsdp, PrefetchHidesWhatTheLayersComputeCovers) {
  PlanOptions o = zero3(preset_topology("dgx-a100"), 384, Overlap::Dp);
  Zero3Plan plan;
  plan_gpt3(o, plan);
  ASSERT_NE(plan.layout, nullptr);
  const LayoutPlan* lp = plan.layout;
  const std::vector<const PricedCollective*>& c = plan.dp;
  ASSERT_EQ(c.size(), 3u);
  const double m = lp->shape.micro_batches, L = preset_model("gpt3-175b").layers;
  // Per layer and micro-batch: forward f, recomputed forward f, backward 2f.
  const double f = lp->compute_s / (m * L * 4);
  const double ag = c[0]->each_s, rs = c[2]->each_s;
  EXPECT_NEAR(c[0]->exposed_s, m * (ag + (L - 1) * std::max(0.0, ag - f)), 1e-12);
  EXPECT_NEAR(c[1]->exposed_s + c[2]->exposed_s, m * (ag + rs + (L - 1) * std::max(0.0, ag + rs - 3 * f)), 1e-12);
  EXPECT_LT(lp->comm_s, 0.1 * lp->comm_total_s) << "a 175B layer's compute covers its gathers on 384 A100s";

  // A rate at which the compute no longer covers them: what exceeds it is exposed.
  o.gpu_tflops = 1e6;
  Zero3Plan fast;
  plan_gpt3(o, fast);
  ASSERT_NE(fast.layout, nullptr);
  EXPECT_GT(fast.layout->comm_s, 0.9 * fast.layout->comm_total_s);
}

// At a fixed batch the compute per GPU halves as the GPUs double while each GPU still gathers every
// layer: ZeRO-3's share of the step grows with the GPU count (Narayanan et al. 2021, Table 2: 144,
// 88 and 44 TFLOP/s per GPU on 384, 768 and 1536 GPUs; https://arxiv.org/abs/2104.04473).
TEST(PlanFsdp, ShareOfTheStepGrowsWithTheGpuCountAtAFixedBatch) {
  const Topology topo = preset_topology("dgx-a100");
  double last_share = 0, last_total = 0;
  for (int gpus : {384, 768, 1536}) {
    Zero3Plan plan;
    plan_gpt3(zero3(topo, gpus, Overlap::Dp), plan);
    const LayoutPlan* lp = plan.layout;
    ASSERT_NE(lp, nullptr) << gpus;
    EXPECT_GT(lp->comm_share, last_share) << gpus;
    EXPECT_GE(lp->comm_total_s, 0.95 * last_total) << gpus << ": every GPU moves every layer whatever the count";
    last_share = lp->comm_share;
    last_total = lp->comm_total_s;
  }
}

// Tensor-parallel communication overlapped with the GEMMs (--tp-overlap): each collective hides
// behind an equal share of the layer's GEMM time, only the excess is exposed.
TEST(PlanTpOverlap, EachCollectiveHidesBehindItsShareOfTheGemms) {
  const Topology topo = preset_topology("dgx-h100");
  const LlmModel model = preset_model("llama3-70b");
  PlanOptions o = test::plan_command_defaults(topo);
  o.nodes = 16;
  o.global_batch = 1024;
  o.seq = 8192;
  o.memory_limit_bytes = 1ull << 40;  // every layout fits: compare the same ones
  o.max_virtual_stages = 1;
  const PlanResult plain = plan_layouts(topo, model, o);
  o.tp_overlap = true;
  const PlanResult overlapped = plan_layouts(topo, model, o);
  auto find = [](const PlanResult& r) {
    return std::find_if(r.ranked.begin(), r.ranked.end(),
                        [](const LayoutPlan& lp) { return lp.shape.tp == 8 && lp.shape.pp == 4; });
  };
  auto a = find(plain), b = find(overlapped);
  ASSERT_TRUE(a != plain.ranked.end() && b != overlapped.ranked.end());
  const double per_layer = b->shape.micro_batches * max_stage_layers(model, 4);
  // Sequence parallel: a reduce-scatter and an allgather 4 times per layer and micro-batch.
  const double matrix = 2 * (model.attention_params_per_layer() + model.expert_params());
  const double gemm_share = matrix / (matrix + 4.0 * 8192 * model.hidden);
  const double window = b->compute_s / per_layer * gemm_share / 8;
  for (const PricedCollective& pc : b->collectives) {
    if (pc.dim != Dim::TP) continue;
    EXPECT_NEAR(pc.exposed_s, pc.calls * std::max(0.0, pc.each_s - window), 1e-12) << pc.what;
  }
  EXPECT_LT(b->dim(Dim::TP), a->dim(Dim::TP));
  EXPECT_DOUBLE_EQ(b->dim(Dim::DP), a->dim(Dim::DP));

  o.gpu_tflops = 0;
  o.rank_by = RankBy::Comm;
  EXPECT_THROW(plan_layouts(topo, model, o), Error);
}

}  // namespace
}  // namespace commsim
