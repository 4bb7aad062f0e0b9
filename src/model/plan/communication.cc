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
    if (opts_.sequence_parallel) {
      add(Dim::TP, Collective::ReduceScatter, "layer outputs (sequence parallel)", shape_.tp, g, msg, calls, calls);
      add(Dim::TP, Collective::AllGather, "layer inputs (sequence parallel)", shape_.tp, g, msg, calls, calls);
    } else {
      add(Dim::TP, Collective::AllReduce, "layer outputs", shape_.tp, g, msg, calls, calls);
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
    gradient_sync(dense, shape_.dp, placements_.get(shape_.dp, shape_.tp * shape_.pp),
                  model_.moe() ? "dense gradients" : "gradients");
    int expert_dp = shape_.dp / shape_.ep;
    if (model_.moe() && expert_dp > 1)
      gradient_sync(first.expert, expert_dp, placements_.get(expert_dp, shape_.tp * shape_.pp * shape_.ep),
                    "expert gradients");
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
    double gathers = opts_.zero >= 3 ? 2 : 1;
    add(Dim::DP, Collective::AllGather, opts_.zero >= 3 ? "parameters (forward and backward)" : "updated parameters",
        group, g, param_bucket_bytes, gathers * buckets, gathers * exposed);
  }

  // Expert parallel: dispatch and combine of the routed tokens in every MoE layer.
  void expert_parallel() {
    if (!model_.moe() || shape_.ep <= 1) return;
    double bytes = model_.top_k * ctx_.activation_bytes / (opts_.sequence_parallel ? shape_.tp : 1);
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
