// commsim calibrate: fits alpha and beta per tier (and gamma) to probe measurements and, optionally,
// collective measurements, and NCCL's constants to forced NCCL runs; prints the fit quality; writes a
// topology file that predict and run accept.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "model/calibrate/calibrate.h"
#include "model/collective.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/placement.h"
#include "model/price.h"
#include "model/topology/topology.h"
#include "collectives/cpus.h"
#include "collectives/dtype.h"
#include "collectives/generators.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"
#include "runtime/sweep/sweep.h"

namespace commsim {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  std::string base;
  std::string name;
  std::string refine = "auto";
  std::string weighting = "robust";
  int threads = 0;  // 0: the cores this process may run on
  bool force = false;
};

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

// Probe rows of one kind and tier as (bytes, seconds), optionally only sizes >= min_bytes.
// The median time of each row of `kind` on `tier` (of at least min_bytes); with `fastest`, the
// fastest sample instead, which a rank descheduled by other work during some samples does not move.
std::vector<TimedSize> probe_series(const std::vector<ProbeData>& probes, const std::string& kind,
                                    const std::string& tier, Bytes min_bytes = 0, bool fastest = false) {
  std::vector<TimedSize> out;
  for (const auto& p : probes)
    for (const auto& r : p.rows) {
      const double us = fastest && r.min_us > 0 ? r.min_us : r.median_us;
      if (r.kind == kind && r.tier == tier && us > 0 && r.bytes >= min_bytes) out.push_back({r.bytes, us * 1e-6});
    }
  return out;
}

struct TierFit {
  bool done = false;
  LineFit fit;
  bool held_out_done = false;
  HeldOutCheck held_out;
  std::vector<TimedSize> samples;
  std::string source;  // "ring-shift intra-node, 24 sizes 8B..64MiB"
};

TierFit fit_tier(const std::vector<ProbeData>& probes, const std::string& kind, const std::string& tier,
                 FitWeighting w, Bytes min_bytes = 0) {
  TierFit t;
  t.samples = probe_series(probes, kind, tier, min_bytes);
  std::set<Bytes> sizes;
  for (const auto& s : t.samples) sizes.insert(s.bytes);
  if (sizes.size() < 2) return t;
  t.fit = fit_line(t.samples, w, kind + " " + tier);
  t.done = true;
  if (sizes.size() >= 4) {
    t.held_out = held_out_check(t.samples, w, kind + " " + tier);
    t.held_out_done = true;
  }
  t.source = kind + " " + tier + ", " + std::to_string(sizes.size()) + " sizes " + format_bytes(*sizes.begin()) + ".." +
             format_bytes(*sizes.rbegin());
  return t;
}

void print_tier(std::ostream& out, const std::string& label, const TierFit& t) {
  if (!t.done) {
    out << "  " << label << ": not measured (kept from the base topology)\n";
    return;
  }
  out << "  " << label << ": alpha " << fnum("%.3f", t.fit.alpha_s * 1e6) << " us, 1/beta "
      << format_bandwidth(t.fit.bw_Bps()) << ", R^2 " << fnum("%.5f", t.fit.r2) << ", median |residual| "
      << pct(t.fit.median_abs_rel_residual) << ", max " << pct(t.fit.max_abs_rel_residual)
      << (t.fit.alpha_clamped ? " (alpha clamped to 0)" : "") << (t.fit.beta_clamped ? " (no bandwidth term visible)" : "")
      << "\n      from " << t.source << "\n";
  if (t.held_out_done)
    out << "      held-out check (fit on every other size, predict the rest): median |error| "
        << pct(t.held_out.median_abs_rel_error) << ", max " << pct(t.held_out.max_abs_rel_error) << " at "
        << format_bytes(t.held_out.worst_bytes) << " (" << t.held_out.held_out << " samples)\n";
  // The two halves fitted apart show where one line does not describe the tier (a protocol switch
  // such as MPI's eager/rendezvous limit, caches).
  std::vector<TimedSize> small, large;
  for (const auto& s : t.samples) (s.bytes < 65536 ? small : large).push_back(s);
  auto distinct = [](const std::vector<TimedSize>& v) {
    std::set<Bytes> s;
    for (const auto& x : v) s.insert(x.bytes);
    return s.size();
  };
  if (distinct(small) >= 2 && distinct(large) >= 2) {
    LineFit a = fit_line(small, FitWeighting::Relative), b = fit_line(large, FitWeighting::Relative);
    out << "      by size: < 64 KiB alpha " << fnum("%.3f", a.alpha_s * 1e6) << " us 1/beta " << format_bandwidth(a.bw_Bps())
        << "; >= 64 KiB alpha " << fnum("%.3f", b.alpha_s * 1e6) << " us 1/beta " << format_bandwidth(b.bw_Bps())
        << "\n";
  }
  // The best split into two lines (a protocol switch: MPI's eager limit, NCCL's LL/Simple): where
  // one alpha and beta per tier is not enough, this says at which size and by how much.
  std::set<Bytes> all_sizes;
  for (const auto& s : t.samples) all_sizes.insert(s.bytes);
  if (all_sizes.size() >= 6) {
    double best = INFINITY;
    Bytes split = 0;
    LineFit lo, hi;
    std::vector<Bytes> sv(all_sizes.begin(), all_sizes.end());
    for (std::size_t k = 3; k + 3 <= sv.size(); ++k) {
      std::vector<TimedSize> below, above;
      for (const auto& s : t.samples) (s.bytes < sv[k] ? below : above).push_back(s);
      LineFit fa = fit_line(below, FitWeighting::Relative), fb = fit_line(above, FitWeighting::Relative);
      double ss = 0;
      for (const auto& s : below) ss += std::pow((fa.predict_s(s.bytes) - s.time_s) / s.time_s, 2);
      for (const auto& s : above) ss += std::pow((fb.predict_s(s.bytes) - s.time_s) / s.time_s, 2);
      if (ss < best) best = ss, split = sv[k], lo = fa, hi = fb;
    }
    if (split) {
      std::vector<double> rel;
      for (const auto& s : t.samples) {
        const LineFit& f = s.bytes < split ? lo : hi;
        rel.push_back((f.predict_s(s.bytes) - s.time_s) / s.time_s);
      }
      out << "      two lines fit best split at " << format_bytes(split) << ": below alpha "
          << fnum("%.3f", lo.alpha_s * 1e6) << " us 1/beta " << format_bandwidth(lo.bw_Bps()) << ", from there alpha "
          << fnum("%.3f", hi.alpha_s * 1e6) << " us 1/beta " << format_bandwidth(hi.bw_Bps()) << "; median |residual| "
          << pct(median_abs(rel)) << " (one line: " << pct(t.fit.median_abs_rel_residual) << ")\n";
    }
  }
  out << "      per size (measured us -> fitted us):";
  int k = 0;
  for (std::size_t i = 0; i < t.samples.size(); ++i) {
    if (k++ % 4 == 0) out << "\n       ";
    out << " " << format_bytes(t.samples[i].bytes) << " " << fnum("%.2f", t.samples[i].time_s * 1e6) << "->"
        << fnum("%.2f", t.fit.predict_s(t.samples[i].bytes) * 1e6);
  }
  out << "\n";
}

