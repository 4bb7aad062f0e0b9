// What a plan's numbers assume, stated with them, and what its reader should be warned about.
#include <string>
#include <vector>

#include "model/plan/plan.h"
#include "model/plan/steps.h"

namespace commsim::plan_detail {
namespace {

// Placement, pricing, and the collectives of each dimension with what overlap hides.
void communication_assumptions(const PlanContext& ctx, std::vector<std::string>& as) {
  const PlanOptions& opts = ctx.opts;
  const LlmModel& model = ctx.model;
  const int R = ctx.ranks_per_node;
  const bool full = ctx.full_recompute;
  const double bucket_params = ctx.bucket_params;
  const auto& candidates = ctx.candidates;
  auto fmt = format_number;
  as.push_back("placement: rank = tp + TP*(pp + PP*dp); TP ranks adjacent (one node when TP divides " +
               std::to_string(R) +
               " GPUs per node), then pipeline stages, then DP replicas across nodes; EP groups are "
               "consecutive DP replicas");
  const bool nccl_choice = candidates.size() == 1 && candidates.front().algorithm == Algorithm::Nccl;
  const std::string shared =
      " on its group's (nodes, ranks per node); groups of one dimension running at once share "
      "each node's NICs";
  if (nccl_choice)
    as.push_back(
        "pricing: each collective as NCCL runs it, NCCL's own choice of algorithm and protocol from NCCL's "
        "tuning model (NCCL " +
        (ctx.topo.nccl.machine.version.empty() ? std::string("newest ported release") : ctx.topo.nccl.machine.version) +
        ")" + shared + "; --algorithms ours prices the fastest of our schedules instead");
  else
    as.push_back("pricing: each collective by the fastest of " + std::to_string(candidates.size()) +
                 " candidate algorithms" + shared);
  as.push_back(std::string("TP: ") + (full ? "6" : "4") + " " +
               (opts.sequence_parallel ? "reduce-scatter + allgather pairs" : "allreduces") +
               " of b*s*h*2 bytes per layer and micro-batch" +
               (full ? " (full recomputation repeats the forward)" : "") +
               (opts.tp_overlap ? "; overlapped with the GEMMs (--tp-overlap): each hides behind an equal share of "
                                  "the layer's GEMM time, the excess is exposed"
                                : ""));
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
               "; where PP does not divide the layers, the extra layers go to the middle stages first (the first and "
               "the last stage, which hold the embedding and the output layer, get fewer)");
  as.push_back("DP: gradients of " + fmt("%.0f", gradient_bytes(model, opts)) + " B each, " +
               (opts.zero == 0  ? "one allreduce"
                : opts.zero < 3 ? "ZeRO-" + std::to_string(opts.zero) + ": reduce-scatter + allgather of parameters"
                                : "ZeRO-3 (FSDP): per layer and micro-batch an allgather of its parameters before the "
                                  "forward, another before the backward and a reduce-scatter of its gradients" +
                                      std::string(ctx.overlap_dp ? ", prefetched: hidden behind the layer's compute "
                                                                   "except what exceeds it and the first of each pass"
                                                                 : "")) +
               (opts.zero >= 3      ? ""
                : bucket_params > 0 ? ", buckets of " + fmt("%.0fM", bucket_params / 1e6) + " parameters"
                                    : ", whole"));
  if (model.moe())
    as.push_back(std::string("EP: ") + (full ? "6" : "4") + " alltoalls of top_k*b*s*h*2" +
                 (opts.sequence_parallel ? "/TP" : "") + " bytes per MoE layer and micro-batch" +
                 (model.capacity_factor > 0 ? " x capacity factor " + fmt("%g", model.capacity_factor) +
                                                  " (dispatch buffers, expert GEMMs and activations padded to it)"
                                            : " (dropless)") +
                 (model.shared_experts > 0
                      ? "; " + std::to_string(model.shared_experts) + " shared expert(s) per layer, dense"
                      : ""));
  switch (opts.overlap) {
    case Overlap::None: as.push_back("overlap none: every collective is on the critical path (an upper bound)"); break;
    case Overlap::Dp:
      as.push_back("overlap dp: DP gradient traffic assumed hidden behind backward compute except the last bucket" +
                   std::string(opts.gpu_tflops > 0 ? " (and whatever exceeds the estimated backward time)" : ""));
      break;
    case Overlap::All:
      as.push_back(
          "overlap all: DP as with --overlap dp; PP send/recv hidden behind the next micro-batch's compute "
          "except the 2(PP-1) of pipeline fill and drain; TP (unless --tp-overlap) and EP stay exposed (each layer "
          "waits on them)");
      break;
  }
}

// The memory kept free on each GPU, and of what.
std::string reserve_assumption(const MemoryReserve& r, const PlanResult& result) {
  const double device = static_cast<double>(result.device_memory_bytes);
  std::string s = "memory reserve: " + gib(result.memory_reserve_bytes) + " of the " + gib(device) +
                  " per GPU kept free, layouts use at most " + gib(static_cast<double>(result.memory_limit_bytes));
  if (result.memory_reserve_bytes == 0) return s + " (no reserve; --memory-reserve default keeps one)";
  if (r.nccl_bytes > 0 || r.fragmentation > 0)
    s += " (CUDA context and workspaces " + gib(r.context_bytes) + ", NCCL buffers " + gib(r.nccl_bytes) +
         ", allocator fragmentation " + format_number("%.0f%%", 100 * r.fragmentation) + " = " +
         gib(r.fragmentation * device) + ")";
  return s + "; --memory-reserve SIZE gives your own";
}

// Memory, ranking, compute and checkpoint.
void memory_and_time_assumptions(const PlanContext& ctx, const PlanResult& result, std::vector<std::string>& as) {
  const Topology& topo = ctx.topo;
  const LlmModel& model = ctx.model;
  const PlanOptions& opts = ctx.opts;
  auto fmt = format_number;
  as.push_back("memory: " + std::to_string(model.param_bytes) + "-byte parameters, " +
               fmt("%.0f", gradient_bytes(model, opts)) + "-byte gradients, optimizer " +
               fmt("%.0f", optimizer_memory_bytes_per_param(model, opts)) + " B/param (Adam" +
               (model.param_bytes >= 4 ? "'s 2 moments" : ": fp32 master copy + 2 moments") +
               (optimizer_memory_bytes_per_param(model, opts) > optimizer_bytes_per_param(model)
                    ? " + an fp32 copy of the gradient)"
                    : ")") +
               (opts.fp8 ? ", FP8 weight copy and transpose 2 B/param" : "") +
               (opts.zero ? ", ZeRO-" + std::to_string(opts.zero) + " sharding over DP" : "") +
               "; activations per Korthikanti et al. 2022 (recompute " + std::string(to_string(opts.recompute)) +
               (opts.sequence_parallel ? ", sequence parallel" : "") +
               "), stage k holding min(PP-k, m) micro-batches (interleaved: (2(PP-k-1) + (VP-1)PP + 1)/VP, at "
               "most m)" +
               (model.dropout ? "" : ", no dropout masks (the model has no dropout)") +
               (opts.recompute == Recompute::None
                    ? "; the attention scores (5as/h per layer) are stored: a fused (flash) attention kernel does not "
                      "store them, which --recompute selective models"
                    : "") +
               (opts.fp8 ? "; FP8 GEMMs save their inputs as 1-byte casts" : ""));
  as.push_back(reserve_assumption(opts.memory_reserve, result));
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
        gib(model.total_params() * (model.param_bytes + optimizer_bytes_per_param(model))) +
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
}

}  // namespace

std::vector<std::string> plan_assumptions(const PlanContext& ctx, const PlanResult& result) {
  std::vector<std::string> as;
  communication_assumptions(ctx, as);
  memory_and_time_assumptions(ctx, result, as);
  return as;
}

std::vector<std::string> plan_warnings(const PlanContext& ctx, const PlanResult& result) {
  const Topology& topo = ctx.topo;
  const PlanOptions& opts = ctx.opts;
  auto fmt = format_number;
  std::vector<std::string> warnings;
  if (!opts.calibration.present) {
    warnings.push_back("topology '" + topo.name +
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
      warnings.push_back(w);
    }
  }
  if (result.ranked.empty()) warnings.push_back(nothing_fits_warning(ctx, result.excluded));
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
      warnings.push_back(w);
    }
  }
  return warnings;
}

}  // namespace commsim::plan_detail
