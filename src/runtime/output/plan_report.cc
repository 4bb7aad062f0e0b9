#include "runtime/output/plan_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "runtime/output/reporter.h"

namespace commsim {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string gib(double bytes) {
  return fmt("%.1f", bytes / 1073741824.0);
}
std::string pct(double fraction) {
  return fmt("%.1f%%", 100.0 * fraction);
}
std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? " " + s : std::string(width + 1 - s.size(), ' ') + s;
}

std::string label(const Candidate& c) {
  std::string s(to_string(c.algorithm));
  if (c.protocol != Protocol::None) {
    s += '/';
    s += to_string(c.protocol);
  }
  return s;
}

// "ring" or "ring+tree" (reduce-scatter and allgather may pick different algorithms).
std::string dim_algorithms(const LayoutPlan& lp, Dim d) {
  std::string out;
  std::set<std::string> seen;
  for (const auto& pc : lp.collectives) {
    if (pc.dim != d) continue;
    std::string l = label(pc.chosen);
    if (seen.insert(l).second) out += (out.empty() ? "" : "+") + l;
  }
  return out;
}

std::string algorithms_cell(const LayoutPlan& lp) {
  std::string out;
  for (Dim d : kAllDims) {
    std::string a = dim_algorithms(lp, d);
    if (a.empty()) continue;
    if (!out.empty()) out += ' ';
    out += to_string(d);
    out += ':';
    out += a;
  }
  return out.empty() ? "-" : out;
}

// One line per collective of the layouts shown that lies outside the calibrated range.
std::vector<std::string> calibration_warnings(const std::vector<const LayoutPlan*>& shown,
                                              const CalibrationRange& cal) {
  std::vector<std::string> out;
  if (!cal.present) return out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    for (const auto& pc : shown[i]->collectives) {
      if (!pc.outside_calibration) continue;
      std::string what = std::string(to_string(pc.dim)) + " " + std::string(to_string(pc.collective)) + " of " +
                         format_bytes(pc.bytes) + " on " + std::to_string(pc.placement.nodes) + " node(s)";
      if (!seen.insert(what).second) continue;
      out.push_back("layout " + shown[i]->shape.to_string() + ": " + what + " lies outside the calibrated range (" +
                    format_bytes(cal.min_bytes) + ".." + format_bytes(cal.max_bytes) + ", " +
                    std::to_string(cal.min_nodes) + ".." + std::to_string(cal.max_nodes) + " nodes)");
    }
  }
  return out;
}

// The checkpoint cost of the layouts shown: sizes, the write time to each storage tier, and the
// stall per step of a synchronous and an asynchronous checkpoint.
void print_checkpoints(std::ostream& os, const PlanResult& r, const std::vector<const LayoutPlan*>& shown,
                       const PlanOptions& o) {
  const CheckpointCost& first = shown.front()->checkpoint;
  os << "\n# checkpoint every " << o.checkpoint_every << " steps: " << fmt("%.1f", first.total_bytes / 1073741824.0)
     << " GiB in all; write times of the busiest node, every node writing at once";
  if (!first.sync_tier.empty())
    os << "; sync waits for " << first.sync_tier << ", async for " << first.async_tier << " then copies on";
  os << "\n";
  std::string head = pad("rank", 4) + pad("GiB/GPU", 8) + pad("GiB/node", 9);
  for (const auto& t : first.tiers) head += pad(t.tier, std::max<std::size_t>(10, t.tier.size()));
  if (!first.sync_tier.empty()) head += pad("sync/step", 10) + pad("async/step", 11) + pad("background", 11);
  os << head << "\n";
  bool late = false;
  for (const LayoutPlan* lp : shown) {
    const CheckpointCost& c = lp->checkpoint;
    std::string line =
        pad(std::to_string(plan_rank(r, *lp)), 4) + pad(gib(c.bytes_per_gpu), 8) + pad(gib(c.bytes_per_node), 9);
    for (const auto& t : c.tiers) line += pad(format_time(t.write_s), std::max<std::size_t>(10, t.tier.size()));
    if (!c.sync_tier.empty()) {
      line += pad(format_time(c.sync_stall_per_step_s), 10) + pad(format_time(c.async_stall_per_step_s), 11) +
              pad(c.background_s > 0 ? format_time(c.background_s) + (c.background_fits ? "" : "!") : "-", 11);
      late = late || !c.background_fits;
    }
    os << line << "\n";
  }
  if (first.tiers.empty()) os << "  (the topology lists no storage tiers: add a storage: section to get write times)\n";
  if (late)
    os << "  ! the background copy takes longer than " << o.checkpoint_every
       << " steps: checkpoint less often, or the next checkpoint waits for it\n";
}

