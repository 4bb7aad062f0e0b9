// Parallelism planning, checked against numbers worked out by hand from the formulas of the
// papers (Megatron-LM, Korthikanti et al. 2022, ZeRO) and against closed_form called directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>

#include "model/cost/cost.h"
#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "plan_test_util.h"

namespace commsim {
namespace {

// A cluster of identical nodes with round numbers, so expected costs are easy to state.
Topology test_topology(int ranks_per_node, bool network = true) {
  Topology t;
  t.name = "test";
  t.gpu = true;
  t.ranks_per_node = ranks_per_node;
  t.device_name = "test GPU";
  t.device_memory_bytes = 80ull << 30;
  t.memory_bw_Bps = 2e12;
  t.intra = {"nvswitch", 2e-6, 200e9};
  t.host_link = {"pcie", 1e-6, 50e9};
  if (network) {
    t.network.kind = "infiniband";
    t.network.fabric_shape = "fat-tree";
    t.network.nics_per_node = ranks_per_node;
    t.network.nic_bw_Bps = 50e9;
    t.network.latency_s = 5e-6;
  } else {
    t.network.kind = "none";
  }
  t.reduce_bw_Bps = 500e9;
  return t;
}

using test::gpt_model;

PlanOptions options(int nodes, int global, int micro, int seq) {
  PlanOptions o;
  o.nodes = nodes;
  o.global_batch = global;
  o.micro_batch = micro;
  o.seq = seq;
  return o;
}

// The fastest of the candidates, by calling closed_form directly.
double fastest(const Topology& t, Collective c, int nodes, int rpn, Bytes bytes) {
  double best = std::numeric_limits<double>::infinity();
  for (const Candidate& cand : default_candidates(t)) {
    if (!has_closed_form(t, c, cand.algorithm, cand.protocol)) continue;
    CostQuery q{c, cand.algorithm, cand.protocol, nodes, rpn, bytes};
    best = std::min(best, closed_form(t, q).time_s);
  }
  return best;
}

const LayoutPlan* find(const PlanResult& r, int dp, int tp, int pp, int ep = 1) {
  for (const auto& lp : r.ranked)
    if (lp.shape.dp == dp && lp.shape.tp == tp && lp.shape.pp == pp && lp.shape.ep == ep) return &lp;
  return nullptr;
}

TEST(Plan, BubbleIsOneF1BFraction) {
  EXPECT_EQ(bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(8, 1), 7.0 / 8.0);
}

TEST(Plan, GroupPlacementFollowsTheRankOrder) {
  // TP=8 on 8-GPU nodes: one node.
  GroupPlacement tp = group_placement(8, 1, 8, 128);
  EXPECT_EQ(tp.nodes, 1);
  EXPECT_EQ(tp.ranks_per_node, 8);
  EXPECT_FALSE(tp.uneven);
  // DP of 16 replicas 8 ranks apart: one per node, and all 8 DP groups of a node share its NICs.
  GroupPlacement dp = group_placement(16, 8, 8, 128);
  EXPECT_EQ(dp.nodes, 16);
  EXPECT_EQ(dp.ranks_per_node, 1);
  EXPECT_EQ(dp.sharing, 8);
  // DP of 64 replicas 2 apart (TP=2): 4 per node, 2 groups per node.
  GroupPlacement dp2 = group_placement(64, 2, 8, 128);
  EXPECT_EQ(dp2.nodes, 16);
  EXPECT_EQ(dp2.ranks_per_node, 4);
  EXPECT_EQ(dp2.sharing, 2);
  // TP=16 across two 8-GPU nodes.
  GroupPlacement wide = group_placement(16, 1, 8, 32);
  EXPECT_EQ(wide.nodes, 2);
  EXPECT_EQ(wide.ranks_per_node, 8);
  EXPECT_EQ(wide.sharing, 1);
  // Groups of 3 on 8-GPU nodes: {6,7,8} straddles two nodes unevenly -> priced as 3 nodes x 1.
  GroupPlacement odd = group_placement(3, 1, 8, 24);
  EXPECT_TRUE(odd.uneven);
  EXPECT_EQ(odd.nodes, 3);
  EXPECT_EQ(odd.ranks_per_node, 1);
  EXPECT_THROW(group_placement(3, 1, 8, 16), Error);  // 3 does not tile 16 ranks
}

TEST(Plan, EnumerationMatchesTheRulesWrittenOut) {
  LlmModel m = gpt_model(6, 512, 4, 1000);  // 4 heads, 6 layers
  PlanOptions o = options(4, 48, 2, 128);
  const int gpus = 32, rpn = 8;
  std::vector<ExcludedLayout> excluded;
  std::vector<Shape> shapes = enumerate_layouts(m, o, gpus, rpn, &excluded);

  std::set<std::tuple<int, int, int>> expected;
  int invalid = 0;
  for (int tp = 1; tp <= gpus; ++tp)
    for (int pp = 1; pp <= gpus; ++pp) {
      if (gpus % (tp * pp)) continue;
      int dp = gpus / (tp * pp);
      // At most one stage per layer; the stages need not split the 6 layers evenly.
      bool layers_split = pp <= 6;
      bool ok = 4 % tp == 0 && tp <= 8 && layers_split && 48 % (2 * dp) == 0;
      if (ok)
        expected.insert({dp, tp, pp});
      else
        ++invalid;
    }
  std::set<std::tuple<int, int, int>> got;
  for (const Shape& s : shapes) {
    got.insert({s.dp, s.tp, s.pp});
    EXPECT_EQ(s.micro_batches * 2 * s.dp, 48);
    EXPECT_EQ(s.ep, 1);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(static_cast<int>(excluded.size()), invalid);
  // DP=32 needs 64 sequences per step: excluded for the batch, with the reason.
  bool saw_batch = false, saw_heads = false, saw_layers = false;
  for (const auto& e : excluded) {
    saw_batch |= e.shape.dp == 32 && e.reason.find("not a multiple of micro-batch 2 x DP 32") != std::string::npos;
    saw_heads |= e.shape.tp == 8 && e.reason.find("does not divide the 4 attention heads") != std::string::npos;
    saw_layers |= e.shape.tp == 1 && e.shape.pp == 8 &&
                  e.reason.find("PP=8 is more stages than the 6 layers") != std::string::npos;
  }
  EXPECT_TRUE(saw_batch);
  EXPECT_TRUE(saw_heads);
  EXPECT_TRUE(saw_layers);

  // TP beyond a node only when allowed.
  LlmModel wide = gpt_model(4, 512, 32, 1000);
  excluded.clear();
  auto narrow = enumerate_layouts(wide, options(4, 32, 1, 128), 32, 8, &excluded);
  EXPECT_TRUE(std::none_of(narrow.begin(), narrow.end(), [](const Shape& s) { return s.tp > 8; }));
  EXPECT_TRUE(std::any_of(excluded.begin(), excluded.end(), [](const ExcludedLayout& e) {
    return e.shape.tp == 16 && e.reason.find("--allow-cross-node-tp") != std::string::npos;
  }));
  PlanOptions allow = options(4, 32, 1, 128);
  allow.allow_cross_node_tp = true;
  auto all = enumerate_layouts(wide, allow, 32, 8, nullptr);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const Shape& s) { return s.tp == 32; }));
}

