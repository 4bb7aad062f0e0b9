#pragma once
// Parallelism planning on the model: every (DP, TP, PP, EP) layout of a training job on a cluster,
// its communication per iteration priced by the closed forms (model/cost/cost.h) on the placement each
// collective really gets, the 1F1B pipeline bubble, and the memory per GPU. Pure functions: no I/O.
//
// Placement. Ranks are numbered rank = tp + TP * (pp + PP * dp): tensor-parallel ranks are adjacent
// (inside one node when TP <= GPUs per node), then pipeline stages, then data-parallel replicas,
// which span nodes. An expert-parallel group is EP consecutive data-parallel replicas (stride
// TP*PP); expert gradients are reduced over the DP/EP replicas that hold the same experts.
//
// Pipeline stages hold L/PP layers each; where PP does not divide L, the L mod PP extra layers go
// to the middle stages first, so that the first and the last stage, which also hold the embedding
// and the output layer, hold fewer (Llama 3 405B's 126 layers on PP=16: 7 in the first and the
// last, 8 in between, Dubey et al. 2024, section 3.3.2; DeepSeek-V3's 61 on 16: 3 and 4; Megatron-
// Core's --decoder-first/last-pipeline-num-layers). The stage with the most layers sets the pace. An interleaved 1F1B
// schedule (Narayanan et al. 2021, section 2.2.2) runs VP virtual stages (chunks of layers) per GPU: the bubble shrinks
// to (PP-1)/(VP*m + PP-1), the pipeline send/recv happen VP times as often, and the first stage holds activations of PP
// + (PP-1)/VP micro-batches (Megatron-LM's interleaved warm-up, Korthikanti et al. 2022).
//
// Communication per iteration (b = micro-batch, s = sequence, h = hidden, 2-byte activations,
// m = micro-batches per pipeline = global / (b * DP), l = layers of the largest stage):
//   TP  per layer and micro-batch 4 allreduces of b*s*h*2 bytes (2 forward, 2 backward; Megatron,
//       Shoeybi et al. 2019), 6 with full recomputation (the forward runs twice); with sequence
//       parallelism each allreduce becomes a reduce-scatter plus an allgather of the same buffer.
//   PP  per micro-batch and virtual stage one send/recv of the activation forward and one of its gradient backward,
//       b*s*h*2 bytes between neighbouring stages; divided by TP with sequence parallelism or
//       Megatron's scatter/gather (then the receiving TP group allgathers b*s*h*2 bytes).
//   DP  gradients of the rank's parameters (its largest pipeline stage, in the gradient dtype): one
//       allreduce; with ZeRO 1/2 a reduce-scatter of the gradients plus an allgather of the updated
//       parameters (in the parameter dtype). Expert parameters are reduced over DP/EP ranks.
//       Whole, or split into buckets (PlanOptions::dp_bucket_params). ZeRO 3 (FSDP) per layer and
//       micro-batch: an allgather of the layer's parameters before its forward and another
//       before its backward, a reduce-scatter of its gradients after it; with overlap the next
//       layer's gathers (prefetch) and the reduce-scatter hide behind the layer's compute, and
//       what exceeds it is exposed (so its share grows as more GPUs split a fixed batch).
//   EP  per MoE layer and micro-batch 4 alltoalls (dispatch and combine, forward and backward; 6
//       with full recomputation) of top_k * b*s*h*2 bytes (divided by TP with sequence parallelism).
// Each collective is priced by NCCL's choice from NCCL's model (default_candidates), or by the
// fastest of the candidates given (model/select.h best_candidate), for its group's (nodes, ranks
// per node); groups of the same dimension that run at the same time on one
// node share its NICs: each sees the node's aggregate network bandwidth divided by their number
// (one flow still gets at most one NIC).
//
// Memory per GPU (the larger of the first and the last pipeline stage): parameters, gradients
// (PlanOptions::grad_bytes), Adam state (fp32 master copy + 2 moments = 12 B/param; 8 B when parameters are
// fp32), sharded over DP by ZeRO stage 1 (optimizer), 2 (+ gradients), 3 (+ parameters); bf16
// parameters with fp32 gradients and ZeRO-1 need 6 + 12/DP bytes per parameter, as Megatron-LM's
// distributed optimizer states (docs/source/api-guide/dist_optimizer.md); and
// activations after Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"): per layer and micro-batch s*b*h*(34 + 5*a*s/h) bytes for a GPT layer
// without TP, generalised to the FFN size, grouped-query attention, SwiGLU and top-k experts; the
// first stage of a 1F1B pipeline holds min(PP, m) micro-batches in flight. A layout fits when
// this is at most the GPU's memory less a reserve (MemoryReserve) for what training keeps
// besides: the CUDA context, NCCL's buffers and the allocator's fragmentation.
//
// Compute (with PlanOptions::gpu_tflops > 0): the iteration's FLOPs over all GPUs at that rate,
// scaled by the largest stage's share of the layers; step = compute / (1 - bubble) + exposed
// communication.
//
// Checkpoint (checkpoint_cost): each parameter once in the parameter dtype plus the Adam state
// (fp32 master copy + 2 moments, 12 B/param; 8 B for fp32 parameters). A GPU writes the weights of
// its shard of its stage when it is data-parallel rank 0 (every DP rank its 1/DP with ZeRO-3) and
// its optimizer state (its 1/DP with ZeRO >= 1, all of it on DP rank 0 with ZeRO-0). The busiest
// node is the first (it holds DP rank 0); every node writes at once, each at the tier's per-node
// rate, and a shared tier takes the whole checkpoint at most at its aggregate rate. Synchronous: training waits
// for the write to the durable tier. Asynchronous: training waits for the write to the node-local
// tier (or, without one, the copy to host memory over the host link); the copy on to the shared
// tier runs in the background and must finish within the checkpoint interval.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/collective.h"
#include "model/plan/llm_model.h"
#include "model/select.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {

enum class Recompute : std::uint8_t { None, Selective, Full };
enum class Overlap : std::uint8_t { None, Dp, All };
enum class RankBy : std::uint8_t { Comm, Step };  // exposed communication, or estimated step time
std::string_view to_string(Recompute r);          // "none", "selective", "full"
std::string_view to_string(Overlap o);            // "none", "dp", "all"
std::optional<Recompute> parse_recompute(std::string_view text);
std::optional<Overlap> parse_overlap(std::string_view text);
std::string_view to_string(RankBy r);  // "comm", "step"
std::optional<RankBy> parse_rank_by(std::string_view text);

// The parallel dimensions, in the order results list them.
enum class Dim : std::uint8_t { TP, PP, DP, EP };
inline constexpr std::array kAllDims = {Dim::TP, Dim::PP, Dim::DP, Dim::EP};
std::string_view to_string(Dim d);  // "tp", "pp", "dp", "ep"

// Message sizes and node counts the topology's parameters were fitted on. A prediction outside
// them is an extrapolation of the model.
struct CalibrationRange {
  bool present = false;
  Bytes min_bytes = 0;
  Bytes max_bytes = 0;
  int min_nodes = 0;
  int max_nodes = 0;
  std::string origin;  // where the range came from, for messages
  bool covers(Bytes bytes, int nodes) const {
    return bytes >= min_bytes && bytes <= max_bytes && nodes >= min_nodes && nodes <= max_nodes;
  }
};

// The range of a topology's `calibrated:` section (present = false when it has none).
CalibrationRange calibration_range(const Topology& topo);

// What `commsim plan` assumes unless told otherwise (the PlanOptions defaults below are the plain
// model: no sequence parallelism, ZeRO-0, no compute estimate).
//  - the compute kernels reach half the device's dense BF16 peak (device.peak_tflops). End to end,
//    with the bubble and the communication, published runs reach less: Llama 3 405B 38-43 % of
//    the H100's peak (Dubey et al. 2024, Table 4), Megatron-LM's GPT runs 44-52 % of the A100's
//    (Narayanan et al. 2021, Table 1). With 50 % the planner's step times of those runs come
//    within 25 % of the published ones (tests/model/plan/test_plan_published.cc);
//  - interleaved 1F1B with up to 8 virtual stages per GPU (Llama 3 and Megatron-LM's large runs
//    interleave);
//  - a checkpoint every 100 steps.
inline constexpr double kDefaultMfu = 0.5;

