#pragma once
// Published training runs that test_plan_published.cc does not cover, each with its source, the
// layout it ran and its step time: what test_plan_published_runs.cc checks and
// bench_plan_published prints (results/plan-published/README.md).
//
// Sources:
//  - [N21] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
//    Megatron-LM", SC 2021, https://arxiv.org/abs/2104.04473, Table 2 (sequence 2048, vocabulary
//    51200, A100 80GB, full recomputation): PTD parallelism for the 530B model (TP 8 x PP 35,
//    batch 2240, micro-batch 1: 171 / 167 / 159 TFLOP/s per GPU on 560 / 1120 / 2240 GPUs) and
//    DeepSpeed ZeRO-3 without model parallelism (175B, batch 1536, micro-batch 4 / 2 / 1: 144 /
//    88 / 44 TFLOP/s on 384 / 768 / 1536 GPUs; 530B, batch 2560 / 2240 / 2240, micro-batch 4 / 2 /
//    1: 138 / 98 / 48 TFLOP/s on 640 / 1120 / 2240 GPUs). Step time = FLOPs per iteration (section
//    5.1's formula) / (GPUs x TFLOP/s).
//  - [S22] Smith et al., "Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B",
//    https://arxiv.org/abs/2201.11990, section 2.4: TP 8 x PP 35 on 280 / 350 / 420 DGX A100
//    nodes, batch 1920, sequence 2048: 60.1 / 50.2 / 44.4 s per iteration; DeepSpeed's pipeline
//    engine (plain 1F1B, no interleaving).
#include <cmath>
#include <string>
#include <vector>

#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "plan_test_util.h"