TEST(Plan, ExpertParallelDividesExpertsAndDp) {
  LlmModel m = gpt_model(4, 512, 8, 1000);
  m.experts = 8;
  m.top_k = 2;
  auto shapes = enumerate_layouts(m, options(2, 64, 1, 128), 16, 8, nullptr);
  for (const Shape& s : shapes) {
    EXPECT_EQ(m.experts % s.ep, 0);
    EXPECT_EQ(s.dp % s.ep, 0);
  }
  // DP=16 (TP=PP=1): EP in {1, 2, 4, 8}.
  std::set<int> eps;
  for (const Shape& s : shapes)
    if (s.dp == 16) eps.insert(s.ep);
  EXPECT_EQ(eps, (std::set<int>{1, 2, 4, 8}));
}

// Two GPUs, TP only: 4 allreduces of b*s*h*2 bytes per layer, priced by closed_form directly.
TEST(Plan, TwoGpuTensorParallelIsFourAllreducesPerLayer) {
  Topology t = test_topology(2, false);
  LlmModel m = gpt_model(4, 1024, 8, 1000);
  PlanOptions o = options(1, 1, 1, 512);  // one micro-batch of 512 tokens
  PlanResult r = plan_layouts(t, m, o);
  const LayoutPlan* tp = find(r, 1, 2, 1);
  ASSERT_NE(tp, nullptr);
  const Bytes msg = 1 * 512 * 1024 * 2;  // b*s*h*2
  double one = fastest(t, Collective::AllReduce, 1, 2, msg);
  EXPECT_NEAR(tp->dim(Dim::TP), 4 * 4 * one, 1e-12);
  EXPECT_NEAR(tp->comm_s, 4 * 4 * one, 1e-12);
  EXPECT_EQ(tp->dim(Dim::DP), 0);
  EXPECT_EQ(tp->dim(Dim::PP), 0);
  ASSERT_EQ(tp->collectives.size(), 1u);
  EXPECT_EQ(tp->collectives[0].bytes, msg);
  EXPECT_EQ(tp->collectives[0].calls, 16);

  // The same with PP=2 instead: 2 send/recv of the activation per micro-batch.
  const LayoutPlan* pp = find(r, 1, 1, 2);
  ASSERT_NE(pp, nullptr);
  EXPECT_NEAR(pp->dim(Dim::PP), 2 * fastest(t, Collective::SendRecv, 1, 2, msg), 1e-12);
  EXPECT_DOUBLE_EQ(pp->bubble_fraction, 0.5);  // (2-1)/(1+2-1)

  // Sequence parallelism: a reduce-scatter and an allgather of the same buffer in place of each allreduce.
  o.sequence_parallel = true;
  PlanResult sp = plan_layouts(t, m, o);
  const LayoutPlan* tp_sp = find(sp, 1, 2, 1);
  ASSERT_NE(tp_sp, nullptr);
  double pair = fastest(t, Collective::ReduceScatter, 1, 2, msg) + fastest(t, Collective::AllGather, 1, 2, msg);
  EXPECT_NEAR(tp_sp->dim(Dim::TP), 16 * pair, 1e-12);

  // Full recomputation runs the forward (and its 2 allreduces per layer) twice.
  o.sequence_parallel = false;
  o.recompute = Recompute::Full;
  PlanResult full = plan_layouts(t, m, o);
  EXPECT_NEAR(find(full, 1, 2, 1)->dim(Dim::TP), 6 * 4 * one, 1e-12);
}