// What a GPU's memory holds besides the training state, kept free when a layout is fitted.
struct MemoryReserve {
  double context_bytes = 0;  // CUDA context, cuBLAS/cuDNN workspaces, the framework's own buffers
  double nccl_bytes = 0;     // NCCL's channel buffers over the job's communicators
  double fragmentation = 0;  // share of the device memory the caching allocator cannot hand out
  double bytes(double device_bytes) const { return context_bytes + nccl_bytes + fragmentation * device_bytes; }
};
// The reserve `commsim plan` keeps unless told otherwise: 0.5 GiB for the CUDA context and library
// workspaces (PyTorch with CUDA 12's lazy module loading), 1 GiB of NCCL buffers (NCCL_BUFFSIZE =
// 4 MiB per channel and peer for the Simple protocol, about as much again for LL128, over the
// TP, PP and DP communicators) and 2 % of the device memory lost to fragmentation of PyTorch's
// caching allocator. 3.1 GiB of an 80 GiB GPU; Llama 3 405B's published layout (interleaved,
// PP 16, 8K tokens) needs 76.5 GiB of the planner's 80 and still fits.
inline constexpr MemoryReserve kDefaultMemoryReserve{536870912.0, 1073741824.0, 0.02};
inline constexpr int kDefaultMaxVirtualStages = 8;
inline constexpr int kDefaultCheckpointEvery = 100;

struct PlanOptions {
  int nodes = 1;
  int global_batch = 0;  // sequences per iteration
  int micro_batch = 1;   // sequences per micro-batch
  int seq = 0;           // tokens per sequence
  bool sequence_parallel = false;
  int zero = 0;  // ZeRO stage 0..3
  Recompute recompute = Recompute::None;
  Overlap overlap = Overlap::None;
  // Megatron's scatter/gather between pipeline stages (Narayanan et al. 2021, section 4.1): with
  // TP > 1 each TP rank sends 1/TP of the activation across the stage boundary and the receiving
  // TP group allgathers it over the node's fabric. Implied by sequence parallelism.
  bool pp_scatter_gather = true;
  bool allow_cross_node_tp = false;
  RankBy rank_by = RankBy::Comm;  // Step needs gpu_tflops > 0
  // Parameters per DP gradient bucket; 0 = one collective over all gradients without overlap and
  // Megatron's default of 40M parameters with --overlap dp|all.
  double dp_bucket_params = 0;
  // Memory of one GPU; 0 = the topology's device memory. A layout may use it less the reserve.
  Bytes memory_limit_bytes = 0;
  MemoryReserve memory_reserve;  // none in the plain model; see apply_training_defaults
  // Bytes of one gradient value (gradient buffers and their reduction over DP); 0 = the parameter
  // dtype's. Megatron-LM accumulates and reduces the gradients of bf16 parameters in fp32
  // (default_grad_bytes).
  int grad_bytes = 0;
  // GEMMs in FP8 (Transformer Engine): the inputs the linear layers save for the backward pass
  // are 1-byte casts, and each rank caches an FP8 copy of its weights and its transpose (2 B per
  // parameter it holds) across micro-batches.
  bool fp8 = false;
  // Tensor-parallel communication overlapped with the GEMMs it feeds or drains (Transformer
  // Engine's userbuffers, NeMo's tp_comm_overlap): each TP collective is hidden behind its share
  // of the layer's GEMM time and only what exceeds it is exposed. Needs gpu_tflops > 0.
  bool tp_overlap = false;
  // Algorithms each collective may use; empty = default_candidates(topology).
  std::vector<Candidate> candidates;
  CalibrationRange calibration;
  // Achieved dense throughput per GPU, TFLOP/s; > 0 adds a compute estimate, the step time and the
  // communication share. 0 = no compute estimate.
  double gpu_tflops = 0;
  // Interleaved 1F1B: the largest number of virtual stages per GPU to consider. Each layout is
  // planned with every VP in 1..max_virtual_stages that divides its largest stage's layers and
  // keeps the fastest that fits (by step time when ranking by step, else by communication).
  int max_virtual_stages = 1;
  // Steps between checkpoints, for the checkpoint stall per step; 0 = no checkpoint cost.
  int checkpoint_every = 0;
};