// The title lines: model, cluster, options, and how many layouts fit.
void print_table_header(std::ostream& os, const PlanReport& report, bool show_excluded) {
  const PlanResult& r = report.result;
  const PlanOptions& o = report.opts;
  os << "# commsim plan: " << report.model.name << " (" << fmt("%.1f", r.total_params / 1e9) << " B parameters) on "
     << o.nodes << " x " << report.topo.name << " (" << r.gpus << " GPUs, "
     << gib(static_cast<double>(r.device_memory_bytes)) << " GiB each, " << gib(r.memory_reserve_bytes)
     << " GiB kept free)\n";
  os << "# global batch " << o.global_batch << " x " << o.seq << " tokens, micro-batch " << o.micro_batch
     << "; recompute " << to_string(o.recompute) << ", ZeRO-" << o.zero << ", overlap " << to_string(o.overlap)
     << (o.sequence_parallel ? ", sequence parallel" : "")
     << (o.max_virtual_stages > 1 ? ", VP <= " + std::to_string(o.max_virtual_stages) : std::string()) << "; ranked by "
     << to_string(o.rank_by) << "\n";
  std::size_t memory_excluded = 0;
  for (const auto& e : r.excluded) memory_excluded += e.memory ? 1 : 0;
  os << "# " << r.ranked.size() << " layouts fit; " << memory_excluded << " do not fit in memory, "
     << r.excluded.size() - memory_excluded << " are invalid" << (show_excluded ? "" : " (--show-excluded lists them)")
     << "; times are per iteration\n\n";
}

// One row per layout shown: its sizes, exposed communication per dimension, bubble, memory
// (step time and communication share with a compute estimate) and the algorithms it uses.
void print_layout_rows(std::ostream& os, const PlanReport& report) {
  const PlanResult& r = report.result;
  const std::vector<const LayoutPlan*>& shown = report.shown;
  const bool compute = report.opts.gpu_tflops > 0;
  char line[512];
  std::snprintf(line, sizeof line, "%5s %6s %3s %4s %3s %3s %6s %11s %11s %11s %11s %11s %7s %8s", "rank", "DP", "TP",
                "PP", "EP", "VP", "m", "comm", "TP", "PP", "DP", "EP", "bubble", "mem GiB");
  os << line;
  if (compute) os << pad("step", 10) << pad("comm%", 7);
  os << "  algorithms\n";
  for (const LayoutPlan* shown_layout : shown) {
    const LayoutPlan& lp = *shown_layout;
    auto t = [](double s) { return s > 0 ? format_time(s) : std::string("-"); };
    std::string rank = std::to_string(plan_rank(r, lp)) + (lp.outside_calibration ? "!" : "");
    std::snprintf(line, sizeof line, "%5s %6d %3d %4d %3d %3d %6d %11s %11s %11s %11s %11s %7s %8s", rank.c_str(),
                  lp.shape.dp, lp.shape.tp, lp.shape.pp, lp.shape.ep, lp.shape.vp, lp.shape.micro_batches,
                  t(lp.comm_s).c_str(), t(lp.dim(Dim::TP)).c_str(), t(lp.dim(Dim::PP)).c_str(),
                  t(lp.dim(Dim::DP)).c_str(), t(lp.dim(Dim::EP)).c_str(), pct(lp.bubble_fraction).c_str(),
                  gib(lp.memory.total_bytes()).c_str());
    os << line;
    if (compute) os << pad(format_time(lp.step_s), 10) << pad(pct(lp.comm_share), 7);
    os << "  " << algorithms_cell(lp) << "\n";
  }
  if (report.filtered)
    os << "  (" << shown.size() << " layout(s) match --layout; rank is among all " << r.ranked.size() << ")\n";
  else if (shown.size() < r.ranked.size())
    os << "  (" << shown.size() << " of " << r.ranked.size() << " shown; --top 0 shows all)\n";
}