// Data parallel across 4 nodes: one allreduce of the gradients of all parameters (TP=PP=1), on 4
// nodes x 1 rank, with the node's NICs shared by its 8 DP groups.
TEST(Plan, DataParallelAllreducesAllGradientsAcrossNodes) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(2, 256, 4, 512);
  PlanOptions o = options(4, 32, 1, 64);
  PlanResult r = plan_layouts(t, m, o);
  const LayoutPlan* dp = find(r, 32, 1, 1);
  ASSERT_NE(dp, nullptr);
  const Bytes grads = static_cast<Bytes>(std::llround(m.total_params() * 2));
  // Ranks 0..31, DP stride 1: 8 per node, one group spanning 4 nodes.
  double expect = fastest(t, Collective::AllReduce, 4, 8, grads);
  EXPECT_NEAR(dp->dim(Dim::DP), expect, expect * 1e-9);
  // DP=4 with TP=8: 4 nodes x 1 rank, 8 groups per node sharing its NICs: the model gives a rank
  // of an 8-GPU node the NICs next to its GPU (ceil(nics / 8), model/cost/shape.h).
  const LayoutPlan* dp4 = find(r, 4, 4, 2);
  ASSERT_NE(dp4, nullptr);
  StageParams first = stage_params(m, dp4->shape, 0), last = stage_params(m, dp4->shape, 1);
  Bytes per_rank = static_cast<Bytes>(std::llround(std::max(first.dense, last.dense) * 2));
  double expect4 = fastest(t, Collective::AllReduce, 4, 1, per_rank);
  EXPECT_NEAR(dp4->dim(Dim::DP), expect4, expect4 * 1e-9);

  // ZeRO-1: reduce-scatter + allgather of the same buffer instead.
  o.zero = 1;
  PlanResult z = plan_layouts(t, m, o);
  double zexpect = fastest(t, Collective::ReduceScatter, 4, 8, grads) + fastest(t, Collective::AllGather, 4, 8, grads);
  EXPECT_NEAR(find(z, 32, 1, 1)->dim(Dim::DP), zexpect, zexpect * 1e-9);
}

TEST(Plan, OverlapHidesAllButTheLastBucket) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(8, 2048, 16, 32000);  // ~0.5B parameters -> several 40M-parameter buckets
  PlanOptions o = options(2, 16, 1, 256);
  PlanResult none = plan_layouts(t, m, o);
  o.overlap = Overlap::Dp;
  PlanResult dp = plan_layouts(t, m, o);
  const LayoutPlan* a = find(none, 16, 1, 1);
  const LayoutPlan* b = find(dp, 16, 1, 1);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(b->collectives.size(), 1u);
  const PricedCollective& pc = b->collectives[0];
  double buckets = std::ceil(m.total_params() / 40e6);
  EXPECT_EQ(pc.calls, buckets);
  EXPECT_EQ(pc.exposed_calls, 1);
  EXPECT_NEAR(b->dim(Dim::DP), pc.each_s, 1e-15);
  EXPECT_LT(b->dim(Dim::DP), a->dim(Dim::DP));
  EXPECT_GT(b->comm_total_s, b->comm_s);
  // The assumption is stated.
  EXPECT_TRUE(std::any_of(dp.assumptions.begin(), dp.assumptions.end(), [](const std::string& s) {
    return s.find("hidden behind backward compute except the last bucket") != std::string::npos;
  }));
}