// How collectives are priced unless the caller names candidates: as training runs them, NCCL's own
// choice of algorithm and protocol from NCCL's ported tuning model (model/nccl/, the topology's
// NCCL release) on a GPU topology with an nccl: section; else our_candidates(topo).
std::vector<Candidate> default_candidates(const Topology& topo);
// Whether default_candidates(topo) is NCCL's choice.
bool prices_with_nccl_choice(const Topology& topo);
// Every hand-written algorithm (plain alpha-beta-gamma) plus, when the topology has NCCL
// constants, NCCL ring and tree under each protocol: each collective gets the fastest of them.
std::vector<Candidate> our_candidates(const Topology& topo);
// The candidates of the algorithms named (hand-written ones as they are, NCCL ring and tree under
// each protocol), plus direct when none of them runs the pipeline's send/recv. Throws Error for an
// NCCL algorithm on a topology without NCCL constants.
std::vector<Candidate> candidates_for(const std::vector<Algorithm>& named, const Topology& topo);

struct Shape {
  int dp = 1, tp = 1, pp = 1, ep = 1;
  int vp = 1;             // virtual stages per GPU (interleaved 1F1B; 1 = plain 1F1B)
  int micro_batches = 1;  // per pipeline per iteration: global / (micro * dp)
  int gpus() const { return dp * tp * pp; }
  std::string to_string() const;  // "DP=16 TP=8 PP=1 EP=1", with " VP=2" when interleaved
};

// Layers of pipeline stage `stage` (0-based) of a model split into `pp` stages: floor(L/PP), plus
// one for the first L mod PP stages in the order 1, 2, ..., PP-2, PP-1, 0. 0 when PP > L.
int stage_layers(const LlmModel& model, int pp, int stage);
int max_stage_layers(const LlmModel& model, int pp);

// What a checkpoint costs one layout (see the header comment for the formula).
struct CheckpointTierCost {
  std::string tier;
  bool shared = false;
  // What the busiest node gets with every node writing at once: the tier's per-node rate, or less
  // where a shared tier's aggregate rate over the whole checkpoint is the limit.
  BytesPerSecond write_bw_per_node_Bps = 0;
  Seconds write_s = 0;  // latency + max(busiest node / per-node rate, checkpoint / aggregate rate)
};
struct CheckpointCost {
  double total_bytes = 0;                 // the whole checkpoint
  double bytes_per_gpu = 0;               // the GPU that writes most
  double bytes_per_node = 0;              // the busiest node
  std::vector<CheckpointTierCost> tiers;  // one per storage tier of the topology, in file order
  // Synchronous: the write to the durable tier (the first shared tier, else the last tier listed).
  // Asynchronous: the write to the first local tier, else the copy to host memory; then the
  // background copy to the durable tier (0 when that is the local tier itself).
  std::string sync_tier, async_tier;  // async_tier "host memory" without a local tier
  Seconds sync_stall_s = 0;           // per checkpoint
  Seconds async_stall_s = 0;          // per checkpoint
  Seconds background_s = 0;           // the copy on to the durable tier
  int every = 0;                      // steps between checkpoints (0: no per-step numbers)
  Seconds sync_stall_per_step_s = 0;  // sync_stall_s / every
  Seconds async_stall_per_step_s = 0;
  // Whether the background copy finishes before the next checkpoint (every * step), given a step
  // time; unknown (true) without one.
  bool background_fits = true;
};
CheckpointCost checkpoint_cost(const Topology& topo, const LlmModel& model, const PlanOptions& opts, const Shape& shape,
                               Seconds step_s);

