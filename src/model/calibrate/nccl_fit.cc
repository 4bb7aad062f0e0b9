// NCCL's own constants (the nccl: section) fitted to runs with NCCL's algorithm and protocol forced.
#include "model/calibrate/nccl_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "model/calibrate/calibrate.h"
#include "model/calibrate/least_squares.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/nccl/from_topology.h"

namespace commsim {
namespace {

int nccl_algo_index(Algorithm a) {
  return a == Algorithm::NcclTree ? kNcclTableTree : kNcclTableRing;
}
int nccl_proto_index(Protocol p) {
  return p == Protocol::LL ? 0 : p == Protocol::LL128 ? 1 : 2;
}

CostQuery nccl_query(const NcclSample& s) {
  return {s.collective, s.algorithm, s.protocol, s.nodes, s.ranks_per_node, s.bytes};
}

// A sample's coefficients in NCCL's model, read off closed_form: t - call = base * c_base + hop *
// hops + bus_bytes / bus_bw.
struct NcclColumns {
  double base = 0, hops = 0, bus_bytes = 0;
};
NcclColumns nccl_columns(const Topology& topo, const NcclSample& s) {
  const int a = nccl_algo_index(s.algorithm), p = nccl_proto_index(s.protocol);
  Topology probe = topo;
  probe.nccl.base_latency_s[a][p] = 1;
  probe.nccl.intra_hop_latency_s[a][p] = 0;
  probe.nccl.bus_bw_Bps[a][p] = 1;
  const Cost one_base = closed_form(probe, nccl_query(s));
  probe.nccl.base_latency_s[a][p] = 0;
  probe.nccl.intra_hop_latency_s[a][p] = 1;
  const Cost one_hop = closed_form(probe, nccl_query(s));
  const double call = topo.call_overhead_s;
  return {one_base.latency_s - call, one_hop.latency_s - call, one_base.bandwidth_s};
}

double nccl_predict(const Topology& topo, const NcclSample& s) {
  return closed_form(topo, nccl_query(s)).time_s;
}

// Weighted least squares of y on the chosen columns (at most 3), weights 1/t^2, each column scaled
// to unit weighted norm first (the base column is ~1 s, the bandwidth one ~1e8 bytes). False when
// the columns are (nearly) dependent.
bool solve_weighted(const std::vector<std::array<double, 3>>& x, const std::vector<double>& y,
                    const std::vector<double>& t, const std::array<bool, 3>& use, std::array<double, 3>& coef) {
  std::vector<int> idx;
  for (int j = 0; j < 3; ++j)
    if (use[j]) idx.push_back(j);
  const auto n = static_cast<Eigen::Index>(idx.size());
  const auto rows = static_cast<Eigen::Index>(y.size());
  coef = {0, 0, 0};
  if (n == 0) return true;
  // The design matrix and the measurements, each row divided by its t (weights 1/t^2).
  Eigen::MatrixXd xw(rows, n);
  Eigen::VectorXd yw(rows);
  for (Eigen::Index i = 0; i < rows; ++i) {
    const auto r = static_cast<std::size_t>(i);
    for (Eigen::Index c = 0; c < n; ++c)
      xw(i, c) = x[r][static_cast<std::size_t>(idx[static_cast<std::size_t>(c)])] / t[r];
    yw(i) = y[r] / t[r];
  }
  const Eigen::VectorXd norm = xw.colwise().norm();
  if (!(norm.array() > 0).all()) return false;
  xw = xw * norm.cwiseInverse().asDiagonal();
  Eigen::VectorXd scaled;
  // Unit diagonal: a pivot below 1e-9 means dependent columns.
  if (!least_squares::solve(xw.transpose() * xw, xw.transpose() * yw, scaled, 1e-9, 1.0)) return false;
  for (Eigen::Index c = 0; c < n; ++c)
    coef[static_cast<std::size_t>(idx[static_cast<std::size_t>(c)])] = scaled(c) / norm(c);
  return true;
}

// Fits one (algorithm, protocol) to `rows` (all of it, one node) and writes the result into `topo`.
NcclTermFit fit_nccl_term(Topology& topo, const std::vector<NcclSample>& rows, Algorithm algo, Protocol proto) {
  NcclTermFit f;
  f.algorithm = algo;
  f.protocol = proto;
  f.samples = rows.size();
  const int a = nccl_algo_index(algo), p = nccl_proto_index(proto);
  std::set<Bytes> sizes;
  std::set<double> hop_counts;
  std::vector<std::array<double, 3>> x;
  std::vector<double> y, t;
  for (const NcclSample& s : rows) {
    const NcclColumns c = nccl_columns(topo, s);
    x.push_back({c.base, c.hops, c.bus_bytes});
    y.push_back(s.time_s - topo.call_overhead_s);
    t.push_back(s.time_s);
    sizes.insert(s.bytes);
    hop_counts.insert(c.hops);
  }
  if (sizes.size() < 2) {
    f.why_not = "needs at least two sizes (has " + std::to_string(sizes.size()) + ")";
    return f;
  }
  // Unknowns: base, hop, 1 / bus bandwidth. The hop latency is held when one hop count is all the
  // runs show (it would only trade places with the base latency).
  std::array<bool, 3> use = {true, hop_counts.size() > 1, true};
  const double kept_hop = topo.nccl.intra_hop_latency_s[a][p];
  std::array<double, 3> coef{};
  for (int attempt = 0; attempt < 6; ++attempt) {
    std::vector<double> yy = y;
    if (!use[1])
      for (std::size_t i = 0; i < yy.size(); ++i) yy[i] -= x[i][1] * (f.hop_clamped ? 0.0 : kept_hop);
    if (!solve_weighted(x, yy, t, use, coef)) {
      if (use[1]) {  // hop counts collinear with the base: hold the hop
        use[1] = false;
        continue;
      }
      f.why_not = "the sizes do not separate latency from bandwidth";
      return f;
    }
    if (use[2] && !(coef[2] > kMinBetaSPerByte)) {
      f.bw_clamped = true;
      use[2] = false;
      continue;
    }
    if (use[1] && coef[1] < 0) {
      f.hop_clamped = true;
      use[1] = false;
      continue;
    }
    if (coef[0] < 0) {
      f.base_clamped = true;
      use[0] = false;
      continue;
    }
    break;
  }
  f.hop_fitted = use[1];
  f.base_latency_s = use[0] ? coef[0] : 0;
  f.intra_hop_latency_s = use[1] ? coef[1] : f.hop_clamped ? 0 : kept_hop;
  f.bus_bw_Bps = use[2] ? 1.0 / coef[2] : 0;
  topo.nccl.base_latency_s[a][p] = f.base_latency_s;
  topo.nccl.intra_hop_latency_s[a][p] = f.intra_hop_latency_s;
  topo.nccl.bus_bw_Bps[a][p] = f.bus_bw_Bps;
  f.done = true;

  // The fit's quality, through the closed form on the fitted topology.
  double mean = 0;
  for (const NcclSample& s : rows) mean += s.time_s;
  mean /= static_cast<double>(rows.size());
  double ss_res = 0, ss_tot = 0;
  std::vector<double> rel;
  for (const NcclSample& s : rows) {
    const double pred = nccl_predict(topo, s);
    ss_res += (pred - s.time_s) * (pred - s.time_s);
    ss_tot += (s.time_s - mean) * (s.time_s - mean);
    rel.push_back((pred - s.time_s) / s.time_s);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
  f.median_abs_rel_residual = median_abs(rel);
  for (double r : rel) f.max_abs_rel_residual = std::max(f.max_abs_rel_residual, std::fabs(r));
  return f;
}

}  // namespace

NcclFit fit_nccl(const Topology& topo, const std::vector<NcclSample>& samples) {
  NcclFit out;
  out.topology = topo;
  out.topology.nccl.present = true;  // a topology without NCCL constants starts from zeros
  std::map<std::pair<int, int>, std::vector<NcclSample>> by_term;
  for (const NcclSample& s : samples) {
    if (s.algorithm != Algorithm::NcclRing && s.algorithm != Algorithm::NcclTree) continue;
    if (s.protocol == Protocol::None || !(s.time_s > 0) || s.ranks_per_node < 1) continue;
    if (s.nodes != 1) {
      ++out.multi_node;
      continue;
    }
    if (s.ranks_per_node < 2) continue;  // one rank: nothing moves
    if (!has_closed_form(out.topology, s.collective, s.algorithm, s.protocol)) continue;
    by_term[{nccl_algo_index(s.algorithm), nccl_proto_index(s.protocol)}].push_back(s);
  }
  if (by_term.empty())
    throw Error(
        "no forced NCCL run inside one node to fit NCCL's constants to: measure nccl-ring and nccl-tree "
        "with --protocols LL,LL128,Simple on two or more GPUs of one node");
  for (auto& [key, rows] : by_term) {
    const Algorithm algo = rows.front().algorithm;
    const Protocol proto = rows.front().protocol;
    std::vector<double> before;
    for (const NcclSample& s : rows) before.push_back((nccl_predict(out.topology, s) - s.time_s) / s.time_s);
    NcclTermFit f = fit_nccl_term(out.topology, rows, algo, proto);
    f.median_abs_rel_error_before = median_abs(before);
    std::set<Collective> colls;
    std::set<int> ranks;
    f.min_bytes = rows.front().bytes;
    for (const NcclSample& s : rows) {
      colls.insert(s.collective);
      ranks.insert(s.nodes * s.ranks_per_node);
      f.min_bytes = std::min(f.min_bytes, s.bytes);
      f.max_bytes = std::max(f.max_bytes, s.bytes);
    }
    f.collectives.assign(colls.begin(), colls.end());
    f.ranks.assign(ranks.begin(), ranks.end());
    // Held-out check: the same fit on every other size and the largest, from the input topology.
    std::set<Bytes> distinct;
    for (const NcclSample& s : rows) distinct.insert(s.bytes);
    if (f.done && distinct.size() >= 4) {
      std::vector<CollectiveSample> as_collective;
      for (std::size_t i = 0; i < rows.size(); ++i)
        as_collective.push_back(
            {rows[i].collective, Algorithm::Ring, 1, rows[i].ranks_per_node, rows[i].bytes, rows[i].time_s, i});
      const HeldOutSplit split = split_held_out(as_collective);
      std::vector<NcclSample> train;
      for (const CollectiveSample& c : split.train) train.push_back(rows[c.key]);
      Topology half = topo;
      half.nccl.present = true;
      const NcclTermFit h = fit_nccl_term(half, train, algo, proto);
      if (h.done && !split.test.empty()) {
        std::vector<double> errs;
        for (const CollectiveSample& c : split.test)
          errs.push_back((nccl_predict(half, rows[c.key]) - rows[c.key].time_s) / rows[c.key].time_s);
        f.held_out_done = true;
        f.held_out = errs.size();
        f.held_out_median_abs_rel_error = median_abs(errs);
        for (double e : errs) f.held_out_max_abs_rel_error = std::max(f.held_out_max_abs_rel_error, std::fabs(e));
      }
    }
    out.terms.push_back(std::move(f));
  }
  return out;
}

}  // namespace commsim

// ---- NCCL's ported model on imported runs (nccl_fit.h) ------------------------------------------
namespace commsim {
namespace {

// One sample as the fit sees it at one bandwidth scale: NCCL's time and its latency part without
// the offset and the host's launch floor, the floor, and the measured time.
struct Priced {
  double model_s = 0, latency_s = 0, host_s = 0, measured_s = 0;
};

CostQuery model_query(const NcclSample& s) {
  return {s.collective, s.algorithm, s.protocol, s.nodes, s.ranks_per_node, s.bytes};
}

std::vector<Priced> price_at(const Topology& topo, const std::vector<NcclSample>& samples, double scale) {
  Topology bare = topo;
  bare.nccl.machine.bandwidth_scale = scale;
  bare.nccl.machine.latency_offset_s = 0;
  bare.nccl.machine.launch_s = bare.nccl.machine.graph_launch_s = 0;  // the floor is applied below
  const double host_s = nccl::host_call_us(topo) * 1e-6;
  std::vector<Priced> out;
  for (const NcclSample& s : samples) {
    const Cost c = closed_form(bare, model_query(s));
    out.push_back({c.time_s, c.latency_s, host_s, s.time_s});
  }
  return out;
}

double predicted_s(const Priced& p, Seconds offset_s) {
  return std::max(p.host_s, p.model_s + std::max(offset_s, -p.latency_s));
}

struct ScaleOffset {
  double scale = 1, offset_s = 0, cost = 0;
  bool offset_at_bound = false;
};

// The best offset at one scale: the sum of |relative error| is piecewise linear in the offset, so
// its minimum is at a breakpoint (a sample made exact) or at the bound.
ScaleOffset best_offset(const std::vector<Priced>& priced, double scale) {
  // The offset below which some sample's latency would go below 0.
  double lowest = -priced.front().latency_s;
  for (const Priced& p : priced) lowest = std::max(lowest, -p.latency_s);
  std::vector<double> candidates{0.0, lowest};
  for (const Priced& p : priced) candidates.push_back(std::max(lowest, p.measured_s - p.model_s));
  ScaleOffset best{scale, 0, std::numeric_limits<double>::infinity()};
  for (double offset : candidates) {
    double cost = 0;
    for (const Priced& p : priced) cost += std::fabs(predicted_s(p, offset) - p.measured_s) / p.measured_s;
    if (cost < best.cost) best = {scale, offset, cost, offset <= lowest};
  }
  return best;
}

constexpr double kMinScale = 0.05, kScaleStep = 0.005;

ScaleOffset search(const Topology& topo, const std::vector<NcclSample>& samples) {
  ScaleOffset best{1, 0, std::numeric_limits<double>::infinity()};
  for (int i = 0;; ++i) {
    const double scale = std::min(1.0, kMinScale + i * kScaleStep);
    const ScaleOffset here = best_offset(price_at(topo, samples, scale), scale);
    if (here.cost < best.cost) best = here;
    if (scale >= 1.0) break;
  }
  return best;
}

Topology with_fit(Topology topo, const ScaleOffset& f) {
  topo.nccl.machine.bandwidth_scale = f.scale;
  topo.nccl.machine.latency_offset_s = f.offset_s;
  return topo;
}

std::vector<double> rel_errors(const Topology& topo, const std::vector<NcclSample>& samples) {
  std::vector<double> out;
  for (const NcclSample& s : samples) out.push_back((closed_form(topo, model_query(s)).time_s - s.time_s) / s.time_s);
  return out;
}

}  // namespace

NcclModelFit fit_nccl_model(const Topology& topology, const std::vector<NcclSample>& all) {
  std::vector<NcclSample> samples;
  for (const NcclSample& s : all)
    if (is_nccl_algorithm(s.algorithm) && s.nodes * s.ranks_per_node >= 2 && s.time_s > 0 && s.bytes > 0 &&
        has_closed_form(topology, s.collective, s.algorithm, s.protocol))
      samples.push_back(s);
  if (samples.empty())
    throw Error(
        "no measured NCCL collective of two ranks or more to fit NCCL's model to (import nccl-tests "
        "output with `commsim import LOG --topology NAME --out FILE.h5` first)");
  NcclModelFit out;
  out.samples = samples.size();
  out.median_abs_rel_error_before = median_abs(rel_errors(topology, samples));
  const ScaleOffset f = search(topology, samples);
  out.topology = with_fit(topology, f);
  out.bandwidth_scale = f.scale;
  out.latency_offset_s = f.offset_s;
  out.scale_at_bound = f.scale <= kMinScale || f.scale >= 1.0;
  out.offset_at_bound = f.offset_at_bound;
  out.median_abs_rel_error = median_abs(rel_errors(out.topology, samples));
  // Held-out: every other distinct size (and the largest) per collective, judged between.
  std::vector<CollectiveSample> as_collective;
  for (std::size_t i = 0; i < samples.size(); ++i)
    as_collective.push_back({samples[i].collective, Algorithm::Ring, samples[i].nodes, samples[i].ranks_per_node,
                             samples[i].bytes, samples[i].time_s, i});
  const HeldOutSplit split = split_held_out(as_collective);
  if (split.train.size() >= 2 && !split.test.empty()) {
    std::vector<NcclSample> train;
    for (const CollectiveSample& c : split.train) train.push_back(samples[c.key]);
    const Topology half = with_fit(topology, search(topology, train));
    for (const CollectiveSample& c : split.test) {
      const NcclSample& s = samples[c.key];
      out.held_out.push_back({s.bytes, s.collective, rel_errors(half, {s}).front()});
    }
  }
  return out;
}

}  // namespace commsim