// Korthikanti et al. 2022, Table 2: activations per layer of a GPT layer, bytes.
TEST(Plan, ActivationsFollowKorthikanti) {
  LlmModel m = gpt_model(4, 4096, 32, 50000);
  PlanOptions o = options(1, 8, 2, 2048);
  const double s = 2048, b = 2, h = 4096, a = 32;
  const double sbh = s * b * h;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 1), sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 4), sbh * (10 + 24.0 / 4 + 5 * a * s / (h * 4)));
  o.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 4), sbh / 4 * (34 + 5 * a * s / h));
  o.recompute = Recompute::Selective;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 4), sbh / 4 * 34);
  o.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, o, 4), sbh * (10 + 24.0 / 4));
}

// A GPT-style 7B model on 8 GPUs, DP=8, ZeRO-1, by hand: 2 B/param parameters and gradients,
// 16 B/param optimizer state (fp32 master copy, fp32 gradient copy, 2 moments) split 8 ways; activations 32 layers x
// s*b*h*(34 + 5as/h) plus the embedding dropout mask (s*b*h) and fp32 logits (4*s*b*V).
TEST(Plan, SevenBillionModelMemoryWithZeroOneByHand) {
  LlmModel m = gpt_model(32, 4096, 32, 50257);
  m.tied_embeddings = true;
  m.position_embeddings = 2048;
  // 32 x (12 h^2 + 2h) + V h + 2048 h + h (final norm)
  const double h = 4096, P = 32 * (12 * h * h + 2 * h) + 50257 * h + 2048 * h + h;
  ASSERT_DOUBLE_EQ(m.total_params(), P);
  ASSERT_NEAR(P, 6.657e9, 1e6);

  PlanOptions o = options(1, 64, 1, 2048);
  o.zero = 1;
  Shape shape;
  shape.dp = 8;
  shape.micro_batches = 8;
  MemoryBreakdown mb = memory_per_gpu(m, o, shape);
  EXPECT_DOUBLE_EQ(mb.params_bytes, 2 * P);
  EXPECT_DOUBLE_EQ(mb.grads_bytes, 2 * P);
  EXPECT_DOUBLE_EQ(mb.optimizer_bytes, 16 * P / 8);
  const double s = 2048, sbh = s * h;
  const double act = 32 * sbh * (34 + 5 * 32 * s / h) + sbh + 4 * s * 50257;
  EXPECT_DOUBLE_EQ(mb.activations_bytes, act);
  // About 71 GB: fits in 80 GiB; the same without ZeRO (+ 14 GiB of optimizer state) does not.
  EXPECT_LT(mb.total_bytes(), 80.0 * (1ull << 30));
  o.zero = 0;
  EXPECT_GT(memory_per_gpu(m, o, shape).total_bytes(), 80.0 * (1ull << 30));
  // ZeRO-3 shards everything 8 ways, and holds two gathered layers (the one computing and the one
  // prefetched, 2 B/param) and one layer's unsharded gradients (2 B/param); a layer's share of
  // the parameters is P/32.
  o.zero = 3;
  MemoryBreakdown z3 = memory_per_gpu(m, o, shape);
  EXPECT_DOUBLE_EQ(z3.params_bytes + z3.grads_bytes + z3.optimizer_bytes, 20 * P / 8 + 6 * P / 32);
}

// Megatron-LM's bytes per parameter with and without its distributed optimizer (ZeRO-1), d = DP:
// fp16 parameters and gradients 20 and 4 + 16/d, bf16 parameters with fp32 gradients 18 and
// 6 + 12/d, fp32 16 and 8 + 8/d.
// https://github.com/NVIDIA/Megatron-LM/blob/main/docs/source/api-guide/dist_optimizer.md
TEST(Plan, MegatronDistributedOptimizerBytesPerParam) {
  struct Row {
    const char* param_dtype;
    int param_bytes, grad_bytes;
    double replicated, sharded_fixed, sharded_per_d;
  };
  const Row rows[] = {{"fp16", 2, 2, 20, 4, 16}, {"bf16", 2, 4, 18, 6, 12}, {"fp32", 4, 4, 16, 8, 8}};
  for (const Row& row : rows) {
    LlmModel m = gpt_model(4, 1024, 8, 1000);
    m.param_dtype = row.param_dtype;
    m.param_bytes = row.param_bytes;
    ASSERT_EQ(default_grad_bytes(m), row.grad_bytes) << row.param_dtype;
    const double P = m.total_params();
    PlanOptions o = options(1, 8, 1, 128);
    o.grad_bytes = default_grad_bytes(m);
    Shape shape;
    shape.dp = 8;
    shape.micro_batches = 1;
    for (int zero : {0, 1}) {
      o.zero = zero;
      MemoryBreakdown mb = memory_per_gpu(m, o, shape);
      const double per_param = (mb.params_bytes + mb.grads_bytes + mb.optimizer_bytes) / P;
      EXPECT_DOUBLE_EQ(per_param, zero ? row.sharded_fixed + row.sharded_per_d / 8 : row.replicated)
          << row.param_dtype << " ZeRO-" << zero;
    }
  }
}