// --detail: each shown layout's memory and every collective it relies on.
void print_collective_detail(std::ostream& os, const PlanReport& report) {
  char line[512];
  for (const LayoutPlan* shown_layout : report.shown) {
    const LayoutPlan& lp = *shown_layout;
    const MemoryBreakdown& m = lp.memory;
    os << "\n# " << plan_rank(report.result, lp) << ". " << lp.shape.to_string() << ", m=" << lp.shape.micro_batches
       << ": memory stage " << m.stage << ": parameters " << gib(m.params_bytes) << ", gradients " << gib(m.grads_bytes)
       << ", optimizer " << gib(m.optimizer_bytes) << ", activations " << gib(m.activations_bytes) << " GiB\n";
    for (const auto& pc : lp.collectives) {
      std::snprintf(
          line, sizeof line,
          "   %-2s %-13s %-34s group %5d (%d nodes x %d%s, NIC share 1/%d) %10s x %9.0f = %10s exposed %10s  %s%s\n",
          std::string(to_string(pc.dim)).c_str(), std::string(to_string(pc.collective)).c_str(), pc.what.c_str(),
          pc.group, pc.placement.nodes, pc.placement.ranks_per_node, pc.placement.uneven ? ", uneven" : "",
          pc.placement.nodes > 1 ? pc.placement.sharing : 1, format_bytes(pc.bytes).c_str(), pc.calls,
          format_time(pc.total_s).c_str(), format_time(pc.exposed_s).c_str(), label(pc.chosen).c_str(),
          pc.outside_calibration ? "  (outside calibrated range)" : "");
      os << line;
    }
  }
}

// The layouts left out: with --show-excluded all of them and why; when nothing fits, the five
// closest to fitting with what fills their memory.
void print_excluded(std::ostream& os, const PlanResult& r, bool show_excluded) {
  if (r.ranked.empty() && !show_excluded) {
    std::vector<const ExcludedLayout*> close;
    for (const auto& e : r.excluded)
      if (e.memory) close.push_back(&e);
    std::sort(close.begin(), close.end(), [](const ExcludedLayout* a, const ExcludedLayout* b) {
      return a->memory_breakdown.total_bytes() < b->memory_breakdown.total_bytes();
    });
    if (!close.empty()) os << "\n# closest to fitting\n";
    for (std::size_t i = 0; i < close.size() && i < 5; ++i)
      os << "  " << close[i]->shape.to_string() << ": " << close[i]->reason << "\n";
  }
  if (show_excluded && !r.excluded.empty()) {
    os << "\n# excluded layouts\n";
    for (const auto& e : r.excluded) os << "  " << e.shape.to_string() << ": " << e.reason << "\n";
  }
}

}  // namespace

void print_plan_table(std::ostream& os, const PlanReport& report, bool show_excluded, bool detail) {
  print_table_header(os, report, show_excluded);
  print_layout_rows(os, report);
  if (detail) print_collective_detail(os, report);
  if (report.opts.checkpoint_every > 0 && !report.shown.empty())
    print_checkpoints(os, report.result, report.shown, report.opts);
  print_excluded(os, report.result, show_excluded);
  os << "\n# assumptions\n";
  for (const auto& a : report.result.assumptions) os << "  - " << a << "\n";
  for (const auto& w : report.warnings) os << "warning: " << w << "\n";
}

