#include "runtime/h5/plan_file.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/error.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/results_file.h"

namespace commsim {
namespace {

void set_double_attribute(hid_t obj, const std::string& name, double value) {
  h5::Dataspace space(H5Screate(H5S_SCALAR), "H5Screate");
  if (h5::check_bool(H5Aexists(obj, name.c_str()), "H5Aexists " + name))
    h5::check_status(H5Adelete(obj, name.c_str()), "H5Adelete " + name);
  h5::Attribute a(H5Acreate2(obj, name.c_str(), H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                  "H5Acreate " + name);
  h5::check_status(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "H5Awrite " + name);
}

struct LayoutRow {
  std::int32_t rank, dp, tp, pp, ep, micro_batches;
  double comm_s, tp_s, pp_s, dp_s, ep_s, comm_total_s, bubble_fraction;
  double mem_params_bytes, mem_grads_bytes, mem_optimizer_bytes, mem_activations_bytes, mem_total_bytes;
  std::int32_t mem_stage, outside_calibration;
  double compute_s, step_s, comm_share;
};

struct CollectiveRow {
  std::int32_t rank;  // of the layout in /plan/layouts
  const char* dim;
  const char* collective;
  const char* what;
  const char* algorithm;
  const char* protocol;
  std::int32_t group, nodes, ranks_per_node, nic_sharing;
  std::uint64_t bytes;
  double calls, exposed_calls, each_s, total_s, exposed_s;
  std::int32_t outside_calibration;
};

struct ExcludedRow {
  std::int32_t dp, tp, pp, ep, memory;
  double mem_total_bytes;
  const char* reason;
};

// Adds member `name` of Row to the compound type `t` (HOFFSET needs the member's name, hence a macro).
void insert_field(const h5::Datatype& t, const char* name, std::size_t offset, hid_t type) {
  h5::check_status(H5Tinsert(t.get(), name, offset, type), std::string("H5Tinsert ") + name);
}
#define COMMSIM_FIELD(Row, name, type) insert_field(t, #name, HOFFSET(Row, name), type)

// /plan/layouts: every ranked layout, best first.
void write_layouts(hid_t g, const PlanResult& r) {
  const hid_t i32 = H5T_NATIVE_INT32, f64 = H5T_NATIVE_DOUBLE;
  h5::Datatype t(H5Tcreate(H5T_COMPOUND, sizeof(LayoutRow)), "H5Tcreate layouts");
  COMMSIM_FIELD(LayoutRow, rank, i32);
  COMMSIM_FIELD(LayoutRow, dp, i32);
  COMMSIM_FIELD(LayoutRow, tp, i32);
  COMMSIM_FIELD(LayoutRow, pp, i32);
  COMMSIM_FIELD(LayoutRow, ep, i32);
  COMMSIM_FIELD(LayoutRow, micro_batches, i32);
  COMMSIM_FIELD(LayoutRow, comm_s, f64);
  COMMSIM_FIELD(LayoutRow, tp_s, f64);
  COMMSIM_FIELD(LayoutRow, pp_s, f64);
  COMMSIM_FIELD(LayoutRow, dp_s, f64);
  COMMSIM_FIELD(LayoutRow, ep_s, f64);
  COMMSIM_FIELD(LayoutRow, comm_total_s, f64);
  COMMSIM_FIELD(LayoutRow, bubble_fraction, f64);
  COMMSIM_FIELD(LayoutRow, mem_params_bytes, f64);
  COMMSIM_FIELD(LayoutRow, mem_grads_bytes, f64);
  COMMSIM_FIELD(LayoutRow, mem_optimizer_bytes, f64);
  COMMSIM_FIELD(LayoutRow, mem_activations_bytes, f64);
  COMMSIM_FIELD(LayoutRow, mem_total_bytes, f64);
  COMMSIM_FIELD(LayoutRow, mem_stage, i32);
  COMMSIM_FIELD(LayoutRow, outside_calibration, i32);
  COMMSIM_FIELD(LayoutRow, compute_s, f64);
  COMMSIM_FIELD(LayoutRow, step_s, f64);
  COMMSIM_FIELD(LayoutRow, comm_share, f64);
  std::vector<LayoutRow> rows;
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const LayoutPlan& lp = r.ranked[i];
    const MemoryBreakdown& m = lp.memory;
    rows.push_back({static_cast<std::int32_t>(i + 1),
                    lp.shape.dp,
                    lp.shape.tp,
                    lp.shape.pp,
                    lp.shape.ep,
                    lp.shape.micro_batches,
                    lp.comm_s,
                    lp.dim(Dim::TP),
                    lp.dim(Dim::PP),
                    lp.dim(Dim::DP),
                    lp.dim(Dim::EP),
                    lp.comm_total_s,
                    lp.bubble_fraction,
                    m.params_bytes,
                    m.grads_bytes,
                    m.optimizer_bytes,
                    m.activations_bytes,
                    m.total_bytes(),
                    m.stage,
                    lp.outside_calibration ? 1 : 0,
                    lp.compute_s,
                    lp.step_s,
                    lp.comm_share});
  }
  h5::Dataset ds = h5::create_table(g, "layouts", t.get(), 256);
  if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
}

// /plan/collectives: the collectives of every ranked layout, by the layout's rank.
void write_collectives(hid_t g, const PlanResult& r) {
  const hid_t i32 = H5T_NATIVE_INT32, f64 = H5T_NATIVE_DOUBLE;
  h5::Datatype str = h5::vlen_string_type();
  h5::Datatype t(H5Tcreate(H5T_COMPOUND, sizeof(CollectiveRow)), "H5Tcreate collectives");
  COMMSIM_FIELD(CollectiveRow, rank, i32);
  COMMSIM_FIELD(CollectiveRow, dim, str.get());
  COMMSIM_FIELD(CollectiveRow, collective, str.get());
  COMMSIM_FIELD(CollectiveRow, what, str.get());
  COMMSIM_FIELD(CollectiveRow, algorithm, str.get());
  COMMSIM_FIELD(CollectiveRow, protocol, str.get());
  COMMSIM_FIELD(CollectiveRow, group, i32);
  COMMSIM_FIELD(CollectiveRow, nodes, i32);
  COMMSIM_FIELD(CollectiveRow, ranks_per_node, i32);
  COMMSIM_FIELD(CollectiveRow, nic_sharing, i32);
  COMMSIM_FIELD(CollectiveRow, bytes, H5T_NATIVE_UINT64);
  COMMSIM_FIELD(CollectiveRow, calls, f64);
  COMMSIM_FIELD(CollectiveRow, exposed_calls, f64);
  COMMSIM_FIELD(CollectiveRow, each_s, f64);
  COMMSIM_FIELD(CollectiveRow, total_s, f64);
  COMMSIM_FIELD(CollectiveRow, exposed_s, f64);
  COMMSIM_FIELD(CollectiveRow, outside_calibration, i32);
  std::vector<CollectiveRow> rows;
  for (std::size_t i = 0; i < r.ranked.size(); ++i)
    for (const auto& pc : r.ranked[i].collectives)
      rows.push_back({static_cast<std::int32_t>(i + 1), to_string(pc.dim).data(), to_string(pc.collective).data(),
                      pc.what.c_str(), to_string(pc.chosen.algorithm).data(), to_string(pc.chosen.protocol).data(),
                      pc.group, pc.placement.nodes, pc.placement.ranks_per_node,
                      pc.placement.nodes > 1 ? pc.placement.sharing : 1, pc.bytes, pc.calls, pc.exposed_calls,
                      pc.each_s, pc.total_s, pc.exposed_s, pc.outside_calibration ? 1 : 0});
  h5::Dataset ds = h5::create_table(g, "collectives", t.get(), 1024);
  if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
}

// /plan/excluded: the layouts left out and why.
void write_excluded(hid_t g, const PlanResult& r) {
  const hid_t i32 = H5T_NATIVE_INT32, f64 = H5T_NATIVE_DOUBLE;
  h5::Datatype str = h5::vlen_string_type();
  h5::Datatype t(H5Tcreate(H5T_COMPOUND, sizeof(ExcludedRow)), "H5Tcreate excluded");
  COMMSIM_FIELD(ExcludedRow, dp, i32);
  COMMSIM_FIELD(ExcludedRow, tp, i32);
  COMMSIM_FIELD(ExcludedRow, pp, i32);
  COMMSIM_FIELD(ExcludedRow, ep, i32);
  COMMSIM_FIELD(ExcludedRow, memory, i32);
  COMMSIM_FIELD(ExcludedRow, mem_total_bytes, f64);
  COMMSIM_FIELD(ExcludedRow, reason, str.get());
  std::vector<ExcludedRow> rows;
  for (const auto& e : r.excluded)
    rows.push_back({e.shape.dp, e.shape.tp, e.shape.pp, e.shape.ep, e.memory ? 1 : 0,
                    e.memory ? e.memory_breakdown.total_bytes() : NAN, e.reason.c_str()});
  h5::Dataset ds = h5::create_table(g, "excluded", t.get(), 256);
  if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
}

}  // namespace

void write_plan_group(const std::string& path, const PlanReport& report) {
  const PlanResult& r = report.result;
  const PlanOptions& o = report.opts;
  h5::File file = h5::open_file(path, true);
  h5::Group g = h5::create_group(file.get(), "plan");
  h5::set_attribute(g.get(), "plan_schema_version", std::int64_t{1});
  h5::set_attribute(g.get(), "model_name", report.model.name);
  h5::set_attribute(g.get(), "model_path", report.model.source_path);
  h5::set_attribute(g.get(), "model_text", report.model.text);
  h5::set_attribute(g.get(), "topology_name", report.topo.name);
  h5::set_attribute(g.get(), "nodes", std::int64_t{o.nodes});
  h5::set_attribute(g.get(), "gpus", std::int64_t{r.gpus});
  h5::set_attribute(g.get(), "memory_limit_bytes", static_cast<std::int64_t>(r.memory_limit_bytes));
  h5::set_attribute(g.get(), "device_memory_bytes", static_cast<std::int64_t>(r.device_memory_bytes));
  set_double_attribute(g.get(), "memory_reserve_bytes", r.memory_reserve_bytes);
  h5::set_attribute(g.get(), "global_batch", std::int64_t{o.global_batch});
  h5::set_attribute(g.get(), "micro_batch", std::int64_t{o.micro_batch});
  h5::set_attribute(g.get(), "seq", std::int64_t{o.seq});
  h5::set_attribute(g.get(), "sequence_parallel", std::int64_t{o.sequence_parallel ? 1 : 0});
  h5::set_attribute(g.get(), "zero", std::int64_t{o.zero});
  h5::set_attribute(g.get(), "recompute", to_string(o.recompute));
  h5::set_attribute(g.get(), "overlap", to_string(o.overlap));
  h5::set_attribute(g.get(), "grad_bytes", std::int64_t{o.grad_bytes});
  h5::set_attribute(g.get(), "fp8", std::int64_t{o.fp8 ? 1 : 0});
  h5::set_attribute(g.get(), "tp_overlap", std::int64_t{o.tp_overlap ? 1 : 0});
  set_double_attribute(g.get(), "gpu_tflops", o.gpu_tflops > 0 ? o.gpu_tflops : NAN);
  set_double_attribute(g.get(), "parameters", r.total_params);
  set_double_attribute(g.get(), "flops_per_iteration", r.flops_per_iteration);
  h5::write_string_list(g.get(), "assumptions", r.assumptions);
  h5::write_string_list(g.get(), "warnings", report.warnings);

  write_layouts(g.get(), r);
  write_collectives(g.get(), r);
  write_excluded(g.get(), r);
  g.reset();
  file.close("closing " + path);
}

CalibrationRange calibration_range_from_results(const std::string& path) {
  CalibrationRange r;
  r.origin = path;
  for (const Point& p : read_points(path)) {
    if (!p.measured() || p.status != "ok") continue;
    if (!r.present) {
      r.present = true;
      r.min_bytes = r.max_bytes = p.bytes;
      r.min_nodes = r.max_nodes = p.nodes;
      continue;
    }
    r.min_bytes = std::min(r.min_bytes, p.bytes);
    r.max_bytes = std::max(r.max_bytes, p.bytes);
    r.min_nodes = std::min(r.min_nodes, p.nodes);
    r.max_nodes = std::max(r.max_nodes, p.nodes);
  }
  if (!r.present) throw Error("--calibrated-range " + path + ": the file holds no correctly measured point");
  return r;
}

}  // namespace commsim