TEST(Plan, PipelineFirstStageHoldsPpMicroBatches) {
  LlmModel m = gpt_model(8, 1024, 8, 1000);
  PlanOptions o = options(1, 64, 1, 512);
  o.recompute = Recompute::Full;
  Shape shape;
  shape.pp = 4;
  shape.dp = 2;
  shape.micro_batches = 32;
  MemoryBreakdown mb = memory_per_gpu(m, o, shape);
  // Stage 0: 2 layers x 4 micro-batches x the layer input (2sbh), plus one layer being recomputed,
  // plus the embedding mask for 4 micro-batches; stage 3 holds 1 micro-batch and the logits.
  const double sbh = 512.0 * 1024;
  const double first = 2 * 4 * 2 * sbh + layer_activation_bytes(m, o, 1) + 4 * sbh;
  const double last = 2 * 1 * 2 * sbh + layer_activation_bytes(m, o, 1) + 4.0 * 512 * 1000;
  EXPECT_DOUBLE_EQ(mb.activations_bytes, mb.stage == 0 ? first : last);
}

TEST(Plan, LayoutsThatDoNotFitAreExcludedWithTheReason) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(4, 1024, 8, 1000);
  PlanOptions o = options(1, 8, 1, 512);
  o.memory_limit_bytes = 1;  // nothing fits in one byte
  PlanResult r = plan_layouts(t, m, o);
  EXPECT_TRUE(r.ranked.empty());
  ASSERT_FALSE(r.excluded.empty());
  bool memory = false;
  for (const auto& e : r.excluded)
    if (e.memory) {
      memory = true;
      EXPECT_NE(e.reason.find("per GPU >"), std::string::npos) << e.reason;
      EXPECT_NE(e.reason.find("activations"), std::string::npos) << e.reason;
    }
  EXPECT_TRUE(memory);
  EXPECT_TRUE(std::any_of(r.warnings.begin(), r.warnings.end(),
                          [](const std::string& w) { return w.find("no layout fits") != std::string::npos; }));
}

TEST(Plan, RankedByCommunicationTime) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(8, 2048, 16, 32000);
  PlanResult r = plan_layouts(t, m, options(4, 64, 1, 1024));
  ASSERT_GT(r.ranked.size(), 3u);
  for (std::size_t i = 1; i < r.ranked.size(); ++i) EXPECT_LE(r.ranked[i - 1].comm_s, r.ranked[i].comm_s);
  for (const auto& lp : r.ranked) {
    double sum = 0;
    for (Dim d : kAllDims) sum += lp.dim(d);
    EXPECT_NEAR(sum, lp.comm_s, 1e-12 + 1e-12 * lp.comm_s);
  }
  EXPECT_GT(r.distinct_prices, 0u);
  EXPECT_LT(r.distinct_prices, r.price_lookups + 1);
}

TEST(Plan, WarnsOutsideTheCalibratedRange) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(4, 1024, 8, 1000);
  PlanOptions o = options(16, 128, 1, 512);
  PlanResult un = plan_layouts(t, m, o);
  EXPECT_TRUE(std::any_of(un.warnings.begin(), un.warnings.end(),
                          [](const std::string& w) { return w.find("no calibrated range") != std::string::npos; }));
  o.calibration.present = true;
  o.calibration.min_bytes = 8;
  o.calibration.max_bytes = 256ull << 20;
  o.calibration.min_nodes = 1;
  o.calibration.max_nodes = 4;
  o.calibration.origin = "test";
  PlanResult cal = plan_layouts(t, m, o);
  // DP over 16 nodes lies outside 1..4 nodes.
  const LayoutPlan* dp = find(cal, 128, 1, 1);
  ASSERT_NE(dp, nullptr);
  EXPECT_TRUE(dp->outside_calibration);
  EXPECT_TRUE(std::any_of(cal.warnings.begin(), cal.warnings.end(), [](const std::string& w) {
    return w.find("outside the calibrated range") != std::string::npos;
  }));
  // TP inside one node with small messages is inside the range.
  for (const auto& lp : cal.ranked)
    for (const auto& pc : lp.collectives)
      if (pc.dim == Dim::TP && pc.placement.nodes == 1 && pc.bytes <= (256ull << 20)) {
        EXPECT_FALSE(pc.outside_calibration);
      }
}