void print_plan_csv(std::ostream& os, const PlanReport& report) {
  const PlanResult& r = report.result;
  const std::vector<const LayoutPlan*>& shown = report.shown;
  os << "rank,dp,tp,pp,ep,micro_batches,comm_s,tp_s,pp_s,dp_s,ep_s,comm_total_s,bubble_fraction,"
        "mem_params_bytes,mem_grads_bytes,mem_optimizer_bytes,mem_activations_bytes,mem_total_bytes,mem_stage,"
        "outside_calibration,compute_s,step_s,comm_share,tp_algorithm,pp_algorithm,dp_algorithm,ep_algorithm,vp,"
        "ckpt_bytes_per_gpu,ckpt_bytes_per_node,ckpt_sync_stall_s,ckpt_async_stall_s,ckpt_background_s,"
        "ckpt_sync_per_step_s,ckpt_async_per_step_s,ckpt_background_fits\n";
  auto num = [](double v) { return std::isnan(v) ? std::string() : fmt("%.9g", v); };
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const LayoutPlan& lp = *shown[i];
    const MemoryBreakdown& m = lp.memory;
    os << plan_rank(r, lp) << ',' << lp.shape.dp << ',' << lp.shape.tp << ',' << lp.shape.pp << ',' << lp.shape.ep
       << ',' << lp.shape.micro_batches << ',' << num(lp.comm_s) << ',' << num(lp.dim(Dim::TP)) << ','
       << num(lp.dim(Dim::PP)) << ',' << num(lp.dim(Dim::DP)) << ',' << num(lp.dim(Dim::EP)) << ','
       << num(lp.comm_total_s) << ',' << num(lp.bubble_fraction) << ',' << num(m.params_bytes) << ','
       << num(m.grads_bytes) << ',' << num(m.optimizer_bytes) << ',' << num(m.activations_bytes) << ','
       << num(m.total_bytes()) << ',' << m.stage << ',' << (lp.outside_calibration ? 1 : 0) << ',' << num(lp.compute_s)
       << ',' << num(lp.step_s) << ',' << num(lp.comm_share);
    for (Dim d : kAllDims) os << ',' << csv_quote(dim_algorithms(lp, d));
    const CheckpointCost& c = lp.checkpoint;
    os << ',' << lp.shape.vp << ',' << num(c.bytes_per_gpu) << ',' << num(c.bytes_per_node) << ','
       << num(c.sync_stall_s) << ',' << num(c.async_stall_s) << ',' << num(c.background_s) << ','
       << num(c.sync_stall_per_step_s) << ',' << num(c.async_stall_per_step_s) << ',' << (c.background_fits ? 1 : 0)
       << '\n';
  }
}

