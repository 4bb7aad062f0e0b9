// commsim plan: ranks every (DP, TP, PP, EP) layout of a training job by its estimated step time (or
// its communication per iteration) on the model (model/plan/plan.h), with the pipeline bubble, the
// memory per GPU and the checkpoint cost. The command reads its options and files, calls
// plan_layouts, and hands the result to the plan reporters (runtime/output/plan_report.h) and the
// HDF5 /plan group (runtime/h5/plan_file.h).
#include <iostream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "runtime/command.h"
#include "runtime/commands/cli.h"
#include "runtime/h5/plan_file.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/plan_report.h"
#include "runtime/output/reporter.h"
#include "runtime/output/run_context.h"

namespace commsim {
namespace {

// The command line as read, before it is checked.
struct PlanArgs {
  PlanArgs() {
    opts.zero = 1;
    opts.max_virtual_stages = kDefaultMaxVirtualStages;
    opts.checkpoint_every = kDefaultCheckpointEvery;
  }
  std::string topology = "dgx-h100", model_arg, recompute = "selective", overlap = "none", algorithms;
  std::string memory_limit, calibrated_range, layout_filter, rank_by = "step";
  std::string memory_reserve = "default", grad_dtype = "auto";
  bool no_scatter_gather = false, sequence_parallel = false, no_sequence_parallel = false;
  double mfu = kDefaultMfu;
  PlanOptions opts;
  int top = 10;
  bool show_excluded = false, detail = false;
  OutputOptions out;
};

void add_plan_options(CommandLine& cli, PlanArgs& a) {
  cli.options().add_options()("topology", po::value(&a.topology)->default_value(a.topology)->value_name("NAME|FILE"),
                              "cluster: a preset name from configs/topologies/ or a topology file")(
      "nodes", po::value(&a.opts.nodes)->default_value(1)->value_name("N"), "nodes of the cluster used by the job")(
      "model", po::value(&a.model_arg)->value_name("NAME|FILE"),
      "model: a name from configs/models/ or a model file (required)")(
      "global-batch", po::value(&a.opts.global_batch)->value_name("SEQS"), "sequences per iteration (required)")(
      "micro-batch", po::value(&a.opts.micro_batch)->default_value(1)->value_name("SEQS"), "sequences per micro-batch")(
      "seq", po::value(&a.opts.seq)->value_name("TOKENS"), "tokens per sequence (required)")(
      "sequence-parallel", po::bool_switch(&a.sequence_parallel),
      "Megatron sequence parallelism where TP > 1 (the default): TP allreduce becomes reduce-scatter + allgather, "
      "activations shard over TP")("no-sequence-parallel", po::bool_switch(&a.no_sequence_parallel),
                                   "plan without sequence parallelism")(
      "zero", po::value(&a.opts.zero)->default_value(a.opts.zero)->value_name("0|1|2|3"),
      "ZeRO stage: shard optimizer state (1: Megatron's distributed optimizer, the default), + gradients (2), "
      "+ parameters (3) over data-parallel ranks; 0 = replicated")(
      "recompute", po::value(&a.recompute)->default_value(a.recompute)->value_name("none|selective|full"),
      "activations kept for the backward pass (Korthikanti et al. 2022): selective = the attention scores are not "
      "stored, as with a fused (flash) attention kernel or Megatron's selective recomputation; none = they are; "
      "full = only each layer's input")(
      "virtual-stages",
      po::value(&a.opts.max_virtual_stages)->default_value(a.opts.max_virtual_stages)->value_name("N"),
      "interleaved 1F1B: try up to N virtual stages per GPU (dividing the stage's layers) and keep the best that "
      "fits; 1 = plain 1F1B")("overlap", po::value(&a.overlap)->default_value(a.overlap)->value_name("none|dp|all"),
                              "what communication is assumed hidden behind compute (printed with the results)")(
      "dp-bucket-params", po::value(&a.opts.dp_bucket_params)->default_value(0)->value_name("N"),
      "parameters per DP gradient bucket; 0 = whole without overlap, 40e6 with --overlap")(
      "allow-cross-node-tp", po::bool_switch(&a.opts.allow_cross_node_tp), "also plan TP groups larger than a node")(
      "no-pp-scatter-gather", po::bool_switch(&a.no_scatter_gather),
      "send whole activations between pipeline stages from every TP rank (default: 1/TP each, then an allgather)")(
      "memory-limit", po::value(&a.memory_limit)->value_name("SIZE"),
      "memory of one GPU, e.g. 141GiB (default: the topology's device memory); layouts use it less --memory-reserve")(
      "memory-reserve", po::value(&a.memory_reserve)->default_value(a.memory_reserve)->value_name("SIZE|default"),
      "memory per GPU kept free of the training state, e.g. 4GiB or 0; default = 0.5 GiB CUDA context and "
      "workspaces + 1 GiB NCCL buffers + 2% of the GPU's memory for allocator fragmentation (3.1 GiB of 80 GiB; "
      "none on host topologies)")(
      "grad-dtype", po::value(&a.grad_dtype)->default_value(a.grad_dtype)->value_name("auto|fp32|bf16|fp16"),
      "gradient buffers and their DP reduction; auto = fp32 for bf16 parameters (Megatron-LM), else the "
      "parameter dtype")("tp-overlap", po::bool_switch(&a.opts.tp_overlap),
                         "overlap tensor-parallel communication with the GEMMs (Transformer Engine userbuffers, "
                         "NeMo's tp_comm_overlap): each TP collective hides behind its share of the layer's GEMM "
                         "time")(
      "fp8", po::bool_switch(&a.opts.fp8),
      "FP8 GEMMs (Transformer Engine), for the memory: linear-layer inputs saved as 1 byte, a cached FP8 copy "
      "and transpose of the weights (2 B/param); the compute rate stays --gpu-tflops's")(
      "algorithms", po::value(&a.algorithms)->value_name("nccl|ours|LIST"),
      "how collectives are priced: nccl = NCCL's own choice of algorithm and protocol from NCCL's model, as "
      "training runs them (the default on GPU topologies with an nccl: section); ours = the fastest of our "
      "schedules and NCCL ring/tree (the default elsewhere); or a list of hand-written names, nccl-ring, nccl-tree")(
      "calibrated-range", po::value(&a.calibrated_range)->value_name("FILE.h5"),
      "warn about collectives outside the sizes and node counts measured in this results file "
      "(default: the topology's calibrated section)")(
      "gpu-tflops", po::value(&a.opts.gpu_tflops)->default_value(0)->value_name("TFLOPS"),
      "achieved TFLOP/s per GPU of the compute (default: the topology's device.peak_tflops x --mfu)")(
      "mfu", po::value(&a.mfu)->default_value(a.mfu)->value_name("FRACTION"),
      "share of the peak that the compute achieves, for the default --gpu-tflops")(
      "rank-by", po::value(&a.rank_by)->default_value(a.rank_by)->value_name("step|comm"),
      "order by estimated step time (compute with bubble + exposed communication), or by exposed communication")(
      "checkpoint-every",
      po::value(&a.opts.checkpoint_every)->default_value(a.opts.checkpoint_every)->value_name("STEPS"),
      "steps between checkpoints, for the checkpoint stall per step (0 = leave the checkpoint cost out)")(
      "top", po::value(&a.top)->default_value(a.top)->value_name("N"), "layouts to show (0 = all)")(
      "layout", po::value(&a.layout_filter)->value_name("tp=8,pp=12"),
      "show only layouts with these sizes (keys dp, tp, pp, ep), with their rank among all")(
      "show-excluded", po::bool_switch(&a.show_excluded), "list the layouts left out and why")(
      "detail", po::bool_switch(&a.detail), "list every collective of the layouts shown (table format)");
  cli.options().add_options()(
      "format", po::value(&a.out.format)->default_value(a.out.format)->value_name("table|csv|json"),
      "what to print on stdout: a ranked table, CSV (one line per layout) or JSON (layouts with their collectives)")(
      "out", po::value(&a.out.out)->value_name("FILE.h5"),
      "also write the plan to this HDF5 file (/plan group: layouts, collectives, excluded, assumptions)")(
      "force", po::bool_switch(&a.out.force), "overwrite --out FILE.h5 if it exists");
}

// Checks the options that need no file and turns their text into PlanOptions; returns the output
// format.
OutputFormat check_plan_args(const CommandLine& cli, PlanArgs& a) {
  PlanOptions& opts = a.opts;
  if (a.model_arg.empty()) throw Error("--model is required (a name from configs/models/ or a model file)");
  if (!cli.values().count("global-batch")) throw Error("--global-batch is required (sequences per iteration)");
  if (!cli.values().count("seq")) throw Error("--seq is required (tokens per sequence)");
  if (a.top < 0) throw Error("--top must be 0 (all) or a positive number");
  auto rc = parse_recompute(a.recompute);
  if (!rc) throw Error("--recompute: unknown value '" + a.recompute + "'; valid: none, selective, full");
  opts.recompute = *rc;
  auto ov = parse_overlap(a.overlap);
  if (!ov) throw Error("--overlap: unknown value '" + a.overlap + "'; valid: none, dp, all");
  opts.overlap = *ov;
  const OutputFormat format = parse_format(a.out.format);
  auto rb = parse_rank_by(a.rank_by);
  if (!rb) throw Error("--rank-by: unknown value '" + a.rank_by + "'; valid: comm, step");
  opts.rank_by = *rb;
  opts.pp_scatter_gather = !a.no_scatter_gather;
  if (!a.memory_limit.empty()) opts.memory_limit_bytes = parse_bytes(a.memory_limit);
  if (opts.gpu_tflops < 0) throw Error("--gpu-tflops must not be negative");
  if (!(a.mfu > 0 && a.mfu <= 1)) throw Error("--mfu must be a fraction of the peak in (0, 1], e.g. 0.4");
  if (a.sequence_parallel && a.no_sequence_parallel)
    throw Error("--sequence-parallel and --no-sequence-parallel contradict each other; give one");
  opts.sequence_parallel = !a.no_sequence_parallel;
  return format;
}

// --algorithms: "nccl", "ours" (or "all"), or a list of hand-written names, nccl-ring and nccl-tree.
std::vector<Candidate> candidates_from(const std::string& text, const Topology& topo) {
  if (text == "nccl") {
    if (!prices_with_nccl_choice(topo))
      throw Error("--algorithms nccl: topology '" + topo.name +
                  "' has no nccl: section (or no GPUs) for NCCL's model; use --algorithms ours");
    return default_candidates(topo);
  }
  if (text == "ours" || text == "all") return our_candidates(topo);
  std::vector<Algorithm> allowed = hand_written_algorithms();
  allowed.push_back(Algorithm::NcclRing);
  allowed.push_back(Algorithm::NcclTree);
  return candidates_for(parse_algorithms(text, allowed).named, topo);
}

// --out FILE.h5: a results file with the run context and no points, plus the /plan group.
void write_plan_file(int argc, char** argv, const std::string& path, bool force, const PlanReport& report) {
  RunContext ctx = RunContext::collect_local(argc, argv);
  ctx.command_line = "commsim " + join_command_line(argc, argv);
  ctx.backend = "model";
  ctx.nodes = report.opts.nodes;
  ctx.ranks = report.result.gpus;
  ctx.topology_name = report.topo.name;
  ctx.topology_path = report.topo.source_path;
  ctx.topology_text = report.topo.text;
  ResultsFile file = ResultsFile::create(path, force, ctx);
  file.finish(RunStatus::Complete);
  write_plan_group(path, report);
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  CommandLine cli("plan",
                  "rank data/tensor/pipeline/expert-parallel layouts of a training job by estimated step time, with "
                  "the communication, the bubble, the memory and the checkpoint cost of each. Unless told otherwise "
                  "it plans what training runs do: fused attention (--recompute selective), sequence parallelism, "
                  "ZeRO-1, fp32 gradients of bf16 parameters, interleaved 1F1B (--virtual-stages 8), compute at the "
                  "topology's peak x --mfu 0.5, 3.1 GiB of an 80 GiB GPU kept free (--memory-reserve), a checkpoint "
                  "every 100 steps. The checkpoint is 2 B/param weights + 12 B/param Adam state (fp32 "
                  "master copy + 2 moments); DP rank 0 writes the weights, every DP rank its share of the optimizer "
                  "state (ZeRO >= 1)",
                  "commsim plan --topology dgx-h100 --nodes 64 --model llama3-70b --global-batch 1024 --seq 8192\n"
                  "commsim plan --topology dgx-a100 --nodes 48 --model gpt3-175b --global-batch 1536 --seq 2048 \\\n"
                  "    --recompute full --no-sequence-parallel --zero 0 --layout tp=8 --detail\n"
                  "commsim plan --topology dgx-h100 --nodes 16 --model llama3-70b --global-batch 1024 --seq 8192 \\\n"
                  "    --gpu-tflops 400 --checkpoint-every 50 --format json");
  PlanArgs a;
  add_plan_options(cli, a);
  if (!cli.parse(argc, argv)) return 0;
  const OutputFormat format = check_plan_args(cli, a);
  PlanOptions& opts = a.opts;

  Topology topo = load_topology(resolve_topology_path(a.topology));
  // The compute estimate: given, or the topology's peak at the stated utilisation.
  const std::string compute_note = apply_compute_rate(topo, a.mfu, !cli.values()["rank-by"].defaulted(), opts);
  LlmModel model = load_llm_model(resolve_model_path(a.model_arg));
  apply_training_defaults(opts, topo, model, a.memory_reserve, a.grad_dtype);
  if (a.algorithms.empty()) a.algorithms = prices_with_nccl_choice(topo) ? "nccl" : "ours";
  opts.candidates = candidates_from(a.algorithms, topo);
  opts.calibration =
      a.calibrated_range.empty() ? calibration_range(topo) : calibration_range_from_results(a.calibrated_range);

  PlanResult result = plan_layouts(topo, model, opts);
  if (!compute_note.empty()) result.assumptions.push_back(compute_note);

  const LayoutFilter filter = a.layout_filter.empty() ? LayoutFilter{} : parse_layout_filter(a.layout_filter);
  const PlanReport report = make_plan_report(model, topo, opts, result, filter, a.top);
  switch (format) {
    case OutputFormat::Table: print_plan_table(std::cout, report, a.show_excluded, a.detail); break;
    case OutputFormat::Csv: print_plan_csv(std::cout, report); break;
    case OutputFormat::Json: print_plan_json(std::cout, report, a.show_excluded); break;
  }
  std::cout.flush();
  if (format != OutputFormat::Table)
    for (const auto& w : report.warnings) std::cerr << "commsim plan: warning: " << w << "\n";

  if (!a.out.out.empty()) {
    write_plan_file(argc, argv, a.out.out, a.out.force, report);
    if (format == OutputFormat::Table) std::cout << "wrote " << a.out.out << "\n";
  }
  return 0;
}

}  // namespace commsim
