#include "model/calibrate/procedure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "model/calibrate/procedure_steps.h"
#include "model/error.h"

namespace commsim {
namespace {

using namespace calibration;

// What every step shares: the topology being fitted, the comments per field, the date.
struct Work {
  const CalibrationInput& in;
  const CalibrationOptions& opt;
  Topology topo;
  FieldComments comments;
  std::string from(const std::string& what) const { return fitted_from(opt, what); }
  std::string date() const { return opt.created.substr(0, 10); }
};

// The median time of each probe row of `kind` on `tier` (of at least min_bytes); with `fastest`,
// the fastest sample instead, which a rank descheduled by other work during some samples does not
// move.
std::vector<TimedSize> probe_series(const std::vector<ProbeInput>& probes, const std::string& kind,
                                    const std::string& tier, Bytes min_bytes = 0, bool fastest = false) {
  std::vector<TimedSize> out;
  for (const auto& p : probes)
    for (const auto& r : p.rows) {
      const double us = fastest && r.min_us > 0 ? r.min_us : r.median_us;
      if (r.kind == kind && r.tier == tier && us > 0 && r.bytes >= min_bytes) out.push_back({r.bytes, us * 1e-6});
    }
  return out;
}

std::size_t distinct_count(const std::vector<TimedSize>& v) {
  std::set<Bytes> s;
  for (const auto& x : v) s.insert(x.bytes);
  return s.size();
}

// Where one line does not describe the tier (a protocol switch such as MPI's eager/rendezvous
// limit, NCCL's LL/Simple, caches): the halves below and from 64 KiB fitted apart, and the best
// split into two lines.
void fit_two_lines(TierFit& t) {
  std::vector<TimedSize> small, large;
  for (const auto& s : t.samples) (s.bytes < 65536 ? small : large).push_back(s);
  if (distinct_count(small) >= 2 && distinct_count(large) >= 2) {
    t.halves_done = true;
    t.below_64k = fit_line(small, FitWeighting::Relative);
    t.from_64k = fit_line(large, FitWeighting::Relative);
  }
  std::set<Bytes> all_sizes;
  for (const auto& s : t.samples) all_sizes.insert(s.bytes);
  if (all_sizes.size() < 6) return;
  double best = INFINITY;
  const std::vector<Bytes> sv(all_sizes.begin(), all_sizes.end());
  for (std::size_t k = 3; k + 3 <= sv.size(); ++k) {
    std::vector<TimedSize> below, above;
    for (const auto& s : t.samples) (s.bytes < sv[k] ? below : above).push_back(s);
    LineFit fa = fit_line(below, FitWeighting::Relative), fb = fit_line(above, FitWeighting::Relative);
    double ss = 0;
    for (const auto& s : below) ss += std::pow((fa.predict_s(s.bytes) - s.time_s) / s.time_s, 2);
    for (const auto& s : above) ss += std::pow((fb.predict_s(s.bytes) - s.time_s) / s.time_s, 2);
    if (ss < best) best = ss, t.split_bytes = sv[k], t.split_below = fa, t.split_above = fb;
  }
  if (!t.split_bytes) return;
  std::vector<double> rel;
  for (const auto& s : t.samples) {
    const LineFit& f = s.bytes < t.split_bytes ? t.split_below : t.split_above;
    rel.push_back((f.predict_s(s.bytes) - s.time_s) / s.time_s);
  }
  t.split_median_abs_rel_residual = median_abs(rel);
}

TierFit fit_tier(const std::vector<ProbeInput>& probes, const std::string& kind, const std::string& tier,
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
  fit_two_lines(t);
  return t;
}

// The stream's terms: the node's shared bandwidth (all ranks moving data at once get less each
// than one pair) and the cost of posting several messages at once.
void fit_stream(Work& w, const TierFit& intra, ProtocolStep& step) {
  const ProtocolFit& pf = step.fit;
  const std::vector<TimedSize> stream = probe_series(w.in.probes, "stream", "intra-node");
  std::vector<TimedSize> stream_large;
  for (const auto& x : stream)
    if (x.bytes >= 65536) stream_large.push_back(x);
  const int per_node = std::max(1, w.in.probes.front().ranks_per_node);
  if (distinct_count(stream_large) < 2) return;
  const LineFit pair = fit_line(stream_large, FitWeighting::Relative, "stream intra-node");
  const BytesPerSecond node_bw = fit_node_bandwidth(pair.bw_Bps(), pf.bw_Bps(), per_node);
  step.stream_done = true;
  step.pair_bw_Bps = pair.bw_Bps();
  step.all_ranks_bw_Bps = pf.bw_Bps();
  step.ranks_per_node = per_node;
  if (node_bw > 0) {
    w.topo.intra.bw_Bps = pair.bw_Bps();
    w.topo.intra.node_bw_Bps = node_bw;
    w.comments.push_back({"intra_node.bandwidth", w.from("stream intra-node (one pair), sizes >= 64 KiB")});
    w.comments.push_back({"intra_node.node_bandwidth",
                          w.from(intra.source) + ": per-rank rate x " + std::to_string(per_node) + " ranks"});
  }
  const Bytes small = pf.switched ? pf.eager_limit_bytes : Bytes{4096};
  const Bytes tiny = pf.inlined ? pf.inline_limit_bytes : Bytes{0};
  const Seconds o = fit_message_overhead(stream, 8, pf.latency_s, pair.beta_s_per_byte, small, tiny);
  step.overhead_max_bytes = small;
  if (o > 0) {
    w.topo.intra.msg.message_overhead_s = o;
    step.message_overhead_s = o;
    w.comments.push_back(
        {"intra_node.message_overhead",
         w.from("stream intra-node (8 messages posted at once), sizes " +
                (tiny ? "above " + format_bytes(tiny) + " and " : std::string()) + "<= " + format_bytes(small))});
  }
  if (pf.inlined) {
    const Seconds oi = fit_message_overhead(stream, 8, pf.inline_latency_s, pair.beta_s_per_byte, tiny);
    w.topo.intra.msg.inline_overhead_s = oi;
    step.inline_overhead_done = true;
    step.inline_overhead_s = oi;
    w.comments.push_back({"intra_node.inline_overhead",
                          w.from("stream intra-node (8 messages posted at once), sizes <= " + format_bytes(tiny))});
  }
}

// The message library's terms inside a node: beta on the large sizes only, eager and rendezvous
// latencies (MPI switches protocol at a few KiB), then the stream's terms. Protocol steps the
// probe suggests but does not show clearly enough to keep are returned in `candidates` (eager
// limit, inline limit; 0: none), and the probe's other step below the eager limit in `other`:
// `refine all` lets the collectives decide them.
ProtocolStep fit_intra_protocol(Work& w, const TierFit& intra, std::pair<Bytes, Bytes>& candidates,
                                ProtocolFit& other) {
  ProtocolStep step;
  try {
    const ProtocolFit pf = fit_protocol(intra.samples, 65536, "ring-shift intra-node");
    if (!pf.switched)
      candidates = {pf.candidate_eager_bytes, pf.candidate_inline_bytes};
    else if (!pf.inlined)
      candidates = {0, pf.candidate_inline_bytes};
    if (pf.other_inline_bytes > 0) other = pf;
    step.fit = pf;
    step.done = true;
    w.topo.intra.latency_s = pf.latency_s;
    w.topo.intra.bw_Bps = pf.bw_Bps();
    w.comments.push_back({"intra_node.bandwidth", w.from(intra.source) + ", beta on sizes >= 64 KiB"});
    if (pf.switched) {
      w.topo.intra.msg.eager_limit_bytes = pf.eager_limit_bytes;
      w.topo.intra.msg.rendezvous_latency_s = pf.rendezvous_latency_s;
      w.comments.push_back({"intra_node.eager_limit", w.from(intra.source) + " (best two-latency split)"});
      w.comments.push_back({"intra_node.rendezvous_latency", w.from(intra.source)});
    }
    if (pf.inlined) {
      w.topo.intra.msg.inline_limit_bytes = pf.inline_limit_bytes;
      w.topo.intra.msg.inline_latency_s = pf.inline_latency_s;
      w.comments.push_back({"intra_node.inline_limit", w.from(intra.source) + " (the lower of two latency steps)"});
      w.comments.push_back({"intra_node.inline_latency", w.from(intra.source)});
    }
    fit_stream(w, intra, step);
  } catch (const Error& e) {
    step.error = e.what();
  }
  return step;
}

// Just-written data: the probe's ring shift of data each rank has just written against the same
// shift after writing another buffer (the control), the fastest sample of each, with the latency
// fitted above taken off both.
std::optional<WrittenStep> fit_written(Work& w) {
  const std::vector<TimedSize> written = probe_series(w.in.probes, "ring-shift-written", "intra-node", 0, true);
  const std::vector<TimedSize> control = probe_series(w.in.probes, "ring-shift-control", "intra-node", 0, true);
  if (written.empty() || control.empty()) return std::nullopt;
  WrittenStep step;
  step.done = true;
  step.latency_s = w.topo.intra.latency_s;
  step.ratios = written_ratios(control, written, w.topo.intra.latency_s);
  w.topo.written_scale = fit_written_scale(control, written, w.topo.intra.latency_s);
  step.curve = w.topo.written_scale;
  step.what = "ring-shift-written vs ring-shift-control intra-node, " + std::to_string(step.ratios.size()) + " sizes";
  w.comments.push_back({"written_scale", "measured " + w.date() + " from " + step.what});
  return step;
}

// Host ranks: the tiers are what MPI measured between processes.
void fit_host_tiers(Work& w, TierStep& t, std::pair<Bytes, Bytes>& candidates, ProtocolFit& other) {
  const ProbeInput& probe = w.in.probes.front();
  if (t.intra.done) {
    w.topo.intra.latency_s = t.intra.fit.alpha_s;
    w.topo.intra.bw_Bps = t.intra.fit.bw_Bps();
    char r2[32];
    std::snprintf(r2, sizeof r2, "%.4f", t.intra.fit.r2);
    w.comments.push_back({"intra_node.bandwidth", w.from(t.intra.source) + ", R^2 " + r2});
    w.comments.push_back({"intra_node.latency", w.from(t.intra.source)});
    t.protocol = fit_intra_protocol(w, t.intra, candidates, other);
    t.written = fit_written(w);
  }
  // This machine, not the base's: as many ranks per node as it has logical CPUs (or the probe ran),
  // and its memory.
  const int per_node = std::max(probe.ranks_per_node, probe.cpu_cores);
  if (per_node > 0) {
    w.topo.ranks_per_node = per_node;
    w.comments.push_back({"ranks_per_node", "probe: " + std::to_string(probe.cpu_cores) +
                                                " logical CPUs of rank 0's host; the probe ran " +
                                                std::to_string(probe.ranks_per_node) + " ranks per node"});
  }
  if (!probe.cpu_model.empty()) {
    w.topo.device_name = probe.cpu_model;
    w.comments.push_back({"device.name", "probe: rank 0's host"});
  }
  if (probe.memory_bytes > 0) {
    w.topo.device_memory_bytes = probe.memory_bytes;
    w.comments.push_back({"device.memory", "probe: rank 0's host memory"});
  }
  if (t.memcpy.done) {
    w.topo.memory_bw_Bps = t.memcpy.fit.bw_Bps();
    w.comments.push_back({"device.memory_bandwidth", w.from(t.memcpy.source)});
  }
}

// GPU topology: the GPU tiers come from the cudaMemcpy measurements where there are any.
void fit_gpu_tiers(Work& w, TierStep& t) {
  const FitWeighting wt = w.opt.weighting;
  t.peer = fit_tier(w.in.probes, "peer", "gpu", wt);
  t.h2d = fit_tier(w.in.probes, "h2d", "host-link", wt);
  t.d2d = fit_tier(w.in.probes, "d2d", "gpu", wt, 65536);
  if (t.peer.done) {
    w.topo.intra.latency_s = t.peer.fit.alpha_s;
    w.topo.intra.bw_Bps = t.peer.fit.bw_Bps();
    w.comments.push_back({"intra_node.bandwidth", w.from(t.peer.source)});
    w.comments.push_back({"intra_node.latency", w.from(t.peer.source)});
  }
  if (t.h2d.done) {
    w.topo.host_link.latency_s = t.h2d.fit.alpha_s;
    w.topo.host_link.bw_Bps = t.h2d.fit.bw_Bps();
    w.comments.push_back({"host_link.bandwidth", w.from(t.h2d.source)});
    w.comments.push_back({"host_link.latency", w.from(t.h2d.source)});
  }
  if (t.d2d.done) {
    w.topo.memory_bw_Bps = t.d2d.fit.bw_Bps();
    w.comments.push_back({"device.memory_bandwidth", w.from(t.d2d.source)});
  }
}

// The network: one ring-shift message per rank crosses it at once; the fitted bandwidth is per
// rank, and the NICs of a node carry all of its ranks. Its rate by message size: a transport's
// buffers and protocol switches make one line through every size miss both the middle sizes and
// the large ones.
void fit_network(Work& w, TierStep& t) {
  Topology& topo = w.topo;
  if (!topo.network.present()) {
    topo.network.kind = "tcp";
    topo.network.fabric_shape = "single-switch";
    topo.network.nics_per_node = 1;
    topo.max_nodes = 0;
  }
  const int per_node = std::max(1, w.in.probes.front().ranks_per_node);
  topo.network.latency_s = t.net.fit.alpha_s;
  BytesPerSecond per_rank_bw = t.net.fit.bw_Bps();
  std::string how = t.net.source;
  const NetworkRateFit rate = fit_network_rate(t.net.samples);
  if (rate.done) t.network_rate = rate;
  if (rate.done && !rate.curve.empty()) {
    topo.network.latency_s = rate.latency_s;
    per_rank_bw = 1 / rate.beta_s_per_byte;
    topo.network_message_scale = rate.curve;
    how += ": latency of the sizes <= " + format_bytes(kNetworkLatencyMaxBytes) +
           ", rate of the sizes >= " + format_bytes(kNetworkRateMinBytes);
    w.comments.push_back({"network_message_scale",
                          "measured " + w.date() + " from " + t.net.source +
                              ": (bytes x beta) / (time - latency) at every size, beta the large-message rate"});
  }
  topo.network.nic_bw_Bps = per_rank_bw * per_node / topo.network.nics_per_node * topo.network.oversubscription;
  w.comments.push_back({"network.nic_bandwidth",
                        w.from(how) + " (per-rank rate x " + std::to_string(per_node) + " ranks per node / NICs)"});
  w.comments.push_back({"network.latency", w.from(how)});
}

TierStep fit_tiers(Work& w, std::pair<Bytes, Bytes>& candidates, ProtocolFit& other) {
  TierStep t;
  const FitWeighting wt = w.opt.weighting;
  t.gpu = w.topo.gpu;
  t.intra = fit_tier(w.in.probes, "ring-shift", "intra-node", wt);
  t.net = fit_tier(w.in.probes, "ring-shift", "network", wt);
  t.reduce = fit_tier(w.in.probes, "reduce", "local", wt, 65536);
  t.memcpy = fit_tier(w.in.probes, "memcpy", "local", wt, 65536);
  if (!w.topo.gpu)
    fit_host_tiers(w, t, candidates, other);
  else
    fit_gpu_tiers(w, t);
  if (t.net.done) fit_network(w, t);
  if (!w.topo.gpu && t.reduce.done) {
    w.topo.reduce_bw_Bps = t.reduce.fit.bw_Bps();
    w.comments.push_back({"reduction.bandwidth", w.from(t.reduce.source)});
  }
  return t;
}

}  // namespace

CalibrationResult calibrate(const CalibrationInput& in, const CalibrationOptions& opt) {
  using namespace calibration;
  if (in.probes.empty()) throw Error("calibrate: no probe measurements");
  if (opt.refine != "auto" && opt.refine != "none" && opt.refine != "gamma" && opt.refine != "all")
    throw Error("--refine '" + opt.refine + "': use auto, none, gamma or all");
  const bool probed_gpus = in.probes.front().gpus > 0 || in.probes.front().links.gpus > 0 ||
                           std::ranges::any_of(in.probes.front().rows, [](const ProbeSample& r) {
                             return r.kind == "peer" || r.kind == "h2d" || r.kind == "d2d";
                           });
  if (in.base.gpu && !probed_gpus)
    throw Error("--base " + in.base.name +
                " is a GPU topology, but the probe saw no GPU (a host probe): none of its GPU "
                "numbers can be fitted from this probe, and the file would hold " +
                in.base.name +
                "'s numbers, not this machine's. Probe on the GPU machine (commsim probe with the GPUs "
                "visible), or calibrate the host with --base local-cpu");
  Work w{in, opt, in.base, {}};
  w.topo.name = opt.name;
  CalibrationResult r;
  std::pair<Bytes, Bytes> candidates{0, 0};
  ProtocolFit other;  // the probe's other step below the eager limit (other_inline_bytes > 0)
  r.tiers = fit_tiers(w, candidates, other);

  // Collective runs: gamma (or everything) fitted to the priced schedules that ran.
  const std::string refine = opt.refine == "auto" ? (in.collectives.empty() ? "none" : "gamma") : opt.refine;
  if (refine != "none") {
    if (in.collectives.empty())
      throw Error("--refine " + refine + " needs run files with measured hand-written collectives");
    r.collectives = fit_collectives(w.topo, w.comments, in, opt, refine, candidates, other);
  }
  r.link = apply_link_summary(in.probes.front().links, w.topo, w.comments);
  w.topo.storage = in.storage;
  r.nccl = fit_nccl_constants(in, opt, w.topo, w.comments);
  r.topology = std::move(w.topo);
  r.comments = std::move(w.comments);
  finish_calibration(in, opt, r);
  return r;
}

}  // namespace commsim