TEST(Plan, RejectsImpossibleOptions) {
  Topology t = test_topology(8);
  LlmModel m = gpt_model(4, 1024, 8, 1000);
  EXPECT_THROW(plan_layouts(t, m, options(1, 10, 4, 512)), Error);  // 10 not a multiple of 4
  EXPECT_THROW(plan_layouts(t, m, options(1, 0, 1, 512)), Error);
  EXPECT_THROW(plan_layouts(t, m, options(1, 8, 1, 0)), Error);
  PlanOptions z = options(1, 8, 1, 512);
  z.zero = 4;
  EXPECT_THROW(plan_layouts(t, m, z), Error);
}

// Narayanan et al. 2021: FLOPs per iteration with full recomputation
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
TEST(Plan, FlopsMatchNarayananWithRecomputation) {
  LlmModel m = gpt_model(96, 12288, 96, 51200);
  PlanOptions o = options(1, 1536, 1, 2048);
  o.recompute = Recompute::Full;
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double paper = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(training_flops_per_iteration(m, o) / paper, 1.0, 1e-12);
  // Without recomputation the forward runs once: 72 instead of 96 for the layers.
  o.recompute = Recompute::None;
  const double plain = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
  EXPECT_NEAR(training_flops_per_iteration(m, o) / plain, 1.0, 1e-12);
}

// The optional `calibrated:` section of a topology file, as text ranges or as lists.
TEST(Plan, ReadsTheCalibratedSectionOfATopology) {
  const std::string base =
      "name: t\ngpus_per_node: 8\ndevice: { name: g, memory: 80 GiB, memory_bandwidth: 2 TB/s }\n"
      "intra_node: { fabric: nvswitch, bandwidth: 300 GB/s, latency: 2 us }\n"
      "host_link: { bandwidth: 64 GB/s, latency: 1 us }\n"
      "network: { kind: infiniband, nics_per_node: 8, nic_bandwidth: 47 GB/s, latency: 5 us }\n";
  Topology plain = parse_topology(base, "plain.yaml");
  EXPECT_FALSE(plain.calibrated.present);
  EXPECT_FALSE(calibration_range(plain).present);

  Topology text = parse_topology(base + "calibrated: { sizes: \"8B:256MiB\", nodes: \"1:4\" }\n", "text.yaml");
  CalibrationRange r = calibration_range(text);
  ASSERT_TRUE(r.present);
  EXPECT_EQ(r.min_bytes, 8u);
  EXPECT_EQ(r.max_bytes, 256ull << 20);
  EXPECT_EQ(r.min_nodes, 1);
  EXPECT_EQ(r.max_nodes, 4);
  EXPECT_TRUE(r.covers(1 << 20, 2));
  EXPECT_FALSE(r.covers(1ull << 30, 2));
  EXPECT_FALSE(r.covers(1 << 20, 8));

  // The form `commsim calibrate` writes: lists of byte counts and node counts.
  Topology lists = parse_topology(base +
                                      "calibrated:\n  created: \"2026-01-01T00:00:00Z\"\n  sources: [\"a.h5\"]\n"
                                      "  sizes: [1024, 8, 1048576]\n  nodes: [2, 1]\n  ranks: [8, 16]\n",
                                  "lists.yaml");
  ASSERT_TRUE(lists.calibrated.present);
  EXPECT_EQ(lists.calibrated.sizes, (std::vector<Bytes>{8, 1024, 1048576}));
  EXPECT_EQ(lists.calibrated.nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(lists.calibrated.sources, (std::vector<std::string>{"a.h5"}));
  EXPECT_EQ(calibration_range(lists).max_bytes, 1048576u);

  // Errors name the file, the line and the field.
  try {
    parse_topology(base + "calibrated: { sizes: \"8B:256MiB\" }\n", "bad.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:7: calibrated.nodes: missing required field"), std::string::npos)
        << e.what();
  }
  try {
    parse_topology(base + "calibrated: { sizes: \"8Q\", nodes: 1 }\n", "bad.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:7: calibrated.sizes:"), std::string::npos) << e.what();
  }
}

