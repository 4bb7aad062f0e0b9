// plan_layouts: enumerate the layouts, keep those that fit in memory, price their communication
// and compute, rank them, and say what the numbers assume. The steps live in the files beside
// this one (steps.h names them).
#include "model/plan/plan.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

#include "model/error.h"
#include "model/plan/price_cache.h"
#include "model/plan/steps.h"
#include "model/units.h"

namespace commsim {
namespace {

constexpr double kActivationBytes = 2;  // bf16/fp16 activations and activation gradients
constexpr double kMegatronBucketParams = 40e6;

}  // namespace

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

std::string_view to_string(Overlap o) {
  switch (o) {
    case Overlap::None: return "none";
    case Overlap::Dp: return "dp";
    case Overlap::All: return "all";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(std::string_view text) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (text == to_string(r)) return r;
  return std::nullopt;
}

std::optional<Overlap> parse_overlap(std::string_view text) {
  for (Overlap o : {Overlap::None, Overlap::Dp, Overlap::All})
    if (text == to_string(o)) return o;
  return std::nullopt;
}

std::string_view to_string(RankBy r) {
  return r == RankBy::Comm ? "comm" : "step";
}

std::optional<RankBy> parse_rank_by(std::string_view text) {
  for (RankBy r : {RankBy::Comm, RankBy::Step})
    if (text == to_string(r)) return r;
  return std::nullopt;
}

std::string_view to_string(Dim d) {
  switch (d) {
    case Dim::TP: return "tp";
    case Dim::PP: return "pp";
    case Dim::DP: return "dp";
    case Dim::EP: return "ep";
  }
  return "?";
}

LayoutPlan::LayoutPlan()
    : compute_s(std::numeric_limits<double>::quiet_NaN()),
      step_s(std::numeric_limits<double>::quiet_NaN()),
      comm_share(std::numeric_limits<double>::quiet_NaN()) {}

CalibrationRange calibration_range(const Topology& topo) {
  CalibrationRange r;
  const CalibrationInfo& c = topo.calibrated;
  if (!c.present || c.sizes.empty() || c.nodes.empty()) return r;
  r.present = true;
  r.min_bytes = c.sizes.front();
  r.max_bytes = c.sizes.back();
  r.min_nodes = c.nodes.front();
  r.max_nodes = c.nodes.back();
  r.origin =
      "the calibrated section of " + (topo.source_path.empty() ? "topology '" + topo.name + "'" : topo.source_path);
  return r;
}

bool prices_with_nccl_choice(const Topology& topo) {
  return topo.gpu && topo.nccl.present;
}

std::vector<Candidate> default_candidates(const Topology& topo) {
  if (prices_with_nccl_choice(topo)) return {{Algorithm::Nccl, Protocol::None}};
  return our_candidates(topo);
}

std::vector<Candidate> our_candidates(const Topology& topo) {
  std::vector<Candidate> c;
  for (Algorithm a : hand_written_algorithms()) c.push_back({a, Protocol::None});
  if (topo.nccl.present)
    for (Algorithm a : {Algorithm::NcclRing, Algorithm::NcclTree})
      for (Protocol p : kNcclProtocols) c.push_back({a, p});
  return c;
}

std::vector<Candidate> candidates_for(const std::vector<Algorithm>& named, const Topology& topo) {
  std::vector<Candidate> out;
  for (Algorithm a : named) {
    if (is_hand_written(a)) {
      out.push_back({a, Protocol::None});
      continue;
    }
    if (!topo.nccl.present)
      throw Error("--algorithms " + std::string(to_string(a)) + ": topology '" + topo.name +
                  "' has no NCCL constants to price it");
    for (Protocol p : kNcclProtocols) out.push_back({a, p});
  }
  // Pipeline send/recv has one algorithm (direct); keep it available whatever was named.
  if (std::none_of(out.begin(), out.end(),
                   [](const Candidate& c) { return applies(Collective::SendRecv, c.algorithm); }))
    out.push_back({Algorithm::Direct, Protocol::None});
  return out;
}

bool ranks_before(const LayoutPlan& a, const LayoutPlan& b, RankBy rank_by) {
  if (rank_by == RankBy::Step) return std::tie(a.step_s, a.comm_s) < std::tie(b.step_s, b.comm_s);
  return std::tie(a.comm_s, a.bubble_fraction) < std::tie(b.comm_s, b.bubble_fraction);
}

int default_grad_bytes(const LlmModel& model) {
  return model.param_dtype == "bf16" || model.param_dtype == "bfloat16" ? 4 : model.param_bytes;
}

void apply_training_defaults(PlanOptions& opts, const Topology& topo, const LlmModel& model,
                             const std::string& memory_reserve, const std::string& grad_dtype) {
  // The default reserve is a GPU's (CUDA context, NCCL buffers); host ranks keep none.
  if (memory_reserve != "default")
    opts.memory_reserve = MemoryReserve{static_cast<double>(parse_bytes(memory_reserve)), 0, 0};
  else if (topo.gpu)
    opts.memory_reserve = kDefaultMemoryReserve;
  opts.grad_bytes = grad_dtype == "auto" ? default_grad_bytes(model) : dtype_bytes(grad_dtype);
}

namespace plan_detail {

PlanContext::PlanContext(const Topology& topo_, const LlmModel& model_, const PlanOptions& opts_, int gpus_,
                         double flops_per_iteration_, Bytes memory_limit_bytes_, double memory_reserve_bytes_)
    : topo(topo_),
      model(model_),
      opts(opts_),
      candidates(opts_.candidates.empty() ? default_candidates(topo_) : opts_.candidates),
      gpus(gpus_),
      ranks_per_node(topo_.ranks_per_node),
      flops_per_iteration(flops_per_iteration_),
      memory_limit_bytes(static_cast<double>(memory_limit_bytes_)),
      memory_reserve_bytes(memory_reserve_bytes_),
      activation_bytes(static_cast<double>(opts_.micro_batch) * opts_.seq * model_.hidden * kActivationBytes),
      full_recompute(opts_.recompute == Recompute::Full),
      overlap_dp(opts_.overlap != Overlap::None),
      overlap_pp(opts_.overlap == Overlap::All),
      bucket_params(opts_.dp_bucket_params > 0 ? opts_.dp_bucket_params : (overlap_dp ? kMegatronBucketParams : 0)) {}

namespace {

// Plans one shape with its virtual stages; the caller has checked that its memory fits.
LayoutPlan plan_shape(const PlanContext& ctx, const Shape& shape, const MemoryBreakdown& memory, PriceCache& prices,
                      PlacementCache& placements) {
  LayoutPlan lp;
  lp.shape = shape;
  lp.memory = memory;
  lp.bubble_fraction = bubble_fraction(shape.pp, shape.micro_batches, shape.vp);
  if (ctx.opts.gpu_tflops > 0) lp.compute_s = layout_compute_s(ctx, shape);
  lp.collectives = layout_collectives(ctx, shape, prices, placements);
  expose_dp_beyond_backward(ctx, lp);
  for (const auto& pc : lp.collectives) {
    lp.dim_s[static_cast<int>(pc.dim)] += pc.exposed_s;
    lp.comm_s += pc.exposed_s;
    lp.comm_total_s += pc.total_s;
    lp.outside_calibration = lp.outside_calibration || pc.outside_calibration;
  }
  if (ctx.opts.gpu_tflops > 0) {
    lp.step_s = lp.compute_s / (1.0 - lp.bubble_fraction) + lp.comm_s;
    lp.comm_share = lp.comm_s / lp.step_s;
  }
  lp.checkpoint = checkpoint_cost(ctx.topo, ctx.model, ctx.opts, shape, lp.step_s);
  return lp;
}

// The best interleaving depth of `base` that fits: every VP that splits its largest stage evenly
// is tried. Without one, `plain` gets the memory of plain 1F1B, for the exclusion message.
std::optional<LayoutPlan> best_fitting_depth(const PlanContext& ctx, const Shape& base, PriceCache& prices,
                                             PlacementCache& placements, MemoryBreakdown& plain) {
  std::vector<int> depths{1};
  if (base.pp > 1)
    for (int v : divisors(max_stage_layers(ctx.model, base.pp)))
      if (v > 1 && v <= ctx.opts.max_virtual_stages) depths.push_back(v);
  std::optional<LayoutPlan> best;
  for (int v : depths) {
    Shape shape = base;
    shape.vp = v;
    MemoryBreakdown mb = memory_per_gpu(ctx.model, ctx.opts, shape);
    if (v == 1) plain = mb;
    if (mb.total_bytes() > ctx.memory_limit_bytes) continue;
    LayoutPlan lp = plan_shape(ctx, shape, mb, prices, placements);
    if (!best || ranks_before(lp, *best, ctx.opts.rank_by)) best = std::move(lp);
  }
  return best;
}

}  // namespace
}  // namespace plan_detail

PlanResult plan_layouts(const Topology& topo, const LlmModel& model, const PlanOptions& opts) {
  plan_detail::validate_options(topo, opts);
  PlanResult result;
  result.ranks_per_node = topo.ranks_per_node;
  result.gpus = opts.nodes * topo.ranks_per_node;
  result.device_memory_bytes = opts.memory_limit_bytes ? opts.memory_limit_bytes : topo.device_memory_bytes;
  if (result.device_memory_bytes == 0)
    throw Error("topology '" + topo.name + "' gives no device memory; pass --memory-limit");
  const double device = static_cast<double>(result.device_memory_bytes);
  result.memory_reserve_bytes = opts.memory_reserve.bytes(device);
  if (!(result.memory_reserve_bytes >= 0 && result.memory_reserve_bytes < device))
    throw Error("the memory reserve (" + plan_detail::gib(result.memory_reserve_bytes) + ") leaves nothing of the " +
                plan_detail::gib(device) + " per GPU; give a smaller --memory-reserve");
  result.memory_limit_bytes = static_cast<Bytes>(device - result.memory_reserve_bytes);
  result.total_params = model.total_params();
  result.flops_per_iteration = training_flops_per_iteration(model, opts);

  const plan_detail::PlanContext ctx(topo, model, opts, result.gpus, result.flops_per_iteration,
                                     result.memory_limit_bytes, result.memory_reserve_bytes);
  plan_detail::PriceCache prices(topo, ctx.candidates);
  plan_detail::PlacementCache placements(topo.ranks_per_node, result.gpus);

  for (const Shape& base : enumerate_layouts(model, opts, result.gpus, topo.ranks_per_node, &result.excluded)) {
    MemoryBreakdown plain;
    std::optional<LayoutPlan> best = plan_detail::best_fitting_depth(ctx, base, prices, placements, plain);
    if (best)
      result.ranked.push_back(std::move(*best));
    else
      result.excluded.push_back(
          {base, plan_detail::memory_exclusion_reason(plain, ctx.memory_limit_bytes), true, plain});
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [&](const LayoutPlan& a, const LayoutPlan& b) { return ranks_before(a, b, opts.rank_by); });
  result.distinct_prices = prices.distinct();
  result.price_lookups = prices.lookups();
  result.assumptions = plan_detail::plan_assumptions(ctx, result);
  result.warnings = plan_detail::plan_warnings(ctx, result);
  return result;
}

}  // namespace commsim