namespace {

std::string json_bool(bool b) {
  return b ? "true" : "false";
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_string(v[i]);
  return s + "]";
}

void print_checkpoint_json(std::ostream& os, const CheckpointCost& c) {
  os << "{\"total_bytes\": " << json_number(c.total_bytes) << ", \"bytes_per_gpu\": " << json_number(c.bytes_per_gpu)
     << ", \"bytes_per_node\": " << json_number(c.bytes_per_node) << ", \"tiers\": [";
  for (std::size_t k = 0; k < c.tiers.size(); ++k)
    os << (k ? ", " : "") << "{\"name\": " << json_string(c.tiers[k].tier)
       << ", \"shared\": " << json_bool(c.tiers[k].shared)
       << ", \"write_bw_per_node_Bps\": " << json_number(c.tiers[k].write_bw_per_node_Bps)
       << ", \"write_s\": " << json_number(c.tiers[k].write_s) << "}";
  os << "], \"sync_tier\": " << json_string(c.sync_tier) << ", \"async_tier\": " << json_string(c.async_tier)
     << ", \"sync_stall_s\": " << json_number(c.sync_stall_s) << ", \"async_stall_s\": " << json_number(c.async_stall_s)
     << ", \"background_s\": " << json_number(c.background_s) << ", \"every\": " << c.every
     << ", \"sync_stall_per_step_s\": " << json_number(c.sync_stall_per_step_s)
     << ", \"async_stall_per_step_s\": " << json_number(c.async_stall_per_step_s)
     << ", \"background_fits\": " << json_bool(c.background_fits) << "}";
}

void print_collective_json(std::ostream& os, const PricedCollective& pc) {
  os << "{\"dim\": " << json_string(to_string(pc.dim)) << ", \"collective\": " << json_string(to_string(pc.collective))
     << ", \"what\": " << json_string(pc.what) << ", \"algorithm\": " << json_string(to_string(pc.chosen.algorithm))
     << ", \"protocol\": " << json_string(to_string(pc.chosen.protocol)) << ", \"group\": " << pc.group
     << ", \"nodes\": " << pc.placement.nodes << ", \"ranks_per_node\": " << pc.placement.ranks_per_node
     << ", \"nic_sharing\": " << (pc.placement.nodes > 1 ? pc.placement.sharing : 1) << ", \"bytes\": " << pc.bytes
     << ", \"calls\": " << json_number(pc.calls) << ", \"exposed_calls\": " << json_number(pc.exposed_calls)
     << ", \"each_s\": " << json_number(pc.each_s) << ", \"total_s\": " << json_number(pc.total_s)
     << ", \"exposed_s\": " << json_number(pc.exposed_s)
     << ", \"outside_calibration\": " << json_bool(pc.outside_calibration) << "}";
}

void print_layout_json(std::ostream& os, const PlanResult& r, const LayoutPlan& lp) {
  const MemoryBreakdown& m = lp.memory;
  os << "{\"rank\": " << plan_rank(r, lp) << ", \"dp\": " << lp.shape.dp << ", \"tp\": " << lp.shape.tp
     << ", \"pp\": " << lp.shape.pp << ", \"ep\": " << lp.shape.ep << ", \"micro_batches\": " << lp.shape.micro_batches
     << ", \"comm_s\": " << json_number(lp.comm_s);
  for (Dim d : kAllDims) os << ", \"" << to_string(d) << "_s\": " << json_number(lp.dim(d));
  os << ", \"comm_total_s\": " << json_number(lp.comm_total_s)
     << ", \"bubble_fraction\": " << json_number(lp.bubble_fraction)
     << ", \"memory\": {\"params_bytes\": " << json_number(m.params_bytes)
     << ", \"grads_bytes\": " << json_number(m.grads_bytes)
     << ", \"optimizer_bytes\": " << json_number(m.optimizer_bytes)
     << ", \"activations_bytes\": " << json_number(m.activations_bytes)
     << ", \"total_bytes\": " << json_number(m.total_bytes()) << ", \"stage\": " << m.stage << "}"
     << ", \"outside_calibration\": " << json_bool(lp.outside_calibration)
     << ", \"compute_s\": " << json_number(lp.compute_s) << ", \"step_s\": " << json_number(lp.step_s)
     << ", \"comm_share\": " << json_number(lp.comm_share) << ", \"vp\": " << lp.shape.vp << ", \"checkpoint\": ";
  print_checkpoint_json(os, lp.checkpoint);
  os << ", \"collectives\": [";
  for (std::size_t j = 0; j < lp.collectives.size(); ++j) {
    if (j) os << ", ";
    print_collective_json(os, lp.collectives[j]);
  }
  os << "]}";
}

}  // namespace

