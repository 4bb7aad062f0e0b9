// Memory of a layout beyond the training state's formulas: the reserve kept free on every GPU,
// the gradient dtype, and FP8 activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "plan_test_util.h"

namespace commsim {
namespace {

using test::preset_model;
using test::preset_topology;

constexpr double kGiB = 1073741824.0;

// Llama 3 70B at 8K tokens on 64 DGX H100 nodes, as `commsim plan` starts (the README's example),
// with the gradient dtype of the parameters.
PlanOptions readme_example(const Topology& topo) {
  PlanOptions o = test::plan_command_defaults(topo);
  o.nodes = 64;
  o.global_batch = 1024;
  o.seq = 8192;
  return o;
}

const LayoutPlan* find(const PlanResult& r, int dp, int tp, int pp) {
  auto it = std::find_if(r.ranked.begin(), r.ranked.end(), [&](const LayoutPlan& lp) {
    return lp.shape.dp == dp && lp.shape.tp == tp && lp.shape.pp == pp;
  });
  return it == r.ranked.end() ? nullptr : &*it;
}

TEST(PlanMemoryReserve, DefaultIsContextNcclAndFragmentation) {
  // 0.5 GiB + 1 GiB + 2 % of 80 GiB.
  EXPECT_DOUBLE_EQ(kDefaultMemoryReserve.bytes(80 * kGiB), 1.5 * kGiB + 1.6 * kGiB);
  EXPECT_DOUBLE_EQ(MemoryReserve{}.bytes(80 * kGiB), 0);
}

TEST(PlanMemoryReserve, LayoutsLeaveTheReserveFree) {
  const Topology topo = preset_topology("dgx-h100");
  const LlmModel model = preset_model("llama3-70b");
  PlanOptions none = readme_example(topo);
  none.memory_reserve = MemoryReserve{};
  const PlanResult without = plan_layouts(topo, model, none);
  EXPECT_EQ(without.memory_limit_bytes, without.device_memory_bytes);
  // Without a reserve the fastest layout fills the GPU to within 1.5 GiB.
  const LayoutPlan* tight = find(without, 64, 4, 2);
  ASSERT_NE(tight, nullptr);
  EXPECT_GT(tight->memory.total_bytes(), 78 * kGiB);

  const PlanResult with = plan_layouts(topo, model, readme_example(topo));
  EXPECT_EQ(with.device_memory_bytes, static_cast<Bytes>(80 * kGiB));
  EXPECT_DOUBLE_EQ(with.memory_reserve_bytes, kDefaultMemoryReserve.bytes(80 * kGiB));
  EXPECT_EQ(with.memory_limit_bytes, static_cast<Bytes>(80 * kGiB - with.memory_reserve_bytes));
  ASSERT_FALSE(with.ranked.empty());
  for (const LayoutPlan& lp : with.ranked)
    EXPECT_LE(lp.memory.total_bytes() + with.memory_reserve_bytes, 80 * kGiB) << lp.shape.to_string();
  const LayoutPlan* kept = find(with, 64, 4, 2);
  if (kept) {
    EXPECT_LT(kept->shape.vp, tight->shape.vp) << "the 78.9 GiB interleaving no longer fits";
  }
  EXPECT_TRUE(std::any_of(with.assumptions.begin(), with.assumptions.end(), [](const std::string& a) {
    return a.find("memory reserve: 3.1 GiB of the 80.0 GiB per GPU kept free") != std::string::npos;
  }));
}

TEST(PlanMemoryReserve, AReserveThatLeavesNothingIsAnError) {
  const Topology topo = preset_topology("dgx-h100");
  PlanOptions o = readme_example(topo);
  o.memory_reserve = MemoryReserve{80 * kGiB, 0, 0};
  EXPECT_THROW(plan_layouts(topo, preset_model("llama3-70b"), o), Error);
  o.memory_reserve = MemoryReserve{-1, 0, 0};
  EXPECT_THROW(plan_layouts(topo, preset_model("llama3-70b"), o), Error);
  o.memory_reserve = MemoryReserve{};
  o.grad_bytes = 1;
  EXPECT_THROW(plan_layouts(topo, preset_model("llama3-70b"), o), Error);
}

TEST(PlanMemoryGradients, Fp32GradientsDoubleTheGradientReduction) {
  const Topology topo = preset_topology("dgx-h100");
  const LlmModel model = preset_model("llama3-70b");
  ASSERT_EQ(model.param_bytes, 2);
  PlanOptions o = readme_example(topo);
  o.nodes = 16;
  o.memory_reserve = MemoryReserve{};
  o.memory_limit_bytes = static_cast<Bytes>(1000 * kGiB);  // every layout fits: compare the same ones
  const PlanResult bf16 = plan_layouts(topo, model, o);
  o.grad_bytes = 4;
  const PlanResult fp32 = plan_layouts(topo, model, o);
  const LayoutPlan* a = find(bf16, 32, 4, 1);
  const LayoutPlan* b = find(fp32, 32, 4, 1);
  ASSERT_TRUE(a && b);
  for (const PricedCollective& pa : a->collectives) {
    if (pa.dim != Dim::DP) continue;
    auto pb = std::find_if(b->collectives.begin(), b->collectives.end(), [&](const PricedCollective& c) {
      return c.dim == Dim::DP && c.collective == pa.collective;
    });
    ASSERT_NE(pb, b->collectives.end());
    // The gradients are reduced in their dtype; the updated parameters are gathered in theirs.
    const double ratio = static_cast<double>(pb->bytes) / static_cast<double>(pa.bytes);
    EXPECT_NEAR(ratio, pa.collective == Collective::ReduceScatter ? 2.0 : 1.0, 1e-9) << to_string(pa.collective);
  }
  EXPECT_DOUBLE_EQ(b->memory.grads_bytes, 2 * a->memory.grads_bytes);
  // The fp32 copy of 16-bit gradients (4 B/param, sharded with ZeRO-1) is no longer needed.
  EXPECT_LT(b->memory.optimizer_bytes, a->memory.optimizer_bytes);
}

// FP8 GEMMs save the inputs of the four linear layers as 1-byte casts: of Korthikanti et al.
// 2022's 34 units of s*b*h per GPT layer (sequence parallel, selective recompute, all divided by
// TP), the QKV input, the output projection's input, the MLP input and the 4h-wide input of the
// second MLP projection lose half: 34 - 1 - 1 - 1 - 4 = 27.
TEST(PlanMemoryFp8, LinearInputsAreOneByte) {
  LlmModel m = test::gpt_model(4, 4096, 32, 51200);
  PlanOptions o;
  o.seq = 2048;
  o.micro_batch = 1;
  o.sequence_parallel = true;
  o.recompute = Recompute::Selective;
  const double sbh = 2048.0 * 4096;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 8), sbh * 34 / 8);
  o.fp8 = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 8), sbh * 27 / 8);

  // The FP8 weight copy and its transpose: 2 B per parameter the rank holds.
  PlanOptions plain = o;
  plain.fp8 = false;
  Shape shape;
  shape.tp = 8;
  shape.micro_batches = 1;
  plain.global_batch = o.global_batch = 1;
  const StageParams p = stage_params(m, shape, 0);
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, o, shape).params_bytes - memory_per_gpu(m, plain, shape).params_bytes,
                   2 * (p.dense + p.expert));
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

