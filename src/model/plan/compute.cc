// Compute of a layout: the training FLOPs of an iteration, the per-GPU compute time at the
// achieved rate, how much DP traffic that time can hide, and where the rate comes from.
#include <string>

#include "model/error.h"
#include "model/plan/plan.h"
#include "model/plan/steps.h"

namespace commsim {

namespace {

// Matrix parameters a token passes through in one layer: attention, then the MLP or its top_k
// experts and the router.
double layer_matrix_params(const LlmModel& model) {
  return model.attention_params_per_layer() +
         (model.moe() ? (model.routed_copies() + model.shared_experts) * model.expert_params() +
                            static_cast<double>(model.hidden) * model.experts
                      : model.expert_params());
}

}  // namespace

double training_flops_per_iteration(const LlmModel& model, const PlanOptions& opts) {
  const double tokens = static_cast<double>(opts.global_batch) * opts.seq;
  const double h = model.hidden, s = opts.seq;
  double layer_forward = 2 * layer_matrix_params(model) + 4 * s * h;  // 4sh: QK^T and attention x V
  double passes = 3 + (opts.recompute == Recompute::Full ? 1 : 0);
  double per_token = passes * model.layers * layer_forward + 3 * 2 * h * model.vocab;
  if (opts.recompute == Recompute::Selective) per_token += model.layers * 4 * s * h;
  return tokens * per_token;
}

std::string apply_compute_rate(const Topology& topo, double mfu, bool rank_by_given, PlanOptions& opts) {
  using plan_detail::format_number;
  std::string note;
  if (opts.gpu_tflops == 0 && topo.peak_tflops > 0) {
    opts.gpu_tflops = topo.peak_tflops * mfu;
    note = "compute rate: " + format_number("%.0f", topo.peak_tflops) + " TFLOP/s peak (device.peak_tflops of '" +
           topo.name + "') x " + format_number("%.0f%%", 100 * mfu) +
           " (--mfu) = " + format_number("%.0f", opts.gpu_tflops) +
           " TFLOP/s per GPU; --gpu-tflops or --mfu give your own";
  } else if (opts.gpu_tflops > 0) {
    note = "compute rate: " + format_number("%.0f", opts.gpu_tflops) + " TFLOP/s per GPU (--gpu-tflops)";
  }
  if (opts.rank_by == RankBy::Step && !(opts.gpu_tflops > 0)) {
    if (rank_by_given)
      throw Error("--rank-by step needs a compute estimate: topology '" + topo.name +
                  "' gives no device.peak_tflops; pass --gpu-tflops");
    opts.rank_by = RankBy::Comm;
    note = "topology '" + topo.name +
           "' gives no device.peak_tflops: no compute estimate, ranked by communication (pass --gpu-tflops to rank "
           "by step time)";
  }
  return note;
}

namespace plan_detail {

double layer_gemm_share(const LlmModel& model, int seq) {
  const double gemm = 2 * layer_matrix_params(model);
  return gemm / (gemm + 4.0 * seq * model.hidden);
}

Seconds layout_compute_s(const PlanContext& ctx, const Shape& shape) {
  const double layers_per_stage = max_stage_layers(ctx.model, shape.pp);
  return ctx.flops_per_iteration / (ctx.gpus * ctx.opts.gpu_tflops * 1e12) * layers_per_stage * shape.pp /
         ctx.model.layers;
}

void expose_dp_beyond_backward(const PlanContext& ctx, LayoutPlan& lp) {
  if (!ctx.overlap_dp || !(ctx.opts.gpu_tflops > 0)) return;
  // The backward pass is 2/3 of the compute, 3/4 with full recomputation (the forward runs twice).
  double backward_s = lp.compute_s * (ctx.full_recompute ? 3.0 / 4.0 : 2.0 / 3.0);
  double dp_total = 0, dp_exposed = 0;
  for (const auto& pc : lp.collectives)
    if (pc.dim == Dim::DP && !pc.per_layer) dp_total += pc.total_s, dp_exposed += pc.exposed_s;
  double spill = dp_total - dp_exposed - backward_s;
  if (spill > 0)
    for (auto& pc : lp.collectives)
      if (pc.dim == Dim::DP && !pc.per_layer && dp_total > dp_exposed) {
        double extra = spill * (pc.total_s - pc.exposed_s) / (dp_total - dp_exposed);
        pc.exposed_s += extra;
        pc.exposed_calls = pc.each_s > 0 ? pc.exposed_s / pc.each_s : pc.exposed_calls;
      }
}

}  // namespace plan_detail
}  // namespace commsim
