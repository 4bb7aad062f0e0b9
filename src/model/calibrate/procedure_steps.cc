#include "model/calibrate/procedure_steps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim::calibration {

std::string fitted_from(const CalibrationOptions& opt, const std::string& what) {
  return "fitted " + opt.created.substr(0, 10) + " from " + what;
}

namespace {

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * v);
  return buf;
}

// Replaces the comment of `field` (a later fit of the same field has the last word).
void note(FieldComments& comments, const std::string& field, const std::string& text) {
  std::erase_if(comments, [&](const auto& c) { return c.first == field; });
  comments.push_back({field, text});
}

// The terms `refine all` fits: the tiers' alpha and beta, gamma, the copy rate, what the runtime
// adds per message and per call, and the cache curves (working set of a rank and of its node,
// local operation, message size), all against the same collectives. The probe's faint protocol
// steps are added with no step (the latency on their far side equal to the tier's) until the
// collectives say otherwise.
std::vector<Param> all_terms(Topology& topo, FieldComments& comments, const CalibrationInput& in,
                             std::pair<Bytes, Bytes> candidates, std::string& protocol_note) {
  const std::vector<CollectiveSample>& samples = in.collectives;
  std::vector<Param> params = {Param::IntraLatency, Param::IntraBeta,  Param::IntraMessageOverhead,
                               Param::CallOverhead, Param::NetLatency, Param::NetBeta,
                               Param::Gamma,        Param::MemoryBeta};
  auto add_step = [&](Bytes& limit, Seconds& latency, Bytes at, const std::string& field, const std::string& which) {
    limit = at;
    latency = topo.intra.latency_s;
    comments.push_back(
        {"intra_node." + field, "the " + which +
                                    " step of the probe's ring shift, too faint to "
                                    "keep from the probe alone; its latencies fitted to the collectives"});
    protocol_note += "  intra." + field + ": " + format_bytes(at) + " (the probe's " + which +
                     " step, not kept from the probe alone): its latencies fitted here\n";
  };
  MessageCosts& msg = topo.intra.msg;
  if (msg.eager_limit_bytes == 0 && candidates.first > 0)
    add_step(msg.eager_limit_bytes, msg.rendezvous_latency_s, candidates.first, "eager_limit", "largest");
  if (msg.eager_limit_bytes > 0 && msg.inline_limit_bytes == 0 && candidates.second > 0 &&
      candidates.second < msg.eager_limit_bytes)
    add_step(msg.inline_limit_bytes, msg.inline_latency_s, candidates.second, "inline_limit", "second");
  if (msg.eager_limit_bytes > 0) {
    params.push_back(Param::IntraRendezvousLatency);
    params.push_back(Param::IntraRendezvousOverhead);
  }
  if (msg.inline_limit_bytes > 0) {
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
  // The node's curve stands for the caches its ranks share; ranks that outnumber the cores take
  // turns on them instead, and the curve would only absorb the noise.
  if (const std::string why = why_no_node_curve(topo, samples, in.probes.front().cpu_cores); why.empty())
    for (Param p : add_node_working_set_points(topo, samples)) params.push_back(p);
  else if (topo.intra.node_bw_Bps > 0)
    protocol_note += "  node_working_set_scale: not fitted: " + why + "\n";
  for (Param p : add_local_op_points(topo, samples)) params.push_back(p);
  for (Param p : add_message_points(topo, samples)) params.push_back(p);
  if (!topo.gpu)
    for (Param p : add_fan_out_points(topo)) params.push_back(p);
  for (Param p : add_network_message_points(topo)) params.push_back(p);
  return params;
}

// The held-out check of a collective fit: fit on every other size and the largest, error on the
// sizes between (split_held_out).
template <typename FitOn>
void held_out_check(CollectiveStep& step, const CalibrationInput& in, const FitOn& fit_on) {
  const auto [train, test] = split_held_out(in.collectives);
  if (train.empty() || test.empty()) return;
  try {
    const ParamFit half = fit_on(step.start, train);
    std::vector<double> errs;
    std::map<Bytes, std::vector<double>> by_size;
    for (const auto& s : test)
      if (const double t = in.predict(half.topology, s); std::isfinite(t)) {
        errs.push_back((t - s.time_s) / s.time_s);
        by_size[s.bytes].push_back(errs.back());
      }
    step.held_out_done = true;
    step.held_out_median_abs_rel_error = median_abs(errs);
    step.held_out_points = errs.size();
    for (auto& [bytes, e] : by_size) step.held_out_by_size[bytes] = median(e);
  } catch (const Error& e) {
    step.held_out_error = e.what();
  }
}

// The median |relative error| of `topo` on the samples `predict` prices, and how many it priced.
std::pair<double, std::size_t> median_error(const Topology& topo, const std::vector<CollectiveSample>& samples,
                                            const SamplePredictor& predict) {
  std::vector<double> errs;
  for (const auto& s : samples)
    if (const double t = predict(topo, s); std::isfinite(t) && s.time_s > 0) errs.push_back((t - s.time_s) / s.time_s);
  return {median_abs(errs), errs.size()};
}

// The refit against the probe-only topology on data the refit did not see (CollectiveStep).
void judge(CollectiveStep& step, const CalibrationInput& in, bool keep_refit) {
  step.probe_in_sample = median_error(step.probe_only, in.collectives, in.predict).first;
  if (!in.holdout.empty()) {
    std::string files;
    for (const auto& f : in.holdout_file_names)
      files += (files.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
    const auto [refit, n] = median_error(step.fit.topology, in.holdout, in.predict);
    step.refit_held_out = refit;
    step.probe_held_out = median_error(step.probe_only, in.holdout, in.predict).first;
    step.judged_points = n;
    step.judged_on = files + " (never fitted)";
    step.judged = n > 0;
  } else if (step.held_out_done) {
    step.refit_held_out = step.held_out_median_abs_rel_error;
    step.probe_held_out = median_error(step.probe_only, split_held_out(in.collectives).test, in.predict).first;
    step.judged_points = step.held_out_points;
    step.judged_on = "the held-out sizes, the refit fitted on the others";
    step.judged = step.judged_points > 0;
  }
  if (!step.judged) {
    step.kept = keep_refit;
    step.verdict = "nothing held out to judge the refit on (it needs 3 sizes or more, or --holdout RUN.h5): the " +
                   std::string(keep_refit ? "refit is written as --keep-refit asks" : "probe-only topology is written");
    return;
  }
  step.kept = step.refit_held_out < step.probe_held_out;
  step.verdict = step.kept ? "the refit is kept: " + pct(step.refit_held_out) + " on " + step.judged_on +
                                 " against the probe-only topology's " + pct(step.probe_held_out)
                           : "the refit is not kept: on " + step.judged_on + " its median |error| " +
                                 pct(step.refit_held_out) + " is not below the probe-only topology's " +
                                 pct(step.probe_held_out) +
                                 " (it follows these runs' noise more than the machine); the probe-only "
                                 "topology is written";
  if (!step.kept && keep_refit) {
    step.kept = true;
    step.verdict = "the refit is written as --keep-refit asks, although on " + step.judged_on + " its median |error| " +
                   pct(step.refit_held_out) + " is not below the probe-only topology's " + pct(step.probe_held_out);
  }
}

}  // namespace

CollectiveStep fit_collectives(Topology& topo, FieldComments& comments, const CalibrationInput& in,
                               const CalibrationOptions& opt, const std::string& refine,
                               std::pair<Bytes, Bytes> candidates, const ProtocolFit& other) {
  const std::vector<CollectiveSample>& samples = in.collectives;
  CollectiveStep step;
  step.refine = refine;
  step.probe_only = topo;
  const FieldComments probe_comments = comments;
  std::vector<Param> params{Param::Gamma};
  if (refine == "all") params = all_terms(topo, comments, in, candidates, step.protocol_note);
  auto fit_on = [&](const Topology& start, const std::vector<CollectiveSample>& on) {
    return refine == "gamma" ? fit_gamma(start, on, opt.weighting, in.predict)
                             : refine_parameters(start, on, params, opt.weighting, in.predict, opt.threads);
  };
  step.fit = fit_on(topo, samples);
  // The probe saw two steps below the eager limit and the model has one inline step: the one the
  // collectives follow better is kept (judged on the measurements fitted, not the held-out ones).
  if (refine == "all" && other.other_inline_bytes > 0) {
    Topology alt = topo;
    alt.intra.msg.inline_limit_bytes = other.other_inline_bytes;
    alt.intra.msg.inline_latency_s = other.other_inline_latency_s;
    alt.intra.latency_s = other.other_latency_s;
    alt.intra.msg.rendezvous_latency_s = other.other_rendezvous_latency_s;
    ParamFit with_other = fit_on(alt, samples);
    const bool keep_other = with_other.median_abs_rel_error_after < step.fit.median_abs_rel_error_after;
    step.protocol_note += "  intra.inline_limit: the probe's steps at " + format_bytes(other.inline_limit_bytes) +
                          " and " + format_bytes(other.other_inline_bytes) + " both fitted: median |error| " +
                          pct(step.fit.median_abs_rel_error_after) + " and " +
                          pct(with_other.median_abs_rel_error_after) + "; " +
                          format_bytes(keep_other ? other.other_inline_bytes : other.inline_limit_bytes) + " kept\n";
    if (keep_other) {
      step.fit = std::move(with_other);
      topo = std::move(alt);
      note(comments, "intra_node.inline_limit",
           "the other of the probe's two steps below the eager limit, which the collectives follow better");
    }
  }
  step.start = topo;  // where the fit started: the held-out check starts there too
  const std::string what =
      std::to_string(step.fit.samples) + " collective points of " + std::to_string(in.run_files) + " run file(s)";
  for (Param p : step.fit.fitted) note(comments, std::string(field_of(p)), fitted_from(opt, what));
  topo = step.fit.topology;
  // A one-to-many curve of factors 1 (no measured schedule has such messages) says nothing.
  if (std::ranges::all_of(topo.fan_out_scale, [](const MessageScale& m) { return m.scale == 1.0; }))
    topo.fan_out_scale.clear();
  held_out_check(step, in, fit_on);
  judge(step, in, opt.keep_refit);
  if (!step.kept) {
    topo = step.probe_only;
    comments = probe_comments;
  }
  return step;
}

LinkStep apply_link_summary(const LinkMatrixSummary& m, Topology& topo, FieldComments& comments) {
  LinkStep step;
  if (!topo.gpu || m.gpus < 2 || !m.pairs_differ) return step;
  const std::string& slow = m.slowest_path;
  const BytesPerSecond before = topo.intra.bw_Bps;
  std::string how;
  if (std::isfinite(m.slowest_pair_bw_Bps)) {
    topo.intra.bw_Bps = std::min(topo.intra.bw_Bps, m.slowest_pair_bw_Bps);
    how = "the peer bandwidth measured on a " + slow + " pair";
  } else if (slow.rfind("NV", 0) == 0 && m.most_nvlinks > 0) {
    const int links = std::atoi(slow.c_str() + 2);
    topo.intra.bw_Bps *= static_cast<double>(links) / m.most_nvlinks;
    how = "the tier's rate x " + std::to_string(links) + "/" + std::to_string(m.most_nvlinks) + " NVLink links";
  } else if (topo.host_link.bw_Bps > 0) {
    topo.intra.bw_Bps = std::min(topo.intra.bw_Bps, topo.host_link.bw_Bps);
    how = "the host link's rate (a " + slow + " pair crosses PCIe)";
  }
  if (how.empty() || topo.intra.bw_Bps == before) return step;
  comments.push_back(
      {"intra_node.bandwidth", "the slowest GPU pair of the probe's link matrix (" + slow + "): " + how});
  step.changed = true;
  step.before_Bps = before;
  step.after_Bps = topo.intra.bw_Bps;
  step.slowest_path = slow;
  step.how = how;
  return step;
}

namespace {

// Median |error| of NCCL's model on `topo` for `runs` (any protocol), and how many it priced.
std::pair<double, std::size_t> nccl_model_error(const Topology& topo, const std::vector<NcclSample>& runs) {
  std::vector<double> errs;
  for (const NcclSample& s : runs) {
    if (!has_closed_form(topo, s.collective, s.algorithm, s.protocol)) continue;
    try {
      const double t =
          closed_form(topo, {s.collective, s.algorithm, s.protocol, s.nodes, s.ranks_per_node, s.bytes}).time_s;
      errs.push_back((t - s.time_s) / s.time_s);
    } catch (const Error&) {
    }
  }
  return {median_abs(errs), errs.size()};
}

}  // namespace

std::optional<NcclStep> fit_nccl_constants(const CalibrationInput& in, const CalibrationOptions& opt, Topology& topo,
                                           FieldComments& comments) {
  if (!in.any_nccl) return std::nullopt;
  NcclStep step;
  try {
    step.fit = fit_nccl(topo, in.nccl_forced);
  } catch (const Error& e) {
    step.error = e.what();
    return step;
  }
  std::string files;
  for (const auto& f : in.run_file_names)
    files += (files.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
  const auto [before_own, own_n] = nccl_model_error(topo, in.nccl_own);
  // Per algorithm: the protocols fitted and the points, for the comments of its rows.
  std::map<Algorithm, std::vector<const NcclTermFit*>> by_algo;
  for (const NcclTermFit& t : step.fit.terms)
    if (t.done) by_algo[t.algorithm].push_back(&t);
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
    const std::string from_runs = fitted_from(opt, files) + ": " + std::string(to_string(algo)) + " forced " + protos +
                                  ", " + std::to_string(n) + " points inside one node";
    note(comments, std::string("nccl.base_latency.") + key, from_runs);
    if (hop) note(comments, std::string("nccl.intra_hop_latency.") + key, from_runs);
    if (bw) note(comments, std::string("nccl.bus_bandwidth.") + key, from_runs);
  }
  topo = step.fit.topology;
  step.own_points = own_n;
  step.own_error_before = before_own;
  step.own_error_after = nccl_model_error(topo, in.nccl_own).first;
  step.fitted = in.nccl_forced;
  return step;
}

namespace {

// What the fit saw: the probe's ring-shift sizes and every probe's nodes and ranks, the
// collectives' and the NCCL runs'.
CalibrationInfo calibration_record(const CalibrationInput& in, const CalibrationOptions& opt,
                                   const CalibrationResult& r) {
  CalibrationInfo rec;
  rec.created = opt.created;
  rec.sources = opt.sources;
  std::set<Bytes> sizes;
  std::set<int> nodes, ranks;
  for (const auto& p : in.probes) {
    for (const auto& row : p.rows)
      if (row.kind == "ring-shift") sizes.insert(row.bytes);
    nodes.insert(p.nodes);
    ranks.insert(p.ranks);
  }
  auto add = [&](Bytes bytes, int n, int per_node) {
    sizes.insert(bytes);
    nodes.insert(n);
    ranks.insert(n * per_node);
  };
  for (const auto& s : in.collectives) add(s.bytes, s.nodes, s.ranks_per_node);
  if (r.nccl)
    for (const auto& s : r.nccl->fitted) add(s.bytes, s.nodes, s.ranks_per_node);
  rec.sizes.assign(sizes.begin(), sizes.end());
  rec.nodes.assign(nodes.begin(), nodes.end());
  rec.ranks.assign(ranks.begin(), ranks.end());
  return rec;
}

bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 1e-15;
}

// The file must load and give back the fitted values before it is written.
void check_reads_back(const std::string& text, const Topology& topo, const std::string& origin) {
  const Topology check = parse_topology(text, origin);
  bool nccl_same = check.nccl.present == topo.nccl.present;
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p)
      nccl_same = nccl_same && close(check.nccl.base_latency_s[a][p], topo.nccl.base_latency_s[a][p]) &&
                  close(check.nccl.bus_bw_Bps[a][p], topo.nccl.bus_bw_Bps[a][p]);
  if (!close(check.intra.bw_Bps, topo.intra.bw_Bps) || !close(check.intra.latency_s, topo.intra.latency_s) ||
      !close(check.reduce_bw_Bps, topo.reduce_bw_Bps) || check.storage.size() != topo.storage.size() || !nccl_same)
    throw Error("the written topology does not read back to the fitted values (internal error)");
}