// Shared experts process every token: their inner activations are kept like a routed expert's
// (one more set per shared expert, reading the un-routed MLP input once), and their FLOPs count
// for every token.
TEST(PlanMoe, SharedExpertsAddActivationsAndFlops) {
  LlmModel routed = test::gpt_model(4, 1024, 8, 1000);
  routed.experts = 8;
  routed.top_k = 2;
  routed.ffn = FfnKind::SwiGlu;
  routed.dropout = false;
  LlmModel shared = routed;
  shared.shared_experts = 2;
  PlanOptions o;
  o.seq = 512;
  o.micro_batch = 1;
  o.global_batch = 8;
  o.recompute = Recompute::Selective;
  const double sbh = 512.0 * 1024, f = static_cast<double>(routed.ffn_hidden) / routed.hidden;
  // + 2 (the un-routed MLP input, kept whole) + 2 x 6f/h (SwiGLU's gate, up and inner outputs), TP 1.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(shared, o, 1) - layer_activation_bytes(routed, o, 1), sbh * (2 + 2 * 6 * f));
  // Forward + backward: 3 x 2 FLOPs per token and matrix parameter of the 2 shared experts in 4 layers.
  EXPECT_DOUBLE_EQ(training_flops_per_iteration(shared, o) - training_flops_per_iteration(routed, o),
                   8.0 * 512 * 3 * 4 * 2 * 2 * routed.expert_params());
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

// A capacity factor pads what each token sends to its experts: the all-to-all grows by it.
TEST(PlanMoe, CapacityFactorPadsTheAllToAll) {
  const Topology topo = preset_topology("dgx-h100");
  LlmModel dropless = preset_model("mixtral-8x7b");
  LlmModel padded = dropless;
  padded.capacity_factor = 1.25;
  PlanOptions o = test::plan_command_defaults(topo);
  o.nodes = 4;
  o.global_batch = 256;
  o.seq = 4096;
  o.memory_limit_bytes = 1ull << 40;
  const PlanResult a = plan_layouts(topo, dropless, o), b = plan_layouts(topo, padded, o);
  auto alltoall = [](const PlanResult& r) -> const PricedCollective* {
    for (const LayoutPlan& lp : r.ranked)
      if (lp.shape.ep == 8 && lp.shape.tp == 1 && lp.shape.pp == 1)
        for (const PricedCollective& pc : lp.collectives)
          if (pc.dim == Dim::EP) return &pc;
    return nullptr;
  };
  const PricedCollective *x = alltoall(a), *y = alltoall(b);
  ASSERT_TRUE(x && y);
  EXPECT_NEAR(static_cast<double>(y->bytes) / static_cast<double>(x->bytes), 1.25, 1e-6);
}

}  // namespace
}  // namespace commsim
