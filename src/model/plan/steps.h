#pragma once
// The named steps of plan_layouts (model/plan/plan.h), shared by the files of model/plan/ and not
// meant for callers outside it: validate the options, enumerate the layouts (layouts.cc), their
// memory (memory.cc), the price of their communication (communication.cc, price_cache.h), their
// compute (compute.cc), and what the ranking assumes and warns about (assumptions.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "model/plan/plan.h"

namespace commsim::plan_detail {

// What every step of one plan reads: the job, the cluster and the constants derived from them.
struct PlanContext {
  PlanContext(const Topology& topo, const LlmModel& model, const PlanOptions& opts, int gpus,
              double flops_per_iteration, Bytes memory_limit_bytes, double memory_reserve_bytes);
  const Topology& topo;
  const LlmModel& model;
  const PlanOptions& opts;
  std::vector<Candidate> candidates;  // opts.candidates, or default_candidates(topo)
  int gpus = 0;
  int ranks_per_node = 0;
  double flops_per_iteration = 0;
  double memory_limit_bytes = 0;    // what a layout may use
  double memory_reserve_bytes = 0;  // kept free besides (PlanResult::memory_reserve_bytes)
  double activation_bytes = 0;      // b*s*h*2: one micro-batch's activations at a layer boundary
  bool full_recompute = false;
  bool overlap_dp = false;   // DP gradient traffic hides behind the backward pass
  bool overlap_pp = false;   // pipeline send/recv hides behind the next micro-batch
  double bucket_params = 0;  // parameters per DP gradient bucket; 0 = one bucket
};

// Throws Error for options that admit no layout at all (see plan_layouts).
void validate_options(const Topology& topo, const PlanOptions& opts);

// Sorted divisors of n >= 1.
std::vector<int> divisors(int n);

// The collectives of one layout, each priced by the fastest candidate (communication.cc).
class PriceCache;
class PlacementCache;
std::vector<PricedCollective> layout_collectives(const PlanContext& ctx, const Shape& shape, PriceCache& prices,
                                                 PlacementCache& placements);

// The share of a layer's forward FLOPs in its GEMMs (the rest is attention's QK^T and AV).
double layer_gemm_share(const LlmModel& model, int seq);
// Per-GPU compute of one iteration without bubble (compute.cc); needs opts.gpu_tflops > 0.
Seconds layout_compute_s(const PlanContext& ctx, const Shape& shape);
// With a compute estimate, overlapped DP traffic can only hide behind the backward pass: what
// exceeds it becomes exposed again, shared over the DP collectives by their hidden time.
void expose_dp_beyond_backward(const PlanContext& ctx, LayoutPlan& lp);

// Why a layout that fits no interleaving depth is excluded (memory.cc).
std::string memory_exclusion_reason(const MemoryBreakdown& plain, double limit_bytes);
// The warning when no layout fits: the closest one and which single option makes it fit.
std::string nothing_fits_warning(const PlanContext& ctx, const std::vector<ExcludedLayout>& excluded);

// What the numbers of a plan assume, for people, and what they should be warned about
// (assumptions.cc). Read the ranked layouts of `result`.
std::vector<std::string> plan_assumptions(const PlanContext& ctx, const PlanResult& result);
std::vector<std::string> plan_warnings(const PlanContext& ctx, const PlanResult& result);

// printf-style formatting of one number, and bytes as "12.3 GiB", for messages.
inline std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
inline std::string gib(double bytes) {
  return format_number("%.1f GiB", bytes / 1073741824.0);
}

// Adam state per parameter: an fp32 master copy and two fp32 moments, or only the two moments
// when the parameters are fp32 already.
inline double optimizer_bytes_per_param(const LlmModel& model) {
  return model.param_bytes >= 4 ? 8.0 : 12.0;
}

// Bytes of one gradient value: PlanOptions::grad_bytes, or the parameter dtype's.
inline double gradient_bytes(const LlmModel& model, const PlanOptions& opts) {
  return opts.grad_bytes > 0 ? opts.grad_bytes : model.param_bytes;
}

// Optimizer memory per parameter: the Adam state, plus an fp32 copy of the gradient when the
// gradients are 16-bit and the parameters are not fp32 (the optimizer unscales and clips in
// fp32). Megatron-LM's bytes per parameter (docs/source/api-guide/dist_optimizer.md): fp16
// parameters and gradients 2 + 2 + 16, bf16 parameters with fp32 gradients 2 + 4 + 12, fp32 4 + 4 + 8.
inline double optimizer_memory_bytes_per_param(const LlmModel& model, const PlanOptions& opts) {
  const bool fp32_copy_of_grads = model.param_bytes < 4 && gradient_bytes(model, opts) < 4;
  return optimizer_bytes_per_param(model) + (fp32_copy_of_grads ? 4.0 : 0.0);
}

// A message size in whole bytes, at least one.
inline Bytes to_bytes(double v) {
  return static_cast<Bytes>(std::max(1.0, std::round(v)));
}

}  // namespace commsim::plan_detail
