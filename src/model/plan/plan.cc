#include "model/plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim {
namespace {

constexpr double kActivationBytes = 2;  // bf16/fp16 activations and activation gradients
constexpr double kMegatronBucketParams = 40e6;

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; static_cast<long long>(i) * i <= n; ++i) {
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(double bytes) {
  return fmt("%.1f GiB", bytes / 1073741824.0);
}

// Prices each distinct (collective, placement, bytes) once: layouts share most of their
// collectives (the same TP allreduce appears in every layout with that TP and micro-batch).
class PriceCache {
 public:
  PriceCache(const Topology& topo, const std::vector<Candidate>& candidates) : topo_(topo), candidates_(candidates) {}

  const Choice& price(Collective c, const GroupPlacement& g, Bytes bytes) {
    ++lookups_;
    Key key{c, g.nodes, g.ranks_per_node, g.nodes > 1 ? g.sharing : 1, bytes};
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    const Topology& t = shared_topology(std::get<3>(key));
    Choice choice = best_candidate(t, c, g.nodes, g.ranks_per_node, bytes, candidates_);
    return cache_.emplace(key, choice).first->second;
  }
  std::size_t distinct() const { return cache_.size(); }
  std::size_t lookups() const { return lookups_; }

 private:
  using Key = std::tuple<Collective, int, int, int, Bytes>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = static_cast<std::size_t>(std::get<0>(k));
      h = h * 1000003u ^ static_cast<std::size_t>(std::get<1>(k));
      h = h * 1000003u ^ static_cast<std::size_t>(std::get<2>(k));
      h = h * 1000003u ^ static_cast<std::size_t>(std::get<3>(k));
      h = h * 1000003u ^ std::hash<Bytes>()(std::get<4>(k));
      return h;
    }
  };

  // The topology as one of `sharing` groups that use a node's network at the same time sees it:
  // each gets 1/sharing of the node's aggregate NIC bandwidth (as if the fabric were that much
  // more oversubscribed), while one flow is still limited by one NIC.
  const Topology& shared_topology(int sharing) {
    if (sharing <= 1) return topo_;
    auto it = shared_.find(sharing);
    if (it != shared_.end()) return it->second;
    Topology t = topo_;
    t.network.oversubscription *= sharing;
    return shared_.emplace(sharing, std::move(t)).first->second;
  }

  const Topology& topo_;
  const std::vector<Candidate>& candidates_;
  std::unordered_map<Key, Choice, KeyHash> cache_;
  std::map<int, Topology> shared_;
  std::size_t lookups_ = 0;
};

// group_placement is evaluated for few distinct (size, stride) pairs per plan.
class PlacementCache {
 public:
  PlacementCache(int ranks_per_node, int total) : rpn_(ranks_per_node), total_(total) {}
  const GroupPlacement& get(int size, int stride) {
    auto key = std::make_pair(size, stride);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    return cache_.emplace(key, group_placement(size, stride, rpn_, total_)).first->second;
  }

 private:
  int rpn_, total_;
  std::map<std::pair<int, int>, GroupPlacement> cache_;
};

Bytes to_bytes(double v) {
  return static_cast<Bytes>(std::max(1.0, std::round(v)));
}

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

std::string Shape::to_string() const {
  return "DP=" + std::to_string(dp) + " TP=" + std::to_string(tp) + " PP=" + std::to_string(pp) +
         " EP=" + std::to_string(ep) + (vp > 1 ? " VP=" + std::to_string(vp) : "");
}

int stage_layers(const LlmModel& model, int pp, int stage) {
  if (pp < 1 || stage < 0 || stage >= pp) return 0;
  if (model.layers % pp == 0) return model.layers / pp;
  if (pp < 3 || (model.layers + 2) % pp) return 0;
  const int middle = (model.layers + 2) / pp;
  return stage == 0 || stage == pp - 1 ? middle - 1 : middle;
}