// Collective measurements usable by the fit: measured hand-written points with status ok.
// Each sample's key is its index into `points`.
std::vector<CollectiveSample> collective_samples(const std::vector<Point>& points) {
  std::vector<CollectiveSample> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (p.status != "ok" || !p.measured() || !(p.measured_median_us > 0) || !is_hand_written(p.algorithm)) continue;
    if (p.nodes < 1 || p.ranks % p.nodes != 0) continue;  // ranks placed evenly on the nodes
    out.push_back({p.collective, p.algorithm, p.nodes, p.ranks / p.nodes, p.bytes, p.measured_median_us * 1e-6, i});
  }
  return out;
}

// Prices the schedule each measured point ran (the chunk of the pipelined algorithms from the
// topology its run was predicted on), as `commsim run` predicts it: the collective fit then fits
// exactly what the runs will be judged by. Schedules are built once; a fit only re-prices them.
class SchedulePricer {
 public:
  SchedulePricer(const std::vector<Point>& points, const std::vector<std::string>& run_topology_text,
                 const std::vector<std::optional<std::uint64_t>>& run_piece, const std::vector<CollectiveSample>& samples)
      : schedules_(points.size()) {
    std::map<std::string, std::optional<Topology>> parsed;
    for (const CollectiveSample& s : samples) {
      const Point& p = points[s.key];
      auto [it, added] = parsed.try_emplace(run_topology_text[s.key]);
      if (added) {
        try {
          it->second = parse_topology(it->first, "the run's topology");
        } catch (const Error&) {
        }
      }
      const Placement placement = Placement::uniform(s.nodes, s.ranks_per_node);
      const auto dtype = parse_dtype(p.dtype);
      try {
        const Bytes chunk = pipeline_chunk_ran_with(p, it->second ? &*it->second : nullptr);
        schedules_[s.key] = Entry{make_schedule({p.collective, p.algorithm, p.ranks, p.count,
                                                 dtype ? dtype_size(*dtype) : 4u, p.root, &placement, chunk}),
                                  placement, run_piece[s.key]};
      } catch (const Error&) {
        // No schedule (an algorithm this build cannot generate for it): the sample is not fitted.
      }
    }
  }
  double operator()(const Topology& topo, const CollectiveSample& s) const {
    const auto& e = schedules_[s.key];
    if (!e) return std::numeric_limits<double>::quiet_NaN();
    if (e->piece && *e->piece != topo.piece()) {  // the run cut transfers into other pieces (--piece-size)
      Topology with_piece = topo;
      with_piece.piece_bytes = e->piece;
      return price_schedule(e->schedule, with_piece, e->placement).time_s;
    }
    return price_schedule(e->schedule, topo, e->placement).time_s;
  }

 private:
  struct Entry {
    Schedule schedule;
    Placement placement;
    std::optional<std::uint64_t> piece;  // the host executor's piece in the point's run, when recorded
  };
  std::vector<std::optional<Entry>> schedules_;  // [point]
};

// The probe's storage rows as topology tiers: per node, the slowest node's one-writer sequential
// rates and its 4 KiB random read at queue depth 1; a shared tier also gets the aggregate of all
// ranks at once (summed over the nodes). Tiers of the base with other names are kept.
std::vector<StorageTier> storage_tiers(const std::vector<StorageRow>& rows, const std::vector<StorageTier>& base) {
  std::vector<StorageTier> out;
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (std::find(order.begin(), order.end(), r.tier) == order.end()) order.push_back(r.tier);
  for (const auto& b : base)
    if (std::find(order.begin(), order.end(), b.name) == order.end()) out.push_back(b);
  for (const auto& name : order) {
    StorageTier t;
    t.name = name;
    double read = INFINITY, write = INFINITY, latency = 0, agg_read = 0, agg_write = 0;
    for (const auto& r : rows) {
      if (r.tier != name) continue;
      t.shared = r.shared;
      if (r.mode == "one-per-node" && r.op == "read") read = std::min(read, r.bw_Bps());
      if (r.mode == "one-per-node" && r.op == "write") write = std::min(write, r.bw_Bps());
      if (r.mode == "one-per-node" && r.op == "randread" && r.queue_depth == 1)
        latency = std::max(latency, r.latency_mean_us * 1e-6);
      if (r.mode == "all-ranks" && r.op == "read") agg_read += r.bw_Bps();
      if (r.mode == "all-ranks" && r.op == "write") agg_write += r.bw_Bps();
    }
    if (!std::isfinite(read) || !std::isfinite(write) || !(latency > 0)) continue;
    t.read_bw_Bps = read;
    t.write_bw_Bps = write;
    t.latency_s = latency;
    if (t.shared) t.aggregate_read_bw_Bps = agg_read, t.aggregate_write_bw_Bps = agg_write;
    out.push_back(t);
  }
  return out;
}

// ---- NCCL's own collectives ------------------------------------------------------------------

// The forced NCCL runs among `points` (nccl-ring / nccl-tree with LL, LL128 or Simple), measured ok.
std::vector<NcclSample> nccl_samples(const std::vector<Point>& points) {
  std::vector<NcclSample> out;
  for (const Point& p : points) {
    if (p.status != "ok" || !p.measured() || !(p.measured_median_us > 0)) continue;
    if ((p.algorithm != Algorithm::NcclRing && p.algorithm != Algorithm::NcclTree) || p.protocol == Protocol::None)
      continue;
    if (p.nodes < 1 || p.ranks % p.nodes != 0) continue;
    out.push_back(
        {p.collective, p.algorithm, p.protocol, p.nodes, p.ranks / p.nodes, p.bytes, p.measured_median_us * 1e-6});
  }
  return out;
}

// The `storage:` section of the written topology, each probed tier with a comment naming where its
// numbers come from ("" with no tiers).
std::string storage_yaml(const std::vector<StorageTier>& tiers, const std::vector<StorageRow>& rows,
                         const std::string& source, const std::string& date) {
  if (tiers.empty()) return "";
  auto bw = [](double b) { return fnum("%.6g", b / 1e9) + " GB/s"; };
  std::ostringstream y;
  y << "\n# Storage tiers: read/write = sequential, one writer per node (the slowest node); latency = one\n"
    << "# 4 KiB random read at queue depth 1; aggregate = all ranks at once, summed over the nodes.\n"
    << "storage:\n";
  for (const auto& t : tiers) {
    const StorageRow* r = nullptr;
    for (const auto& x : rows)
      if (x.tier == t.name && !r) r = &x;
    if (r)
      y << "  # measured " << date << " by commsim probe --storage (" << source << "): " << r->fs_type << " on "
        << r->device << " (" << r->path << ")" << (r->direct ? ", O_DIRECT" : "")
        << (r->note.empty() ? "" : "; " + r->note) << "\n";
    else
      y << "  # from the base topology\n";
    y << "  - { name: \"" << t.name << "\", kind: " << (t.shared ? "shared" : "local")
      << ", read_bandwidth: " << bw(t.read_bw_Bps) << ", write_bandwidth: " << bw(t.write_bw_Bps)
      << ", latency: " << fnum("%.6g", t.latency_s * 1e6) << " us";
    if (t.shared && t.aggregate_read_bw_Bps > 0) y << ", aggregate_read_bandwidth: " << bw(t.aggregate_read_bw_Bps);
    if (t.shared && t.aggregate_write_bw_Bps > 0) y << ", aggregate_write_bandwidth: " << bw(t.aggregate_write_bw_Bps);
    y << " }\n";
  }
  return y.str();
}

