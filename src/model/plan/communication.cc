// The communication of one layout: the collectives of each parallel dimension per iteration (the
// counts and sizes of plan.h's header comment), each priced on the placement its group gets.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "model/plan/plan.h"
#include "model/plan/price_cache.h"
#include "model/plan/steps.h"

namespace commsim::plan_detail {
namespace {

class LayoutCollectives {
 public:
  LayoutCollectives(const PlanContext& ctx, const Shape& shape, PriceCache& prices, PlacementCache& placements)
      : ctx_(ctx),
        opts_(ctx.opts),
        model_(ctx.model),
        shape_(shape),
        prices_(prices),
        placements_(placements),
        m_(shape.micro_batches),
        layers_per_stage_(max_stage_layers(ctx.model, shape.pp)) {}

  std::vector<PricedCollective> all() && {
    tensor_parallel();
    pipeline_parallel();
    data_parallel();
    expert_parallel();
    return std::move(out_);
  }

 private:
  // Prices one collective and counts it `calls` times per iteration, `exposed_calls` of them on
  // the critical path.
  void add(Dim dim, Collective c, std::string what, int group, const GroupPlacement& g, double bytes, double calls,
           double exposed_calls) {
    PricedCollective pc;
    pc.dim = dim;
    pc.collective = c;
    pc.what = std::move(what);
    pc.group = group;
    pc.placement = g;
    pc.bytes = to_bytes(bytes);
    pc.calls = calls;
    pc.exposed_calls = exposed_calls;
    const Choice& ch = prices_.price(c, g, pc.bytes);
    pc.chosen = ch.candidate;
    pc.each_s = ch.cost.time_s;
    pc.total_s = calls * pc.each_s;
    pc.exposed_s = exposed_calls * pc.each_s;
    if (opts_.calibration.present) pc.outside_calibration = !opts_.calibration.covers(pc.bytes, g.nodes);
    out_.push_back(std::move(pc));
  }

  // Tensor parallel: every layer of the stage, every micro-batch.
  void tensor_parallel() {
    if (shape_.tp <= 1) return;
    const GroupPlacement& g = placements_.get(shape_.tp, 1);
    const double msg = ctx_.activation_bytes;
    double calls = m_ * layers_per_stage_ * (ctx_.full_recompute ? 6 : 4);
    const std::size_t first = out_.size();
    if (opts_.sequence_parallel) {
      add(Dim::TP, Collective::ReduceScatter, "layer outputs (sequence parallel)", shape_.tp, g, msg, calls, calls);
      add(Dim::TP, Collective::AllGather, "layer inputs (sequence parallel)", shape_.tp, g, msg, calls, calls);
    } else {
      add(Dim::TP, Collective::AllReduce, "layer outputs", shape_.tp, g, msg, calls, calls);
    }
    if (!opts_.tp_overlap || !(opts_.gpu_tflops > 0)) return;
    // Each collective hides behind an equal share of the layer's GEMM time (forward, recomputed
    // forward and backward of one micro-batch); what exceeds it is exposed.
    const double per_layer = m_ * layers_per_stage_;
    const double collectives_per_layer = (out_.size() - first) * calls / per_layer;
    const double window_s =
        layout_compute_s(ctx_, shape_) / per_layer * layer_gemm_share(model_, opts_.seq) / collectives_per_layer;
    for (std::size_t i = first; i < out_.size(); ++i) {
      PricedCollective& pc = out_[i];
      pc.exposed_s = pc.calls * std::max(0.0, pc.each_s - window_s);
      pc.exposed_calls = pc.each_s > 0 ? pc.exposed_s / pc.each_s : 0;
    }
  }

  // Pipeline: the slowest stage boundary sets the pace; it crosses the network when the
  // pipeline spans nodes, and then min(TP, GPUs per node) ranks of a node send at once.
  void pipeline_parallel() {
    if (shape_.pp <= 1) return;
    const GroupPlacement& stages = placements_.get(shape_.pp, shape_.tp);
    GroupPlacement pair;
    if (stages.nodes > 1) {
      pair.nodes = 2;
      pair.ranks_per_node = 1;
      pair.sharing = std::min(shape_.tp, ctx_.ranks_per_node);
    } else {
      pair.nodes = 1;
      pair.ranks_per_node = 2;
    }
    const double msg = ctx_.activation_bytes;
    const bool split = shape_.tp > 1 && (opts_.sequence_parallel || opts_.pp_scatter_gather);
    double calls = 2.0 * m_ * shape_.vp;
    double exposed = ctx_.overlap_pp ? std::min(calls, 2.0 * (shape_.pp - 1)) : calls;
    add(Dim::PP, Collective::SendRecv, split ? "1/TP of activations and gradients" : "activations and their gradients",
        2, pair, msg / (split ? shape_.tp : 1), calls, exposed);
    if (split && !opts_.sequence_parallel)
      add(Dim::PP, Collective::AllGather, "received activations and gradients (scatter/gather)", shape_.tp,
          placements_.get(shape_.tp, 1), msg, calls, exposed);
  }

