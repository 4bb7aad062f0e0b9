// commsim plan: ranks every (DP, TP, PP, EP) layout of a training job by its estimated step time (or
// its communication per iteration) on the model (model/plan/plan.h), with the pipeline bubble, the
// memory per GPU and the checkpoint cost.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/h5/hdf5.h"
#include "runtime/output/reporter.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"

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
  if (c.protocol != Protocol::None) s += "/" + std::string(to_string(c.protocol));
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
    if (!a.empty()) out += (out.empty() ? "" : " ") + std::string(to_string(d)) + ":" + a;
  }
  return out.empty() ? "-" : out;
}

// Message sizes and node counts of the measured points of a results file.
CalibrationRange range_from_results(const std::string& path) {
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

std::vector<Candidate> candidates_from(const std::string& text, const Topology& topo) {
  if (text == "all") return default_candidates(topo);
  std::vector<Algorithm> allowed = hand_written_algorithms();
  allowed.push_back(Algorithm::NcclRing);
  allowed.push_back(Algorithm::NcclTree);
  AlgorithmSelection sel = parse_algorithms(text, allowed);
  std::vector<Candidate> out;
  for (Algorithm a : sel.named) {
    if (is_hand_written(a)) {
      out.push_back({a, Protocol::None});
      continue;
    }
    if (!topo.nccl.present)
      throw Error("--algorithms " + std::string(to_string(a)) + ": topology '" + topo.name +
                  "' has no NCCL constants to price it");
    for (Protocol p : kNcclProtocols) out.push_back({a, p});
  }
  // Pipeline send/recv has one algorithm (direct); keep it available whatever was named.
  if (std::none_of(out.begin(), out.end(),
                   [](const Candidate& c) { return applies(Collective::SendRecv, c.algorithm); }))
    out.push_back({Algorithm::Direct, Protocol::None});
  return out;
}

// 1-based position of a layout in the ranking (the table shows it even when --layout filters).
std::size_t rank_of(const PlanResult& r, const LayoutPlan* lp) {
  return static_cast<std::size_t>(lp - r.ranked.data()) + 1;
}

// "tp=8,pp=12" -> the layouts with those sizes. Keys dp, tp, pp, ep.
bool matches(const std::vector<std::pair<std::string, int>>& filter, const Shape& s) {
  for (const auto& [key, value] : filter) {
    int have = key == "dp" ? s.dp : key == "tp" ? s.tp : key == "pp" ? s.pp : s.ep;
    if (have != value) return false;
  }
  return true;
}
std::vector<std::pair<std::string, int>> parse_layout_filter(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
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

struct Header {
  const LlmModel* model;
  const Topology* topo;
  const PlanOptions* opts;
  const PlanResult* result;
};

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
        pad(std::to_string(rank_of(r, lp)), 4) + pad(gib(c.bytes_per_gpu), 8) + pad(gib(c.bytes_per_node), 9);
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

void print_table(std::ostream& os, const Header& h, const std::vector<const LayoutPlan*>& shown, bool filtered,
                 bool show_excluded, bool detail, const std::vector<std::string>& warnings) {
  const PlanResult& r = *h.result;
  const PlanOptions& o = *h.opts;
  const bool compute = o.gpu_tflops > 0;
  os << "# commsim plan: " << h.model->name << " (" << fmt("%.1f", r.total_params / 1e9) << " B parameters) on "
     << o.nodes << " x " << h.topo->name << " (" << r.gpus << " GPUs, "
     << gib(static_cast<double>(r.memory_limit_bytes)) << " GiB each)\n";
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

  char line[512];
  std::snprintf(line, sizeof line, "%5s %6s %3s %4s %3s %3s %6s %11s %11s %11s %11s %11s %7s %8s", "rank", "DP", "TP",
                "PP", "EP", "VP", "m", "comm", "TP", "PP", "DP", "EP", "bubble", "mem GiB");
  os << line;
  if (compute) os << pad("step", 10) << pad("comm%", 7);
  os << "  algorithms\n";
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const LayoutPlan& lp = *shown[i];
    auto t = [](double s) { return s > 0 ? format_time(s) : std::string("-"); };
    std::string rank = std::to_string(rank_of(r, &lp)) + (lp.outside_calibration ? "!" : "");
    std::snprintf(line, sizeof line, "%5s %6d %3d %4d %3d %3d %6d %11s %11s %11s %11s %11s %7s %8s", rank.c_str(),
                  lp.shape.dp, lp.shape.tp, lp.shape.pp, lp.shape.ep, lp.shape.vp, lp.shape.micro_batches,
                  t(lp.comm_s).c_str(), t(lp.dim(Dim::TP)).c_str(), t(lp.dim(Dim::PP)).c_str(),
                  t(lp.dim(Dim::DP)).c_str(), t(lp.dim(Dim::EP)).c_str(), pct(lp.bubble_fraction).c_str(),
                  gib(lp.memory.total_bytes()).c_str());
    os << line;
    if (compute) os << pad(format_time(lp.step_s), 10) << pad(pct(lp.comm_share), 7);
    os << "  " << algorithms_cell(lp) << "\n";
  }
  if (filtered)
    os << "  (" << shown.size() << " layout(s) match --layout; rank is among all " << r.ranked.size() << ")\n";
  else if (shown.size() < r.ranked.size())
    os << "  (" << shown.size() << " of " << r.ranked.size() << " shown; --top 0 shows all)\n";

  if (detail) {
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const LayoutPlan& lp = *shown[i];
      const MemoryBreakdown& m = lp.memory;
      os << "\n# " << rank_of(r, &lp) << ". " << lp.shape.to_string() << ", m=" << lp.shape.micro_batches
         << ": memory stage " << m.stage << ": parameters " << gib(m.params_bytes) << ", gradients "
         << gib(m.grads_bytes) << ", optimizer " << gib(m.optimizer_bytes) << ", activations "
         << gib(m.activations_bytes) << " GiB\n";
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
  if (o.checkpoint_every > 0 && !shown.empty()) print_checkpoints(os, r, shown, o);
  if (r.ranked.empty() && !show_excluded) {
    // Nothing fits: show the layouts closest to fitting, with what fills their memory.
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
  os << "\n# assumptions\n";
  for (const auto& a : r.assumptions) os << "  - " << a << "\n";
  for (const auto& w : warnings) os << "warning: " << w << "\n";
}

void print_csv(std::ostream& os, const PlanResult& r, const std::vector<const LayoutPlan*>& shown) {
  os << "rank,dp,tp,pp,ep,micro_batches,comm_s,tp_s,pp_s,dp_s,ep_s,comm_total_s,bubble_fraction,"
        "mem_params_bytes,mem_grads_bytes,mem_optimizer_bytes,mem_activations_bytes,mem_total_bytes,mem_stage,"
        "outside_calibration,compute_s,step_s,comm_share,tp_algorithm,pp_algorithm,dp_algorithm,ep_algorithm,vp,"
        "ckpt_bytes_per_gpu,ckpt_bytes_per_node,ckpt_sync_stall_s,ckpt_async_stall_s,ckpt_background_s,"
        "ckpt_sync_per_step_s,ckpt_async_per_step_s,ckpt_background_fits\n";
  auto num = [](double v) { return std::isnan(v) ? std::string() : fmt("%.9g", v); };
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const LayoutPlan& lp = *shown[i];
    const MemoryBreakdown& m = lp.memory;
    os << rank_of(r, &lp) << ',' << lp.shape.dp << ',' << lp.shape.tp << ',' << lp.shape.pp << ',' << lp.shape.ep << ','
       << lp.shape.micro_batches << ',' << num(lp.comm_s) << ',' << num(lp.dim(Dim::TP)) << ',' << num(lp.dim(Dim::PP))
       << ',' << num(lp.dim(Dim::DP)) << ',' << num(lp.dim(Dim::EP)) << ',' << num(lp.comm_total_s) << ','
       << num(lp.bubble_fraction) << ',' << num(m.params_bytes) << ',' << num(m.grads_bytes) << ','
       << num(m.optimizer_bytes) << ',' << num(m.activations_bytes) << ',' << num(m.total_bytes()) << ',' << m.stage
       << ',' << (lp.outside_calibration ? 1 : 0) << ',' << num(lp.compute_s) << ',' << num(lp.step_s) << ','
       << num(lp.comm_share);
    for (Dim d : kAllDims) os << ',' << csv_quote(dim_algorithms(lp, d));
    const CheckpointCost& c = lp.checkpoint;
    os << ',' << lp.shape.vp << ',' << num(c.bytes_per_gpu) << ',' << num(c.bytes_per_node) << ','
       << num(c.sync_stall_s) << ',' << num(c.async_stall_s) << ',' << num(c.background_s) << ','
       << num(c.sync_stall_per_step_s) << ',' << num(c.async_stall_per_step_s) << ',' << (c.background_fits ? 1 : 0)
       << '\n';
  }
}

void print_json(std::ostream& os, const Header& h, const std::vector<const LayoutPlan*>& shown, bool show_excluded,
                const std::vector<std::string>& warnings) {
  const PlanResult& r = *h.result;
  const PlanOptions& o = *h.opts;
  auto strings = [&](const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_string(v[i]);
    return s + "]";
  };
  os << "{\n  \"model\": " << json_string(h.model->name) << ",\n  \"model_path\": " << json_string(h.model->source_path)
     << ",\n  \"parameters\": " << json_number(r.total_params) << ",\n  \"topology\": " << json_string(h.topo->name)
     << ",\n  \"topology_path\": " << json_string(h.topo->source_path) << ",\n  \"nodes\": " << o.nodes
     << ",\n  \"gpus\": " << r.gpus << ",\n  \"memory_limit_bytes\": " << r.memory_limit_bytes
     << ",\n  \"options\": {\"global_batch\": " << o.global_batch << ", \"micro_batch\": " << o.micro_batch
     << ", \"seq\": " << o.seq << ", \"sequence_parallel\": " << (o.sequence_parallel ? "true" : "false")
     << ", \"zero\": " << o.zero << ", \"recompute\": " << json_string(to_string(o.recompute))
     << ", \"overlap\": " << json_string(to_string(o.overlap))
     << ", \"gpu_tflops\": " << (o.gpu_tflops > 0 ? json_number(o.gpu_tflops) : "null")
     << ", \"rank_by\": " << json_string(to_string(o.rank_by)) << ", \"max_virtual_stages\": " << o.max_virtual_stages
     << ", \"checkpoint_every\": " << o.checkpoint_every << "},\n";
  os << "  \"flops_per_iteration\": " << json_number(r.flops_per_iteration) << ",\n";
  os << "  \"assumptions\": " << strings(r.assumptions) << ",\n  \"warnings\": " << strings(warnings) << ",\n";
  os << "  \"layouts_fitting\": " << r.ranked.size() << ",\n  \"layouts\": [";
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const LayoutPlan& lp = *shown[i];
    const MemoryBreakdown& m = lp.memory;
    os << (i ? "," : "") << "\n    {\"rank\": " << rank_of(r, &lp) << ", \"dp\": " << lp.shape.dp
       << ", \"tp\": " << lp.shape.tp << ", \"pp\": " << lp.shape.pp << ", \"ep\": " << lp.shape.ep
       << ", \"micro_batches\": " << lp.shape.micro_batches << ", \"comm_s\": " << json_number(lp.comm_s);
    for (Dim d : kAllDims) os << ", \"" << to_string(d) << "_s\": " << json_number(lp.dim(d));
    os << ", \"comm_total_s\": " << json_number(lp.comm_total_s)
       << ", \"bubble_fraction\": " << json_number(lp.bubble_fraction)
       << ", \"memory\": {\"params_bytes\": " << json_number(m.params_bytes)
       << ", \"grads_bytes\": " << json_number(m.grads_bytes)
       << ", \"optimizer_bytes\": " << json_number(m.optimizer_bytes)
       << ", \"activations_bytes\": " << json_number(m.activations_bytes)
       << ", \"total_bytes\": " << json_number(m.total_bytes()) << ", \"stage\": " << m.stage << "}"
       << ", \"outside_calibration\": " << (lp.outside_calibration ? "true" : "false")
       << ", \"compute_s\": " << json_number(lp.compute_s) << ", \"step_s\": " << json_number(lp.step_s)
       << ", \"comm_share\": " << json_number(lp.comm_share) << ", \"vp\": " << lp.shape.vp;
    {
      const CheckpointCost& c = lp.checkpoint;
      os << ", \"checkpoint\": {\"total_bytes\": " << json_number(c.total_bytes)
         << ", \"bytes_per_gpu\": " << json_number(c.bytes_per_gpu)
         << ", \"bytes_per_node\": " << json_number(c.bytes_per_node) << ", \"tiers\": [";
      for (std::size_t k = 0; k < c.tiers.size(); ++k)
        os << (k ? ", " : "") << "{\"name\": " << json_string(c.tiers[k].tier)
           << ", \"shared\": " << (c.tiers[k].shared ? "true" : "false")
           << ", \"write_bw_per_node_Bps\": " << json_number(c.tiers[k].write_bw_per_node_Bps)
           << ", \"write_s\": " << json_number(c.tiers[k].write_s) << "}";
      os << "], \"sync_tier\": " << json_string(c.sync_tier) << ", \"async_tier\": " << json_string(c.async_tier)
         << ", \"sync_stall_s\": " << json_number(c.sync_stall_s)
         << ", \"async_stall_s\": " << json_number(c.async_stall_s)
         << ", \"background_s\": " << json_number(c.background_s) << ", \"every\": " << c.every
         << ", \"sync_stall_per_step_s\": " << json_number(c.sync_stall_per_step_s)
         << ", \"async_stall_per_step_s\": " << json_number(c.async_stall_per_step_s)
         << ", \"background_fits\": " << (c.background_fits ? "true" : "false") << "}";
    }
    os << ", \"collectives\": [";
    for (std::size_t j = 0; j < lp.collectives.size(); ++j) {
      const auto& pc = lp.collectives[j];
      os << (j ? ", " : "") << "{\"dim\": " << json_string(to_string(pc.dim))
         << ", \"collective\": " << json_string(to_string(pc.collective)) << ", \"what\": " << json_string(pc.what)
         << ", \"algorithm\": " << json_string(to_string(pc.chosen.algorithm))
         << ", \"protocol\": " << json_string(to_string(pc.chosen.protocol)) << ", \"group\": " << pc.group
         << ", \"nodes\": " << pc.placement.nodes << ", \"ranks_per_node\": " << pc.placement.ranks_per_node
         << ", \"nic_sharing\": " << (pc.placement.nodes > 1 ? pc.placement.sharing : 1) << ", \"bytes\": " << pc.bytes
         << ", \"calls\": " << json_number(pc.calls) << ", \"exposed_calls\": " << json_number(pc.exposed_calls)
         << ", \"each_s\": " << json_number(pc.each_s) << ", \"total_s\": " << json_number(pc.total_s)
         << ", \"exposed_s\": " << json_number(pc.exposed_s)
         << ", \"outside_calibration\": " << (pc.outside_calibration ? "true" : "false") << "}";
    }
    os << "]}";
  }
  os << "\n  ]";
  if (show_excluded) {
    os << ",\n  \"excluded\": [";
    for (std::size_t i = 0; i < r.excluded.size(); ++i) {
      const auto& e = r.excluded[i];
      os << (i ? "," : "") << "\n    {\"dp\": " << e.shape.dp << ", \"tp\": " << e.shape.tp
         << ", \"pp\": " << e.shape.pp << ", \"ep\": " << e.shape.ep
         << ", \"memory\": " << (e.memory ? "true" : "false") << ", \"reason\": " << json_string(e.reason) << "}";
    }
    os << "\n  ]";
  }
  os << "\n}\n";
}

// ---- HDF5: the results-file root and run context, plus the /plan group (HDF5_SCHEMA.md) ----

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

void write_plan_group(const std::string& path, const Header& h, const std::vector<std::string>& warnings) {
  const PlanResult& r = *h.result;
  const PlanOptions& o = *h.opts;
  h5::File file = h5::open_file(path, true);
  h5::Group g = h5::create_group(file.get(), "plan");
  h5::set_attribute(g.get(), "plan_schema_version", std::int64_t{1});
  h5::set_attribute(g.get(), "model_name", h.model->name);
  h5::set_attribute(g.get(), "model_path", h.model->source_path);
  h5::set_attribute(g.get(), "model_text", h.model->text);
  h5::set_attribute(g.get(), "topology_name", h.topo->name);
  h5::set_attribute(g.get(), "nodes", std::int64_t{o.nodes});
  h5::set_attribute(g.get(), "gpus", std::int64_t{r.gpus});
  h5::set_attribute(g.get(), "memory_limit_bytes", static_cast<std::int64_t>(r.memory_limit_bytes));
  h5::set_attribute(g.get(), "global_batch", std::int64_t{o.global_batch});
  h5::set_attribute(g.get(), "micro_batch", std::int64_t{o.micro_batch});
  h5::set_attribute(g.get(), "seq", std::int64_t{o.seq});
  h5::set_attribute(g.get(), "sequence_parallel", std::int64_t{o.sequence_parallel ? 1 : 0});
  h5::set_attribute(g.get(), "zero", std::int64_t{o.zero});
  h5::set_attribute(g.get(), "recompute", to_string(o.recompute));
  h5::set_attribute(g.get(), "overlap", to_string(o.overlap));
  set_double_attribute(g.get(), "gpu_tflops", o.gpu_tflops > 0 ? o.gpu_tflops : NAN);
  set_double_attribute(g.get(), "parameters", r.total_params);
  set_double_attribute(g.get(), "flops_per_iteration", r.flops_per_iteration);
  h5::write_string_list(g.get(), "assumptions", r.assumptions);
  h5::write_string_list(g.get(), "warnings", warnings);

  const hid_t i32 = H5T_NATIVE_INT32, f64 = H5T_NATIVE_DOUBLE;
  {
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
    h5::Dataset ds = h5::create_table(g.get(), "layouts", t.get(), 256);
    if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
  }
  {
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
    h5::Dataset ds = h5::create_table(g.get(), "collectives", t.get(), 1024);
    if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
  }
  {
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
    h5::Dataset ds = h5::create_table(g.get(), "excluded", t.get(), 256);
    if (!rows.empty()) h5::append_rows(ds, t.get(), rows.data(), rows.size());
  }
  g.reset();
  file.close("closing " + path);
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  CommandLine cli("plan",
                  "rank data/tensor/pipeline/expert-parallel layouts of a training job by estimated step time, with "
                  "the communication, the bubble, the memory and the checkpoint cost of each. Unless told otherwise "
                  "it plans what training runs do: fused attention (--recompute selective), sequence parallelism, "
                  "ZeRO-1, interleaved 1F1B (--virtual-stages 8), compute at the topology's peak x --mfu 0.5, a "
                  "checkpoint every 100 steps. The checkpoint is 2 B/param weights + 12 B/param Adam state (fp32 "
                  "master copy + 2 moments); DP rank 0 writes the weights, every DP rank its share of the optimizer "
                  "state (ZeRO >= 1)",
                  "commsim plan --topology dgx-h100 --nodes 64 --model llama3-70b --global-batch 1024 --seq 8192\n"
                  "commsim plan --topology dgx-a100 --nodes 48 --model gpt3-175b --global-batch 1536 --seq 2048 \\\n"
                  "    --recompute full --no-sequence-parallel --zero 0 --layout tp=8 --detail\n"
                  "commsim plan --topology dgx-h100 --nodes 16 --model llama3-70b --global-batch 1024 --seq 8192 \\\n"
                  "    --gpu-tflops 400 --checkpoint-every 50 --format json");
  std::string topology_arg = "dgx-h100", model_arg, recompute = "selective", overlap = "none", algorithms = "all";
  std::string memory_limit, calibrated_range, layout_filter, rank_by = "step";
  bool no_scatter_gather = false, sequence_parallel = false, no_sequence_parallel = false;
  double mfu = kDefaultMfu;
  PlanOptions opts;
  opts.zero = 1;
  opts.max_virtual_stages = kDefaultMaxVirtualStages;
  opts.checkpoint_every = kDefaultCheckpointEvery;
  int top = 10;
  bool show_excluded = false, detail = false;
  OutputOptions out;
  cli.options().add_options()("topology",
                              po::value(&topology_arg)->default_value(topology_arg)->value_name("NAME|FILE"),
                              "cluster: a preset name from configs/topologies/ or a topology file")(
      "nodes", po::value(&opts.nodes)->default_value(1)->value_name("N"), "nodes of the cluster used by the job")(
      "model", po::value(&model_arg)->value_name("NAME|FILE"),
      "model: a name from configs/models/ or a model file (required)")(
      "global-batch", po::value(&opts.global_batch)->value_name("SEQS"), "sequences per iteration (required)")(
      "micro-batch", po::value(&opts.micro_batch)->default_value(1)->value_name("SEQS"), "sequences per micro-batch")(
      "seq", po::value(&opts.seq)->value_name("TOKENS"), "tokens per sequence (required)")(
      "sequence-parallel", po::bool_switch(&sequence_parallel),
      "Megatron sequence parallelism where TP > 1 (the default): TP allreduce becomes reduce-scatter + allgather, "
      "activations shard over TP")("no-sequence-parallel", po::bool_switch(&no_sequence_parallel),
                                   "plan without sequence parallelism")(
      "zero", po::value(&opts.zero)->default_value(opts.zero)->value_name("0|1|2|3"),
      "ZeRO stage: shard optimizer state (1: Megatron's distributed optimizer, the default), + gradients (2), "
      "+ parameters (3) over data-parallel ranks; 0 = replicated")(
      "recompute", po::value(&recompute)->default_value(recompute)->value_name("none|selective|full"),
      "activations kept for the backward pass (Korthikanti et al. 2022): selective = the attention scores are not "
      "stored, as with a fused (flash) attention kernel or Megatron's selective recomputation; none = they are; "
      "full = only each layer's input")(
      "virtual-stages", po::value(&opts.max_virtual_stages)->default_value(opts.max_virtual_stages)->value_name("N"),
      "interleaved 1F1B: try up to N virtual stages per GPU (dividing the stage's layers) and keep the best that "
      "fits; 1 = plain 1F1B")("overlap", po::value(&overlap)->default_value(overlap)->value_name("none|dp|all"),
                              "what communication is assumed hidden behind compute (printed with the results)")(
      "dp-bucket-params", po::value(&opts.dp_bucket_params)->default_value(0)->value_name("N"),
      "parameters per DP gradient bucket; 0 = whole without overlap, 40e6 with --overlap")(
      "allow-cross-node-tp", po::bool_switch(&opts.allow_cross_node_tp), "also plan TP groups larger than a node")(
      "no-pp-scatter-gather", po::bool_switch(&no_scatter_gather),
      "send whole activations between pipeline stages from every TP rank (default: 1/TP each, then an allgather)")(
      "memory-limit", po::value(&memory_limit)->value_name("SIZE"),
      "usable memory per GPU, e.g. 72GiB (default: the topology's device memory)")(
      "algorithms", po::value(&algorithms)->default_value(algorithms)->value_name("LIST"),
      "algorithms the collectives may use (hand-written names, nccl-ring, nccl-tree) or all")(
      "calibrated-range", po::value(&calibrated_range)->value_name("FILE.h5"),
      "warn about collectives outside the sizes and node counts measured in this results file "
      "(default: the topology's calibrated section)")(
      "gpu-tflops", po::value(&opts.gpu_tflops)->default_value(0)->value_name("TFLOPS"),
      "achieved TFLOP/s per GPU of the compute (default: the topology's device.peak_tflops x --mfu)")(
      "mfu", po::value(&mfu)->default_value(mfu)->value_name("FRACTION"),
      "share of the peak that the compute achieves, for the default --gpu-tflops")(
      "rank-by", po::value(&rank_by)->default_value(rank_by)->value_name("step|comm"),
      "order by estimated step time (compute with bubble + exposed communication), or by exposed communication")(
      "checkpoint-every", po::value(&opts.checkpoint_every)->default_value(opts.checkpoint_every)->value_name("STEPS"),
      "steps between checkpoints, for the checkpoint stall per step (0 = leave the checkpoint cost out)")(
      "top", po::value(&top)->default_value(top)->value_name("N"), "layouts to show (0 = all)")(
      "layout", po::value(&layout_filter)->value_name("tp=8,pp=12"),
      "show only layouts with these sizes (keys dp, tp, pp, ep), with their rank among all")(
      "show-excluded", po::bool_switch(&show_excluded), "list the layouts left out and why")(
      "detail", po::bool_switch(&detail), "list every collective of the layouts shown (table format)");
  cli.options().add_options()(
      "format", po::value(&out.format)->default_value(out.format)->value_name("table|csv|json"),
      "what to print on stdout: a ranked table, CSV (one line per layout) or JSON (layouts with their collectives)")(
      "out", po::value(&out.out)->value_name("FILE.h5"),
      "also write the plan to this HDF5 file (/plan group: layouts, collectives, excluded, assumptions)")(
      "force", po::bool_switch(&out.force), "overwrite --out FILE.h5 if it exists");
  if (!cli.parse(argc, argv)) return 0;

  if (model_arg.empty()) throw Error("--model is required (a name from configs/models/ or a model file)");
  if (!cli.values().count("global-batch")) throw Error("--global-batch is required (sequences per iteration)");
  if (!cli.values().count("seq")) throw Error("--seq is required (tokens per sequence)");
  if (top < 0) throw Error("--top must be 0 (all) or a positive number");
  auto rc = parse_recompute(recompute);
  if (!rc) throw Error("--recompute: unknown value '" + recompute + "'; valid: none, selective, full");
  opts.recompute = *rc;
  auto ov = parse_overlap(overlap);
  if (!ov) throw Error("--overlap: unknown value '" + overlap + "'; valid: none, dp, all");
  opts.overlap = *ov;
  OutputFormat format = parse_format(out.format);
  auto rb = parse_rank_by(rank_by);
  if (!rb) throw Error("--rank-by: unknown value '" + rank_by + "'; valid: comm, step");
  opts.rank_by = *rb;
  opts.pp_scatter_gather = !no_scatter_gather;
  if (!memory_limit.empty()) opts.memory_limit_bytes = parse_bytes(memory_limit);
  if (opts.gpu_tflops < 0) throw Error("--gpu-tflops must not be negative");
  if (!(mfu > 0 && mfu <= 1)) throw Error("--mfu must be a fraction of the peak in (0, 1], e.g. 0.4");
  if (sequence_parallel && no_sequence_parallel)
    throw Error("--sequence-parallel and --no-sequence-parallel contradict each other; give one");
  opts.sequence_parallel = !no_sequence_parallel;

  Topology topo = load_topology(resolve_topology_path(topology_arg));
  // The compute estimate: given, or the topology's peak at the stated utilisation.
  std::string compute_note;
  if (opts.gpu_tflops == 0 && topo.peak_tflops > 0) {
    opts.gpu_tflops = topo.peak_tflops * mfu;
    compute_note = "compute rate: " + fmt("%.0f", topo.peak_tflops) + " TFLOP/s peak (device.peak_tflops of '" +
                   topo.name + "') x " + fmt("%.0f%%", 100 * mfu) + " (--mfu) = " + fmt("%.0f", opts.gpu_tflops) +
                   " TFLOP/s per GPU; --gpu-tflops or --mfu give your own";
  } else if (opts.gpu_tflops > 0) {
    compute_note = "compute rate: " + fmt("%.0f", opts.gpu_tflops) + " TFLOP/s per GPU (--gpu-tflops)";
  }
  if (opts.rank_by == RankBy::Step && !(opts.gpu_tflops > 0)) {
    if (cli.values()["rank-by"].defaulted()) {
      opts.rank_by = RankBy::Comm;
      compute_note = "topology '" + topo.name +
                     "' gives no device.peak_tflops: no compute estimate, ranked by communication (pass --gpu-tflops "
                     "to rank by step time)";
    } else {
      throw Error("--rank-by step needs a compute estimate: topology '" + topo.name +
                  "' gives no device.peak_tflops; pass --gpu-tflops");
    }
  }
  LlmModel model = load_llm_model(resolve_model_path(model_arg));
  opts.candidates = candidates_from(algorithms, topo);
  opts.calibration = calibrated_range.empty() ? calibration_range(topo) : range_from_results(calibrated_range);

  PlanResult result = plan_layouts(topo, model, opts);
  if (!compute_note.empty()) result.assumptions.push_back(compute_note);

  std::vector<const LayoutPlan*> shown;
  auto filter = layout_filter.empty() ? std::vector<std::pair<std::string, int>>{} : parse_layout_filter(layout_filter);
  for (const auto& lp : result.ranked) {
    if (top > 0 && static_cast<int>(shown.size()) >= top) break;
    if (matches(filter, lp.shape)) shown.push_back(&lp);
  }
  std::vector<std::string> warnings = result.warnings;
  for (auto& w : calibration_warnings(shown, opts.calibration)) warnings.push_back(std::move(w));

  Header h{&model, &topo, &opts, &result};
  switch (format) {
    case OutputFormat::Table: print_table(std::cout, h, shown, !filter.empty(), show_excluded, detail, warnings); break;
    case OutputFormat::Csv: print_csv(std::cout, result, shown); break;
    case OutputFormat::Json: print_json(std::cout, h, shown, show_excluded, warnings); break;
  }
  std::cout.flush();
  if (format != OutputFormat::Table)
    for (const auto& w : warnings) std::cerr << "commsim plan: warning: " << w << "\n";

  if (!out.out.empty()) {
    RunContext ctx = RunContext::collect_local(argc, argv);
    ctx.command_line = "commsim " + join_command_line(argc, argv);
    ctx.backend = "model";
    ctx.nodes = opts.nodes;
    ctx.ranks = result.gpus;
    ctx.topology_name = topo.name;
    ctx.topology_path = topo.source_path;
    ctx.topology_text = topo.text;
    ResultsFile file = ResultsFile::create(out.out, out.force, ctx);
    file.finish(RunStatus::Complete);
    write_plan_group(out.out, h, warnings);
    if (format == OutputFormat::Table) std::cout << "wrote " << out.out << "\n";
  }
  return 0;
}

}  // namespace commsim