// The probe's GPU link matrix: printed, a warning for each way the node is not uniform, and where
// the pairs differ, the intra-node tier of a GPU topology takes the slowest pair (a ring through
// every GPU goes as fast as its slowest link): a pair on PCIe gets the host link's rate, or the
// peer bandwidth measured on such a pair; fewer NVLink links, the tier's rate times the fewer
// links over the most.
void apply_link_matrix(const ProbeData& probe, Topology& topo, std::vector<std::pair<std::string, std::string>>& comments,
                       std::ostream& out) {
  const GpuLinkMatrix& m = probe.gpu_links;
  if (m.empty()) {
    if (!m.note.empty()) out << "## GPU link matrix\n  " << m.note << "\n";
    return;
  }
  out << "## GPU link matrix (the probe's rank 0 host; " << m.note << ")\n";
  std::istringstream lines(format_link_matrix(m));
  for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
  const auto why = m.non_uniform();
  for (const auto& w : why) {
    out << "  warning: the node is not uniform: " << w << "\n";
    std::cerr << "commsim calibrate: warning: the node is not uniform: " << w << "\n";
  }
  const std::size_t n = m.gpus.size();
  if (!topo.gpu || n < 2) return;
  const std::string slow = m.slowest_path();
  int most = 0;
  double slow_bw = INFINITY;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      most = std::max(most, m.nvlinks[i][j]);
      if (m.path[i][j] == slow && std::isfinite(m.peer_bw_gbps[i][j])) slow_bw = std::min(slow_bw, m.peer_bw_gbps[i][j] * 1e9);
    }
  bool differ = false;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) differ = differ || m.path[i][j] != slow;
  if (!differ) return;
  const BytesPerSecond before = topo.intra.bw_Bps;
  std::string how;
  if (std::isfinite(slow_bw)) {
    topo.intra.bw_Bps = std::min(topo.intra.bw_Bps, slow_bw);
    how = "the peer bandwidth measured on a " + slow + " pair";
  } else if (slow.rfind("NV", 0) == 0 && most > 0) {
    const int links = std::atoi(slow.c_str() + 2);
    topo.intra.bw_Bps *= static_cast<double>(links) / most;
    how = "the tier's rate x " + std::to_string(links) + "/" + std::to_string(most) + " NVLink links";
  } else if (topo.host_link.bw_Bps > 0) {
    topo.intra.bw_Bps = std::min(topo.intra.bw_Bps, topo.host_link.bw_Bps);
    how = "the host link's rate (a " + slow + " pair crosses PCIe)";
  }
  if (how.empty() || topo.intra.bw_Bps == before) return;
  comments.push_back({"intra_node.bandwidth", "the slowest GPU pair of the probe's link matrix (" + slow + "): " + how});
  out << "  intra_node.bandwidth: " << format_bandwidth(before) << " -> " << format_bandwidth(topo.intra.bw_Bps)
      << " (the slowest pair, " << slow << ": " << how << ")\n";
}

// Median |error| of NCCL's model on `topo` for the measured rows of `algorithm` (any protocol).
std::pair<double, std::size_t> nccl_model_error(const Topology& topo, const std::vector<Point>& points,
                                                Algorithm algorithm) {
  std::vector<double> errs;
  for (const Point& p : points) {
    if (p.algorithm != algorithm || p.status != "ok" || !p.measured() || !(p.measured_median_us > 0)) continue;
    if (p.nodes < 1 || p.ranks % p.nodes != 0 || p.ranks < 2) continue;
    if (!has_closed_form(topo, p.collective, p.algorithm, p.protocol)) continue;
    try {
      const double t =
          closed_form(topo, {p.collective, p.algorithm, p.protocol, p.nodes, p.ranks / p.nodes, p.bytes}).time_s;
      errs.push_back((t - p.measured_median_us * 1e-6) / (p.measured_median_us * 1e-6));
    } catch (const Error&) {
    }
  }
  return {median_abs(errs), errs.size()};
}

