// What a checkpoint costs a layout: the bytes each GPU and node writes, the write time to each
// storage tier, and the stall of a synchronous and an asynchronous checkpoint (see plan.h).
#include <algorithm>
#include <cmath>

#include "model/plan/plan.h"
#include "model/plan/steps.h"

namespace commsim {

namespace {

// What rank r writes: rank = tp + TP*(pp + PP*dp); the DP replicas dp = e + EP*j hold the same
// experts e, and j = 0 writes them.
double rank_checkpoint_bytes(const LlmModel& model, const PlanOptions& opts, const Shape& shape, int r) {
  const double pb = model.param_bytes, ob = plan_detail::optimizer_bytes_per_param(model);
  const int expert_dp = std::max(1, shape.dp / std::max(1, shape.ep));
  const int stage = (r / shape.tp) % shape.pp, dp = r / (shape.tp * shape.pp);
  const StageParams p = stage_params(model, shape, stage);
  double weights = 0, optimizer = 0;
  if (opts.zero >= 3)
    weights = p.dense * pb / shape.dp + p.expert * pb / expert_dp;
  else
    weights = (dp == 0 ? p.dense * pb : 0.0) + (dp < shape.ep ? p.expert * pb : 0.0);
  if (opts.zero >= 1)
    optimizer = p.dense * ob / shape.dp + p.expert * ob / expert_dp;
  else
    optimizer = (dp == 0 ? p.dense * ob : 0.0) + (dp < shape.ep ? p.expert * ob : 0.0);
  return weights + optimizer;
}

// Sets c.bytes_per_gpu and c.bytes_per_node: the nodes that hold the ranks writing weights (DP
// rank 0 of every stage and shard) are the busiest.
void busiest_writers(const Topology& topo, const LlmModel& model, const PlanOptions& opts, const Shape& shape,
                     CheckpointCost& c) {
  const int gpus = shape.gpus(), R = std::max(1, topo.ranks_per_node);
  const int writer_ranks = std::min(gpus, shape.tp * shape.pp * std::max(1, shape.ep));
  const int busy_nodes = std::max(1, (writer_ranks + R - 1) / R);
  for (int node = 0; node < busy_nodes; ++node) {
    double node_bytes = 0;
    for (int r = node * R; r < std::min(gpus, (node + 1) * R); ++r) {
      const double b = rank_checkpoint_bytes(model, opts, shape, r);
      node_bytes += b;
      c.bytes_per_gpu = std::max(c.bytes_per_gpu, b);
    }
    c.bytes_per_node = std::max(c.bytes_per_node, node_bytes);
  }
}

// Each node at its own rate; a shared file system also takes the whole checkpoint (every byte is
// written once) at no more than its aggregate rate.
CheckpointTierCost tier_cost(const StorageTier& t, const CheckpointCost& c) {
  CheckpointTierCost tc;
  tc.tier = t.name;
  tc.shared = t.shared;
  Seconds busy = t.write_bw_Bps > 0 ? c.bytes_per_node / t.write_bw_Bps : 0.0;
  if (t.shared && t.aggregate_write_bw_Bps > 0) busy = std::max(busy, c.total_bytes / t.aggregate_write_bw_Bps);
  tc.write_bw_per_node_Bps = busy > 0 ? c.bytes_per_node / busy : t.write_bw_Bps;
  tc.write_s = t.latency_s + busy;
  return tc;
}

// The write time to every tier, and which of them a synchronous and an asynchronous checkpoint
// wait for.
void tier_stalls(const Topology& topo, CheckpointCost& c) {
  int local = -1, durable = -1;
  for (std::size_t i = 0; i < topo.storage.size(); ++i) {
    const StorageTier& t = topo.storage[i];
    c.tiers.push_back(tier_cost(t, c));
    if (!t.shared && local < 0) local = static_cast<int>(i);
    if (t.shared && durable < 0) durable = static_cast<int>(i);
  }
  if (durable < 0 && !c.tiers.empty()) durable = static_cast<int>(c.tiers.size()) - 1;
  if (durable < 0) return;
  c.sync_tier = c.tiers[durable].tier;
  c.sync_stall_s = c.tiers[durable].write_s;
  if (local >= 0) {
    c.async_tier = c.tiers[local].tier;
    c.async_stall_s = c.tiers[local].write_s;
    c.background_s = local == durable ? 0.0 : c.tiers[durable].write_s;
  } else {
    c.async_tier = "host memory";
    c.async_stall_s =
        topo.host_link.latency_s + (topo.host_link.bw_Bps > 0 ? c.bytes_per_gpu / topo.host_link.bw_Bps : 0.0);
    c.background_s = c.tiers[durable].write_s;
  }
}

}  // namespace

CheckpointCost checkpoint_cost(const Topology& topo, const LlmModel& model, const PlanOptions& opts, const Shape& shape,
                               Seconds step_s) {
  CheckpointCost c;
  c.total_bytes = model.total_params() * (model.param_bytes + plan_detail::optimizer_bytes_per_param(model));
  busiest_writers(topo, model, opts, shape, c);
  tier_stalls(topo, c);
  c.every = opts.checkpoint_every;
  if (c.every > 0) {
    c.sync_stall_per_step_s = c.sync_stall_s / c.every;
    c.async_stall_per_step_s = c.async_stall_s / c.every;
    if (std::isfinite(step_s)) c.background_fits = c.background_s <= c.every * step_s;
  }
  return c;
}

}  // namespace commsim
