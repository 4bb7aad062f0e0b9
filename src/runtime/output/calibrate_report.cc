#include "runtime/output/calibrate_report.h"

#include <cstdio>
#include <sstream>

#include "runtime/probe/nvml_topology.h"

namespace commsim {
namespace {

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * v);
  return buf;
}

std::string signed_pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", 100.0 * v);
  return buf;
}

std::string fnum(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_tier(std::ostream& out, const std::string& label, const TierFit& t) {
  if (!t.done) {
    out << "  " << label << ": not measured (kept from the base topology)\n";
    return;
  }
  out << "  " << label << ": alpha " << fnum("%.3f", t.fit.alpha_s * 1e6) << " us, 1/beta "
      << format_bandwidth(t.fit.bw_Bps()) << ", R^2 " << fnum("%.5f", t.fit.r2) << ", median |residual| "
      << pct(t.fit.median_abs_rel_residual) << ", max " << pct(t.fit.max_abs_rel_residual)
      << (t.fit.alpha_clamped ? " (alpha clamped to 0)" : "")
      << (t.fit.beta_clamped ? " (no bandwidth term visible)" : "") << "\n      from " << t.source << "\n";
  if (t.held_out_done)
    out << "      held-out check (fit on every other size, predict the rest): median |error| "
        << pct(t.held_out.median_abs_rel_error) << ", max " << pct(t.held_out.max_abs_rel_error) << " at "
        << format_bytes(t.held_out.worst_bytes) << " (" << t.held_out.held_out << " samples)\n";
  if (t.halves_done)
    out << "      by size: < 64 KiB alpha " << fnum("%.3f", t.below_64k.alpha_s * 1e6) << " us 1/beta "
        << format_bandwidth(t.below_64k.bw_Bps()) << "; >= 64 KiB alpha " << fnum("%.3f", t.from_64k.alpha_s * 1e6)
        << " us 1/beta " << format_bandwidth(t.from_64k.bw_Bps()) << "\n";
  if (t.split_bytes)
    out << "      two lines fit best split at " << format_bytes(t.split_bytes) << ": below alpha "
        << fnum("%.3f", t.split_below.alpha_s * 1e6) << " us 1/beta " << format_bandwidth(t.split_below.bw_Bps())
        << ", from there alpha " << fnum("%.3f", t.split_above.alpha_s * 1e6) << " us 1/beta "
        << format_bandwidth(t.split_above.bw_Bps()) << "; median |residual| " << pct(t.split_median_abs_rel_residual)
        << " (one line: " << pct(t.fit.median_abs_rel_residual) << ")\n";
  out << "      per size (measured us -> fitted us):";
  for (std::size_t i = 0; i < t.samples.size(); ++i) {
    if (i % 4 == 0) out << "\n       ";
    out << " " << format_bytes(t.samples[i].bytes) << " " << fnum("%.2f", t.samples[i].time_s * 1e6) << "->"
        << fnum("%.2f", t.fit.predict_s(t.samples[i].bytes) * 1e6);
  }
  out << "\n";
}

void print_protocol(std::ostream& out, const ProtocolStep& s) {
  const ProtocolFit& pf = s.fit;
  if (s.done) {
    out << "  inside a node, by protocol: latency " << fnum("%.3f", pf.latency_s * 1e6) << " us";
    if (pf.switched)
      out << " up to " << format_bytes(pf.eager_limit_bytes) << ", then " << fnum("%.3f", pf.rendezvous_latency_s * 1e6)
          << " us";
    if (pf.inlined)
      out << " (" << fnum("%.3f", pf.inline_latency_s * 1e6) << " us up to " << format_bytes(pf.inline_limit_bytes)
          << ", inline)";
    out << ", 1/beta (>= 64 KiB) " << format_bandwidth(pf.bw_Bps()) << ", median |residual| "
        << pct(pf.median_abs_rel_residual) << "\n";
  }
  if (s.stream_done) {
    out << "  one pair streaming: 1/beta " << format_bandwidth(s.pair_bw_Bps) << " per rank; all " << s.ranks_per_node
        << " ranks at once: " << format_bandwidth(s.all_ranks_bw_Bps) << " each\n";
    if (s.message_overhead_s > 0)
      out << "  message overhead (stream of 8, <= " << format_bytes(s.overhead_max_bytes)
          << "): " << fnum("%.3f", s.message_overhead_s * 1e6) << " us per additional message\n";
    if (s.inline_overhead_done)
      out << "  inline overhead (stream of 8, <= " << format_bytes(pf.inline_limit_bytes)
          << "): " << fnum("%.3f", s.inline_overhead_s * 1e6) << " us per additional message\n";
  }
  if (!s.error.empty()) out << "  inside a node, by protocol: not fitted (" << s.error << ")\n";
}

void print_written(std::ostream& out, const WrittenStep& w) {
  out << "  just-written data inside a node: " << w.what << " >= " << format_bytes(kWrittenScaleMinBytes)
      << ", latency " << fnum("%.3f", w.latency_s * 1e6) << " us taken off\n"
      << "      per size, bandwidth factor (x the time of the control, latency off):";
  for (std::size_t i = 0; i < w.ratios.size(); ++i)
    out << (i % 6 == 0 ? "\n       " : "") << " " << format_bytes(w.ratios[i].bytes) << " "
        << fnum("%.2f", w.ratios[i].scale) << " (x" << fnum("%.2f", 1 / w.ratios[i].scale) << ")";
  out << "\n      written_scale:";
  if (w.curve.empty())
    out << " none (no size slower beyond the probe's noise: factor > " << kWrittenScaleNoise
        << ", or slower alone among its neighbouring sizes)";
  for (const MessageScale& r : w.ratios)
    if (r.scale < kWrittenScaleFloor)
      out << "\n      " << format_bytes(r.bytes) << " left out: x" << fnum("%.1f", 1 / r.scale)
          << " is a disturbed measurement (more than x" << fnum("%.0f", 1 / kWrittenScaleFloor) << ")";
  for (std::size_t i = 0; i < w.curve.size(); ++i)
    out << " " << format_bytes(w.curve[i].bytes) << " " << fnum("%.3g", w.curve[i].scale)
        << (i + 1 == w.curve.size() ? "" : ",");
  out << "\n";
}

void print_network_rate(std::ostream& out, const NetworkRateFit& rate) {
  out << "  across the network, by message size: latency " << fnum("%.3f", rate.latency_s * 1e6)
      << " us (sizes <= " << format_bytes(kNetworkLatencyMaxBytes) << "), 1/beta "
      << format_bandwidth(1 / rate.beta_s_per_byte) << " (sizes >= " << format_bytes(kNetworkRateMinBytes) << ")\n"
      << "      per size, bandwidth factor (x the large-message rate, latency off):";
  for (std::size_t i = 0; i < rate.factors.size(); ++i)
    out << (i % 8 == 0 ? "\n       " : "") << " " << format_bytes(rate.factors[i].bytes) << " "
        << fnum("%.2f", rate.factors[i].scale);
  out << "\n      network_message_scale: ";
  if (rate.curve.empty())
    out << "none (every factor within " << pct(kNetworkCurveNoise) << " of 1: the line above stands)\n";
  else
    out << rate.curve.size() << " points, " << format_bytes(rate.curve.front().bytes) << ".."
        << format_bytes(rate.curve.back().bytes) << "\n";
}

void print_tiers(std::ostream& out, const TierStep& t) {
  print_tier(out, "inside a node", t.intra);
  print_tier(out, "across the network", t.net);
  print_tier(out, "reduction (float32 sum, every rank at once, >= 64 KiB)", t.reduce);
  print_tier(out, "memory copy (every rank at once, >= 64 KiB)", t.memcpy);
  if (t.gpu) {
    print_tier(out, "GPU <-> GPU (cudaMemcpyPeer)", t.peer);
    print_tier(out, "host -> GPU (pinned cudaMemcpy)", t.h2d);
    print_tier(out, "GPU memory (device copy, >= 64 KiB)", t.d2d);
  }
  if (t.protocol) print_protocol(out, *t.protocol);
  if (t.written) print_written(out, *t.written);
  if (t.network_rate) print_network_rate(out, *t.network_rate);
}

// A term's range as the report prints it.
std::string range_text(Param p, const ParamRange& r) {
  if (param_row(p).unit == ParamUnit::Beta)  // a beta's low end is the high bandwidth
    return "[" + param_text(p, r.hi) + ", " + param_text(p, r.lo) + "]";
  return "[" + param_text(p, r.lo) + ", " + param_text(p, r.hi) + "]";
}

void print_terms(std::ostream& out, const CollectiveStep& c) {
  const ParamFit& fit = c.fit;
  out << "  " << fit.fitted.size() << " term(s) fitted to " << fit.samples << " points (at most one term per "
      << kPointsPerTerm << " points; condition number " << fnum("%.3g", fit.condition_number)
      << "), each within its range:\n";
  int at_end = 0;
  for (Param p : fit.fitted) {
    const ParamRange& range = fit.range.at(p);
    const bool end = at_range_end(range, get_param(fit.topology, p));
    at_end += end ? 1 : 0;
    out << "  " << to_string(p) << ": " << param_text(p, get_param(c.start, p)) << " -> "
        << param_text(p, get_param(fit.topology, p)) << "  range " << range_text(p, range)
        << (end ? "  AT ITS BOUND" : "") << "\n";
  }
  if (at_end > 0)
    out << "  " << at_end << " term(s) ended at a bound of their physical range: the points pushed them as far as "
        << "they may go, to absorb what other terms do not explain; they are not pinned down there.\n";
  for (const RefusedTerm& t : fit.refused)
    out << "  " << to_string(t.param) << ": not fitted (kept " << param_text(t.param, get_param(c.start, t.param))
        << "): " << t.why << "; pinned down by " << what_pins(t.param) << "\n";
  for (Param p : fit.held) out << "  " << to_string(p) << ": no measurement depends on it; kept\n";
}

void print_collectives(std::ostream& out, const CollectiveStep& c, std::size_t run_files) {
  const ParamFit& fit = c.fit;
  out << "## Collectives (" << c.refine << " fitted to " << fit.samples << " measured points of " << run_files
      << " run file(s))\n";
  out << "  median |error| of the predictions: " << pct(fit.median_abs_rel_error_before) << " before, "
      << pct(fit.median_abs_rel_error_after) << " after; R^2 " << fnum("%.4f", fit.r2) << "\n"
      << c.protocol_note;
  print_terms(out, c);
  if (!c.held_out_error.empty()) out << "  held-out check not possible: " << c.held_out_error << "\n";
  if (c.held_out_done) {
    out << "  held-out check (fit on every other size and the largest, predict the sizes between): median "
        << "|error| " << pct(c.held_out_median_abs_rel_error) << " on " << c.held_out_points
        << " points\n      by held-out size (median error, + = predicted slower):";
    for (const auto& [bytes, e] : c.held_out_by_size) out << " " << format_bytes(bytes) << " " << signed_pct(e);
    out << "\n";
  }
  out << "  judged on data the refit did not see"
      << (c.judged ? " (" + c.judged_on + ", " + std::to_string(c.judged_points) + " points)" : std::string())
      << ":\n      median |error|       in-sample   held-out\n"
      << "      refit            " << fnum("%9.1f%%", 100 * fit.median_abs_rel_error_after) << "  "
      << (c.judged ? fnum("%8.1f%%", 100 * c.refit_held_out) : std::string("        -")) << "\n"
      << "      probe only       " << fnum("%9.1f%%", 100 * c.probe_in_sample) << "  "
      << (c.judged ? fnum("%8.1f%%", 100 * c.probe_held_out) : std::string("        -")) << "\n"
      << "  " << c.verdict << "\n";
}

void print_links(std::ostream& out, const GpuLinkMatrix* m, const LinkStep& link) {
  if (!m) return;
  if (m->empty()) {
    if (!m->note.empty()) out << "## GPU link matrix\n  " << m->note << "\n";
    return;
  }
  out << "## GPU link matrix (the probe's rank 0 host; " << m->note << ")\n";
  std::istringstream lines(format_link_matrix(*m));
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  for (const auto& w : m->non_uniform()) out << "  warning: the node is not uniform: " << w << "\n";
  if (link.changed)
    out << "  intra_node.bandwidth: " << format_bandwidth(link.before_Bps) << " -> " << format_bandwidth(link.after_Bps)
        << " (the slowest pair, " << link.slowest_path << ": " << link.how << ")\n";
}

void print_storage(std::ostream& out, const Topology& topo) {
  out << "## Storage (one writer per node: the slowest node; latency: 4 KiB random read at QD1)\n";
  for (const auto& t : topo.storage)
    out << "  " << t.name << " (" << (t.shared ? "shared" : "local") << "): read " << format_bandwidth(t.read_bw_Bps)
        << ", write " << format_bandwidth(t.write_bw_Bps) << ", latency " << format_time(t.latency_s)
        << (t.shared ? ", all ranks at once: read " + format_bandwidth(t.aggregate_read_bw_Bps) + ", write " +
                           format_bandwidth(t.aggregate_write_bw_Bps)
                     : std::string())
        << "\n";
}

void print_nccl_term(std::ostream& out, const NcclTermFit& t) {
  const std::string name = std::string(to_string(t.algorithm)) + "/" + std::string(to_string(t.protocol));
  if (!t.done) {
    out << "  " << name << ": not fitted (" << t.why_not << "); kept\n";
    return;
  }
  std::string colls;
  for (Collective c : t.collectives) {
    if (!colls.empty()) colls += ',';
    colls += to_string(c);
  }
  std::string ranks;
  for (int r : t.ranks) {
    if (!ranks.empty()) ranks += ',';
    ranks += std::to_string(r);
  }
  out << "  " << name << ": base " << fnum("%.3f", t.base_latency_s * 1e6) << " us"
      << (t.base_clamped ? " (clamped to 0)" : "") << ", intra hop " << fnum("%.3f", t.intra_hop_latency_s * 1e6)
      << " us"
      << (t.hop_fitted    ? ""
          : t.hop_clamped ? " (clamped to 0)"
                          : " (kept: the runs have one hop count)")
      << ", bus bandwidth "
      << (t.bw_clamped ? std::string("not seen (intra-node bandwidth x bandwidth_fraction kept)")
                       : format_bandwidth(t.bus_bw_Bps))
      << "\n      R^2 " << fnum("%.4f", t.r2) << ", median |residual| " << pct(t.median_abs_rel_residual) << ", max "
      << pct(t.max_abs_rel_residual) << " (before: median |error| " << pct(t.median_abs_rel_error_before) << "); "
      << t.samples << " points: " << colls << ", ranks " << ranks << ", " << format_bytes(t.min_bytes) << ".."
      << format_bytes(t.max_bytes) << "\n";
  if (t.held_out_done)
    out << "      held-out check (fit on every other size and the largest, predict the sizes between): median "
        << "|error| " << pct(t.held_out_median_abs_rel_error) << ", max " << pct(t.held_out_max_abs_rel_error) << " on "
        << t.held_out << " points\n";
  else
    out << "      held-out check: needs 4 sizes or more\n";
}

void print_nccl(std::ostream& out, const NcclStep& n) {
  out << "## NCCL's constants (per algorithm x protocol: t - call_overhead = base + hops x intra_hop + bus bytes / "
         "bus bandwidth, NCCL's model; relative residuals)\n";
  if (!n.error.empty()) {
    out << "  not fitted: " << n.error << "\n";
    return;
  }
  for (const NcclTermFit& t : n.fit.terms) print_nccl_term(out, t);
  if (n.fit.multi_node > 0)
    out << "  " << n.fit.multi_node
        << " forced run(s) across nodes not fitted: NCCL's network terms (inter_hop_latency, "
        << "the network's bandwidth) are kept\n";
  if (n.own_points > 0)
    out << "  NCCL's own choice (nccl, " << n.own_points << " points): median |error| of NCCL's model "
        << pct(n.own_error_before) << " before, " << pct(n.own_error_after) << " after\n";
}

}  // namespace