  // Data parallel: gradients of the largest stage, optionally in buckets; ZeRO shards them.
  void data_parallel() {
    StageParams first = stage_params(model_, shape_, 0), last = stage_params(model_, shape_, shape_.pp - 1);
    double dense = std::max({first.dense, last.dense, stage_params(model_, shape_, std::min(1, shape_.pp - 1)).dense});
    const int expert_dp = shape_.dp / shape_.ep;
    const GroupPlacement& dense_group = placements_.get(shape_.dp, shape_.tp * shape_.pp);
    if (opts_.zero >= 3) {
      sharded_layers(dense, shape_.dp, dense_group, model_.moe() ? "dense " : "");
      if (model_.moe() && expert_dp > 1)
        sharded_layers(first.expert, expert_dp, placements_.get(expert_dp, shape_.tp * shape_.pp * shape_.ep),
                       "expert ");
      return;
    }
    gradient_sync(dense, shape_.dp, dense_group, model_.moe() ? "dense gradients" : "gradients");
    if (model_.moe() && expert_dp > 1)
      gradient_sync(first.expert, expert_dp, placements_.get(expert_dp, shape_.tp * shape_.pp * shape_.ep),
                    "expert gradients");
  }

  // ZeRO-3 / FSDP: on every micro-batch each layer's parameters are gathered before its forward
  // and again before its backward, and its gradients reduce-scattered after its backward. With
  // overlap (prefetch), the next layer's gather runs during this layer's forward, and in the
  // backward the next gather and this layer's reduce-scatter run during its backward: what exceeds
  // that compute is exposed, and the first gather of each pass and the last reduce-scatter are.
  // Without a compute estimate only those are.
  void sharded_layers(double stage_params, int group, const GroupPlacement& g, const std::string& kind) {
    if (group <= 1 || stage_params <= 0) return;
    const double layers = layers_per_stage_, layer_params = stage_params / layers, calls = m_ * layers;
    const std::size_t first = out_.size();
    add(Dim::DP, Collective::AllGather, kind + "parameters of a layer (forward)", group, g,
        layer_params * model_.param_bytes, calls, calls);
    add(Dim::DP, Collective::AllGather, kind + "parameters of a layer (backward)", group, g,
        layer_params * model_.param_bytes, calls, calls);
    add(Dim::DP, Collective::ReduceScatter, kind + "gradients of a layer", group, g,
        layer_params * gradient_bytes(model_, opts_), calls, calls);
    PricedCollective &fwd = out_[first], &bwd = out_[first + 1], &rs = out_[first + 2];
    for (PricedCollective* pc : {&fwd, &bwd, &rs}) pc->per_layer = true;
    if (!ctx_.overlap_dp) return;
    const bool timed = opts_.gpu_tflops > 0;
    const double compute_s = timed ? layout_compute_s(ctx_, shape_) : 0;
    const double passes = ctx_.full_recompute ? 4 : 3;  // forward, (recomputed forward), backward x 2
    const double forward_s = compute_s / (calls * passes), backward_s = forward_s * (passes - 1);
    const double ag = fwd.each_s, r = rs.each_s;
    const double fwd_exposed = m_ * (ag + (timed ? (layers - 1) * std::max(0.0, ag - forward_s) : 0));
    const double bwd_exposed = m_ * (ag + r + (timed ? (layers - 1) * std::max(0.0, ag + r - backward_s) : 0));
    fwd.exposed_s = fwd_exposed;
    bwd.exposed_s = ag + r > 0 ? bwd_exposed * ag / (ag + r) : 0;
    rs.exposed_s = ag + r > 0 ? bwd_exposed * r / (ag + r) : 0;
    for (PricedCollective* pc : {&fwd, &bwd, &rs}) pc->exposed_calls = pc->each_s > 0 ? pc->exposed_s / pc->each_s : 0;
  }

  void gradient_sync(double params, int group, const GroupPlacement& g, const std::string& what) {
    if (group <= 1 || params <= 0) return;
    const double bucket_params = ctx_.bucket_params;
    double buckets = bucket_params > 0 ? std::ceil(params / bucket_params) : 1.0;
    double grad_bucket_bytes = params * gradient_bytes(model_, opts_) / buckets;
    double param_bucket_bytes = params * model_.param_bytes / buckets;
    double exposed = ctx_.overlap_dp ? 1.0 : buckets;
    if (opts_.zero == 0) {
      add(Dim::DP, Collective::AllReduce, what, group, g, grad_bucket_bytes, buckets, exposed);
      return;
    }
    add(Dim::DP, Collective::ReduceScatter, what, group, g, grad_bucket_bytes, buckets, exposed);
    add(Dim::DP, Collective::AllGather, "updated parameters", group, g, param_bucket_bytes, buckets, exposed);
  }

  // Expert parallel: dispatch and combine of the routed tokens in every MoE layer.
  void expert_parallel() {
    if (!model_.moe() || shape_.ep <= 1) return;
    double bytes = model_.routed_copies() * ctx_.activation_bytes / (opts_.sequence_parallel ? shape_.tp : 1);
    double calls = m_ * layers_per_stage_ * (ctx_.full_recompute ? 6 : 4);
    add(Dim::EP, Collective::AllToAll, "routed tokens", shape_.ep, placements_.get(shape_.ep, shape_.tp * shape_.pp),
        bytes, calls, calls);
  }

  const PlanContext& ctx_;
  const PlanOptions& opts_;
  const LlmModel& model_;
  const Shape& shape_;
  PriceCache& prices_;
  PlacementCache& placements_;
  const int m_;
  const double layers_per_stage_;
  std::vector<PricedCollective> out_;
};

}  // namespace

std::vector<PricedCollective> layout_collectives(const PlanContext& ctx, const Shape& shape, PriceCache& prices,
                                                 PlacementCache& placements) {
  return LayoutCollectives(ctx, shape, prices, placements).all();
}

}  // namespace commsim::plan_detail