// Every value the fit writes must be one a topology file may hold (units.h): a bandwidth that
// overflows or a time that rounds to zero would price transfers at 0 s.
void check_physical(const Topology& topo) {
  const auto bandwidth = [](const char* field, BytesPerSecond v) {
    if (!(v >= kMinBandwidth_Bps && v <= kMaxBandwidth_Bps))
      throw Error(std::string("the fit gives ") + field + " = " + format_bandwidth(v) +
                  ", outside what a topology may hold (1 B/s to 1 PB/s): the measurements are broken; re-run "
                  "the probe (and the runs)");
  };
  const auto time = [](const char* field, Seconds v) {
    if (!(v >= 0 && v <= kMaxTime_s))
      throw Error(std::string("the fit gives ") + field + " = " + std::to_string(v) +
                  " s, outside what a topology may hold (0 to 1e6 s): the measurements are broken; re-run the "
                  "probe (and the runs)");
  };
  bandwidth("intra_node.bandwidth", topo.intra.bw_Bps);
  bandwidth("reduction.bandwidth", topo.reduce_bw_Bps);
  bandwidth("device.memory_bandwidth", topo.memory_bw_Bps);
  if (topo.network.present()) bandwidth("network.nic_bandwidth", topo.network.nic_bw_Bps);
  time("intra_node.latency", topo.intra.latency_s);
  time("intra_node.rendezvous_latency", topo.intra.msg.rendezvous_latency_s);
  time("intra_node.message_overhead", topo.intra.msg.message_overhead_s);
  time("network.latency", topo.network.latency_s);
  time("call_overhead", topo.call_overhead_s);
}