// NCCL's constants fitted to the forced NCCL runs (fit_nccl), printed and written into `topo` with
// comments naming the runs. Returns the samples fitted (empty when the runs have none).
std::vector<NcclSample> calibrate_nccl(std::ostream& out, const std::vector<Point>& points,
                                       const std::vector<std::string>& run_files, const std::string& today,
                                       Topology& topo, std::vector<std::pair<std::string, std::string>>& comments) {
  const std::vector<NcclSample> samples = nccl_samples(points);
  const bool any_nccl = std::ranges::any_of(points, [](const Point& p) {
    return is_nccl_algorithm(p.algorithm);
  });
  if (!any_nccl) return {};
  out << "## NCCL's constants (per algorithm x protocol: t - call_overhead = base + hops x intra_hop + bus bytes / "
         "bus bandwidth, NCCL's model; relative residuals)\n";
  NcclFit fit;
  try {
    fit = fit_nccl(topo, samples);
  } catch (const Error& e) {
    out << "  not fitted: " << e.what() << "\n";
    return {};
  }
  std::string files;
  for (const auto& f : run_files) files += (files.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
  const auto [before_own, own_n] = nccl_model_error(topo, points, Algorithm::Nccl);
  // Per algorithm: the protocols fitted and the points, for the comments of its rows.
  std::map<Algorithm, std::vector<const NcclTermFit*>> by_algo;
  for (const NcclTermFit& t : fit.terms) {
    const std::string name = std::string(to_string(t.algorithm)) + "/" + std::string(to_string(t.protocol));
    if (!t.done) {
      out << "  " << name << ": not fitted (" << t.why_not << "); kept\n";
      continue;
    }
    by_algo[t.algorithm].push_back(&t);
    std::string colls;
    for (Collective c : t.collectives) colls += (colls.empty() ? "" : ",") + std::string(to_string(c));
    std::string ranks;
    for (int r : t.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
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
          << "|error| " << pct(t.held_out_median_abs_rel_error) << ", max " << pct(t.held_out_max_abs_rel_error)
          << " on " << t.held_out << " points\n";
    else
      out << "      held-out check: needs 4 sizes or more\n";
  }
  if (fit.multi_node > 0)
    out << "  " << fit.multi_node << " forced run(s) across nodes not fitted: NCCL's network terms (inter_hop_latency, "
        << "the network's bandwidth) are kept\n";
  for (const auto& [algo, terms] : by_algo) {
    const char* key = algo == Algorithm::NcclTree ? "tree" : "ring";
    std::string protos;
    std::size_t n = 0;
    bool hop = false, bw = false;
    for (const NcclTermFit* t : terms) {
      protos += (protos.empty() ? "" : ", ") + std::string(to_string(t->protocol));
      n += t->samples;
      hop = hop || t->hop_fitted;
      bw = bw || !t->bw_clamped;
    }
    const std::string from_runs = "fitted " + today.substr(0, 10) + " from " + files + ": " +
                                  std::string(to_string(algo)) + " forced " + protos + ", " + std::to_string(n) +
                                  " points inside one node";
    auto note = [&](const std::string& field) {
      std::erase_if(comments, [&](const auto& c) { return c.first == field; });
      comments.push_back({field, from_runs});
    };
    note(std::string("nccl.base_latency.") + key);
    if (hop) note(std::string("nccl.intra_hop_latency.") + key);
    if (bw) note(std::string("nccl.bus_bandwidth.") + key);
  }
  topo = fit.topology;
  const auto [after_own, own_after_n] = nccl_model_error(topo, points, Algorithm::Nccl);
  if (own_n > 0)
    out << "  NCCL's own choice (nccl, " << own_n << " points): median |error| of NCCL's model " << pct(before_own)
        << " before, " << pct(after_own) << " after\n";
  return samples;
}

bool loader_accepts_calibrated_section(const std::string& yaml_text) {
  try {
    parse_topology(yaml_text, "calibrated topology");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  Options o;
  CommandLine cli("calibrate",
                  "Fit the model to this machine: alpha (latency) and beta (1/bandwidth) per tier by least squares "
                  "on the ring-shift measurements of `commsim probe` (inside a node, across the network), gamma "
                  "(reduction) from the probe's reduction loop and, given measured runs, from reducing "
                  "collectives; for host ranks also the message library's protocol steps (inline, eager and "
                  "rendezvous latencies), per-message overheads, the node's shared bandwidth and how much slower "
                  "just-written data moves inside a node (written_scale), and across the network the rate of "
                  "each message size (network_message_scale); given runs of nccl-ring and nccl-tree with forced "
                  "protocols (--protocols LL,LL128,Simple), NCCL's base latency, hop latency and bus bandwidth per "
                  "algorithm x protocol (the nccl: section). Prints R^2, "
                  "residuals and held-out checks (fit on every other size, error on the sizes between; the collective "
                  "fit's check also keeps the largest size, so it never extrapolates), and writes a "
                  "topology file that `commsim predict` and `commsim run` accept.",
                  "commsim calibrate portrait.h5 --out configs/topologies/mycluster.yaml\n"
                  "commsim calibrate portrait.h5 run.h5 --base local-cpu --refine gamma --out mycluster.yaml");
  cli.options().add_options()                                                                                     //
      ("inputs", po::value(&o.inputs)->multitoken(), "probe files (from commsim probe) and run files (commsim run)")  //
      ("out", po::value(&o.out), "topology file to write (required)")                                              //
      ("base", po::value(&o.base),
       "topology whose unmeasured parts are kept (name or path; default local-cpu for host probes)")               //
      ("name", po::value(&o.name), "the written topology's name (default: the --out file's stem)")                 //
      ("refine", po::value(&o.refine)->default_value(o.refine),
       "with run files: none, gamma (fit gamma to reducing collectives), all (every term to the collectives: "
       "alpha and beta of each tier, gamma, message and call overheads, the rendezvous and inline latencies, "
       "the latency of one-way messages and of exchanges, the share of the message overheads paid by "
       "receivers, the send share, the cache curves by working set (a rank's, and its node's when the "
       "topology has a node_bandwidth), by local-operation size and by message size, the factor by message "
       "size of one sender's messages to many receivers (fan_out_scale), and the "
       "points of the network's rate by message size; where the probe shows two steps below the eager limit, "
       "the one of them the collectives follow better becomes the inline limit); "
       "auto = gamma when run files are given")  //
      ("weighting", po::value(&o.weighting)->default_value(o.weighting),
       "robust (default: relative residuals; the collective fit minimises the sum of |relative error|), "
       "relative (least squares on relative residuals) or absolute (on seconds)")                                                //
      ("threads", po::value(&o.threads)->value_name("N"),
       "threads for the collective fit (default: the cores this process may run on); the fit is the same "
       "with any number")  //
      ("force", po::bool_switch(&o.force), "overwrite an existing --out file");
  cli.positional("inputs", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (o.inputs.empty()) throw Error("give at least one probe file: commsim calibrate portrait.h5 --out FILE.yaml");
  if (o.out.empty()) throw Error("--out FILE.yaml is required (the topology file to write)");
  if (std::filesystem::exists(o.out) && !o.force)
    throw Error(o.out + " exists; pass --force to overwrite it");
  if (o.threads < 0) throw Error("--threads " + std::to_string(o.threads) + ": give 1 or more (or leave it out)");
  const int threads = o.threads > 0 ? o.threads : usable_cores();
  FitWeighting weighting;
  if (o.weighting == "relative")
    weighting = FitWeighting::Relative;
  else if (o.weighting == "absolute")
    weighting = FitWeighting::Absolute;
  else if (o.weighting == "robust")
    weighting = FitWeighting::Robust;
  else
    throw Error("--weighting '" + o.weighting + "': use robust, relative or absolute");
  if (o.refine != "auto" && o.refine != "none" && o.refine != "gamma" && o.refine != "all")
    throw Error("--refine '" + o.refine + "': use auto, none, gamma or all");

  std::vector<ProbeData> probes;
  std::vector<Point> points;
  std::vector<std::string> run_topology_text;  // per point: the topology its run was predicted on
  std::vector<std::optional<std::uint64_t>> run_piece;  // per point: the host executor's piece in its run
  std::vector<std::string> run_files;
  for (const auto& f : o.inputs) {
    if (has_probe_group(f)) {
      probes.push_back(read_probe_group(f));
    } else {
      ResultsContents c = read_results(f, false);
      for (std::size_t i = 0; i < c.points.size(); ++i) {
        const int r = i < c.run_of_point.size() ? c.run_of_point[i] : -1;
        const bool known = r >= 0 && r < static_cast<int>(c.runs.size());
        run_topology_text.push_back(known ? c.runs[r].topology_text : "");
        run_piece.push_back(known ? c.runs[r].piece_bytes : std::nullopt);
      }
      points.insert(points.end(), c.points.begin(), c.points.end());
      run_files.push_back(f);
    }
  }
  if (probes.empty())
    throw Error("none of the inputs is a probe file (with a /probe group); run `mpirun -np N commsim probe --out "
                "portrait.h5` first");
  const ProbeData& probe = probes.front();
  bool gpu_probe = !probe.gpu_names.empty();

  std::string base_name = o.base.empty() ? "local-cpu" : o.base;
  if (o.base.empty() && gpu_probe)
    std::cerr << "commsim calibrate: GPUs were probed; without --base the host tiers are calibrated on local-cpu. "
                 "Pass --base (e.g. h200-node) to calibrate a GPU topology.\n";
  Topology base = load_topology(resolve_topology_path(base_name));
  Topology topo = base;
  topo.name = o.name.empty() ? std::filesystem::path(o.out).stem().string() : o.name;
  const std::string today = iso8601_utc_now();
  std::vector<std::pair<std::string, std::string>> comments;
  // Protocol steps the probe's ring shift suggests but does not show clearly enough to keep (eager
  // limit, inline limit; 0: none): `--refine all` adds them with no step, and the collectives
  // decide their latencies.
  std::pair<Bytes, Bytes> protocol_candidates{0, 0};
  ProtocolFit other_inline;  // the probe's other step below the eager limit (other_inline_bytes > 0)
  auto from = [&](const std::string& what) { return "fitted " + today.substr(0, 10) + " from " + what; };

  std::ostream& out = std::cout;
  out << "# commsim calibrate: " << probes.size() << " probe file(s), " << run_files.size() << " run file(s), base "
      << base.name << "\n";
  out << "## Tiers (least squares on t = alpha + bytes * beta, " << o.weighting << " residuals)\n";

  // Host ranks: the tiers are what MPI measured between processes.
  TierFit intra = fit_tier(probes, "ring-shift", "intra-node", weighting);
  TierFit net = fit_tier(probes, "ring-shift", "network", weighting);
  TierFit reduce = fit_tier(probes, "reduce", "local", weighting, 65536);
  TierFit memcpy_fit = fit_tier(probes, "memcpy", "local", weighting, 65536);
  print_tier(out, "inside a node", intra);
  print_tier(out, "across the network", net);
  print_tier(out, "reduction (float32 sum, every rank at once, >= 64 KiB)", reduce);
  print_tier(out, "memory copy (every rank at once, >= 64 KiB)", memcpy_fit);

  if (!topo.gpu) {
    if (intra.done) {
      topo.intra.latency_s = intra.fit.alpha_s;
      topo.intra.bw_Bps = intra.fit.bw_Bps();
      comments.push_back({"intra_node.bandwidth", from(intra.source) + ", R^2 " + fnum("%.4f", intra.fit.r2)});
      comments.push_back({"intra_node.latency", from(intra.source)});
      // The message library's terms: beta on the large sizes only, eager and rendezvous latencies
      // (MPI switches protocol at a few KiB), the node's shared memory bandwidth (all ranks moving
      // data at once get less each than one pair), the cost of posting several messages at once.
      try {
        const ProtocolFit pf = fit_protocol(intra.samples, 65536, "ring-shift intra-node");
        if (!pf.switched) protocol_candidates = {pf.candidate_eager_bytes, pf.candidate_inline_bytes};
        else if (!pf.inlined) protocol_candidates = {0, pf.candidate_inline_bytes};
        if (pf.other_inline_bytes > 0) other_inline = pf;
        topo.intra.latency_s = pf.latency_s;
        topo.intra.bw_Bps = pf.bw_Bps();
        comments.push_back({"intra_node.bandwidth", from(intra.source) + ", beta on sizes >= 64 KiB"});
        out << "  inside a node, by protocol: latency " << fnum("%.3f", pf.latency_s * 1e6) << " us";
        if (pf.switched) {
          topo.intra.msg.eager_limit_bytes = pf.eager_limit_bytes;
          topo.intra.msg.rendezvous_latency_s = pf.rendezvous_latency_s;
          comments.push_back({"intra_node.eager_limit", from(intra.source) + " (best two-latency split)"});
          comments.push_back({"intra_node.rendezvous_latency", from(intra.source)});
          out << " up to " << format_bytes(pf.eager_limit_bytes) << ", then " << fnum("%.3f", pf.rendezvous_latency_s * 1e6)
              << " us";
        }
        if (pf.inlined) {
          topo.intra.msg.inline_limit_bytes = pf.inline_limit_bytes;
          topo.intra.msg.inline_latency_s = pf.inline_latency_s;
          comments.push_back({"intra_node.inline_limit", from(intra.source) + " (the lower of two latency steps)"});
          comments.push_back({"intra_node.inline_latency", from(intra.source)});
          out << " (" << fnum("%.3f", pf.inline_latency_s * 1e6) << " us up to " << format_bytes(pf.inline_limit_bytes)
              << ", inline)";
        }
        out << ", 1/beta (>= 64 KiB) " << format_bandwidth(pf.bw_Bps()) << ", median |residual| "
            << pct(pf.median_abs_rel_residual) << "\n";
        const std::vector<TimedSize> stream = probe_series(probes, "stream", "intra-node");
        std::vector<TimedSize> stream_large;
        for (const auto& x : stream)
          if (x.bytes >= 65536) stream_large.push_back(x);
        std::set<Bytes> distinct;
        for (const auto& x : stream_large) distinct.insert(x.bytes);
        const int per_node = std::max(1, probe.ranks_per_node);
        if (distinct.size() >= 2) {
          const LineFit pair = fit_line(stream_large, FitWeighting::Relative, "stream intra-node");
          const BytesPerSecond node_bw = fit_node_bandwidth(pair.bw_Bps(), pf.bw_Bps(), per_node);
          out << "  one pair streaming: 1/beta " << format_bandwidth(pair.bw_Bps()) << " per rank; all " << per_node
              << " ranks at once: " << format_bandwidth(pf.bw_Bps()) << " each\n";
          if (node_bw > 0) {
            topo.intra.bw_Bps = pair.bw_Bps();
            topo.intra.node_bw_Bps = node_bw;
            comments.push_back({"intra_node.bandwidth", from("stream intra-node (one pair), sizes >= 64 KiB")});
            comments.push_back({"intra_node.node_bandwidth", from(intra.source) + ": per-rank rate x " +
                                                                 std::to_string(per_node) + " ranks"});
          }
          const Bytes small = pf.switched ? pf.eager_limit_bytes : Bytes{4096};
          const Bytes tiny = pf.inlined ? pf.inline_limit_bytes : Bytes{0};
          const Seconds o = fit_message_overhead(stream, 8, pf.latency_s, pair.beta_s_per_byte, small, tiny);
          if (o > 0) {
            topo.intra.msg.message_overhead_s = o;
            comments.push_back({"intra_node.message_overhead",
                                from("stream intra-node (8 messages posted at once), sizes " +
                                     (tiny ? "above " + format_bytes(tiny) + " and " : std::string()) + "<= " +
                                     format_bytes(small))});
            out << "  message overhead (stream of 8, <= " << format_bytes(small) << "): " << fnum("%.3f", o * 1e6)
                << " us per additional message\n";
          }
          if (pf.inlined) {
            const Seconds oi = fit_message_overhead(stream, 8, pf.inline_latency_s, pair.beta_s_per_byte, tiny);
            topo.intra.msg.inline_overhead_s = oi;
            comments.push_back({"intra_node.inline_overhead",
                                from("stream intra-node (8 messages posted at once), sizes <= " + format_bytes(tiny))});
            out << "  inline overhead (stream of 8, <= " << format_bytes(tiny) << "): " << fnum("%.3f", oi * 1e6)
                << " us per additional message\n";
          }
        }
      } catch (const Error& e) {
        out << "  inside a node, by protocol: not fitted (" << e.what() << ")\n";
      }
      // Just-written data: the probe's ring shift of data each rank has just written against the
      // same shift after writing another buffer (the control), the fastest sample of each, with
      // the latency fitted above taken off both.
      const std::vector<TimedSize> written = probe_series(probes, "ring-shift-written", "intra-node", 0, true);
      const std::vector<TimedSize> control = probe_series(probes, "ring-shift-control", "intra-node", 0, true);
      if (!written.empty() && !control.empty()) {
        const std::vector<MessageScale> ratios = written_ratios(control, written, topo.intra.latency_s);
        topo.written_scale = fit_written_scale(control, written, topo.intra.latency_s);
        const std::string what = "ring-shift-written vs ring-shift-control intra-node, " +
                                 std::to_string(ratios.size()) + " sizes";
        out << "  just-written data inside a node: " << what << " >= " << format_bytes(kWrittenScaleMinBytes)
            << ", latency " << fnum("%.3f", topo.intra.latency_s * 1e6) << " us taken off\n"
            << "      per size, bandwidth factor (x the time of the control, latency off):";
        for (std::size_t i = 0; i < ratios.size(); ++i)
          out << (i % 6 == 0 ? "\n       " : "") << " " << format_bytes(ratios[i].bytes) << " "
              << fnum("%.2f", ratios[i].scale) << " (x" << fnum("%.2f", 1 / ratios[i].scale) << ")";
        out << "\n      written_scale:";
        if (topo.written_scale.empty())
          out << " none (no size slower beyond the probe's noise: factor > " << kWrittenScaleNoise
              << ", or slower alone among its neighbouring sizes)";
        for (const MessageScale& r : ratios)
          if (r.scale < kWrittenScaleFloor)
            out << "\n      " << format_bytes(r.bytes) << " left out: x" << fnum("%.1f", 1 / r.scale)
                << " is a disturbed measurement (more than x" << fnum("%.0f", 1 / kWrittenScaleFloor) << ")";
        for (const MessageScale& p : topo.written_scale)
          out << " " << format_bytes(p.bytes) << " " << fnum("%.3g", p.scale)
              << (&p == &topo.written_scale.back() ? "" : ",");
        out << "\n";
        comments.push_back({"written_scale", "measured " + today.substr(0, 10) + " from " + what});
      }
    }
    if (probe.ranks_per_node > 0) topo.ranks_per_node = std::max(topo.ranks_per_node, probe.ranks_per_node);
    if (!probe.cpu_model.empty()) topo.device_name = probe.cpu_model;
    if (memcpy_fit.done) {
      topo.memory_bw_Bps = memcpy_fit.fit.bw_Bps();
      comments.push_back({"device.memory_bandwidth", from(memcpy_fit.source)});
    }
  } else {
    // GPU topology: the GPU tiers come from the cudaMemcpy measurements where there are any.
    TierFit peer = fit_tier(probes, "peer", "gpu", weighting);
    TierFit h2d = fit_tier(probes, "h2d", "host-link", weighting);
    TierFit d2d = fit_tier(probes, "d2d", "gpu", weighting, 65536);
    print_tier(out, "GPU <-> GPU (cudaMemcpyPeer)", peer);
    print_tier(out, "host -> GPU (pinned cudaMemcpy)", h2d);
    print_tier(out, "GPU memory (device copy, >= 64 KiB)", d2d);
    if (peer.done) {
      topo.intra.latency_s = peer.fit.alpha_s;
      topo.intra.bw_Bps = peer.fit.bw_Bps();
      comments.push_back({"intra_node.bandwidth", from(peer.source)});
      comments.push_back({"intra_node.latency", from(peer.source)});
    }
    if (h2d.done) {
      topo.host_link.latency_s = h2d.fit.alpha_s;
      topo.host_link.bw_Bps = h2d.fit.bw_Bps();
      comments.push_back({"host_link.bandwidth", from(h2d.source)});
      comments.push_back({"host_link.latency", from(h2d.source)});
    }
    if (d2d.done) {
      topo.memory_bw_Bps = d2d.fit.bw_Bps();
      comments.push_back({"device.memory_bandwidth", from(d2d.source)});
    }
  }
  if (net.done) {
    if (!topo.network.present()) {
      topo.network.kind = "tcp";
      topo.network.fabric_shape = "single-switch";
      topo.network.nics_per_node = 1;
      topo.max_nodes = 0;
    }
    // One ring-shift message per rank crosses the network at once; the fitted bandwidth is per rank,
    // and the NICs of a node carry all of its ranks.
    int per_node = std::max(1, probe.ranks_per_node);
    topo.network.latency_s = net.fit.alpha_s;
    BytesPerSecond per_rank_bw = net.fit.bw_Bps();
    std::string how = net.source;
    // The rate by message size: a transport's buffers and protocol switches make one line through
    // every size miss both the middle sizes and the large ones.
    const NetworkRateFit rate = fit_network_rate(net.samples);
    if (rate.done) {
      out << "  across the network, by message size: latency " << fnum("%.3f", rate.latency_s * 1e6) << " us (sizes <= "
          << format_bytes(kNetworkLatencyMaxBytes) << "), 1/beta " << format_bandwidth(1 / rate.beta_s_per_byte)
          << " (sizes >= " << format_bytes(kNetworkRateMinBytes) << ")\n"
          << "      per size, bandwidth factor (x the large-message rate, latency off):";
      for (std::size_t i = 0; i < rate.factors.size(); ++i)
        out << (i % 8 == 0 ? "\n       " : "") << " " << format_bytes(rate.factors[i].bytes) << " "
            << fnum("%.2f", rate.factors[i].scale);
      out << "\n      network_message_scale: ";
      if (rate.curve.empty()) {
        out << "none (every factor within " << pct(kNetworkCurveNoise) << " of 1: the line above stands)\n";
      } else {
        out << rate.curve.size() << " points, " << format_bytes(rate.curve.front().bytes) << ".."
            << format_bytes(rate.curve.back().bytes) << "\n";
        topo.network.latency_s = rate.latency_s;
        per_rank_bw = 1 / rate.beta_s_per_byte;
        topo.network_message_scale = rate.curve;
        how += ": latency of the sizes <= " + format_bytes(kNetworkLatencyMaxBytes) + ", rate of the sizes >= " +
               format_bytes(kNetworkRateMinBytes);
        comments.push_back({"network_message_scale",
                            "measured " + today.substr(0, 10) + " from " + net.source +
                                ": (bytes x beta) / (time - latency) at every size, beta the large-message rate"});
      }
    }
    topo.network.nic_bw_Bps = per_rank_bw * per_node / topo.network.nics_per_node * topo.network.oversubscription;
    comments.push_back({"network.nic_bandwidth", from(how) + " (per-rank rate x " + std::to_string(per_node) +
                                                     " ranks per node / NICs)"});
    comments.push_back({"network.latency", from(how)});
  }
  if (!topo.gpu && reduce.done) {
    topo.reduce_bw_Bps = reduce.fit.bw_Bps();
    comments.push_back({"reduction.bandwidth", from(reduce.source)});
  }

  // Collective runs: gamma (or everything) fitted to the priced schedules that ran.
  std::vector<CollectiveSample> samples = collective_samples(points);
  std::string refine = o.refine == "auto" ? (samples.empty() ? "none" : "gamma") : o.refine;
  if (refine != "none") {
    if (samples.empty())
      throw Error("--refine " + refine + " needs run files with measured hand-written collectives");
    std::vector<Param> params{Param::Gamma};
    std::string protocol_note;
    if (refine == "all") {
      // Every term: the tiers' alpha and beta, gamma, the copy rate, what the runtime adds per
      // message and per call, and the cache curves (working set of a rank and of its node, local
      // operation, message size), all against the same collectives.
      params = {Param::IntraLatency, Param::IntraBeta, Param::IntraMessageOverhead, Param::CallOverhead,
                Param::NetLatency, Param::NetBeta, Param::Gamma, Param::MemoryBeta};
      // A candidate step: its limit, with the latency on its far side equal to the tier's (no step
      // until the collectives say otherwise).
      auto add_step = [&](Bytes& limit, Seconds& latency, Bytes at, const std::string& field, const std::string& which) {
        limit = at;
        latency = topo.intra.latency_s;
        comments.push_back({"intra_node." + field, "the " + which + " step of the probe's ring shift, too faint to "
                                                   "keep from the probe alone; its latencies fitted to the collectives"});
        protocol_note += "  intra." + field + ": " + format_bytes(at) + " (the probe's " + which +
                         " step, not kept from the probe alone): its latencies fitted here\n";
      };
      if (topo.intra.msg.eager_limit_bytes == 0 && protocol_candidates.first > 0)
        add_step(topo.intra.msg.eager_limit_bytes, topo.intra.msg.rendezvous_latency_s, protocol_candidates.first,
                 "eager_limit", "largest");
      if (topo.intra.msg.eager_limit_bytes > 0 && topo.intra.msg.inline_limit_bytes == 0 &&
          protocol_candidates.second > 0 && protocol_candidates.second < topo.intra.msg.eager_limit_bytes)
        add_step(topo.intra.msg.inline_limit_bytes, topo.intra.msg.inline_latency_s, protocol_candidates.second,
                 "inline_limit", "second");
      if (topo.intra.msg.eager_limit_bytes > 0) {
        params.push_back(Param::IntraRendezvousLatency);
        params.push_back(Param::IntraRendezvousOverhead);
      }
      if (topo.intra.msg.inline_limit_bytes > 0) {
        params.push_back(Param::IntraInlineLatency);
        params.push_back(Param::IntraInlineOverhead);
      }
      if (!topo.gpu) {
        params.push_back(Param::IntraOneWay);
        params.push_back(Param::IntraReceiveShare);
        params.push_back(Param::IntraExchange);
        params.push_back(Param::IntraSendShare);
      }
      if (topo.network.present()) params.push_back(Param::NetOneWay);
      for (Param p : add_working_set_points(topo, samples)) params.push_back(p);
      // The node's curve stands for the caches its ranks share; ranks that outnumber the cores
      // take turns on them instead, and the curve would only absorb the noise.
      if (const std::string why = why_no_node_curve(topo, samples, probe.cpu_cores); why.empty())
        for (Param p : add_node_working_set_points(topo, samples)) params.push_back(p);
      else if (topo.intra.node_bw_Bps > 0)
        protocol_note += "  node_working_set_scale: not fitted: " + why + "\n";
      for (Param p : add_local_op_points(topo, samples)) params.push_back(p);
      for (Param p : add_message_points(topo, samples)) params.push_back(p);
      if (!topo.gpu)
        for (Param p : add_fan_out_points(topo)) params.push_back(p);
      for (Param p : add_network_message_points(topo)) params.push_back(p);
    }
    const SchedulePricer pricer(points, run_topology_text, run_piece, samples);
    const SamplePredictor predict = [&pricer](const Topology& t, const CollectiveSample& s) { return pricer(t, s); };
    auto fit_on = [&](const Topology& start, const std::vector<CollectiveSample>& on) {
      return refine == "gamma" ? fit_gamma(start, on, weighting, predict)
                               : refine_parameters(start, on, params, weighting, predict, threads);
    };
    ParamFit fit = fit_on(topo, samples);
    // The probe saw two steps below the eager limit and the model has one inline step: the one the
    // collectives follow better is kept (judged on the measurements fitted, not the held-out ones).
    if (refine == "all" && other_inline.other_inline_bytes > 0) {
      Topology other = topo;
      other.intra.msg.inline_limit_bytes = other_inline.other_inline_bytes;
      other.intra.msg.inline_latency_s = other_inline.other_inline_latency_s;
      other.intra.latency_s = other_inline.other_latency_s;
      other.intra.msg.rendezvous_latency_s = other_inline.other_rendezvous_latency_s;
      ParamFit with_other = fit_on(other, samples);
      const bool keep_other = with_other.median_abs_rel_error_after < fit.median_abs_rel_error_after;
      protocol_note += "  intra.inline_limit: the probe's steps at " + format_bytes(other_inline.inline_limit_bytes) +
                       " and " + format_bytes(other_inline.other_inline_bytes) + " both fitted: median |error| " +
                       pct(fit.median_abs_rel_error_after) + " and " + pct(with_other.median_abs_rel_error_after) +
                       "; " + format_bytes(keep_other ? other_inline.other_inline_bytes : other_inline.inline_limit_bytes) +
                       " kept\n";
      if (keep_other) {
        fit = std::move(with_other);
        topo = std::move(other);
        std::erase_if(comments, [](const auto& c) { return c.first == "intra_node.inline_limit"; });
        comments.push_back({"intra_node.inline_limit",
                            "the other of the probe's two steps below the eager limit, which the collectives follow better"});
      }
    }
    const Topology before_refine = topo;  // where the fit started: the held-out check starts there too
    out << "## Collectives (" << refine << " fitted to " << fit.samples << " measured points of "
        << run_files.size() << " run file(s))\n";
    out << "  median |error| of the predictions: " << pct(fit.median_abs_rel_error_before) << " before, "
        << pct(fit.median_abs_rel_error_after) << " after; R^2 " << fnum("%.4f", fit.r2) << "\n"
        << protocol_note;
    int at_limit = 0;
    for (Param p : fit.fitted) {
      const bool limit = at_fit_limit(p, get_param(fit.topology, p));
      at_limit += limit ? 1 : 0;
      out << "  " << to_string(p) << ": " << param_text(p, get_param(topo, p)) << " -> "
          << param_text(p, get_param(fit.topology, p)) << (limit ? " (at the end of its range)" : "") << "\n";
    }
    if (at_limit > 0)
      out << "  " << at_limit << " term(s) ended at the end of their range (a factor of 0.02 or 10): these "
          << "measurements do not pin them down, and the fit used them to absorb what other terms do not "
          << "explain. More sizes, or runs with more ranks per node, pin them down.\n";
    for (Param p : fit.held) out << "  " << to_string(p) << ": no measurement depends on it; kept\n";
    std::string what = std::to_string(fit.samples) + " collective points of " + std::to_string(run_files.size()) +
                       " run file(s)";
    for (Param p : fit.fitted) {
      const std::string field(field_of(p));
      std::erase_if(comments, [&](const auto& c) { return c.first == field; });
      comments.push_back({field, from(what)});
    }
    topo = fit.topology;
    // A one-to-many curve of factors 1 (no measured schedule has such messages) says nothing.
    if (std::ranges::all_of(topo.fan_out_scale, [](const MessageScale& m) { return m.scale == 1.0; }))
      topo.fan_out_scale.clear();
    // Held-out check of the collective fit: fit on every other size and the largest, error on the
    // sizes between (split_held_out).
    const auto [train, test] = split_held_out(samples);
    if (!train.empty() && !test.empty()) {
      try {
        const ParamFit half = fit_on(before_refine, train);
        std::vector<double> errs;
        std::map<Bytes, std::vector<double>> by_size;
        for (const auto& s : test)
          if (const double t = predict(half.topology, s); std::isfinite(t)) {
            errs.push_back((t - s.time_s) / s.time_s);
            by_size[s.bytes].push_back(errs.back());
          }
        const double held_out = median_abs(errs);
        out << "  held-out check (fit on every other size and the largest, predict the sizes between): median "
            << "|error| " << pct(held_out) << " on " << errs.size()
            << " points\n      by held-out size (median error, + = predicted slower):";
        for (const auto& [bytes, e] : by_size) out << " " << format_bytes(bytes) << " " << signed_pct(median(e));
        out << "\n";
        if (held_out > 0.1 && held_out > 2 * fit.median_abs_rel_error_after)
          out << "  the held-out error is " << fnum("%.1f", held_out / fit.median_abs_rel_error_after)
              << " times the fit's own: the fitted terms follow these sizes more than the machine; expect "
              << "errors nearer " << pct(held_out) << " than " << pct(fit.median_abs_rel_error_after)
              << " on sizes the fit did not see\n";
      } catch (const Error& e) {
        out << "  held-out check not possible: " << e.what() << "\n";
      }
    }
  }

  apply_link_matrix(probe, topo, comments, out);
  std::vector<StorageRow> storage_rows;
  for (const auto& p : probes) storage_rows.insert(storage_rows.end(), p.storage.begin(), p.storage.end());
  topo.storage = storage_tiers(storage_rows, base.storage);
  if (!storage_rows.empty()) {
    out << "## Storage (one writer per node: the slowest node; latency: 4 KiB random read at QD1)\n";
    for (const auto& t : topo.storage)
      out << "  " << t.name << " (" << (t.shared ? "shared" : "local") << "): read " << format_bandwidth(t.read_bw_Bps)
          << ", write " << format_bandwidth(t.write_bw_Bps) << ", latency " << format_time(t.latency_s)
          << (t.shared ? ", all ranks at once: read " + format_bandwidth(t.aggregate_read_bw_Bps) + ", write " +
                             format_bandwidth(t.aggregate_write_bw_Bps)
                       : std::string())
          << "\n";
  }
  // NCCL's own collectives: their constants from the forced runs.
  const std::vector<NcclSample> nccl_fitted = calibrate_nccl(out, points, run_files, today, topo, comments);

  // The record of what the fit saw.
  CalibrationInfo rec;
  rec.created = today;
  rec.sources = o.inputs;
  std::set<Bytes> sizes;
  std::set<int> nodes, ranks;
  for (const auto& p : probes) {
    for (const auto& r : p.rows)
      if (r.kind == "ring-shift") sizes.insert(r.bytes);
    nodes.insert(p.nodes);
    ranks.insert(p.ranks);
  }
  for (const auto& s : samples) {
    sizes.insert(s.bytes);
    nodes.insert(s.nodes);
    ranks.insert(s.nodes * s.ranks_per_node);
  }
  for (const auto& s : nccl_fitted) {
    sizes.insert(s.bytes);
    nodes.insert(s.nodes);
    ranks.insert(s.nodes * s.ranks_per_node);
  }
  rec.sizes.assign(sizes.begin(), sizes.end());
  rec.nodes.assign(nodes.begin(), nodes.end());
  rec.ranks.assign(ranks.begin(), ranks.end());

  topo.description = "Calibrated by commsim calibrate on " + today.substr(0, 10) + " from " +
                     std::to_string(probes.size()) + " probe file(s) (" + probe.cpu_model + ", " +
                     std::to_string(probe.nodes) + " node(s), " + std::to_string(probe.ranks) + " ranks)";
  std::vector<std::string> header = {
      topo.name + ": a topology fitted to measurements by `commsim calibrate` (" + today + ").",
      "Inputs: " + [&] {
        std::string s;
        for (const auto& f : o.inputs) s += (s.empty() ? "" : ", ") + f;
        return s;
      }(),
      "Base topology (every value not marked 'fitted' comes from it): " + base.name +
          (base.source_path.empty() ? "" : " (" + std::filesystem::path(base.source_path).filename().string() + ")"),
      "alpha/beta per tier: least squares on t = alpha + bytes * beta over the probe's ring-shift times",
      "(every rank sends to the next and receives from the previous rank of its tier at once: one step of a ring).",
  };
  if (!nccl_fitted.empty())
    header.push_back("nccl: base latency, hop latency and bus bandwidth per algorithm x protocol, least squares on the "
                     "runs with NCCL's algorithm and protocol forced (t = base + hops x intra_hop + bus bytes / "
                     "bus_bandwidth).");
  // One comment per field: a later fit of the same field replaces the earlier note.
  for (std::size_t i = comments.size(); i-- > 0;)
    for (std::size_t j = 0; j < i; ++j)
      if (comments[j].first == comments[i].first) comments[j].second.clear();
  const std::string storage_text = storage_yaml(topo.storage, storage_rows,
                                                [&] {
                                                  std::string s;
                                                  for (const auto& f : o.inputs) s += (s.empty() ? "" : ", ") + f;
                                                  return s;
                                                }(),
                                                today.substr(0, 10));
  std::string text = topology_yaml(topo, header, comments, &rec, true) + storage_text;
  bool with_section = loader_accepts_calibrated_section(text);
  if (!with_section) text = topology_yaml(topo, header, comments, &rec, false) + storage_text;

  // The file must load and give back the fitted values before it is written.
  Topology check = parse_topology(text, o.out);
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 1e-15; };
  bool nccl_same = check.nccl.present == topo.nccl.present;
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p)
      nccl_same = nccl_same && close(check.nccl.base_latency_s[a][p], topo.nccl.base_latency_s[a][p]) &&
                  close(check.nccl.bus_bw_Bps[a][p], topo.nccl.bus_bw_Bps[a][p]);
  if (!close(check.intra.bw_Bps, topo.intra.bw_Bps) || !close(check.intra.latency_s, topo.intra.latency_s) ||
      !close(check.reduce_bw_Bps, topo.reduce_bw_Bps) || check.storage.size() != topo.storage.size() ||
      !nccl_same)
    throw Error("the written topology does not read back to the fitted values (internal error)");
  {
    std::filesystem::path tmp = o.out + ".tmp";
    std::ofstream f(tmp);
    if (!f) throw Error("cannot write " + tmp.string());
    f << text;
    f.close();
    if (!f) throw Error("cannot write " + tmp.string());
    std::filesystem::rename(tmp, o.out);
  }
  out << "## Written\n  " << o.out << " (" << (with_section ? "with" : "without") << " a calibrated: section)\n";
  out << "  intra_node: " << format_bandwidth(topo.intra.bw_Bps) << ", " << format_time(topo.intra.latency_s)
      << "; reduction: " << format_bandwidth(topo.reduce_bw_Bps) << "; memory: " << format_bandwidth(topo.memory_bw_Bps);
  if (topo.network.present())
    out << "; network: " << format_bandwidth(topo.network.nic_bw_Bps) << " per NIC, " << format_time(topo.network.latency_s);
  out << "\n";
  return 0;
}

}  // namespace commsim
