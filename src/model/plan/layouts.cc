// Which (DP, TP, PP, EP) layouts a job admits, how their stages split the layers, and where the
// groups of each parallel dimension lie on the nodes (the placement described in plan.h).
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/plan.h"
#include "model/plan/steps.h"
#include "model/units.h"

namespace commsim {
namespace plan_detail {

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

void validate_options(const Topology& topo, const PlanOptions& opts) {
  check_range(opts.nodes, 1, kMaxNodes, "--nodes");
  check_range(static_cast<long long>(opts.nodes) * topo.ranks_per_node, 1, kMaxRanks,
              "--nodes x the topology's ranks per node: GPUs");
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
  if (opts.grad_bytes != 0 && opts.grad_bytes != 2 && opts.grad_bytes != 4)
    throw Error("gradients must be 2 (bf16/fp16) or 4 (fp32) bytes (got " + std::to_string(opts.grad_bytes) + ")");
  const MemoryReserve& r = opts.memory_reserve;
  if (r.context_bytes < 0 || r.nccl_bytes < 0 || r.fragmentation < 0 || r.fragmentation >= 1)
    throw Error("--memory-reserve must not be negative");
  if (opts.checkpoint_every < 0) throw Error("--checkpoint-every must be 0 (none) or a positive number of steps");
  if (opts.tp_overlap && !(opts.gpu_tflops > 0))
    throw Error("--tp-overlap needs a compute estimate to overlap with: pass --gpu-tflops");
  if (opts.rank_by == RankBy::Step && !(opts.gpu_tflops > 0))
    throw Error("ranking by step time needs a compute estimate: pass --gpu-tflops");
}

}  // namespace plan_detail

using plan_detail::divisors;

std::string Shape::to_string() const {
  return "DP=" + std::to_string(dp) + " TP=" + std::to_string(tp) + " PP=" + std::to_string(pp) +
         " EP=" + std::to_string(ep) + (vp > 1 ? " VP=" + std::to_string(vp) : "");
}

int stage_layers(const LlmModel& model, int pp, int stage) {
  if (pp < 1 || stage < 0 || stage >= pp || pp > model.layers) return 0;
  const int base = model.layers / pp, extra = model.layers % pp;
  // The extra layers go to the middle stages first (1, 2, ...), then to the last, then to the first.
  const int order = stage == 0 ? pp - 1 : stage - 1;  // place of the stage in that order
  return base + (order < extra ? 1 : 0);
}

int max_stage_layers(const LlmModel& model, int pp) {
  return std::max(stage_layers(model, pp, 0), stage_layers(model, pp, pp > 1 ? 1 : 0));
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
        reject(s, "PP=" + std::to_string(pp) + " is more stages than the " + std::to_string(model.layers) + " layers");
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

}  // namespace commsim
