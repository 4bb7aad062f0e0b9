// Memory per GPU of a layout (parameters, gradients, optimizer state, activations; see plan.h),
// and what to change when a layout does not fit.
#include <algorithm>
#include <string>
#include <vector>

#include "model/plan/plan.h"
#include "model/plan/steps.h"

namespace commsim {

double layer_activation_bytes(const LlmModel& model, const PlanOptions& opts, int tp) {
  const double sbh = static_cast<double>(opts.seq) * opts.micro_batch * model.hidden;
  const double g = static_cast<double>(model.kv_heads) / model.heads;
  const double f = static_cast<double>(model.ffn_hidden) / model.hidden;
  // MLP inputs: one copy per routed expert, plus the un-routed one the shared experts read; inner
  // activations: one set per routed and per shared expert.
  const double k = model.moe() ? model.routed_copies() : 1.0;
  const double inputs = model.moe() ? k + (model.shared_experts > 0 ? 1 : 0) : 1.0;
  const double inner = model.moe() ? k + model.shared_experts : 1.0;
  const double a = model.heads, s = opts.seq, h = model.hidden;
  // In units of s*b*h bytes (16-bit activations, 1-byte dropout masks), Korthikanti et al. 2022
  // section 4.1. Kept whole on every TP rank: layer-norm inputs (2+2), the inputs of the QKV and
  // first MLP projections (2 + 2 per routed copy), the two dropout masks (1+1). Sharded by TP: Q,
  // K, V (2 + 2g + 2g), the input of the output projection (2), the attention scores, softmax and
  // its dropout (5as/h), and the MLP's inner activations (GELU: 2f/h + 2f/h; SwiGLU: 3 x 2f/h).
  // Without dropout the two masks go, and of the attention terms only the softmax output (2as/h).
  // With FP8 GEMMs the inputs of the four linear layers (QKV, output projection, first and second
  // MLP projection) are saved as 1-byte casts.
  const double masks = model.dropout ? 1 + 1 : 0;
  const double linear_input = opts.fp8 ? 1 : 2;
  double replicated = 2 + 2 + linear_input + masks + linear_input * inputs;
  double sharded = 2 + 4 * g + linear_input +
                   inner * (model.ffn == FfnKind::SwiGlu ? 4 * f + linear_input * f : 2 * f + linear_input * f);
  if (opts.recompute == Recompute::None) sharded += (model.dropout ? 5 : 2) * a * s / h;
  double units = opts.sequence_parallel ? (replicated + sharded) / tp : replicated + sharded / tp;
  return sbh * units;
}

StageParams stage_params(const LlmModel& model, const Shape& shape, int stage) {
  const double layers_per_stage = stage_layers(model, shape.pp, stage);
  StageParams p;
  p.dense = layers_per_stage * model.dense_params_per_layer() / shape.tp;
  if (stage == 0) p.dense += model.embedding_params() / shape.tp;
  if (stage == shape.pp - 1) {
    p.dense += model.output_params() / shape.tp;
    // Tied embeddings: the last stage keeps its own copy of the word embeddings (Megatron).
    if (model.tied_embeddings && shape.pp > 1) p.dense += static_cast<double>(model.vocab) * model.hidden / shape.tp;
  }
  if (model.moe())
    p.expert = layers_per_stage * (static_cast<double>(model.experts) / shape.ep) * model.expert_params() / shape.tp;
  return p;
}

MemoryBreakdown memory_per_gpu(const LlmModel& model, const PlanOptions& opts, const Shape& shape) {
  const int tp = shape.tp, pp = shape.pp, m = shape.micro_batches, vp = std::max(shape.vp, 1);
  const double pb = model.param_bytes, gb = plan_detail::gradient_bytes(model, opts);
  const double opt_bytes = plan_detail::optimizer_memory_bytes_per_param(model, opts);
  const double dense_shard = shape.dp, expert_shard = static_cast<double>(shape.dp) / shape.ep;
  const double sbh = static_cast<double>(opts.seq) * opts.micro_batch * model.hidden;
  const double full_layer = layer_activation_bytes(model, opts, tp);

  MemoryBreakdown best;
  // The first stage holds the most micro-batches, the last the logits; with uneven stages the
  // second holds one layer more than the first.
  for (int stage : {0, std::min(1, pp - 1), pp - 1}) {
    const double layers_per_stage = stage_layers(model, pp, stage);
    StageParams p = stage_params(model, shape, stage);
    MemoryBreakdown mb;
    mb.stage = stage;
    auto sharded = [&](double bytes_per_param, bool shard) {
      return p.dense * bytes_per_param / (shard ? dense_shard : 1.0) +
             p.expert * bytes_per_param / (shard ? expert_shard : 1.0);
    };
    mb.params_bytes = sharded(pb, opts.zero >= 3);
    // FP8: the cached cast of the rank's weights and its transpose (of its shard with ZeRO-3).
    if (opts.fp8) mb.params_bytes += sharded(2.0, opts.zero >= 3);
    mb.grads_bytes = sharded(gb, opts.zero >= 2);
    if (opts.zero >= 3 && layers_per_stage > 0) {
      // FSDP's working set: the gathered parameters of the layer computing and of the one
      // prefetched, and the unsharded gradients of one layer before their reduce-scatter.
      const double layer_params = (p.dense + p.expert) / layers_per_stage;
      mb.params_bytes += 2 * layer_params * pb;
      mb.grads_bytes += layer_params * gb;
    }
    mb.optimizer_bytes = sharded(opt_bytes, opts.zero >= 1);

    // 1F1B: stage k holds min(PP-k, m) micro-batches. Interleaved: Megatron-LM warms stage k up with
    // 2(PP-k-1) + (VP-1)PP chunks of 1/VP of its layers, and holds one more in the steady state.
    const double in_flight =
        vp == 1 ? std::min(pp - stage, m)
                : std::min(static_cast<double>(m), (2.0 * (pp - stage - 1) + (vp - 1.0) * pp + 1.0) / vp);
    double per_layer = full_layer;
    double working = 0;
    if (opts.recompute == Recompute::Full) {
      // Only each layer's input is kept; one layer's activations exist while it is recomputed.
      per_layer = 2 * sbh / (opts.sequence_parallel ? tp : 1);
      working = full_layer;
    }
    double act = layers_per_stage * in_flight * per_layer + working;
    if (stage == 0 && model.dropout)  // embedding dropout mask
      act += in_flight * sbh / (opts.sequence_parallel ? tp : 1);
    if (stage == pp - 1)  // fp32 logits for the cross-entropy, vocabulary split over TP
      act += 4.0 * opts.seq * opts.micro_batch * static_cast<double>(model.vocab) / tp;
    mb.activations_bytes = act;
    if (mb.total_bytes() > best.total_bytes()) best = mb;
  }
  return best;
}

namespace plan_detail {

std::string memory_exclusion_reason(const MemoryBreakdown& plain, double limit_bytes) {
  return "needs " + gib(plain.total_bytes()) + " per GPU > " + gib(limit_bytes) + " (stage " +
         std::to_string(plain.stage) + ": parameters " + gib(plain.params_bytes) + ", gradients " +
         gib(plain.grads_bytes) + ", optimizer " + gib(plain.optimizer_bytes) + ", activations " +
         gib(plain.activations_bytes) + ")";
}

namespace {

// The options that, one at a time, make `shape` fit, each as "--flag (memory it then needs)".
std::vector<std::string> single_option_fixes(const PlanContext& ctx, const Shape& s) {
  const PlanOptions& opts = ctx.opts;
  const double limit = ctx.memory_limit_bytes;
  std::vector<std::string> fixes;
  auto try_fix = [&](PlanOptions changed, Shape shape, const std::string& flag) {
    double need = memory_per_gpu(ctx.model, changed, shape).total_bytes();
    if (need <= limit) fixes.push_back(flag + " (" + gib(need) + ")");
    return need <= limit;
  };
  for (Recompute rc : {Recompute::Selective, Recompute::Full}) {
    if (opts.recompute >= rc) continue;
    PlanOptions o = opts;
    o.recompute = rc;
    if (try_fix(o, s, "--recompute " + std::string(to_string(rc)))) break;
  }
  for (int z = opts.zero + 1; z <= 3; ++z) {
    PlanOptions o = opts;
    o.zero = z;
    if (try_fix(o, s, "--zero " + std::to_string(z))) break;
  }
  if (!opts.sequence_parallel && s.tp > 1) {
    PlanOptions o = opts;
    o.sequence_parallel = true;
    try_fix(o, s, "--sequence-parallel");
  }
  if (opts.micro_batch > 1) {
    PlanOptions o = opts;
    o.micro_batch = 1;
    Shape one = s;
    one.micro_batches = opts.global_batch / s.dp;
    try_fix(o, one, "--micro-batch 1");
  }
  return fixes;
}

}  // namespace

std::string nothing_fits_warning(const PlanContext& ctx, const std::vector<ExcludedLayout>& excluded) {
  const ExcludedLayout* smallest = nullptr;
  for (const auto& e : excluded)
    if (e.memory && (!smallest || e.memory_breakdown.total_bytes() < smallest->memory_breakdown.total_bytes()))
      smallest = &e;
  std::string w = "no layout fits in " + gib(ctx.memory_limit_bytes) + " per GPU";
  if (ctx.memory_reserve_bytes > 0)
    w += " (" + gib(ctx.memory_limit_bytes + ctx.memory_reserve_bytes) + " less the " + gib(ctx.memory_reserve_bytes) +
         " reserve)";
  if (!smallest) return w;
  // What makes the closest layout fit, one option at a time.
  const Shape& s = smallest->shape;
  const std::vector<std::string> fixes = single_option_fixes(ctx, s);
  w += "; the closest, " + s.to_string() + ", needs " + gib(smallest->memory_breakdown.total_bytes());
  if (!fixes.empty()) {
    w += "; it fits with ";
    for (std::size_t i = 0; i < fixes.size(); ++i) w += (i ? " or " : "") + fixes[i];
  } else {
    w += "; no single option makes it fit";
  }
  w += "; more nodes (deeper pipelines, more tensor parallelism) or --memory-limit of a larger GPU also help";
  return w;
}

}  // namespace plan_detail
}  // namespace commsim