namespace commsim::test {

struct PublishedRun {
  std::string name;
  std::string source;  // URL, section or table
  std::string topology;
  LlmModel model;
  PlanOptions opts;
  int tp = 1, pp = 1;
  double published_step_s = 0;
  // The runs a known gap of the model misses (stated in results/plan-published/README.md), and
  // whether the gap is that the published layout does not fit.
  std::string known_gap;
  bool gap_is_memory = false;
};

// What the planner makes of one run.
struct RunResult {
  int rank = 0;  // of the published layout among the layouts that fit; 0 = not planned
  std::size_t layouts = 0;
  double predicted_s = NAN;  // the published layout's step time
  double best_s = NAN;       // the planner's best layout's
  Shape best;
  double error() const { return predicted_s / published_s - 1; }
  double published_s = NAN;
  bool within_5pct_of_best() const { return rank > 0 && predicted_s <= 1.05 * best_s; }
};

// A Megatron GPT model of Narayanan et al. 2021: GELU MLP of 4h, learned positions, tied
// embeddings, vocabulary padded to 51200, fp16 parameters and gradients, dropout.
inline LlmModel megatron_gpt(const std::string& name, int heads, int hidden, int layers) {
  LlmModel m = gpt_model(layers, hidden, heads, 51200);
  m.name = name;
  m.tied_embeddings = true;
  m.position_embeddings = 2048;
  m.param_dtype = "fp16";
  m.param_bytes = 2;
  return m;
}

// FLOPs per iteration with full recomputation, Narayanan et al. 2021 section 5.1.
inline double megatron_flops(const LlmModel& m, int batch, int seq) {
  const double B = batch, s = seq, l = m.layers, h = m.hidden, V = m.vocab;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

// Megatron-LM and DeepSpeed in 2021: no sequence parallelism, full recomputation, fp16 gradients,
// the A100 80GB's memory; the options `commsim plan` starts from otherwise.
inline PlanOptions options_2021(const Topology& topo, int gpus, int batch, int micro, int zero) {
  PlanOptions o = plan_command_defaults(topo);
  o.nodes = gpus / topo.ranks_per_node;
  o.global_batch = batch;
  o.micro_batch = micro;
  o.seq = 2048;
  o.sequence_parallel = false;
  o.zero = zero;
  o.recompute = Recompute::Full;
  o.memory_limit_bytes = 80ull << 30;
  o.grad_bytes = 2;
  return o;
}

inline std::vector<PublishedRun> published_runs() {
  std::vector<PublishedRun> runs;
  const Topology a100 = preset_topology("dgx-a100");
  const LlmModel gpt175 = megatron_gpt("gpt-175b", 96, 12288, 96);
  const LlmModel gpt530 = megatron_gpt("gpt-530b", 128, 20480, 105);
  const std::string n21 = "https://arxiv.org/abs/2104.04473 Table 2";
  for (auto [gpus, tflops] : {std::pair{560, 171.0}, std::pair{1120, 167.0}, std::pair{2240, 159.0}})
    runs.push_back({"Megatron PTD-P 530B, " + std::to_string(gpus) + " GPUs", n21, "dgx-a100", gpt530,
                    options_2021(a100, gpus, 2240, 1, 0), 8, 35,
                    megatron_flops(gpt530, 2240, 2048) / (gpus * tflops * 1e12), "", false});
  const std::string zero3_gap =
      "DeepSpeed's 2021 ZeRO-3 moved parameters at about 16 GB/s per GPU; NCCL's ring as modelled gathers a "
      "layer at the node's network rate and hides it behind the layer's compute";
  const std::string zero3_memory_gap =
      "DeepSpeed gathers ZeRO-3 parameters per sub-module (stage3_max_live_parameters), the planner a whole layer "
      "and its prefetched successor: 530B at micro-batch 4 does not fit";
  struct Zero3 {
    const LlmModel* model;
    int gpus, batch, micro;
    double tflops;
  };
  for (const Zero3& z :
       {Zero3{&gpt175, 384, 1536, 4, 144}, Zero3{&gpt175, 768, 1536, 2, 88}, Zero3{&gpt175, 1536, 1536, 1, 44},
        Zero3{&gpt530, 640, 2560, 4, 138}, Zero3{&gpt530, 1120, 2240, 2, 98}, Zero3{&gpt530, 2240, 2240, 1, 48}}) {
    PlanOptions o = options_2021(a100, z.gpus, z.batch, z.micro, 3);
    o.overlap = Overlap::Dp;  // DeepSpeed overlaps ZeRO-3's communication with compute
    runs.push_back(
        {"DeepSpeed ZeRO-3 " + std::string(z.model == &gpt175 ? "175B, " : "530B, ") + std::to_string(z.gpus) + " GPUs",
         n21, "dgx-a100", *z.model, o, 1, 1, megatron_flops(*z.model, z.batch, 2048) / (z.gpus * z.tflops * 1e12),
         z.model == &gpt530 && z.micro == 4 ? zero3_memory_gap : zero3_gap, z.model == &gpt530 && z.micro == 4});
  }
  LlmModel mtnlg = gpt530;
  mtnlg.name = "mt-nlg-530b";
  for (auto [nodes, step_s] : {std::pair{280, 60.1}, std::pair{350, 50.2}, std::pair{420, 44.4}}) {
    // DeepSpeed's pipeline engine runs plain 1F1B: no interleaving.
    PlanOptions o = options_2021(a100, nodes * 8, 1920, 1, 0);
    o.max_virtual_stages = 1;
    runs.push_back({"MT-NLG 530B, " + std::to_string(nodes * 8) + " GPUs",
                    "https://arxiv.org/abs/2201.11990 section 2.4", "dgx-a100", mtnlg, o, 8, 35, step_s, "", false});
  }
  return runs;
}

inline RunResult plan_run(const PublishedRun& run) {
  const Topology topo = preset_topology(run.topology);
  const PlanResult r = plan_layouts(topo, run.model, run.opts);
  RunResult out;
  out.layouts = r.ranked.size();
  out.published_s = run.published_step_s;
  if (!r.ranked.empty()) {
    out.best_s = r.ranked.front().step_s;
    out.best = r.ranked.front().shape;
  }
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Shape& s = r.ranked[i].shape;
    if (s.tp == run.tp && s.pp == run.pp && s.dp == r.gpus / (run.tp * run.pp)) {
      out.rank = static_cast<int>(i) + 1;
      out.predicted_s = r.ranked[i].step_s;
      break;
    }
  }
  return out;
}

}  // namespace commsim::test