void print_calibrate_report(std::ostream& out, const CalibrateReportContext& ctx, const CalibrationResult& r) {
  out << "# commsim calibrate: " << ctx.probe_files << " probe file(s), " << ctx.run_files << " run file(s), base "
      << ctx.base_name << "\n";
  out << "## Tiers (least squares on t = alpha + bytes * beta, " << ctx.weighting << " residuals)\n";
  print_tiers(out, r.tiers);
  if (r.collectives) print_collectives(out, *r.collectives, ctx.run_files);
  print_links(out, ctx.links, r.link);
  if (ctx.storage_probed) print_storage(out, r.topology);
  if (r.nccl) print_nccl(out, *r.nccl);
}

void print_calibrate_written(std::ostream& out, const std::string& path, const CalibrationResult& r) {
  const Topology& topo = r.topology;
  out << "## Written\n  " << path << " (" << (r.with_section ? "with" : "without") << " a calibrated: section)\n";
  out << "  intra_node: " << format_bandwidth(topo.intra.bw_Bps) << ", " << format_time(topo.intra.latency_s)
      << "; reduction: " << format_bandwidth(topo.reduce_bw_Bps)
      << "; memory: " << format_bandwidth(topo.memory_bw_Bps);
  if (topo.network.present())
    out << "; network: " << format_bandwidth(topo.network.nic_bw_Bps) << " per NIC, "
        << format_time(topo.network.latency_s);
  out << "\n";
}

}  // namespace commsim
