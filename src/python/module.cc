// commsim._core: the model for Python (the package in analysis/commsim wraps it in DataFrames).
// Columns come back as a dict of equal-length lists, named with their units; strings are str.
// Every commsim::Error becomes a ValueError with the same message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "collectives/elements/dtype.h"
#include "model/algorithms.h"
#include "model/error.h"
#include "model/nccl/versions.h"
#include "model/plan/plan.h"
#include "model/predict_sweep.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace py = pybind11;
using namespace commsim;

namespace {

// Columns in the order they are first filled (the DataFrame's column order).
struct Columns {
  py::dict dict;
  py::list operator[](const std::string& name) {
    py::str key(name);
    if (!dict.contains(key)) dict[key] = py::list();
    return dict[key].cast<py::list>();
  }
};

template <class T, class Parse>
T parse_name(const std::string& what, const std::string& name, Parse parse, const std::string& valid) {
  auto v = parse(name);
  if (!v) throw Error(what + ": unknown name '" + name + "'; valid: " + valid);
  return *v;
}

std::string algorithm_names(const std::vector<Algorithm>& algs) {
  std::string s;
  for (Algorithm a : algs) s += (s.empty() ? "" : ", ") + std::string(to_string(a));
  return s;
}

Topology load_named_topology(const std::string& topology, const std::string& nccl_version) {
  Topology topo = load_topology(resolve_topology_path(topology));
  if (!nccl_version.empty()) {
    (void)nccl::find_version(nccl_version);  // an unknown release: the error lists the known ones
    topo.nccl.machine.version = nccl_version;
  }
  return topo;
}

// Which algorithms price each collective. None: every hand-written one that applies plus, on a
// topology with NCCL constants, NCCL's own choice (as `commsim predict --algorithms all`). Named:
// those of them that apply to each collective; one that applies to none of them is an error.
std::vector<std::pair<Collective, std::vector<Algorithm>>> choose_algorithms(
    const Topology& topo, const std::vector<Collective>& collectives,
    const std::optional<std::vector<Algorithm>>& named) {
  std::vector<std::pair<Collective, std::vector<Algorithm>>> plan;
  for (Collective c : collectives) {
    std::vector<Algorithm> algs;
    for (Algorithm a : named ? *named : hand_written_algorithms())
      if (applies(c, a)) algs.push_back(a);
    if (!named && has_closed_form(topo, c, Algorithm::Nccl, Protocol::None)) algs.push_back(Algorithm::Nccl);
    if (algs.empty()) throw Error("none of the algorithms asked for applies to " + std::string(to_string(c)));
    plan.emplace_back(c, std::move(algs));
  }
  if (named)
    for (Algorithm a : *named)
      if (std::none_of(plan.begin(), plan.end(),
                       [&](const auto& p) { return std::find(p.second.begin(), p.second.end(), a) != p.second.end(); }))
        throw Error("algorithm " + std::string(to_string(a)) + " applies to none of the collectives asked for");
  return plan;
}

py::tuple predict(const std::string& topology, const std::vector<std::string>& collectives,
                  const std::vector<std::string>& sizes, const std::vector<int>& nodes,
                  const std::optional<std::vector<std::string>>& algorithms, const std::vector<std::string>& protocols,
                  int gpus_per_node, int channels, const std::string& dtype_name, const std::string& nccl_version) {
  PredictSweep s;
  s.topo = load_named_topology(topology, nccl_version);
  s.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : s.topo.ranks_per_node;
  s.nodes = nodes;
  for (const std::string& size : sizes) s.sizes.push_back(parse_bytes(size));
  if (s.sizes.empty() || s.nodes.empty()) throw Error("sizes and nodes must not be empty");
  for (int n : s.nodes)
    if (n < 1) throw Error("nodes: node count " + std::to_string(n) + " is not positive");
  for (const std::string& p : protocols)
    s.protocols.push_back(parse_name<Protocol>("protocols", p, parse_protocol, "none, LL, LL128, Simple"));
  if (s.protocols.empty()) s.protocols.push_back(Protocol::None);
  s.channels = channels;
  const DType dtype = parse_name<DType>("dtype", dtype_name, parse_dtype, "float32, float64, int32, bfloat16, float16");
  std::vector<Collective> colls;
  for (const std::string& c : collectives)
    colls.push_back(
        parse_name<Collective>("collective", c, parse_collective,
                               "allreduce, allgather, reducescatter, broadcast, reduce, sendrecv, alltoall"));
  std::optional<std::vector<Algorithm>> named;
  if (algorithms) {
    std::vector<Algorithm> all(kAllAlgorithms.begin(), kAllAlgorithms.end());
    named.emplace();
    for (const std::string& a : *algorithms)
      named->push_back(parse_name<Algorithm>("algorithms", a, parse_algorithm, algorithm_names(all)));
  }
  s.plan = choose_algorithms(s.topo, colls, named);
  validate(s);
  std::vector<std::string> skipped;
  const std::vector<SweepCandidates> priced = priced_collectives(s, skipped);
  PredictedRows rows = predict_sweep(s, priced);
  skipped.insert(skipped.end(), rows.skipped.begin(), rows.skipped.end());

  Columns cols;
  for (const PredictedPoint& p : rows.points) {
    const double t = p.cost.time_s;
    const double algbw = t > 0 ? static_cast<double>(p.bytes) / t / 1e9 : std::numeric_limits<double>::quiet_NaN();
    cols["collective"].append(std::string(to_string(p.collective)));
    cols["algorithm"].append(std::string(to_string(p.candidate.algorithm)));
    cols["protocol"].append(std::string(to_string(p.candidate.protocol)));
    cols["nccl_pick"].append(
        p.candidate.algorithm == Algorithm::Nccl ? candidate_name({p.cost.algorithm, p.cost.protocol}) : std::string());
    cols["dtype"].append(std::string(to_string(dtype)));
    cols["nodes"].append(p.nodes);
    cols["ranks"].append(p.ranks);
    cols["bytes"].append(p.bytes);
    cols["count"].append(p.bytes / dtype_size(dtype));
    cols["predicted_us"].append(t * 1e6);
    cols["latency_us"].append(p.cost.latency_s * 1e6);
    cols["bandwidth_us"].append(p.cost.bandwidth_s * 1e6);
    cols["reduction_us"].append(p.cost.reduction_s * 1e6);
    cols["copy_us"].append(p.cost.copy_s * 1e6);
    cols["predicted_algbw_gbps"].append(algbw);
    cols["predicted_busbw_gbps"].append(algbw * busbw_factor(p.collective, p.ranks));
    cols["predicted_winner"].append(candidate_name(p.winner));
  }
  return py::make_tuple(cols.dict, rows.crossovers, skipped);
}

py::tuple plan(const std::string& topology, const std::string& model_name, int nodes, int global_batch, int seq,
               int micro_batch, int zero, bool sequence_parallel, const std::string& recompute,
               const std::string& overlap, double gpu_tflops, const std::string& memory_limit,
               const std::string& memory_reserve, const std::string& grad_dtype) {
  PlanOptions opts;
  opts.nodes = nodes;
  opts.global_batch = global_batch;
  opts.seq = seq;
  opts.micro_batch = micro_batch;
  opts.zero = zero;
  opts.sequence_parallel = sequence_parallel;
  opts.recompute = parse_name<Recompute>("recompute", recompute, parse_recompute, "none, selective, full");
  opts.overlap = parse_name<Overlap>("overlap", overlap, parse_overlap, "none, dp, all");
  if (gpu_tflops < 0) throw Error("gpu_tflops must not be negative");
  opts.gpu_tflops = gpu_tflops;
  opts.rank_by = gpu_tflops > 0 ? RankBy::Step : RankBy::Comm;
  if (!memory_limit.empty()) opts.memory_limit_bytes = parse_bytes(memory_limit);
  const Topology topo = load_topology(resolve_topology_path(topology));
  const LlmModel model = load_llm_model(resolve_model_path(model_name));
  apply_training_defaults(opts, topo, model, memory_reserve, grad_dtype);
  opts.candidates = default_candidates(topo);
  opts.calibration = calibration_range(topo);
  const PlanResult result = plan_layouts(topo, model, opts);

  Columns cols;
  for (const LayoutPlan& l : result.ranked) {
    cols["dp"].append(l.shape.dp);
    cols["tp"].append(l.shape.tp);
    cols["pp"].append(l.shape.pp);
    cols["ep"].append(l.shape.ep);
    cols["vp"].append(l.shape.vp);
    cols["micro_batches"].append(l.shape.micro_batches);
    cols["comm_s"].append(l.comm_s);
    cols["comm_total_s"].append(l.comm_total_s);
    for (Dim d : kAllDims) cols[std::string(to_string(d)) + "_comm_s"].append(l.dim(d));
    cols["bubble_fraction"].append(l.bubble_fraction);
    cols["memory_bytes"].append(l.memory.total_bytes());
    cols["compute_s"].append(l.compute_s);
    cols["step_s"].append(l.step_s);
    cols["comm_share"].append(l.comm_share);
    cols["outside_calibration"].append(l.outside_calibration);
  }
  py::list excluded;
  for (const ExcludedLayout& e : result.excluded) excluded.append(py::make_tuple(e.shape.to_string(), e.reason));
  return py::make_tuple(cols.dict, excluded, result.assumptions, result.warnings);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "The commsim cost model (C++), wrapped by the commsim package";
  py::register_exception<Error>(m, "Error", PyExc_ValueError);
  m.def("predict", &predict, py::arg("topology"), py::arg("collectives"), py::arg("sizes"), py::arg("nodes"),
        py::arg("algorithms"), py::arg("protocols"), py::arg("gpus_per_node"), py::arg("channels"), py::arg("dtype"),
        py::arg("nccl_version"),
        "(columns, crossover lines, skipped lines) of commsim predict's sweep; see commsim.predict");
  m.def("plan", &plan, py::arg("topology"), py::arg("model"), py::arg("nodes"), py::arg("global_batch"), py::arg("seq"),
        py::arg("micro_batch"), py::arg("zero"), py::arg("sequence_parallel"), py::arg("recompute"), py::arg("overlap"),
        py::arg("gpu_tflops"), py::arg("memory_limit"), py::arg("memory_reserve"), py::arg("grad_dtype"),
        "(columns of the ranked layouts, excluded (layout, reason), assumptions, warnings); see commsim.plan");
  m.def("version", [] { return std::string(COMMSIM_VERSION); });
}