// Labels every value of `text` that no comment names a source for as the base preset's: a
// `key: value` line with no comment, outside the calibrated: record, other than the name and the
// description.
std::string label_preset_values(const std::string& text, const std::string& base_name) {
  std::string out, section;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    const std::size_t indent = line.find_first_not_of(' ');
    const std::size_t colon = line.find(": ");
    if (indent == 0 && colon != std::string::npos) section = line.substr(0, colon);
    if (indent == 0 && line.back() == ':') section = line.substr(0, line.size() - 1);
    const bool value_line = indent != std::string::npos && line[indent] != '#' && line[indent] != '-' &&
                            colon != std::string::npos && colon + 2 < line.size();
    const bool own = indent == 0 && (section == "name" || section == "description");
    if (value_line && !own && section != "calibrated" && line.find('#') == std::string::npos)
      line += "  # preset " + base_name + ": not measured on this machine";
    out += line + "\n";
  }
  return out;
}

bool loader_accepts(const std::string& yaml_text) {
  try {
    parse_topology(yaml_text, "calibrated topology");
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void finish_calibration(const CalibrationInput& in, const CalibrationOptions& opt, CalibrationResult& r) {
  r.record = calibration_record(in, opt, r);
  const ProbeInput& probe = in.probes.front();
  const std::string today = opt.created;
  Topology& topo = r.topology;
  topo.description = "Calibrated by commsim calibrate on " + today.substr(0, 10) + " from " +
                     std::to_string(in.probes.size()) + " probe file(s) (" + probe.cpu_model + ", " +
                     std::to_string(probe.nodes) + " node(s), " + std::to_string(probe.ranks) + " ranks)";
  std::string inputs;
  for (const auto& f : opt.sources) inputs += (inputs.empty() ? "" : ", ") + f;
  const Topology& base = in.base;
  r.header = {
      topo.name + ": a topology fitted to measurements by `commsim calibrate` (" + today + ").",
      "Inputs: " + inputs,
      "Base topology: " + base.name +
          (base.source_path.empty() ? "" : " (" + std::filesystem::path(base.source_path).filename().string() + ")") +
          ". Each value's comment names its source: 'fitted ... from' the probe's rows or the collective",
      "points of run files (the fit), 'probe:' the probed machine's facts, 'preset " + base.name +
          "' the base topology (not measured on this machine).",
      "alpha/beta per tier: least squares on t = alpha + bytes * beta over the probe's ring-shift times",
      "(every rank sends to the next and receives from the previous rank of its tier at once: one step of a ring).",
  };
  if (r.nccl && !r.nccl->fitted.empty())
    r.header.push_back(
        "nccl: base latency, hop latency and bus bandwidth per algorithm x protocol, least squares on the "
        "runs with NCCL's algorithm and protocol forced (t = base + hops x intra_hop + bus bytes / "
        "bus_bandwidth).");
  // One comment per field: a later fit of the same field replaces the earlier note.
  for (std::size_t i = r.comments.size(); i-- > 0;)
    for (std::size_t j = 0; j < i; ++j)
      if (r.comments[j].first == r.comments[i].first) r.comments[j].second.clear();
  check_physical(topo);
  r.text = label_preset_values(topology_yaml(topo, r.header, r.comments, &r.record, true), base.name) + in.storage_yaml;
  r.with_section = loader_accepts(r.text);
  if (!r.with_section)
    r.text =
        label_preset_values(topology_yaml(topo, r.header, r.comments, &r.record, false), base.name) + in.storage_yaml;
  check_reads_back(r.text, topo, opt.out.empty() ? opt.name : opt.out);
}

}  // namespace commsim::calibration