// Checkpoint cost, worked out by hand: 4 layers of h = 1024 (8 heads, GELU MLP of 4h), vocabulary
// 1000, untied; 4 nodes of 8 GPUs, TP 2 x PP 2 x DP 8.
TEST(Plan, CheckpointCostByHand) {
  Topology t = test_topology(8);
  t.storage = {{"nvme", false, 20e9, 10e9, 0.0, 0, 0}, {"pfs", true, 40e9, 20e9, 1e-3, 0, 40e9}};
  const LlmModel m = gpt_model(4, 1024, 8, 1000);
  // Per layer 4h^2 (attention) + 8h^2 (MLP) + 2h (norms) = 12,584,960; embedding 1,024,000; output
  // 1,024,000 + 1,024 (final norm).
  ASSERT_DOUBLE_EQ(m.total_params(), 4 * 12584960.0 + 1024000 + 1025024);
  // Per rank (TP 2): stage 0 (2 layers + embedding) and stage 1 (2 layers + output).
  const double s0 = (2 * 12584960.0 + 1024000) / 2, s1 = (2 * 12584960.0 + 1025024) / 2;
  PlanOptions o = options(4, 64, 1, 128);
  o.zero = 1;
  o.checkpoint_every = 10;
  Shape shape;
  shape.tp = 2;
  shape.pp = 2;
  shape.dp = 8;

  CheckpointCost c = checkpoint_cost(t, m, o, shape, /*step_s=*/1.0);
  EXPECT_DOUBLE_EQ(c.total_bytes, 14 * m.total_params());  // 2 B weights + 12 B Adam per parameter
  // ZeRO-1: DP rank 0 writes its weights (2 B) and every rank 12/8 B per parameter of optimizer state.
  EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 2 * s1 + 12 * s1 / 8);
  // Node 0 holds ranks 0-3 (DP rank 0 of both stages, 2 TP ranks each) and ranks 4-7 (DP rank 1).
  const double node = 2 * (2 * s0 + 1.5 * s0) + 2 * (2 * s1 + 1.5 * s1) + 2 * 1.5 * s0 + 2 * 1.5 * s1;
  EXPECT_DOUBLE_EQ(c.bytes_per_node, node);
  ASSERT_EQ(c.tiers.size(), 2u);
  EXPECT_DOUBLE_EQ(c.tiers[0].write_bw_per_node_Bps, 10e9);
  EXPECT_DOUBLE_EQ(c.tiers[0].write_s, node / 10e9);
  // The shared tier: node 0's 262 MB at 20 GB/s take 13.1 ms, but the whole checkpoint (733 MB,
  // every byte written once) needs 18.3 ms at the file system's 40 GB/s: that is the limit. 1 ms latency.
  const double whole = 14 * m.total_params();
  ASSERT_GT(whole / 40e9, node / 20e9);
  EXPECT_DOUBLE_EQ(c.tiers[1].write_s, 1e-3 + whole / 40e9);
  EXPECT_DOUBLE_EQ(c.tiers[1].write_bw_per_node_Bps, node / (whole / 40e9));
  EXPECT_EQ(c.sync_tier, "pfs");
  EXPECT_EQ(c.async_tier, "nvme");
  EXPECT_DOUBLE_EQ(c.sync_stall_s, 1e-3 + whole / 40e9);
  EXPECT_DOUBLE_EQ(c.async_stall_s, node / 10e9);
  EXPECT_DOUBLE_EQ(c.background_s, c.sync_stall_s);
  EXPECT_DOUBLE_EQ(c.sync_stall_per_step_s, c.sync_stall_s / 10);
  EXPECT_DOUBLE_EQ(c.async_stall_per_step_s, c.async_stall_s / 10);
  EXPECT_TRUE(c.background_fits);                                                  // 19 ms < 10 steps of 1 s
  EXPECT_FALSE(checkpoint_cost(t, m, o, shape, /*step_s=*/1e-3).background_fits);  // > 10 steps of 1 ms

  // With a file system fast enough in aggregate, the node's own 20 GB/s is the limit.
  t.storage[1].aggregate_write_bw_Bps = 400e9;
  EXPECT_DOUBLE_EQ(checkpoint_cost(t, m, o, shape, 1.0).tiers[1].write_s, 1e-3 + node / 20e9);
  t.storage[1].aggregate_write_bw_Bps = 40e9;

  // ZeRO-0: DP rank 0 writes weights and optimizer state, the others nothing.
  o.zero = 0;
  c = checkpoint_cost(t, m, o, shape, 1.0);
  EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 14 * s1);
  EXPECT_DOUBLE_EQ(c.bytes_per_node, 2 * 14 * s0 + 2 * 14 * s1);
  // ZeRO-3: every rank 14/8 B per parameter of its stage.
  o.zero = 3;
  c = checkpoint_cost(t, m, o, shape, 1.0);
  EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 14 * s1 / 8);
  EXPECT_DOUBLE_EQ(c.bytes_per_node, 4 * 14 * s0 / 8 + 4 * 14 * s1 / 8);

  // Without a local tier the asynchronous checkpoint waits for the copy to host memory.
  t.storage.erase(t.storage.begin());
  o.zero = 1;
  c = checkpoint_cost(t, m, o, shape, 1.0);
  EXPECT_EQ(c.async_tier, "host memory");
  EXPECT_DOUBLE_EQ(c.async_stall_s, 1e-6 + (2 * s1 + 1.5 * s1) / 50e9);  // host link 50 GB/s, 1 us
  // Without storage tiers: sizes only.
  t.storage.clear();
  c = checkpoint_cost(t, m, o, shape, 1.0);
  EXPECT_TRUE(c.tiers.empty());
  EXPECT_TRUE(c.sync_tier.empty());
  EXPECT_DOUBLE_EQ(c.bytes_per_gpu, 2 * s1 + 1.5 * s1);

  // plan_layouts carries the same numbers for the layout.
  t = test_topology(8);
  t.storage = {{"nvme", false, 20e9, 10e9, 0.0, 0, 0}};
  o.zero = 1;
  PlanResult r = plan_layouts(t, m, o);
  const LayoutPlan* lp = find(r, 8, 2, 2);
  ASSERT_NE(lp, nullptr);
  EXPECT_DOUBLE_EQ(lp->checkpoint.bytes_per_node, node);
  EXPECT_DOUBLE_EQ(lp->checkpoint.sync_stall_s, node / 10e9);  // the only tier is the durable one
  EXPECT_DOUBLE_EQ(lp->checkpoint.background_s, 0.0);
}