// How one group of a parallel dimension lies on the nodes, as closed_form prices it.
struct GroupPlacement {
  int nodes = 1;           // nodes the group spans
  int ranks_per_node = 1;  // its members per node
  int sharing = 1;         // groups of this dimension using a node's network at the same time
  bool uneven = false;     // members spread unevenly over nodes: priced as nodes x ranks_per_node
                           // with no more ranks per node than the fullest node holds
};
// The group of `size` members `stride` ranks apart (in a job of total_ranks, ranks_per_node per
// node, block placement) that spans the most nodes.
GroupPlacement group_placement(int size, int stride, int ranks_per_node, int total_ranks);

// One collective a layout relies on, priced once and counted per iteration.
struct PricedCollective {
  Dim dim = Dim::TP;
  Collective collective = Collective::AllReduce;
  std::string what;  // "expert gradients", "activations", ... (which data it moves)
  int group = 1;     // ranks in the collective
  GroupPlacement placement;
  Bytes bytes = 0;           // nccl-tests size of one call
  double calls = 0;          // per iteration
  double exposed_calls = 0;  // calls left on the critical path by the overlap assumption
  Candidate chosen;          // fastest candidate
  Seconds each_s = 0;        // one call
  Seconds total_s = 0;       // calls * each_s
  Seconds exposed_s = 0;     // what counts in the layout's communication time
  bool outside_calibration = false;
  // ZeRO-3: a per-layer collective whose overlap with the layer's compute is already in exposed_s.
  bool per_layer = false;
};

struct MemoryBreakdown {
  double params_bytes = 0;  // with FP8, the FP8 weight copies too
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  int stage = 0;  // the pipeline stage these numbers are for (the larger of first and last)
  // The training state; the reserve (PlanResult::memory_reserve_bytes) comes on top.
  double total_bytes() const { return params_bytes + grads_bytes + optimizer_bytes + activations_bytes; }
};

struct LayoutPlan {
  Shape shape;
  std::vector<PricedCollective> collectives;
  std::array<Seconds, 4> dim_s{};  // exposed communication per dimension, indexed by Dim
  Seconds comm_s = 0;              // exposed communication per iteration: the ranking key
  Seconds comm_total_s = 0;        // all communication per iteration before overlap
  double bubble_fraction = 0;      // (PP-1)/(m+PP-1) of the iteration
  MemoryBreakdown memory;
  bool outside_calibration = false;  // some collective lies outside the calibrated range
  // With PlanOptions::gpu_tflops > 0 (NaN otherwise):
  Seconds compute_s;  // per-GPU compute of one iteration without bubble
  Seconds step_s;     // compute / (1 - bubble) + exposed communication
  double comm_share;  // comm_s / step_s
  CheckpointCost checkpoint;
  LayoutPlan();
  Seconds dim(Dim d) const { return dim_s[static_cast<int>(d)]; }
};

// A layout that is not planned, and why.
struct ExcludedLayout {
  Shape shape;
  std::string reason;
  bool memory = false;  // the layout is valid but does not fit (memory holds its breakdown)
  MemoryBreakdown memory_breakdown;
};

struct PlanResult {
  int gpus = 0;
  int ranks_per_node = 0;
  Bytes device_memory_bytes = 0;    // one GPU's memory (PlanOptions::memory_limit_bytes or the topology's)
  double memory_reserve_bytes = 0;  // kept free of it (PlanOptions::memory_reserve)
  Bytes memory_limit_bytes = 0;     // what a layout may use: device memory - reserve
  double total_params = 0;
  double flops_per_iteration = 0;
  std::vector<LayoutPlan> ranked;        // valid layouts that fit, best first (PlanOptions::rank_by)
  std::vector<ExcludedLayout> excluded;  // invalid layouts and layouts that do not fit
  std::vector<std::string> assumptions;  // what the numbers assume, for people
  std::vector<std::string> warnings;     // calibration range, uncalibrated topology, nothing fits
  std::size_t distinct_prices = 0;       // closed-form evaluations (best_candidate calls)
  std::size_t price_lookups = 0;         // collectives priced, cached or not
};