int max_stage_layers(const LlmModel& model, int pp) {
  return std::max(stage_layers(model, pp, 0), stage_layers(model, pp, pp > 1 ? 1 : 0));
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

std::vector<Candidate> default_candidates(const Topology& topo) {
  std::vector<Candidate> c;
  for (Algorithm a : hand_written_algorithms()) c.push_back({a, Protocol::None});
  if (topo.nccl.present)
    for (Algorithm a : {Algorithm::NcclRing, Algorithm::NcclTree})
      for (Protocol p : kNcclProtocols) c.push_back({a, p});
  return c;
}

GroupPlacement group_placement(int size, int stride, int ranks_per_node, int total_ranks) {
  if (size < 1 || stride < 1 || ranks_per_node < 1 || total_ranks < size * stride || total_ranks % (size * stride))
    throw Error("group_placement: a group of " + std::to_string(size) + " ranks " + std::to_string(stride) +
                " apart does not tile " + std::to_string(total_ranks) + " ranks");
  GroupPlacement best;
  best.nodes = 0;
  int best_max = 0;
  // A group's spread over nodes depends only on its first rank modulo ranks_per_node.
  std::vector<char> seen(ranks_per_node, 0);
  int residues = 0;
  const int blocks = total_ranks / (size * stride);
  for (int outer = 0; outer < blocks && residues < ranks_per_node; ++outer) {
    for (int inner = 0; inner < stride && residues < ranks_per_node; ++inner) {
      long long base = static_cast<long long>(outer) * size * stride + inner;
      int r = static_cast<int>(base % ranks_per_node);
      if (seen[r]) continue;
      seen[r] = 1;
      ++residues;
      // Nodes are non-decreasing along the group: count runs of equal node index.
      int nodes = 0, run = 0, max_run = 0;
      long long prev = -1;
      for (int i = 0; i < size; ++i) {
        long long node = (base + static_cast<long long>(i) * stride) / ranks_per_node;
        if (node != prev) {
          ++nodes;
          run = 0;
          prev = node;
        }
        max_run = std::max(max_run, ++run);
      }
      if (nodes > best.nodes || (nodes == best.nodes && max_run > best_max)) {
        best.nodes = nodes;
        best_max = max_run;
      }
    }
  }
  if (best.nodes * best_max == size) {
    best.ranks_per_node = best_max;
  } else {
    // Uneven: the largest even spread with no more ranks per node than the fullest node.
    best.uneven = true;
    int per = 1;
    for (int d : divisors(size))
      if (d <= best_max) per = d;
    best.ranks_per_node = per;
    best.nodes = size / per;
  }
  best.sharing = best.nodes > 1 ? std::max(1, ranks_per_node / best.ranks_per_node) : 1;
  return best;
}

double bubble_fraction(int pp, int micro_batches, int vp) {
  if (pp <= 1) return 0.0;
  return static_cast<double>(pp - 1) / (static_cast<double>(std::max(vp, 1)) * micro_batches + pp - 1);
}

double layer_activation_bytes(const LlmModel& model, const PlanOptions& opts, int tp) {
  const double sbh = static_cast<double>(opts.seq) * opts.micro_batch * model.hidden;
  const double g = static_cast<double>(model.kv_heads) / model.heads;
  const double f = static_cast<double>(model.ffn_hidden) / model.hidden;
  const double k = model.moe() ? model.top_k : 1.0;
  const double a = model.heads, s = opts.seq, h = model.hidden;
  // In units of s*b*h bytes (16-bit activations, 1-byte dropout masks), Korthikanti et al. 2022
  // section 4.1. Kept whole on every TP rank: layer-norm inputs (2+2), the inputs of the QKV and
  // first MLP projections (2 + 2 per routed copy), the two dropout masks (1+1). Sharded by TP: Q,
  // K, V (2 + 2g + 2g), the input of the output projection (2), the attention scores, softmax and
  // its dropout (5as/h), and the MLP's inner activations (GELU: 2f/h + 2f/h; SwiGLU: 3 x 2f/h).
  // Without dropout the two masks go, and of the attention terms only the softmax output (2as/h).
  const double masks = model.dropout ? 1 + 1 : 0;
  double replicated = 2 + 2 + 2 + masks + 2 * k;
  double sharded = 2 + 4 * g + 2 + k * (model.ffn == FfnKind::SwiGlu ? 6 * f : 4 * f);
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
  const double pb = model.param_bytes;
  const double opt_bytes = model.param_bytes >= 4 ? 8.0 : 12.0;  // fp32 master copy only below fp32
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
    mb.grads_bytes = sharded(pb, opts.zero >= 2);
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

double training_flops_per_iteration(const LlmModel& model, const PlanOptions& opts) {
  const double tokens = static_cast<double>(opts.global_batch) * opts.seq;
  const double h = model.hidden, s = opts.seq;
  double matrix_params =
      model.attention_params_per_layer() +
      (model.moe() ? model.top_k * model.expert_params() + h * model.experts : model.expert_params());
  double layer_forward = 2 * matrix_params + 4 * s * h;  // 4sh: QK^T and attention x V
  double passes = 3 + (opts.recompute == Recompute::Full ? 1 : 0);
  double per_token = passes * model.layers * layer_forward + 3 * 2 * h * model.vocab;
  if (opts.recompute == Recompute::Selective) per_token += model.layers * 4 * s * h;
  return tokens * per_token;
}

std::vector<Shape> enumerate_layouts(const LlmModel& model, const PlanOptions& opts, int gpus, int ranks_per_node,
                                     std::vector<ExcludedLayout>* excluded) {
  std::vector<Shape> valid;
  auto reject = [&](const Shape& s, std::string why) {
    if (excluded) excluded->push_back({s, std::move(why), false, {}});
  };
  for (int tp : divisors(gpus)) {
    for (int pp : divisors(gpus / tp)) {
      Shape s;
      s.tp = tp;
      s.pp = pp;
      s.dp = gpus / (tp * pp);
      if (model.heads % tp) {
        reject(s,
               "TP=" + std::to_string(tp) + " does not divide the " + std::to_string(model.heads) + " attention heads");
        continue;
      }
      if (model.kv_heads % tp) {
        reject(s, "TP=" + std::to_string(tp) + " does not divide the " + std::to_string(model.kv_heads) + " KV heads");
        continue;
      }
      if (tp > ranks_per_node && !opts.allow_cross_node_tp) {
        reject(s, "TP=" + std::to_string(tp) + " spans nodes of " + std::to_string(ranks_per_node) +
                      " GPUs (pass --allow-cross-node-tp to plan it)");
        continue;
      }
      if (stage_layers(model, pp, 0) == 0) {
        reject(s, "PP=" + std::to_string(pp) + " does not divide the " + std::to_string(model.layers) +
                      " layers (nor " + std::to_string(model.layers + 2) +
                      ", with one layer fewer in the first and the last stage)");
        continue;
      }
      long long per_step = static_cast<long long>(opts.micro_batch) * s.dp;
      if (opts.global_batch % per_step) {
        reject(s, "global batch " + std::to_string(opts.global_batch) + " is not a multiple of micro-batch " +
                      std::to_string(opts.micro_batch) + " x DP " + std::to_string(s.dp));
        continue;
      }
      s.micro_batches = static_cast<int>(opts.global_batch / per_step);
      if (!model.moe()) {
        valid.push_back(s);
        continue;
      }
      for (int ep : divisors(std::gcd(model.experts, s.dp))) {
        Shape e = s;
        e.ep = ep;
        valid.push_back(e);
      }
    }
  }
  return valid;
}

CheckpointCost checkpoint_cost(const Topology& topo, const LlmModel& model, const PlanOptions& opts, const Shape& shape,
                               Seconds step_s) {
  CheckpointCost c;
  const double pb = model.param_bytes, ob = model.param_bytes >= 4 ? 8.0 : 12.0;
  c.total_bytes = model.total_params() * (pb + ob);
  const int gpus = shape.gpus(), R = std::max(1, topo.ranks_per_node);
  const int expert_dp = std::max(1, shape.dp / std::max(1, shape.ep));
  // What rank r writes: rank = tp + TP*(pp + PP*dp); the DP replicas dp = e + EP*j hold the same
  // experts e, and j = 0 writes them.
  auto rank_bytes = [&](int r) {
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
  };
  // The nodes that hold the ranks writing weights (DP rank 0 of every stage and shard) are the busiest.
  const int writer_ranks = std::min(gpus, shape.tp * shape.pp * std::max(1, shape.ep));
  const int busy_nodes = std::max(1, (writer_ranks + R - 1) / R);
  for (int node = 0; node < busy_nodes; ++node) {
    double node_bytes = 0;
    for (int r = node * R; r < std::min(gpus, (node + 1) * R); ++r) {
      const double b = rank_bytes(r);
      node_bytes += b;
      c.bytes_per_gpu = std::max(c.bytes_per_gpu, b);
    }
    c.bytes_per_node = std::max(c.bytes_per_node, node_bytes);
  }

  int local = -1, durable = -1;
  for (std::size_t i = 0; i < topo.storage.size(); ++i) {
    const StorageTier& t = topo.storage[i];
    CheckpointTierCost tc;
    tc.tier = t.name;
    tc.shared = t.shared;
    // Each node at its own rate; a shared file system also takes the whole checkpoint (every byte is
    // written once) at no more than its aggregate rate.
    Seconds busy = t.write_bw_Bps > 0 ? c.bytes_per_node / t.write_bw_Bps : 0.0;
    if (t.shared && t.aggregate_write_bw_Bps > 0) busy = std::max(busy, c.total_bytes / t.aggregate_write_bw_Bps);
    tc.write_bw_per_node_Bps = busy > 0 ? c.bytes_per_node / busy : t.write_bw_Bps;
    tc.write_s = t.latency_s + busy;
    c.tiers.push_back(tc);
    if (!t.shared && local < 0) local = static_cast<int>(i);
    if (t.shared && durable < 0) durable = static_cast<int>(i);
  }
  if (durable < 0 && !c.tiers.empty()) durable = static_cast<int>(c.tiers.size()) - 1;
  if (durable >= 0) {
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
  c.every = opts.checkpoint_every;
  if (c.every > 0) {
    c.sync_stall_per_step_s = c.sync_stall_s / c.every;
    c.async_stall_per_step_s = c.async_stall_s / c.every;
    if (std::isfinite(step_s)) c.background_fits = c.background_s <= c.every * step_s;
  }
  return c;
}

PlanResult plan_layouts(const Topology& topo, const LlmModel& model, const PlanOptions& opts) {
  if (opts.nodes < 1) throw Error("--nodes must be at least 1");
  if (topo.max_nodes > 0 && opts.nodes > topo.max_nodes)
    throw Error("topology '" + topo.name + "' has at most " + std::to_string(topo.max_nodes) + " nodes, asked for " +
                std::to_string(opts.nodes));
  if (opts.global_batch < 1) throw Error("--global-batch must be a positive number of sequences");
  if (opts.micro_batch < 1) throw Error("--micro-batch must be a positive number of sequences");
  if (opts.seq < 1) throw Error("--seq must be a positive number of tokens");
  if (opts.global_batch % opts.micro_batch)
    throw Error("global batch " + std::to_string(opts.global_batch) + " is not a multiple of micro-batch " +
                std::to_string(opts.micro_batch));
  if (opts.zero < 0 || opts.zero > 3)
    throw Error("--zero must be 0, 1, 2 or 3 (got " + std::to_string(opts.zero) + ")");
  if (opts.dp_bucket_params < 0) throw Error("the DP bucket size must not be negative");
  if (opts.max_virtual_stages < 1) throw Error("--virtual-stages must be at least 1");
  if (opts.checkpoint_every < 0) throw Error("--checkpoint-every must be 0 (none) or a positive number of steps");
  if (opts.rank_by == RankBy::Step && !(opts.gpu_tflops > 0))
    throw Error("ranking by step time needs a compute estimate: pass --gpu-tflops");

  PlanResult result;
  result.ranks_per_node = topo.ranks_per_node;
  result.gpus = opts.nodes * topo.ranks_per_node;
  result.memory_limit_bytes = opts.memory_limit_bytes ? opts.memory_limit_bytes : topo.device_memory_bytes;
  if (result.memory_limit_bytes == 0)
    throw Error("topology '" + topo.name + "' gives no device memory; pass --memory-limit");
  result.total_params = model.total_params();
  result.flops_per_iteration = training_flops_per_iteration(model, opts);

  const std::vector<Candidate> candidates = opts.candidates.empty() ? default_candidates(topo) : opts.candidates;
  PriceCache prices(topo, candidates);
  PlacementCache placements(topo.ranks_per_node, result.gpus);

  const int R = topo.ranks_per_node, N = result.gpus;
  const double msg = static_cast<double>(opts.micro_batch) * opts.seq * model.hidden * kActivationBytes;
  const bool full = opts.recompute == Recompute::Full;
  const bool overlap_dp = opts.overlap != Overlap::None;
  const bool overlap_pp = opts.overlap == Overlap::All;
  const double bucket_params =
      opts.dp_bucket_params > 0 ? opts.dp_bucket_params : (overlap_dp ? kMegatronBucketParams : 0);

  auto better = [&](const LayoutPlan& a, const LayoutPlan& b) {
    if (opts.rank_by == RankBy::Step) return std::tie(a.step_s, a.comm_s) < std::tie(b.step_s, b.comm_s);
    return std::tie(a.comm_s, a.bubble_fraction) < std::tie(b.comm_s, b.bubble_fraction);
  };

  // Plans one shape (with its virtual stages); the caller has checked that it fits.
  auto plan_shape = [&](const Shape& shape, const MemoryBreakdown& memory) {
    LayoutPlan lp;
    lp.shape = shape;
    lp.memory = memory;
    const int m = shape.micro_batches;
    const double layers_per_stage = max_stage_layers(model, shape.pp);
    lp.bubble_fraction = bubble_fraction(shape.pp, m, shape.vp);
    if (opts.gpu_tflops > 0)
      lp.compute_s =
          result.flops_per_iteration / (N * opts.gpu_tflops * 1e12) * layers_per_stage * shape.pp / model.layers;

    auto add = [&](Dim dim, Collective c, std::string what, int group, const GroupPlacement& g, double bytes,
                   double calls, double exposed_calls) {
      PricedCollective pc;
      pc.dim = dim;
      pc.collective = c;
      pc.what = std::move(what);
      pc.group = group;
      pc.placement = g;
      pc.bytes = to_bytes(bytes);
      pc.calls = calls;
      pc.exposed_calls = exposed_calls;
      const Choice& ch = prices.price(c, g, pc.bytes);
      pc.chosen = ch.candidate;
      pc.each_s = ch.cost.time_s;
      pc.total_s = calls * pc.each_s;
      pc.exposed_s = exposed_calls * pc.each_s;
      if (opts.calibration.present) pc.outside_calibration = !opts.calibration.covers(pc.bytes, g.nodes);
      lp.collectives.push_back(std::move(pc));
    };

    // Tensor parallel: every layer of the stage, every micro-batch.
    if (shape.tp > 1) {
      const GroupPlacement& g = placements.get(shape.tp, 1);
      double calls = m * layers_per_stage * (full ? 6 : 4);
      if (opts.sequence_parallel) {
        add(Dim::TP, Collective::ReduceScatter, "layer outputs (sequence parallel)", shape.tp, g, msg, calls, calls);
        add(Dim::TP, Collective::AllGather, "layer inputs (sequence parallel)", shape.tp, g, msg, calls, calls);
      } else {
        add(Dim::TP, Collective::AllReduce, "layer outputs", shape.tp, g, msg, calls, calls);
      }
    }
    // Pipeline: the slowest stage boundary sets the pace; it crosses the network when the
    // pipeline spans nodes, and then min(TP, GPUs per node) ranks of a node send at once.
    if (shape.pp > 1) {
      const GroupPlacement& stages = placements.get(shape.pp, shape.tp);
      GroupPlacement pair;
      if (stages.nodes > 1) {
        pair.nodes = 2;
        pair.ranks_per_node = 1;
        pair.sharing = std::min(shape.tp, R);
      } else {
        pair.nodes = 1;
        pair.ranks_per_node = 2;
      }
      const bool split = shape.tp > 1 && (opts.sequence_parallel || opts.pp_scatter_gather);
      double calls = 2.0 * m * shape.vp;
      double exposed = overlap_pp ? std::min(calls, 2.0 * (shape.pp - 1)) : calls;
      add(Dim::PP, Collective::SendRecv,
          split ? "1/TP of activations and gradients" : "activations and their gradients", 2, pair,
          msg / (split ? shape.tp : 1), calls, exposed);
      if (split && !opts.sequence_parallel)
        add(Dim::PP, Collective::AllGather, "received activations and gradients (scatter/gather)", shape.tp,
            placements.get(shape.tp, 1), msg, calls, exposed);
    }
    // Data parallel: gradients of the largest stage, optionally in buckets; ZeRO shards them.
    auto add_gradient_sync = [&](double params, int group, const GroupPlacement& g, const std::string& what) {
      if (group <= 1 || params <= 0) return;
      double buckets = bucket_params > 0 ? std::ceil(params / bucket_params) : 1.0;
      double bucket_bytes = params * model.param_bytes / buckets;
      double exposed = overlap_dp ? 1.0 : buckets;
      if (opts.zero == 0) {
        add(Dim::DP, Collective::AllReduce, what, group, g, bucket_bytes, buckets, exposed);
      } else {
        add(Dim::DP, Collective::ReduceScatter, what, group, g, bucket_bytes, buckets, exposed);
        double gathers = opts.zero >= 3 ? 2 : 1;
        add(Dim::DP, Collective::AllGather, opts.zero >= 3 ? "parameters (forward and backward)" : "updated parameters",
            group, g, bucket_bytes, gathers * buckets, gathers * exposed);
      }
    };
    {
      StageParams first = stage_params(model, shape, 0), last = stage_params(model, shape, shape.pp - 1);
      double dense = std::max({first.dense, last.dense, stage_params(model, shape, std::min(1, shape.pp - 1)).dense});
      add_gradient_sync(dense, shape.dp, placements.get(shape.dp, shape.tp * shape.pp),
                        model.moe() ? "dense gradients" : "gradients");
      int expert_dp = shape.dp / shape.ep;
      if (model.moe() && expert_dp > 1)
        add_gradient_sync(first.expert, expert_dp, placements.get(expert_dp, shape.tp * shape.pp * shape.ep),
                          "expert gradients");
    }
    // Expert parallel: dispatch and combine of the routed tokens in every MoE layer.
    if (model.moe() && shape.ep > 1) {
      double bytes = model.top_k * msg / (opts.sequence_parallel ? shape.tp : 1);
      double calls = m * layers_per_stage * (full ? 6 : 4);
      add(Dim::EP, Collective::AllToAll, "routed tokens", shape.ep, placements.get(shape.ep, shape.tp * shape.pp),
          bytes, calls, calls);
    }

    // With a compute estimate, overlapped DP traffic can only hide behind the backward pass.
    if (overlap_dp && opts.gpu_tflops > 0) {
      double backward_s = lp.compute_s * (full ? 3.0 / 4.0 : 2.0 / 3.0);
      double dp_total = 0, dp_exposed = 0;
      for (const auto& pc : lp.collectives)
        if (pc.dim == Dim::DP) dp_total += pc.total_s, dp_exposed += pc.exposed_s;
      double spill = dp_total - dp_exposed - backward_s;
      if (spill > 0)
        for (auto& pc : lp.collectives)
          if (pc.dim == Dim::DP && dp_total > dp_exposed) {
            double extra = spill * (pc.total_s - pc.exposed_s) / (dp_total - dp_exposed);
            pc.exposed_s += extra;
            pc.exposed_calls = pc.each_s > 0 ? pc.exposed_s / pc.each_s : pc.exposed_calls;
          }
    }

    for (const auto& pc : lp.collectives) {
      lp.dim_s[static_cast<int>(pc.dim)] += pc.exposed_s;
      lp.comm_s += pc.exposed_s;
      lp.comm_total_s += pc.total_s;
      lp.outside_calibration = lp.outside_calibration || pc.outside_calibration;
    }
    if (opts.gpu_tflops > 0) {
      lp.step_s = lp.compute_s / (1.0 - lp.bubble_fraction) + lp.comm_s;
      lp.comm_share = lp.comm_s / lp.step_s;
    }
    lp.checkpoint = checkpoint_cost(topo, model, opts, shape, lp.step_s);
    return lp;
  };

  const double limit = static_cast<double>(result.memory_limit_bytes);
  std::vector<Shape> shapes = enumerate_layouts(model, opts, N, R, &result.excluded);
  for (const Shape& base : shapes) {
    // Every interleaving depth that splits the largest stage evenly; the best that fits is kept.
    std::vector<int> depths{1};
    if (base.pp > 1)
      for (int v : divisors(max_stage_layers(model, base.pp)))
        if (v > 1 && v <= opts.max_virtual_stages) depths.push_back(v);
    std::optional<LayoutPlan> best;
    MemoryBreakdown plain;
    for (int v : depths) {
      Shape shape = base;
      shape.vp = v;
      MemoryBreakdown mb = memory_per_gpu(model, opts, shape);
      if (v == 1) plain = mb;
      if (mb.total_bytes() > limit) continue;
      LayoutPlan lp = plan_shape(shape, mb);
      if (!best || better(lp, *best)) best = std::move(lp);
    }
    if (best) {
      result.ranked.push_back(std::move(*best));
      continue;
    }
    result.excluded.push_back({base,
                               "needs " + gib(plain.total_bytes()) + " per GPU > " + gib(limit) + " (stage " +
                                   std::to_string(plain.stage) + ": parameters " + gib(plain.params_bytes) +
                                   ", gradients " + gib(plain.grads_bytes) + ", optimizer " +
                                   gib(plain.optimizer_bytes) + ", activations " + gib(plain.activations_bytes) + ")",
                               true, plain});
  }

  std::stable_sort(result.ranked.begin(), result.ranked.end(), better);
  result.distinct_prices = prices.distinct();
  result.price_lookups = prices.lookups();

  // What the numbers assume, stated with them.
  auto& as = result.assumptions;
  as.push_back("placement: rank = tp + TP*(pp + PP*dp); TP ranks adjacent (one node when TP divides " +
               std::to_string(R) +
               " GPUs per node), then pipeline stages, then DP replicas across nodes; EP groups are "
               "consecutive DP replicas");
  as.push_back("pricing: each collective by the fastest of " + std::to_string(candidates.size()) +
               " candidate algorithms on its group's (nodes, ranks per node); groups of one dimension running at "
               "once share each node's NICs");
  as.push_back(std::string("TP: ") + (full ? "6" : "4") + " " +
               (opts.sequence_parallel ? "reduce-scatter + allgather pairs" : "allreduces") +
               " of b*s*h*2 bytes per layer and micro-batch" +
               (full ? " (full recomputation repeats the forward)" : ""));
  as.push_back(std::string("PP: 2 send/recv per micro-batch (activation forward, gradient backward) of b*s*h*2") +
               (opts.sequence_parallel   ? "/TP bytes (sequence parallel)"
                : opts.pp_scatter_gather ? "/TP bytes when TP > 1, then an allgather of b*s*h*2 over the TP group "
                                           "(Megatron scatter/gather)"
                                         : " bytes") +
               " between neighbouring stages; 1F1B bubble (PP-1)/(m+PP-1)" +
               (opts.max_virtual_stages > 1
                    ? "; interleaved with VP <= " + std::to_string(opts.max_virtual_stages) +
                          " virtual stages per GPU where that is faster and fits: VP times the send/recv, bubble "
                          "(PP-1)/(VP*m+PP-1)"
                    : "") +
               "; where PP does not divide the layers but divides layers + 2, the first and the last stage hold "
               "one layer fewer");
  as.push_back(std::string("DP: gradients in the parameter dtype, ") +
               (opts.zero == 0  ? "one allreduce"
                : opts.zero < 3 ? "ZeRO-" + std::to_string(opts.zero) + ": reduce-scatter + allgather of parameters"
                                : "ZeRO-3: reduce-scatter + 2 allgathers of parameters") +
               (bucket_params > 0 ? ", buckets of " + fmt("%.0fM", bucket_params / 1e6) + " parameters" : ", whole"));
  if (model.moe())
    as.push_back(std::string("EP: ") + (full ? "6" : "4") + " alltoalls of top_k*b*s*h*2" +
                 (opts.sequence_parallel ? "/TP" : "") + " bytes per MoE layer and micro-batch");
  switch (opts.overlap) {
    case Overlap::None: as.push_back("overlap none: every collective is on the critical path (an upper bound)"); break;
    case Overlap::Dp:
      as.push_back("overlap dp: DP gradient traffic assumed hidden behind backward compute except the last bucket" +
                   std::string(opts.gpu_tflops > 0 ? " (and whatever exceeds the estimated backward time)" : ""));
      break;
    case Overlap::All:
      as.push_back(
          "overlap all: DP as with --overlap dp; PP send/recv hidden behind the next micro-batch's compute "
          "except the 2(PP-1) of pipeline fill and drain; TP and EP stay exposed (each layer waits on them)");
      break;
  }
  as.push_back("memory: " + std::to_string(model.param_bytes) + "-byte parameters and gradients, Adam " +
               (model.param_bytes >= 4 ? "8" : "12") + " B/param" +
               (opts.zero ? ", ZeRO-" + std::to_string(opts.zero) + " sharding over DP" : "") +
               "; activations per Korthikanti et al. 2022 (recompute " + std::string(to_string(opts.recompute)) +
               (opts.sequence_parallel ? ", sequence parallel" : "") +
               "), stage k holding min(PP-k, m) micro-batches (interleaved: (2(PP-k-1) + (VP-1)PP + 1)/VP, at "
               "most m)" +
               (model.dropout ? "" : ", no dropout masks (the model has no dropout)") +
               (opts.recompute == Recompute::None
                    ? "; the attention scores (5as/h per layer) are stored: a fused (flash) attention kernel does not "
                      "store them, which --recompute selective models"
                    : ""));
  as.push_back(std::string("ranking: by ") +
               (opts.rank_by == RankBy::Comm ? "exposed communication per iteration (the bubble is shown, not ranked)"
                                             : "estimated step time (compute with bubble + exposed communication)"));
  if (opts.gpu_tflops > 0)
    as.push_back("compute: " + fmt("%.3g", result.flops_per_iteration) + " FLOP per iteration at " +
                 fmt("%.0f", opts.gpu_tflops) +
                 " TFLOP/s per GPU, scaled by the largest stage's share of the layers; step = compute/(1 - bubble) + "
                 "exposed communication");
  {
    const bool fp32 = model.param_bytes >= 4;
    std::string ck =
        "checkpoint: " + std::to_string(model.param_bytes) + " B/param weights + Adam " +
        (fp32 ? "8 B/param (2 fp32 moments)" : "12 B/param (fp32 master copy + 2 moments)") + " = " +
        gib(model.total_params() * (model.param_bytes + (fp32 ? 8.0 : 12.0))) +
        "; data-parallel rank 0 writes the weights of its shard" +
        (opts.zero >= 3 ? " (ZeRO-3: every DP rank its 1/DP)" : "") +
        (opts.zero >= 1 ? ", every DP rank its 1/DP of the optimizer state" : ", and the optimizer state (ZeRO-0)") +
        "; every node writes at once, a shared tier taking the whole checkpoint at most at its aggregate rate";
    if (topo.storage.empty())
      ck += "; the topology has no storage: section, so no write times (see configs/topologies/README.md)";
    else
      ck +=
          "; synchronous: training waits for the durable tier (the first shared one); asynchronous: for the "
          "first local tier (else the copy to host memory), the rest is copied on in the background";
    if (opts.checkpoint_every > 0) ck += "; every " + std::to_string(opts.checkpoint_every) + " steps";
    as.push_back(ck);
  }

  // Warnings.
  if (!opts.calibration.present) {
    result.warnings.push_back("topology '" + topo.name +
                              "' carries no calibrated range: its parameters are not checked against measured sizes "
                              "or node counts (calibrate it, or pass --calibrated-range FILE.h5)");
  } else {
    std::size_t outside = 0;
    for (const auto& lp : result.ranked) outside += lp.outside_calibration ? 1 : 0;
    if (outside) {
      const auto& cal = opts.calibration;
      std::string range = format_bytes(cal.min_bytes) + ".." + format_bytes(cal.max_bytes) + ", " +
                          std::to_string(cal.min_nodes) + ".." + std::to_string(cal.max_nodes) + " nodes";
      std::string w = std::to_string(outside) + " of " + std::to_string(result.ranked.size()) +
                      " layouts rely on collectives outside the calibrated range (" + range + ", from " + cal.origin +
                      ")";
      if (!result.ranked.empty() && result.ranked.front().outside_calibration) {
        for (const auto& pc : result.ranked.front().collectives) {
          if (!pc.outside_calibration) continue;
          w += "; the best layout's " + std::string(to_string(pc.dim)) + " " + std::string(to_string(pc.collective)) +
               " of " + format_bytes(pc.bytes) + " on " + std::to_string(pc.placement.nodes) + " node(s)";
          break;
        }
      }
      result.warnings.push_back(w);
    }
  }
  if (result.ranked.empty()) {
    const ExcludedLayout* smallest = nullptr;
    for (const auto& e : result.excluded)
      if (e.memory && (!smallest || e.memory_breakdown.total_bytes() < smallest->memory_breakdown.total_bytes()))
        smallest = &e;
    std::string w = "no layout fits in " + gib(limit) + " per GPU";
    if (smallest) {
      // What makes the closest layout fit, one option at a time.
      const Shape& s = smallest->shape;
      std::vector<std::string> fixes;
      auto try_fix = [&](PlanOptions changed, Shape shape, const std::string& flag) {
        double need = memory_per_gpu(model, changed, shape).total_bytes();
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
      w += "; the closest, " + s.to_string() + ", needs " + gib(smallest->memory_breakdown.total_bytes());
      if (!fixes.empty()) {
        w += "; it fits with ";
        for (std::size_t i = 0; i < fixes.size(); ++i) w += (i ? " or " : "") + fixes[i];
      } else {
        w += "; no single option makes it fit";
      }
      w += "; more nodes (deeper pipelines, more tensor parallelism) or --memory-limit of a larger GPU also help";
    }
    result.warnings.push_back(w);
  }
  {
    std::size_t late = 0;
    for (const auto& lp : result.ranked) late += lp.checkpoint.background_fits ? 0 : 1;
    if (late) {
      const CheckpointCost& c = result.ranked.front().checkpoint;
      std::string w = std::to_string(late) + " of " + std::to_string(result.ranked.size()) +
                      " layouts copy a checkpoint to " + c.sync_tier + " in more than " +
                      std::to_string(opts.checkpoint_every) + " steps: the next asynchronous checkpoint would wait";
      if (!c.background_fits)
        w += " (the best layout: " + fmt("%.3g", c.background_s) + " s against " +
             fmt("%.3g", c.every * result.ranked.front().step_s) + " s); checkpoint less often (--checkpoint-every)";
      result.warnings.push_back(w);
    }
  }
  return result;
}

}  // namespace commsim