void print_plan_json(std::ostream& os, const PlanReport& report, bool show_excluded) {
  const PlanResult& r = report.result;
  const PlanOptions& o = report.opts;
  os << "{\n  \"model\": " << json_string(report.model.name)
     << ",\n  \"model_path\": " << json_string(report.model.source_path)
     << ",\n  \"parameters\": " << json_number(r.total_params) << ",\n  \"topology\": " << json_string(report.topo.name)
     << ",\n  \"topology_path\": " << json_string(report.topo.source_path) << ",\n  \"nodes\": " << o.nodes
     << ",\n  \"gpus\": " << r.gpus << ",\n  \"memory_limit_bytes\": " << r.memory_limit_bytes
     << ",\n  \"device_memory_bytes\": " << r.device_memory_bytes
     << ",\n  \"memory_reserve_bytes\": " << json_number(r.memory_reserve_bytes)
     << ",\n  \"options\": {\"global_batch\": " << o.global_batch << ", \"micro_batch\": " << o.micro_batch
     << ", \"seq\": " << o.seq << ", \"sequence_parallel\": " << json_bool(o.sequence_parallel)
     << ", \"zero\": " << o.zero << ", \"recompute\": " << json_string(to_string(o.recompute))
     << ", \"overlap\": " << json_string(to_string(o.overlap))
     << ", \"gpu_tflops\": " << (o.gpu_tflops > 0 ? json_number(o.gpu_tflops) : "null")
     << ", \"rank_by\": " << json_string(to_string(o.rank_by)) << ", \"max_virtual_stages\": " << o.max_virtual_stages
     << ", \"checkpoint_every\": " << o.checkpoint_every << ", \"grad_bytes\": " << o.grad_bytes
     << ", \"fp8\": " << json_bool(o.fp8) << ", \"tp_overlap\": " << json_bool(o.tp_overlap) << "},\n";
  os << "  \"flops_per_iteration\": " << json_number(r.flops_per_iteration) << ",\n";
  os << "  \"assumptions\": " << json_strings(r.assumptions) << ",\n  \"warnings\": " << json_strings(report.warnings)
     << ",\n";
  os << "  \"layouts_fitting\": " << r.ranked.size() << ",\n  \"layouts\": [";
  for (std::size_t i = 0; i < report.shown.size(); ++i) {
    os << (i ? "," : "") << "\n    ";
    print_layout_json(os, r, *report.shown[i]);
  }
  os << "\n  ]";
  if (show_excluded) {
    os << ",\n  \"excluded\": [";
    for (std::size_t i = 0; i < r.excluded.size(); ++i) {
      const auto& e = r.excluded[i];
      os << (i ? "," : "") << "\n    {\"dp\": " << e.shape.dp << ", \"tp\": " << e.shape.tp
         << ", \"pp\": " << e.shape.pp << ", \"ep\": " << e.shape.ep << ", \"memory\": " << json_bool(e.memory)
         << ", \"reason\": " << json_string(e.reason) << "}";
    }
    os << "\n  ]";
  }
  os << "\n}\n";
}

// 1-based position of a layout in the ranking (the table shows it even when --layout filters).
std::size_t plan_rank(const PlanResult& r, const LayoutPlan& lp) {
  return static_cast<std::size_t>(&lp - r.ranked.data()) + 1;
}

bool layout_matches(const LayoutFilter& filter, const Shape& s) {
  for (const auto& [key, value] : filter) {
    int have = key == "dp" ? s.dp : key == "tp" ? s.tp : key == "pp" ? s.pp : s.ep;
    if (have != value) return false;
  }
  return true;
}
LayoutFilter parse_layout_filter(const std::string& text) {
  LayoutFilter out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    std::string key = item.substr(0, eq);
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int value = 0;
    bool ok = eq != std::string::npos && (key == "dp" || key == "tp" || key == "pp" || key == "ep");
    if (ok) {
      try {
        std::size_t used = 0;
        value = std::stoi(item.substr(eq + 1), &used);
        ok = used == item.size() - eq - 1 && value >= 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) throw Error("--layout: cannot read '" + item + "'; expected e.g. tp=8,pp=12 (keys dp, tp, pp, ep)");
    out.emplace_back(key, value);
  }
  if (out.empty()) throw Error("--layout: empty; expected e.g. tp=8,pp=12");
  return out;
}

PlanReport make_plan_report(const LlmModel& model, const Topology& topo, const PlanOptions& opts,
                            const PlanResult& result, const LayoutFilter& filter, int top) {
  PlanReport report{model, topo, opts, result, {}, !filter.empty(), result.warnings};
  for (const auto& lp : result.ranked) {
    if (top > 0 && static_cast<int>(report.shown.size()) >= top) break;
    if (layout_matches(filter, lp.shape)) report.shown.push_back(&lp);
  }
  for (auto& w : calibration_warnings(report.shown, opts.calibration)) report.warnings.push_back(std::move(w));
  return report;
}

}  // namespace commsim