// The compute rate `commsim plan` plans with: opts.gpu_tflops when given (> 0), else the topology's
// peak (device.peak_tflops) x mfu. Without either, ranking by step time falls back to ranking by
// communication, unless the caller asked for step time explicitly (rank_by_given): then it throws
// Error. Updates opts.gpu_tflops and opts.rank_by; returns the line that states the rate for the
// assumptions ("" when there is no compute estimate and nothing to say).
std::string apply_compute_rate(const Topology& topo, double mfu, bool rank_by_given, PlanOptions& opts);

// Whether layout a ranks before b: by (step, communication) time or by (communication, bubble).
bool ranks_before(const LayoutPlan& a, const LayoutPlan& b, RankBy rank_by);

// Bytes of a gradient the way Megatron-LM trains a model: fp32 for bf16 parameters (it forces
// --accumulate-allreduce-grads-in-fp32 with --bf16), else the parameter dtype.
int default_grad_bytes(const LlmModel& model);

// The defaults `commsim plan` and the Python commsim.plan() add to the plain model, in one place:
// memory_reserve "default" keeps kDefaultMemoryReserve on a GPU topology (none on host ranks), a
// size ("2GiB", "0") keeps that much; grad_dtype "auto" is default_grad_bytes(model), else a dtype
// name (dtype_bytes). Throws Error for a malformed size or dtype.
void apply_training_defaults(PlanOptions& opts, const Topology& topo, const LlmModel& model,
                             const std::string& memory_reserve, const std::string& grad_dtype);

// Enumerates, prices and ranks. Throws Error for options that admit no layout at all (batch not
// divisible by micro-batch, non-positive sizes, ZeRO stage outside 0..3, a GPU topology without
// device memory and no memory limit, a reserve that leaves no memory, a gradient size other than
// 0, 2 or 4 bytes).
PlanResult plan_layouts(const Topology& topo, const LlmModel& model, const PlanOptions& opts);

// Every (DP, TP, PP, EP) with DP*TP*PP = gpus, split into valid shapes and excluded ones with the
// reason (TP must divide heads and KV heads and fit a node unless allowed, PP splits the layers
// (stage_layers), EP
// divides experts and DP, global batch = micro * DP * m with m whole).
std::vector<Shape> enumerate_layouts(const LlmModel& model, const PlanOptions& opts, int gpus, int ranks_per_node,
                                     std::vector<ExcludedLayout>* excluded);

// 1F1B: (PP-1)/(m+PP-1); interleaved with VP virtual stages: (PP-1)/(VP*m+PP-1).
double bubble_fraction(int pp, int micro_batches, int vp = 1);
// Activation bytes of one layer for one micro-batch kept for the backward pass, before
// recomputation (Recompute::Full is applied by memory_per_gpu); Recompute::Selective drops the
// attention-score terms (5*a*s/h). TP shards what Megatron shards; sequence parallelism shards all.
double layer_activation_bytes(const LlmModel& model, const PlanOptions& opts, int tp);
// Parameters a rank of pipeline stage `stage` holds: dense (replicated over DP) and expert
// (replicated over DP/EP).
struct StageParams {
  double dense = 0;
  double expert = 0;
};
StageParams stage_params(const LlmModel& model, const Shape& shape, int stage);
MemoryBreakdown memory_per_gpu(const LlmModel& model, const PlanOptions& opts, const Shape& shape);
// Training FLOPs of one iteration (forward + backward, plus the recomputed forward): per token and
// layer 2 * (matrix parameters a token passes) + 4*s*h for attention, logits 2*h*V; backward twice
// the forward. For a GPT model with full recomputation this is Narayanan et al. 2021's
// 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)).
double training_flops_per_iteration(const LlmModel& model, const PlanOptions& opts);

}  // namespace commsim