// Uneven pipeline stages and the interleaved schedule.
TEST(Plan, UnevenEndStagesAndInterleaving) {
  const LlmModel m = gpt_model(126, 1024, 8, 1000);  // Llama 3 405B's 126 layers
  EXPECT_EQ(stage_layers(m, 16, 0), 7);
  EXPECT_EQ(stage_layers(m, 16, 1), 8);
  EXPECT_EQ(stage_layers(m, 16, 15), 7);
  EXPECT_EQ(max_stage_layers(m, 16), 8);
  int sum = 0;
  for (int k = 0; k < 16; ++k) sum += stage_layers(m, 16, k);
  EXPECT_EQ(sum, 126);
  EXPECT_EQ(stage_layers(m, 6, 0), 21);  // divides: even stages
  // 126 = 5 x 25 + 1: the one extra layer goes to the second stage.
  EXPECT_EQ(stage_layers(m, 5, 0), 25);
  EXPECT_EQ(stage_layers(m, 5, 1), 26);
  EXPECT_EQ(stage_layers(m, 5, 4), 25);
  EXPECT_EQ(stage_layers(m, 127, 0), 0);  // more stages than layers
  // DeepSeek-V3's 61 layers on 16 stages (DeepSeek-AI 2024, https://arxiv.org/abs/2412.19437,
  // section 3.2.1: PP 16): 3 in the first and the last two, 4 in the 13 between.
  const LlmModel v3 = gpt_model(61, 1024, 8, 1000);
  sum = 0;
  for (int k = 0; k < 16; ++k) {
    sum += stage_layers(v3, 16, k);
    EXPECT_EQ(stage_layers(v3, 16, k), k >= 1 && k <= 13 ? 4 : 3) << k;
  }
  EXPECT_EQ(sum, 61);
  EXPECT_EQ(max_stage_layers(v3, 16), 4);

  EXPECT_DOUBLE_EQ(bubble_fraction(16, 16, 1), 15.0 / 31.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(16, 16, 8), 15.0 / (128.0 + 15.0));

  // Interleaving: VP times the pipeline transfers, a smaller bubble, the first stage holding
  // PP + (PP-1)/VP micro-batches (Megatron-LM's warm-up), never more than m.
  const LlmModel g = gpt_model(8, 1024, 8, 1000);
  PlanOptions o = options(1, 64, 1, 1024);
  o.max_virtual_stages = 4;
  Shape s;
  s.tp = 1;
  s.pp = 4;
  s.dp = 2;
  s.micro_batches = 32;
  const double one = memory_per_gpu(g, o, s).activations_bytes;
  s.vp = 2;
  const double two = memory_per_gpu(g, o, s).activations_bytes;
  const double layer = layer_activation_bytes(g, o, 1);
  // Stage 0, 2 layers: 4 micro-batches plain, 4 + 3/2 interleaved; plus the embedding dropout mask.
  const double sbh = 1024.0 * 1024;
  EXPECT_NEAR(one, 2 * 4 * layer + 4 * sbh, 1);
  EXPECT_NEAR(two, 2 * 5.5 * layer + 5.5 * sbh, 1);

  Topology t = test_topology(8);
  o.gpu_tflops = 100;
  o.rank_by = RankBy::Step;
  PlanResult r = plan_layouts(t, g, o);
  const LayoutPlan* lp = find(r, 2, 1, 4);
  ASSERT_NE(lp, nullptr);
  EXPECT_EQ(lp->shape.vp, 2);  // 2 layers per stage: VP 2 is the deepest interleaving, and fastest
  EXPECT_DOUBLE_EQ(lp->bubble_fraction, 3.0 / (2 * 32 + 3));
  for (const auto& pc : lp->collectives) {
    if (pc.dim == Dim::PP) {
      EXPECT_DOUBLE_EQ(pc.calls, 2.0 * 32 * 2);
    }
  }
}

}  // namespace
}  // namespace commsim
