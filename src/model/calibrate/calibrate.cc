#include "model/calibrate/calibrate.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim {
namespace {

double weight_of(double measured, FitWeighting w) { return w == FitWeighting::Absolute ? 1.0 : 1.0 / (measured * measured); }

void check_samples(const std::vector<TimedSize>& samples, const std::string& what) {
  for (const auto& s : samples)
    if (!(s.time_s > 0) || !std::isfinite(s.time_s))
      throw Error(what + ": a measured time is not positive (" + std::to_string(s.time_s) + " s at " +
                  format_bytes(s.bytes) + "); re-run the measurement");
}

std::vector<Bytes> distinct_sizes(const std::vector<TimedSize>& samples) {
  std::vector<Bytes> sizes;
  for (const auto& s : samples) sizes.push_back(s.bytes);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// R^2 on absolute values: 1 - SS_res / SS_tot. 1 when the data are constant and fitted exactly.
double r_squared(const std::vector<double>& measured, const std::vector<double>& fitted) {
  if (measured.empty()) return 0;
  double mean = 0;
  for (double m : measured) mean += m;
  mean /= static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ss_res += (measured[i] - fitted[i]) * (measured[i] - fitted[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
  }
  if (ss_tot <= 0) return ss_res <= 0 ? 1.0 : 0.0;
  return 1.0 - ss_res / ss_tot;
}

// Solves the n x n system A x = b (A symmetric positive semi-definite) by Gaussian elimination with
// partial pivoting. Returns false when A is singular to working precision.
bool solve_dense(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  double scale = 0;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(a[i][i]));
  if (scale <= 0) return false;
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
    if (std::fabs(a[piv][col]) <= 1e-13 * scale) return false;
    std::swap(a[piv], a[col]);
    std::swap(b[piv], b[col]);
    for (std::size_t r = col + 1; r < n; ++r) {
      double f = a[r][col] / a[col][col];
      for (std::size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  x.assign(n, 0);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t c = i + 1; c < n; ++c) s -= a[i][c] * x[c];
    x[i] = s / a[i][i];
  }
  return true;
}

LineFit finish_line(const std::vector<TimedSize>& samples, double alpha, double beta) {
  LineFit fit;
  fit.alpha_s = alpha;
  fit.beta_s_per_byte = beta;
  fit.samples = samples.size();
  std::vector<double> measured, fitted, rel;
  for (const auto& s : samples) {
    double f = fit.predict_s(s.bytes);
    measured.push_back(s.time_s);
    fitted.push_back(f);
    fit.residual_s.push_back(s.time_s - f);
    rel.push_back((s.time_s - f) / s.time_s);
  }
  fit.r2 = r_squared(measured, fitted);
  fit.median_abs_rel_residual = median_abs(rel);
  for (double r : rel) fit.max_abs_rel_residual = std::max(fit.max_abs_rel_residual, std::fabs(r));
  return fit;
}

}  // namespace

// Closed-form time of one sample on a topology; NaN when the model cannot price it.
double predict_closed_form(const Topology& topo, const CollectiveSample& s) {
  CostQuery q;
  q.collective = s.collective;
  q.algorithm = s.algorithm;
  q.nodes = s.nodes;
  q.ranks_per_node = s.ranks_per_node;
  q.bytes = s.bytes;
  try {
    return closed_form(topo, q).time_s;
  } catch (const Error&) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

namespace {

// The points after a curve's first are parameters `first`, first + 1, ... (count of them): the
// 1-based point p is, or -1 when p is not one of them.
int curve_point(Param p, Param first, int count) {
  const int i = static_cast<int>(p) - static_cast<int>(first) + 1;
  return i >= 1 && i <= count ? i : -1;
}
int working_set_index(Param p) {
  return curve_point(p, Param::WorkingSet1, 6);
}
int node_working_set_index(Param p) {
  return curve_point(p, Param::NodeWorkingSet1, 6);
}
int local_op_index(Param p) {
  return curve_point(p, Param::LocalOp1, 5);
}
int message_index(Param p) {
  return curve_point(p, Param::Message1, 7);
}
// From 0 (the network's curve has no point held at 1).
int net_message_index(Param p) {
  const int i = curve_point(p, Param::NetMessage1, 6);
  return i > 0 ? i - 1 : -1;
}
// From 0, as the network's curve (its last point is held at 1).
int fan_out_index(Param p) {
  const int i = curve_point(p, Param::FanOut1, 6);
  return i > 0 ? i - 1 : -1;
}
bool is_scale_param(Param p) {
  return working_set_index(p) > 0 || node_working_set_index(p) > 0 || local_op_index(p) > 0 ||
         message_index(p) > 0 || p == Param::IntraOneWay || p == Param::IntraExchange || p == Param::NetOneWay ||
         net_message_index(p) >= 0 || fan_out_index(p) >= 0;
}
bool is_beta_param(Param p) {
  return p == Param::IntraBeta || p == Param::NetBeta || p == Param::Gamma || p == Param::MemoryBeta;
}
bool is_time_param(Param p) {
  return p == Param::IntraLatency || p == Param::NetLatency || p == Param::IntraRendezvousLatency ||
         p == Param::IntraMessageOverhead || p == Param::CallOverhead || p == Param::IntraRendezvousOverhead ||
         p == Param::IntraInlineLatency || p == Param::IntraInlineOverhead;
}
// Every parameter is a time, a beta (s/B), a scale or factor, or the receive share (0..1).
double param_floor(Param p) {
  if (is_time_param(p) || p == Param::IntraReceiveShare || p == Param::IntraSendShare) return 0.0;
  if (is_scale_param(p)) return 0.02;  // a cache effect of 50x is beyond any machine
  return kMinBetaSPerByte;
}
bool is_latency_factor(Param p) {
  return p == Param::IntraOneWay || p == Param::IntraExchange || p == Param::NetOneWay;
}
// The smallest step that still changes a parameter measurably (param_floor: the floor it must
// stay above).
double param_step(Param p, double value) {
  double typical = is_time_param(p) ? 1e-7 : is_beta_param(p) ? 1e-12 : 1.0;
  return std::max(std::fabs(value) * 1e-3, typical * 1e-3);
}

struct Evaluation {
  std::vector<std::size_t> used;  // indices into the samples
  std::vector<double> predicted;
};

// Calls f(0) .. f(count - 1), on up to `threads` threads at once (the calling one among them); the
// first exception any call throws is thrown here once all have ended.
void for_each_index(std::size_t count, int threads, const std::function<void(std::size_t)>& f) {
  const std::size_t workers = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (std::size_t i = 0; i < count; ++i) f(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::mutex failed_mutex;
  std::exception_ptr failed;
  auto work = [&] {
    for (std::size_t i; (i = next++) < count;) {
      try {
        f(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failed_mutex);
        if (!failed) failed = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

// The predictions of the samples a fit uses, priced by up to `threads` threads at once.
Evaluation evaluate(const Topology& topo, const std::vector<CollectiveSample>& samples, const SamplePredictor& predict,
                    int threads = 1) {
  std::vector<double> t(samples.size(), std::numeric_limits<double>::quiet_NaN());
  for_each_index(samples.size(), threads, [&](std::size_t i) {
    if (samples[i].time_s > 0 && is_hand_written(samples[i].algorithm)) t[i] = predict(topo, samples[i]);
  });
  Evaluation e;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(t[i])) continue;
    e.used.push_back(i);
    e.predicted.push_back(t[i]);
  }
  return e;
}

// What the fit minimises over the samples an evaluation priced: sum of |r| / t (Robust) or of
// w r^2. Infinite when a sample of `reference` could not be priced (the step is then refused).
double objective(const Evaluation& e, const std::vector<CollectiveSample>& samples, FitWeighting weighting,
                 std::size_t reference) {
  if (e.used.size() < reference) return INFINITY;
  double sum = 0;
  for (std::size_t k = 0; k < e.used.size(); ++k) {
    const double meas = samples[e.used[k]].time_s, r = meas - e.predicted[k];
    sum += weighting == FitWeighting::Robust ? std::fabs(r) / meas : weight_of(meas, weighting) * r * r;
  }
  return sum;
}

void fill_quality(ParamFit& fit, const std::vector<CollectiveSample>& samples, const Evaluation& before,
                  const Evaluation& after) {
  std::vector<double> rel_before, measured, predicted;
  for (std::size_t k = 0; k < before.used.size(); ++k) {
    double m = samples[before.used[k]].time_s;
    rel_before.push_back((before.predicted[k] - m) / m);
  }
  fit.rel_error.clear();
  for (std::size_t k = 0; k < after.used.size(); ++k) {
    double m = samples[after.used[k]].time_s;
    fit.rel_error.push_back((after.predicted[k] - m) / m);
    measured.push_back(m);
    predicted.push_back(after.predicted[k]);
  }
  fit.median_abs_rel_error_before = median_abs(rel_before);
  fit.median_abs_rel_error_after = median_abs(fit.rel_error);
  fit.r2 = r_squared(measured, predicted);
  fit.samples = after.used.size();
  fit.skipped = samples.size() - after.used.size();
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double median_abs(std::vector<double> values) {
  for (double& v : values) v = std::fabs(v);
  return median(std::move(values));
}

LineFit fit_line(const std::vector<TimedSize>& samples, FitWeighting weighting, const std::string& what) {
  check_samples(samples, what);
  if (distinct_sizes(samples).size() < 2)
    throw Error(what + ": need at least two distinct message sizes to fit latency and bandwidth (got " +
                std::to_string(distinct_sizes(samples).size()) + ")");
  // Weighted normal equations of t = a + n b.
  double sw = 0, sn = 0, snn = 0, st = 0, snt = 0;
  for (const auto& s : samples) {
    double w = weight_of(s.time_s, weighting), n = static_cast<double>(s.bytes);
    sw += w;
    sn += w * n;
    snn += w * n * n;
    st += w * s.time_s;
    snt += w * n * s.time_s;
  }
  double det = sw * snn - sn * sn;
  double alpha = (st * snn - sn * snt) / det;
  double beta = (sw * snt - sn * st) / det;
  bool alpha_clamped = false, beta_clamped = false;
  if (alpha < 0) {  // a negative latency has no meaning: fit through the origin
    alpha_clamped = true;
    alpha = 0;
    beta = snt / snn;
  }
  if (!(beta >= kMinBetaSPerByte)) {  // no visible bandwidth term: latency only
    beta_clamped = true;
    beta = kMinBetaSPerByte;
    alpha = std::max(0.0, (st - sn * beta) / sw);
  }
  LineFit fit = finish_line(samples, alpha, beta);
  fit.alpha_clamped = alpha_clamped;
  fit.beta_clamped = beta_clamped;
  return fit;
}

HeldOutCheck held_out_check(const std::vector<TimedSize>& samples, FitWeighting weighting, const std::string& what) {
  std::vector<Bytes> sizes = distinct_sizes(samples);
  if (sizes.size() < 4)
    throw Error(what + ": the held-out check needs at least 4 distinct message sizes (got " +
                std::to_string(sizes.size()) + "); probe more sizes");
  std::map<Bytes, std::size_t> index_of;
  for (std::size_t i = 0; i < sizes.size(); ++i) index_of[sizes[i]] = i;
  std::vector<TimedSize> train, test;
  for (const auto& s : samples) (index_of[s.bytes] % 2 == 0 ? train : test).push_back(s);
  HeldOutCheck check;
  check.fit = fit_line(train, weighting, what + " (held-out fit)");
  std::vector<double> rel;
  for (const auto& s : test) {
    double e = (check.fit.predict_s(s.bytes) - s.time_s) / s.time_s;
    rel.push_back(e);
    if (std::fabs(e) >= check.max_abs_rel_error) {
      check.max_abs_rel_error = std::fabs(e);
      check.worst_bytes = s.bytes;
    }
  }
  check.held_out = test.size();
  check.median_abs_rel_error = median_abs(rel);
  return check;
}

std::string_view to_string(Param p) {
  switch (p) {
    case Param::IntraLatency: return "intra.latency";
    case Param::IntraBeta: return "intra.beta";
    case Param::NetLatency: return "network.latency";
    case Param::NetBeta: return "network.beta";
    case Param::Gamma: return "gamma";
    case Param::MemoryBeta: return "memory.beta";
    case Param::IntraRendezvousLatency: return "intra.rendezvous_latency";
    case Param::IntraMessageOverhead: return "intra.message_overhead";
    case Param::CallOverhead: return "call_overhead";
    case Param::IntraRendezvousOverhead: return "intra.rendezvous_overhead";
    case Param::IntraInlineLatency: return "intra.inline_latency";
    case Param::IntraInlineOverhead: return "intra.inline_overhead";
    case Param::IntraOneWay: return "intra.one_way_factor";
    case Param::IntraReceiveShare: return "intra.overhead_receive_share";
    case Param::IntraExchange: return "intra.exchange_factor";
    case Param::NetOneWay: return "network.one_way_factor";
    case Param::IntraSendShare: return "intra.send_share";
    case Param::NetMessage1: return "network_message_scale[0]";
    case Param::NetMessage2: return "network_message_scale[1]";
    case Param::NetMessage3: return "network_message_scale[2]";
    case Param::NetMessage4: return "network_message_scale[3]";
    case Param::NetMessage5: return "network_message_scale[4]";
    case Param::NetMessage6: return "network_message_scale[5]";
    case Param::WorkingSet1: return "working_set_scale[1]";
    case Param::WorkingSet2: return "working_set_scale[2]";
    case Param::WorkingSet3: return "working_set_scale[3]";
    case Param::WorkingSet4: return "working_set_scale[4]";
    case Param::WorkingSet5: return "working_set_scale[5]";
    case Param::WorkingSet6: return "working_set_scale[6]";
    case Param::NodeWorkingSet1: return "node_working_set_scale[1]";
    case Param::NodeWorkingSet2: return "node_working_set_scale[2]";
    case Param::NodeWorkingSet3: return "node_working_set_scale[3]";
    case Param::NodeWorkingSet4: return "node_working_set_scale[4]";
    case Param::NodeWorkingSet5: return "node_working_set_scale[5]";
    case Param::NodeWorkingSet6: return "node_working_set_scale[6]";
    case Param::FanOut1: return "fan_out_scale[0]";
    case Param::FanOut2: return "fan_out_scale[1]";
    case Param::FanOut3: return "fan_out_scale[2]";
    case Param::FanOut4: return "fan_out_scale[3]";
    case Param::FanOut5: return "fan_out_scale[4]";
    case Param::FanOut6: return "fan_out_scale[5]";
    case Param::LocalOp1: return "local_op_scale[1]";
    case Param::LocalOp2: return "local_op_scale[2]";
    case Param::LocalOp3: return "local_op_scale[3]";
    case Param::LocalOp4: return "local_op_scale[4]";
    case Param::LocalOp5: return "local_op_scale[5]";
    case Param::Message1: return "message_scale[1]";
    case Param::Message2: return "message_scale[2]";
    case Param::Message3: return "message_scale[3]";
    case Param::Message4: return "message_scale[4]";
    case Param::Message5: return "message_scale[5]";
    case Param::Message6: return "message_scale[6]";
    case Param::Message7: return "message_scale[7]";
  }
  return "?";
}

std::string_view field_of(Param p) {
  switch (p) {
    case Param::IntraLatency: return "intra_node.latency";
    case Param::IntraBeta: return "intra_node.bandwidth";
    case Param::NetLatency: return "network.latency";
    case Param::NetBeta: return "network.nic_bandwidth";
    case Param::Gamma: return "reduction.bandwidth";
    case Param::MemoryBeta: return "device.memory_bandwidth";
    case Param::IntraRendezvousLatency: return "intra_node.rendezvous_latency";
    case Param::IntraMessageOverhead: return "intra_node.message_overhead";
    case Param::CallOverhead: return "call_overhead";
    case Param::IntraRendezvousOverhead: return "intra_node.rendezvous_overhead";
    case Param::IntraInlineLatency: return "intra_node.inline_latency";
    case Param::IntraInlineOverhead: return "intra_node.inline_overhead";
    case Param::IntraOneWay: return "intra_node.one_way_factor";
    case Param::IntraReceiveShare: return "intra_node.overhead_receive_share";
    case Param::IntraExchange: return "intra_node.exchange_factor";
    case Param::NetOneWay: return "network.one_way_factor";
    case Param::IntraSendShare: return "intra_node.send_share";
    default:
      if (net_message_index(p) >= 0) return "network_message_scale";
      if (fan_out_index(p) >= 0) return "fan_out_scale";
      if (node_working_set_index(p) > 0) return "node_working_set_scale";
      return local_op_index(p) > 0 ? "local_op_scale" : message_index(p) > 0 ? "message_scale" : "working_set_scale";
  }
}

std::string param_text(Param p, double value) {
  char buf[48];
  if (is_time_param(p)) {
    std::snprintf(buf, sizeof buf, "%.4g us", value * 1e6);
  } else if (is_beta_param(p)) {
    if (!(value > 0)) return "unlimited";
    std::snprintf(buf, sizeof buf, "%.4g GB/s", 1e-9 / value);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", value);
  }
  return buf;
}

namespace {
// A curve to fit: unless it has points, points at `first`, 4x, 16x, ... up to `largest` (at most
// max_free + 1), each factor 1. Returns the parameters of the points after the first
// (first_param, first_param + 1, ...), which the fit adjusts; the first stays at 1.
template <typename Point>
std::vector<Param> add_curve_points(std::vector<Point>& curve, Bytes first, double largest, int max_free,
                                    Param first_param) {
  if (curve.empty()) {
    Bytes at = first;
    curve.push_back({at, 1.0});
    while (static_cast<double>(at) * 4 <= largest && curve.size() < static_cast<std::size_t>(max_free) + 1) {
      at *= 4;
      curve.push_back({at, 1.0});
    }
  }
  std::vector<Param> params;
  for (std::size_t i = 1; i < curve.size() && i <= static_cast<std::size_t>(max_free); ++i)
    params.push_back(static_cast<Param>(static_cast<int>(first_param) + static_cast<int>(i) - 1));
  return params;
}
}  // namespace

std::vector<Param> add_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples)
    largest = std::max(largest, working_set_bytes(s.collective, s.bytes, s.nodes * s.ranks_per_node));
  return add_curve_points(topo.working_set_scale, 256 * 1024, largest, 6, Param::WorkingSet1);
}

std::vector<Param> add_node_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  if (!(topo.intra.node_bw_Bps > 0)) return {};
  double largest = 0;
  for (const auto& s : samples)
    largest = std::max(largest, working_set_bytes(s.collective, s.bytes, s.nodes * s.ranks_per_node) *
                                    static_cast<double>(s.ranks_per_node));
  return add_curve_points(topo.node_working_set_scale, 1024 * 1024, largest, 6, Param::NodeWorkingSet1);
}

std::string why_no_node_curve(const Topology& topo, const std::vector<CollectiveSample>& samples, int logical_cpus) {
  if (!(topo.intra.node_bw_Bps > 0)) return "the topology has no intra_node.node_bandwidth";
  int most_ranks = 0;
  for (const CollectiveSample& s : samples) most_ranks = std::max(most_ranks, s.ranks_per_node);
  if (logical_cpus > 0 && most_ranks > logical_cpus)
    return std::to_string(most_ranks) + " ranks on a node of " + std::to_string(logical_cpus) +
           " logical CPUs take turns on its cores, which sets their shared rate, not its caches";
  return "";
}

std::vector<Param> add_local_op_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples) largest = std::max(largest, static_cast<double>(s.bytes));
  return add_curve_points(topo.local_op_scale, 64 * 1024, largest, 5, Param::LocalOp1);
}

std::vector<Param> add_message_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples) largest = std::max(largest, static_cast<double>(s.bytes) / 2);
  return add_curve_points(topo.message_scale, 1024, largest, 7, Param::Message1);
}

std::vector<Param> add_network_message_points(Topology& topo) {
  const std::vector<MessageScale>& measured = topo.network_message_scale;
  if (measured.empty()) return {};
  std::vector<MessageScale> grid;
  for (Bytes b = 4096; b < measured.back().bytes && grid.size() < 6; b *= 4)
    grid.push_back({b, topo.network_message_scale_at(static_cast<double>(b))});
  grid.push_back(measured.back());
  topo.network_message_scale = grid;
  std::vector<Param> params;
  for (std::size_t i = 0; i + 1 < grid.size(); ++i)
    params.push_back(static_cast<Param>(static_cast<int>(Param::NetMessage1) + static_cast<int>(i)));
  return params;
}

std::vector<Param> add_fan_out_points(Topology& topo) {
  if (topo.fan_out_scale.empty())
    for (Bytes b = 4096; b <= (Bytes{16} << 20); b *= 4) topo.fan_out_scale.push_back({b, 1.0});
  std::vector<Param> params;
  for (std::size_t i = 0; i + 1 < topo.fan_out_scale.size() && i < 6; ++i)
    params.push_back(static_cast<Param>(static_cast<int>(Param::FanOut1) + static_cast<int>(i)));
  return params;
}

bool at_fit_limit(Param p, double value) {
  if (is_latency_factor(p)) return value >= 10.0 * (1 - 1e-9);
  return is_scale_param(p) && value <= param_floor(p) * (1 + 1e-9);
}

double get_param(const Topology& topo, Param p) {
  switch (p) {
    case Param::IntraLatency: return topo.intra.latency_s;
    case Param::IntraBeta: return 1.0 / topo.intra.bw_Bps;
    case Param::NetLatency: return topo.network.latency_s;
    case Param::NetBeta: return 1.0 / topo.network.nic_bw_Bps;
    case Param::Gamma: return 1.0 / topo.reduce_bw_Bps;
    case Param::MemoryBeta: return 1.0 / topo.memory_bw_Bps;
    case Param::IntraRendezvousLatency: return topo.intra.msg.rendezvous_latency_s;
    case Param::IntraMessageOverhead: return topo.intra.msg.message_overhead_s;
    case Param::CallOverhead: return topo.call_overhead_s;
    case Param::IntraRendezvousOverhead: return topo.intra.msg.overhead_s(INFINITY);
    case Param::IntraInlineLatency: return topo.intra.msg.inline_latency_s;
    case Param::IntraInlineOverhead: return topo.intra.msg.overhead_s(0);
    case Param::IntraOneWay: return topo.intra.msg.one_way_factor;
    case Param::IntraReceiveShare: return topo.intra.msg.overhead_receive_share;
    case Param::IntraExchange: return topo.intra.msg.exchange_factor;
    case Param::NetOneWay: return topo.network.msg.one_way_factor;
    case Param::IntraSendShare: return topo.intra.send_share;
    default: {
      if (net_message_index(p) >= 0) {
        const auto i = static_cast<std::size_t>(net_message_index(p));
        return i < topo.network_message_scale.size() ? topo.network_message_scale[i].scale : 1.0;
      }
      if (fan_out_index(p) >= 0) {
        const auto i = static_cast<std::size_t>(fan_out_index(p));
        return i < topo.fan_out_scale.size() ? topo.fan_out_scale[i].scale : 1.0;
      }
      if (node_working_set_index(p) > 0) {
        const auto i = static_cast<std::size_t>(node_working_set_index(p));
        return i < topo.node_working_set_scale.size() ? topo.node_working_set_scale[i].scale : 1.0;
      }
      if (local_op_index(p) > 0) {
        const auto i = static_cast<std::size_t>(local_op_index(p));
        return i < topo.local_op_scale.size() ? topo.local_op_scale[i].scale : 1.0;
      }
      if (message_index(p) > 0) {
        const auto i = static_cast<std::size_t>(message_index(p));
        return i < topo.message_scale.size() ? topo.message_scale[i].scale : 1.0;
      }
      const auto i = static_cast<std::size_t>(working_set_index(p));
      return i < topo.working_set_scale.size() ? topo.working_set_scale[i].scale : 1.0;
    }
  }
}

void set_param(Topology& topo, Param p, double value) {
  switch (p) {
    case Param::IntraLatency: topo.intra.latency_s = value; break;
    case Param::IntraBeta: topo.intra.bw_Bps = 1.0 / value; break;
    case Param::NetLatency: topo.network.latency_s = value; break;
    case Param::NetBeta: topo.network.nic_bw_Bps = 1.0 / value; break;
    case Param::Gamma: topo.reduce_bw_Bps = 1.0 / value; break;
    case Param::MemoryBeta: topo.memory_bw_Bps = 1.0 / value; break;
    case Param::IntraRendezvousLatency:
      if (topo.intra.msg.eager_limit_bytes > 0) topo.intra.msg.rendezvous_latency_s = value;
      break;
    case Param::IntraMessageOverhead: topo.intra.msg.message_overhead_s = value; break;
    case Param::CallOverhead: topo.call_overhead_s = value; break;
    case Param::IntraRendezvousOverhead:
      if (topo.intra.msg.eager_limit_bytes > 0) topo.intra.msg.rendezvous_overhead_s = value;
      break;
    case Param::IntraInlineLatency:
      if (topo.intra.msg.inline_limit_bytes > 0) topo.intra.msg.inline_latency_s = value;
      break;
    case Param::IntraInlineOverhead:
      if (topo.intra.msg.inline_limit_bytes > 0) topo.intra.msg.inline_overhead_s = value;
      break;
    case Param::IntraOneWay: topo.intra.msg.one_way_factor = std::min(value, 10.0); break;  // the file's limit
    case Param::IntraReceiveShare: topo.intra.msg.overhead_receive_share = std::clamp(value, 0.0, 1.0); break;
    case Param::IntraExchange: topo.intra.msg.exchange_factor = std::min(value, 10.0); break;  // the file's limit
    case Param::NetOneWay: topo.network.msg.one_way_factor = std::min(value, 10.0); break;  // the file's limit
    case Param::IntraSendShare: topo.intra.send_share = std::clamp(value, 0.0, 1.0); break;
    default: {
      if (net_message_index(p) >= 0) {
        const auto i = static_cast<std::size_t>(net_message_index(p));
        if (i < topo.network_message_scale.size()) topo.network_message_scale[i].scale = value;
        break;
      }
      if (fan_out_index(p) >= 0) {
        const auto i = static_cast<std::size_t>(fan_out_index(p));
        if (i < topo.fan_out_scale.size()) topo.fan_out_scale[i].scale = value;
        break;
      }
      if (node_working_set_index(p) > 0) {
        const auto i = static_cast<std::size_t>(node_working_set_index(p));
        if (i < topo.node_working_set_scale.size()) topo.node_working_set_scale[i].scale = value;
        break;
      }
      if (local_op_index(p) > 0) {
        const auto i = static_cast<std::size_t>(local_op_index(p));
        if (i < topo.local_op_scale.size()) topo.local_op_scale[i].scale = value;
        break;
      }
      if (message_index(p) > 0) {
        const auto i = static_cast<std::size_t>(message_index(p));
        if (i < topo.message_scale.size()) topo.message_scale[i].scale = value;
        break;
      }
      const auto i = static_cast<std::size_t>(working_set_index(p));
      if (i < topo.working_set_scale.size()) topo.working_set_scale[i].scale = value;
    }
  }
}

ParamFit fit_gamma(const Topology& topo, const std::vector<CollectiveSample>& samples, FitWeighting weighting,
                   const SamplePredictor& predict) {
  std::vector<CollectiveSample> reducing;
  for (const auto& s : samples)
    if (reduces(s.collective)) reducing.push_back(s);
  ParamFit fit = refine_parameters(topo, reducing, {Param::Gamma}, weighting, predict);
  if (fit.fitted.empty())
    throw Error("gamma fit: none of the " + std::to_string(samples.size()) +
                " collective measurements has a reduction term (measure allreduce, reduce or reducescatter "
                "with a hand-written algorithm)");
  return fit;
}

ParamFit refine_parameters(const Topology& topo, const std::vector<CollectiveSample>& samples,
                           const std::vector<Param>& params, FitWeighting weighting, const SamplePredictor& predict,
                           int threads) {
  ParamFit fit;
  fit.topology = topo;
  const Evaluation before = evaluate(topo, samples, predict, threads);
  if (before.used.empty()) {
    fit.held = params;
    fill_quality(fit, samples, before, before);
    return fit;
  }
  std::vector<Param> free_params = params;
  std::vector<Param> moved_then_flat;
  std::vector<double> theta;
  for (Param p : free_params) theta.push_back(get_param(topo, p));

  // Gauss-Newton with Levenberg-Marquardt damping: the models are nearly linear in the parameters
  // for a fixed algorithm, so undamped steps usually land close to the solution; a step is kept
  // only when it lowers the objective (otherwise the damping grows and the step shrinks toward
  // gradient descent), so parameters that trade off against each other (gamma and the
  // local-operation curve) cannot wander off along a flat valley.
  Topology current = topo;
  const int max_iterations = weighting == FitWeighting::Robust ? 60 : 30;
  double damping = 0;  // lambda, relative to the diagonal
  Evaluation base = before;
  double current_objective = objective(base, samples, weighting, 0);
  const std::size_t reference = base.used.size();
  for (int iter = 0; iter < max_iterations; ++iter) {
    fit.iterations = iter + 1;
    const std::size_t n = base.used.size(), m = free_params.size();
    if (m == 0) break;
    // Jacobian columns by one-sided differences (exact for linear dependence), each on its own
    // copy of the topology: the columns are computed by up to `threads` threads at once.
    std::vector<std::vector<double>> jac(m, std::vector<double>(n, 0.0));
    std::vector<char> informative(m, 0);
    for_each_index(m, threads, [&](std::size_t j) {
      Topology probe = current;
      double h = param_step(free_params[j], theta[j]);
      set_param(probe, free_params[j], theta[j] + h);
      // At the upper end of its range (a share at 1, a factor at 10) the step is clamped away:
      // step down instead.
      if (std::fabs(get_param(probe, free_params[j]) - theta[j]) < 0.5 * h) {
        h = -h;
        set_param(probe, free_params[j], theta[j] + h);
      }
      for (std::size_t k = 0; k < n; ++k) {
        double t = predict(probe, samples[base.used[k]]);
        jac[j][k] = std::isfinite(t) ? (t - base.predicted[k]) / h : 0.0;
        if (jac[j][k] != 0.0) informative[j] = 1;
      }
    });
    // Drop parameters no sample depends on.
    {
      std::vector<Param> keep_p;
      std::vector<double> keep_t;
      std::vector<std::vector<double>> keep_j;
      for (std::size_t j = 0; j < m; ++j) {
        if (informative[j]) {
          keep_p.push_back(free_params[j]);
          keep_t.push_back(theta[j]);
          keep_j.push_back(jac[j]);
        } else if (get_param(current, free_params[j]) != get_param(topo, free_params[j])) {
          // Moved by earlier steps to where no sample depends on it any more (a share below the
          // point where it binds): fitted, at that value.
          moved_then_flat.push_back(free_params[j]);
        } else {
          fit.held.push_back(free_params[j]);
        }
      }
      free_params = keep_p;
      theta = keep_t;
      jac = keep_j;
    }
    const std::size_t mm = free_params.size();
    if (mm == 0) break;
    // Normal equations of the weighted linearised problem, in the parameters scaled to 1 (they
    // differ by 1e12 between a latency and a beta).
    std::vector<double> scale(mm);
    for (std::size_t j = 0; j < mm; ++j) scale[j] = std::max(std::fabs(theta[j]), param_step(free_params[j], 0) * 1e3);
    std::vector<std::vector<double>> a(mm, std::vector<double>(mm, 0.0));
    std::vector<double> b(mm, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      double meas = samples[base.used[k]].time_s;
      double w = weight_of(meas, weighting);
      double r = meas - base.predicted[k];
      // Least absolute relative error by reweighting: w = 1 / (t^2 |r / t|), |r / t| at least 1%.
      if (weighting == FitWeighting::Robust) w /= std::max(std::fabs(r) / meas, 0.01);
      for (std::size_t i = 0; i < mm; ++i) {
        double ji = jac[i][k] * scale[i];
        b[i] += w * ji * r;
        for (std::size_t j = 0; j < mm; ++j) a[i][j] += w * ji * jac[j][k] * scale[j];
      }
    }
    bool accepted = false;
    double max_change = 0;
    for (int attempt = 0; attempt < 12 && !accepted; ++attempt) {
      std::vector<std::vector<double>> damped = a;
      // A tiny ridge always: columns that move together (two latencies always summed) then take
      // the smallest change.
      for (std::size_t i = 0; i < mm; ++i) damped[i][i] += (damping + 1e-9) * std::max(a[i][i], 1e-300);
      std::vector<double> step;
      if (!solve_dense(damped, b, step)) break;
      Topology candidate = current;
      std::vector<double> next_theta = theta;
      max_change = 0;
      for (std::size_t j = 0; j < mm; ++j) {
        double next = theta[j] + step[j] * scale[j];
        double floor = param_floor(free_params[j]);
        // Below the floor: latencies stop at 0; a beta or gamma moves at most 10x down per step.
        if (next < floor || (floor > 0 && next < theta[j] * 0.1)) next = floor > 0 ? std::max(floor, theta[j] * 0.1) : 0.0;
        set_param(candidate, free_params[j], next);
        next = get_param(candidate, free_params[j]);  // as the topology holds it (a share stops at 1)
        max_change = std::max(max_change, std::fabs(next - theta[j]) / scale[j]);
        next_theta[j] = next;
      }
      if (max_change < 1e-9) break;
      Evaluation tried = evaluate(candidate, samples, predict, threads);
      const double tried_objective = objective(tried, samples, weighting, reference);
      if (tried_objective < current_objective) {
        accepted = true;
        current = std::move(candidate);
        theta = std::move(next_theta);
        base = std::move(tried);
        current_objective = tried_objective;
        damping = damping / 4;
      } else {
        damping = damping == 0 ? 1e-3 : damping * 8;
      }
    }
    if (!accepted || max_change < 1e-9) break;
  }
  fit.fitted = free_params;
  fit.fitted.insert(fit.fitted.end(), moved_then_flat.begin(), moved_then_flat.end());
  fit.topology = current;
  fill_quality(fit, samples, before, evaluate(current, samples, predict, threads));
  return fit;
}

HeldOutSplit split_held_out(const std::vector<CollectiveSample>& samples) {
  std::set<Bytes> distinct;
  for (const auto& s : samples) distinct.insert(s.bytes);
  const std::vector<Bytes> sizes(distinct.begin(), distinct.end());
  HeldOutSplit split;
  for (const auto& s : samples) {
    const auto idx = static_cast<std::size_t>(std::lower_bound(sizes.begin(), sizes.end(), s.bytes) - sizes.begin());
    (idx % 2 == 0 || idx + 1 == sizes.size() ? split.train : split.test).push_back(s);
  }
  return split;
}

namespace {

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string bw_text(BytesPerSecond bw) { return num(bw / 1e9) + " GB/s"; }
std::string time_text(Seconds t) { return num(t * 1e6) + " us"; }

class YamlOut {
 public:
  explicit YamlOut(const std::vector<std::pair<std::string, std::string>>& comments) : comments_(comments) {}
  void line(int indent, const std::string& key, const std::string& value, const std::string& field) {
    out_ << std::string(static_cast<std::size_t>(indent), ' ') << key << ":";
    if (!value.empty()) out_ << " " << value;
    for (const auto& [f, c] : comments_)
      if (f == field && !c.empty()) out_ << "  # " << c;
    out_ << "\n";
  }
  void raw(const std::string& s) { out_ << s; }
  std::string str() const { return out_.str(); }

 private:
  const std::vector<std::pair<std::string, std::string>>& comments_;
  std::ostringstream out_;
};

template <typename T>
std::string flow_list(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The optional per-tier message terms (MessageCosts), only when set.
void message_costs(YamlOut& y, const MessageCosts& m, const std::string& tier) {
  if (m.eager_limit_bytes > 0) {
    y.line(2, "eager_limit", format_bytes(m.eager_limit_bytes), tier + ".eager_limit");
    y.line(2, "rendezvous_latency", time_text(m.rendezvous_latency_s), tier + ".rendezvous_latency");
  }
  if (m.message_overhead_s > 0)
    y.line(2, "message_overhead", time_text(m.message_overhead_s), tier + ".message_overhead");
  if (m.rendezvous_overhead_s && m.eager_limit_bytes > 0)
    y.line(2, "rendezvous_overhead", time_text(*m.rendezvous_overhead_s), tier + ".rendezvous_overhead");
  if (m.inline_limit_bytes > 0) {
    y.line(2, "inline_limit", format_bytes(m.inline_limit_bytes), tier + ".inline_limit");
    y.line(2, "inline_latency", time_text(m.inline_latency_s), tier + ".inline_latency");
    if (m.inline_overhead_s) y.line(2, "inline_overhead", time_text(*m.inline_overhead_s), tier + ".inline_overhead");
  }
  if (m.one_way_factor != 1.0) y.line(2, "one_way_factor", num(m.one_way_factor), tier + ".one_way_factor");
  if (m.exchange_factor != 1.0) y.line(2, "exchange_factor", num(m.exchange_factor), tier + ".exchange_factor");
  if (m.overhead_receive_share != 0)
    y.line(2, "overhead_receive_share", num(m.overhead_receive_share), tier + ".overhead_receive_share");
}

}  // namespace

std::string topology_yaml(const Topology& t, const std::vector<std::string>& header,
                          const std::vector<std::pair<std::string, std::string>>& field_comments,
                          const CalibrationRecord* record, bool with_calibrated_section) {
  YamlOut y(field_comments);
  for (const auto& h : header) y.raw("# " + h + "\n");
  if (record && !with_calibrated_section) {
    y.raw("# calibrated on sizes " + format_bytes(record->sizes.empty() ? 0 : record->sizes.front()) + " .. " +
          format_bytes(record->sizes.empty() ? 0 : record->sizes.back()) + ", nodes " + flow_list(record->nodes) +
          ", ranks " + flow_list(record->ranks) + "\n");
  }
  y.line(0, "name", yaml_quote(t.name), "name");
  if (!t.description.empty()) y.line(0, "description", yaml_quote(t.description), "description");
  y.line(0, t.gpu ? "gpus_per_node" : "ranks_per_node", std::to_string(t.ranks_per_node),
         t.gpu ? "gpus_per_node" : "ranks_per_node");
  if (t.max_nodes > 0) y.line(0, "max_nodes", std::to_string(t.max_nodes), "max_nodes");
  y.line(0, "device", "", "device");
  y.line(2, "name", yaml_quote(t.device_name), "device.name");
  if (t.device_memory_bytes > 0) y.line(2, "memory", format_bytes(t.device_memory_bytes), "device.memory");
  y.line(2, "memory_bandwidth", bw_text(t.memory_bw_Bps), "device.memory_bandwidth");
  y.line(0, "intra_node", "", "intra_node");
  y.line(2, "fabric", t.intra.fabric, "intra_node.fabric");
  y.line(2, "bandwidth", bw_text(t.intra.bw_Bps), "intra_node.bandwidth");
  y.line(2, "latency", time_text(t.intra.latency_s), "intra_node.latency");
  if (t.intra.node_bw_Bps > 0) y.line(2, "node_bandwidth", bw_text(t.intra.node_bw_Bps), "intra_node.node_bandwidth");
  if (t.intra.send_share != 1.0) y.line(2, "send_share", num(t.intra.send_share), "intra_node.send_share");
  message_costs(y, t.intra.msg, "intra_node");
  if (t.gpu || t.host_link.bw_Bps > 0) {
    y.line(0, "host_link", "", "host_link");
    y.line(2, "bandwidth", bw_text(t.host_link.bw_Bps), "host_link.bandwidth");
    y.line(2, "latency", time_text(t.host_link.latency_s), "host_link.latency");
  }
  y.line(0, "network", "", "network");
  y.line(2, "kind", t.network.kind.empty() ? "none" : t.network.kind, "network.kind");
  if (t.network.present()) {
    if (!t.network.fabric_shape.empty()) y.line(2, "fabric", t.network.fabric_shape, "network.fabric");
    y.line(2, "nics_per_node", std::to_string(t.network.nics_per_node), "network.nics_per_node");
    y.line(2, "nic_bandwidth", bw_text(t.network.nic_bw_Bps), "network.nic_bandwidth");
    y.line(2, "latency", time_text(t.network.latency_s), "network.latency");
    if (t.network.oversubscription != 1.0)
      y.line(2, "oversubscription", num(t.network.oversubscription), "network.oversubscription");
    message_costs(y, t.network.msg, "network");
  }
  y.line(0, "reduction", "", "reduction");
  y.line(2, "bandwidth", bw_text(t.reduce_bw_Bps), "reduction.bandwidth");
  if (t.call_overhead_s > 0) y.line(0, "call_overhead", time_text(t.call_overhead_s), "call_overhead");
  // The curves: by working set (working_set_scale, node_working_set_scale) and by bytes
  // (local_op_scale, message_scale, written_scale, network_message_scale, fan_out_scale).
  auto curve = [&y](const std::string& key, const char* x_name, const auto& points, auto x) {
    if (points.empty()) return;
    y.line(0, key, "", key);
    for (const auto& w : points)
      y.raw("  - { " + std::string(x_name) + ": " + format_bytes(w.*x) + ", scale: " + num(w.scale) + " }\n");
  };
  curve("working_set_scale", "working_set", t.working_set_scale, &WorkingSetScale::working_set);
  curve("node_working_set_scale", "working_set", t.node_working_set_scale, &WorkingSetScale::working_set);
  curve("local_op_scale", "bytes", t.local_op_scale, &LocalOpScale::bytes);
  curve("message_scale", "bytes", t.message_scale, &MessageScale::bytes);
  curve("written_scale", "bytes", t.written_scale, &MessageScale::bytes);
  curve("network_message_scale", "bytes", t.network_message_scale, &MessageScale::bytes);
  curve("fan_out_scale", "bytes", t.fan_out_scale, &MessageScale::bytes);
  if (t.nccl.present) {
    // One line per algorithm, so that a comment can say where a fitted row comes from
    // (field "nccl.base_latency.ring", "nccl.bus_bandwidth.tree", ...).
    y.line(0, "nccl", "", "nccl");
    const char* algos[2] = {"ring", "tree"};
    const char* protos[3] = {"LL", "LL128", "Simple"};
    // every: all six entries (the latency tables require them); otherwise only those set (> 0).
    auto table = [&](const char* key, const double(&v)[2][3], auto text, bool every) {
      y.line(2, key, "", std::string("nccl.") + key);
      for (int a = 0; a < 2; ++a) {
        std::string row;
        for (int p = 0; p < 3; ++p)
          if (every || v[a][p] > 0)
            row += std::string(row.empty() ? "" : ", ") + protos[p] + ": " + text(v[a][p]);
        if (!row.empty()) y.line(4, algos[a], "{ " + row + " }", std::string("nccl.") + key + "." + algos[a]);
      }
    };
    table("base_latency", t.nccl.base_latency_s, time_text, true);
    table("intra_hop_latency", t.nccl.intra_hop_latency_s, time_text, true);
    table("inter_hop_latency", t.nccl.inter_hop_latency_s, time_text, true);
    y.line(2, "bandwidth_fraction",
           "{ LL: " + num(t.nccl.bw_fraction[0]) + ", LL128: " + num(t.nccl.bw_fraction[1]) +
               ", Simple: " + num(t.nccl.bw_fraction[2]) + " }",
           "nccl.bandwidth_fraction");
    bool any_bw = false;
    for (const auto& row : t.nccl.bus_bw_Bps)
      for (double b : row) any_bw = any_bw || b > 0;
    // Only the fitted entries: a missing one stands for the intra-node bandwidth x bw_fraction.
    if (any_bw) table("bus_bandwidth", t.nccl.bus_bw_Bps, bw_text, false);
  }
  if (record && with_calibrated_section) {
    std::vector<unsigned long long> sizes(record->sizes.begin(), record->sizes.end());
    y.line(0, "calibrated", "", "calibrated");
    y.line(2, "created", yaml_quote(record->created), "calibrated.created");
    std::string src = "[";
    for (std::size_t i = 0; i < record->sources.size(); ++i) src += (i ? ", " : "") + yaml_quote(record->sources[i]);
    y.line(2, "sources", src + "]", "calibrated.sources");
    y.line(2, "sizes", flow_list(sizes), "calibrated.sizes");
    y.line(2, "nodes", flow_list(record->nodes), "calibrated.nodes");
    y.line(2, "ranks", flow_list(record->ranks), "calibrated.ranks");
  }
  return y.str();
}

}  // namespace commsim

namespace commsim {

namespace {
// Weighted least squares of r = c over a set (one constant), weights 1/t^2: c = sum(r/t^2)/sum(1/t^2).
struct ConstFit {
  double sw = 0, swr = 0;
  void add(double r, double t) {
    const double w = 1.0 / (t * t);
    sw += w;
    swr += w * r;
  }
  double value() const { return sw > 0 ? swr / sw : 0; }
};
}  // namespace

namespace {
// The median time per size, sizes ascending.
std::map<Bytes, Seconds> median_by_size(const std::vector<TimedSize>& samples) {
  std::map<Bytes, std::vector<double>> by_size;
  for (const TimedSize& s : samples) by_size[s.bytes].push_back(s.time_s);
  std::map<Bytes, Seconds> out;
  for (auto& [bytes, times] : by_size) out[bytes] = median(std::move(times));
  return out;
}
}  // namespace

ProtocolFit fit_protocol(const std::vector<TimedSize>& samples, Bytes beta_from_bytes, const std::string& what) {
  std::vector<TimedSize> large;
  std::set<Bytes> small_sizes;
  for (const TimedSize& s : samples) {
    if (!(s.time_s > 0)) throw Error(what + ": times must be positive");
    if (s.bytes >= beta_from_bytes)
      large.push_back(s);
    else
      small_sizes.insert(s.bytes);
  }
  std::set<Bytes> large_sizes;
  for (const TimedSize& s : large) large_sizes.insert(s.bytes);
  if (large_sizes.size() < 2 || small_sizes.size() < 2)
    throw Error(what + ": fitting eager/rendezvous latencies needs at least two sizes of at least " +
                format_bytes(beta_from_bytes) + " and two below; measure a wider range of sizes");
  ProtocolFit out;
  out.beta_s_per_byte = fit_line(large, FitWeighting::Relative, what).beta_s_per_byte;
  const double beta = out.beta_s_per_byte;
  // The switch is where the residual latency (time - bytes * beta, median per size) jumps the
  // most from one measured size to the next, by ratio: a protocol switch is a step, while a
  // per-byte cost that beta misses only makes the residual drift. Then one latency per side.
  const std::vector<Bytes> sizes(small_sizes.begin(), small_sizes.end());
  const std::map<Bytes, Seconds> median = median_by_size(samples);
  std::vector<double> residual;
  for (Bytes b : sizes) residual.push_back(median.at(b) - static_cast<double>(b) * beta);
  // Levels: one latency per run of sizes between the steps (fitted on the samples below
  // beta_from_bytes, beta fixed) and the stepped model's squared relative error, judged on those
  // sizes, where latency decides the time (the large sizes' residuals are the bandwidth's, which
  // no latency split changes).
  struct Levels {
    std::vector<Bytes> steps;  // ascending; a size up to steps[i] (and above steps[i - 1]) is on level i
    std::vector<double> a;
    double e = INFINITY;
    std::size_t level_of(Bytes b) const {
      return static_cast<std::size_t>(std::lower_bound(steps.begin(), steps.end(), b) - steps.begin());
    }
    double predict_s(Bytes b, double beta) const { return a[level_of(b)] + static_cast<double>(b) * beta; }
  };
  auto fit_levels = [&](std::vector<Bytes> steps) {
    Levels l{std::move(steps), {}, 0};
    std::vector<ConstFit> fits(l.steps.size() + 1);
    for (const TimedSize& s : samples)
      if (s.bytes < beta_from_bytes)
        fits[l.level_of(s.bytes)].add(s.time_s - static_cast<double>(s.bytes) * beta, s.time_s);
    for (const ConstFit& f : fits) l.a.push_back(std::max(0.0, f.value()));
    for (const TimedSize& s : samples)
      if (s.bytes < beta_from_bytes) l.e += std::pow((l.predict_s(s.bytes, beta) - s.time_s) / s.time_s, 2);
    return l;
  };
  const Levels one = fit_levels({});
  out.latency_s = one.a[0];
  const double sse_one = one.e;
  Levels chosen = one;
  // The candidate steps: the largest jump (the eager/rendezvous switch when it is the only one),
  // then the largest jump with at least two sizes on each side that leaves two sizes between the
  // two steps (the inline step, when it is below the other).
  auto jump = [&](std::size_t i) { return residual[i - 1] > 0 ? residual[i] / residual[i - 1] : 0.0; };
  std::size_t j1 = 0, j2 = 0;  // split after sizes[j - 1]
  for (std::size_t i = 1; i < sizes.size(); ++i)
    if (jump(i) > (j1 ? jump(j1) : 0.0)) j1 = i;
  for (std::size_t i = 2; j1 > 0 && i + 2 <= sizes.size(); ++i) {
    const std::size_t apart = i > j1 ? i - j1 : j1 - i;
    if (apart >= 2 && jump(i) > (j2 ? jump(j2) : 0.0)) j2 = i;
  }
  // Kept when they explain the data clearly better: the rendezvous latency at least 1.5 times the
  // eager one and the squared relative error at least halved; the inline step then the same with
  // 1.3 times, against the model with one step.
  if (j1 > 0) {
    out.candidate_eager_bytes = sizes[std::max(j1, j2) - 1];
    if (j2 > 0) out.candidate_inline_bytes = sizes[std::min(j1, j2) - 1];
    const Levels two = fit_levels({sizes[j1 - 1]});
    const bool two_kept = two.a[1] >= 1.5 * two.a[0] && two.e <= 0.5 * sse_one;
    Levels three;
    bool three_kept = false;
    if (j2 > 0) {
      three = fit_levels({sizes[std::min(j1, j2) - 1], sizes[std::max(j1, j2) - 1]});
      three_kept = three.a[1] >= 1.3 * three.a[0] && three.a[2] >= 1.5 * three.a[1] &&
                   three.e <= 0.5 * (two_kept ? two.e : sse_one) && three.e <= 0.25 * sse_one;
    }
    if (three_kept) {
      out.switched = out.inlined = true;
      out.inline_limit_bytes = three.steps[0];
      out.eager_limit_bytes = three.steps[1];
      out.inline_latency_s = three.a[0];
      out.latency_s = three.a[1];
      out.rendezvous_latency_s = three.a[2];
      chosen = three;
      // The other step below the eager one: the largest remaining jump at least two sizes from both.
      const std::size_t eager = std::max(j1, j2), inline_at = std::min(j1, j2);
      std::size_t j3 = 0;
      for (std::size_t i = 2; i + 2 <= sizes.size(); ++i) {
        const auto apart = [&](std::size_t j) { return i > j ? i - j : j - i; };
        if (i < eager && apart(eager) >= 2 && apart(inline_at) >= 2 && jump(i) > (j3 ? jump(j3) : 1.0)) j3 = i;
      }
      if (j3 > 0) {
        const Levels other = fit_levels({sizes[j3 - 1], sizes[eager - 1]});
        if (other.a[1] >= 1.3 * other.a[0] && other.a[2] >= 1.5 * other.a[1]) {
          out.other_inline_bytes = other.steps[0];
          out.other_inline_latency_s = other.a[0];
          out.other_latency_s = other.a[1];
          out.other_rendezvous_latency_s = other.a[2];
        }
      }
    } else if (two_kept) {
      out.switched = true;
      out.eager_limit_bytes = two.steps[0];
      out.latency_s = two.a[0];
      out.rendezvous_latency_s = two.a[1];
      chosen = two;
    }
  }
  std::vector<double> rel;
  for (const TimedSize& s : samples) rel.push_back((chosen.predict_s(s.bytes, beta) - s.time_s) / s.time_s);
  out.median_abs_rel_residual = median_abs(rel);
  return out;
}

BytesPerSecond fit_node_bandwidth(BytesPerSecond pair_bw_Bps, BytesPerSecond all_ranks_bw_Bps, int ranks_per_node) {
  if (!(pair_bw_Bps > 0) || !(all_ranks_bw_Bps > 0) || ranks_per_node < 2) return 0;
  if (all_ranks_bw_Bps >= 0.8 * pair_bw_Bps) return 0;
  return all_ranks_bw_Bps * ranks_per_node;
}

Seconds fit_message_overhead(const std::vector<TimedSize>& per_message, int window, Seconds latency_s,
                             double beta_s_per_byte, Bytes max_bytes, Bytes min_bytes) {
  if (window < 2) return 0;
  ConstFit o;
  const double w = static_cast<double>(window);
  for (const TimedSize& s : per_message) {
    if (s.bytes > max_bytes || s.bytes <= min_bytes || !(s.time_s > 0)) continue;
    // t = (latency + (w - 1) o) / w + bytes * beta  =>  o = (w (t - bytes beta) - latency) / (w - 1)
    o.add((w * (s.time_s - static_cast<double>(s.bytes) * beta_s_per_byte) - latency_s) / (w - 1), s.time_s);
  }
  return std::max(0.0, o.value());
}

NetworkRateFit fit_network_rate(const std::vector<TimedSize>& samples) {
  NetworkRateFit out;
  const std::map<Bytes, Seconds> by_size = median_by_size(samples);
  // The latency of the small sizes and the rate of the large ones, each with the other taken off
  // (twice: the first latency still holds the small sizes' bytes).
  Seconds latency = 0;
  double beta = 0;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> small, rates;
    for (const auto& [bytes, t] : by_size)
      if (bytes <= kNetworkLatencyMaxBytes) small.push_back(t - static_cast<double>(bytes) * beta);
    if (small.size() < 2) return out;
    latency = median(small);
    for (const auto& [bytes, t] : by_size)
      if (bytes >= kNetworkRateMinBytes && t > latency) rates.push_back((t - latency) / static_cast<double>(bytes));
    if (rates.size() < 2) return out;
    beta = median(rates);
  }
  out.done = true;
  out.latency_s = latency;
  out.beta_s_per_byte = beta;
  bool beyond_noise = false;
  for (const auto& [bytes, t] : by_size) {
    const double moved = static_cast<double>(bytes) * beta;
    if (moved < 0.5 * latency || !(t > latency)) continue;
    const double f = std::clamp(moved / (t - latency), 0.1, 10.0);
    out.factors.push_back({bytes, f});
    beyond_noise = beyond_noise || std::abs(f - 1.0) > kNetworkCurveNoise;
  }
  if (beyond_noise) out.curve = out.factors;
  return out;
}

std::vector<MessageScale> written_ratios(const std::vector<TimedSize>& clean, const std::vector<TimedSize>& written,
                                         Seconds latency_s) {
  const std::map<Bytes, Seconds> c = median_by_size(clean), w = median_by_size(written);
  std::vector<MessageScale> out;
  for (const auto& [bytes, tc] : c) {
    const auto it = w.find(bytes);
    if (bytes < kWrittenScaleMinBytes || it == w.end()) continue;
    const double dc = tc - latency_s, dw = it->second - latency_s;
    if (!(dc > 0) || !(dw > 0)) continue;
    out.push_back({bytes, dc / dw});
  }
  return out;
}

std::vector<MessageScale> fit_written_scale(const std::vector<TimedSize>& clean, const std::vector<TimedSize>& written,
                                            Seconds latency_s) {
  std::vector<MessageScale> curve = written_ratios(clean, written, latency_s);
  std::erase_if(curve, [](const MessageScale& p) { return p.scale < kWrittenScaleFloor; });
  // A cache effect spans a range of sizes: a slow size counts only next to another slow size.
  std::vector<bool> slow(curve.size());
  for (std::size_t i = 0; i < curve.size(); ++i) slow[i] = curve[i].scale <= kWrittenScaleNoise;
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const bool neighbour = (i > 0 && slow[i - 1]) || (i + 1 < curve.size() && slow[i + 1]);
    curve[i].scale = slow[i] && neighbour ? curve[i].scale : 1.0;
  }
  const auto slower = [](const MessageScale& p) { return p.scale < 1.0; };
  const auto first = std::find_if(curve.begin(), curve.end(), slower);
  if (first == curve.end()) return {};
  const auto last = std::find_if(curve.rbegin(), curve.rend(), slower).base();  // one past the last slower point
  // Keep one 1 on each side (when measured), so the curve comes back to 1 beyond the slow sizes.
  const auto begin = first == curve.begin() ? first : first - 1;
  const auto end = last == curve.end() ? last : last + 1;
  return {begin, end};
}

}  // namespace commsim

namespace commsim {
namespace {

int nccl_algo_index(Algorithm a) {
  return a == Algorithm::NcclTree ? 1 : 0;
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
  int idx[3], n = 0;
  for (int j = 0; j < 3; ++j)
    if (use[j]) idx[n++] = j;
  double norm[3] = {0, 0, 0};
  for (std::size_t i = 0; i < y.size(); ++i)
    for (int r = 0; r < n; ++r) norm[r] += x[i][idx[r]] * x[i][idx[r]] / (t[i] * t[i]);
  for (int r = 0; r < n; ++r) {
    if (!(norm[r] > 0)) return false;
    norm[r] = std::sqrt(norm[r]);
  }
  double a[3][4] = {};
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double w = 1.0 / (t[i] * t[i]);
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < n; ++c) a[r][c] += w * (x[i][idx[r]] / norm[r]) * (x[i][idx[c]] / norm[c]);
      a[r][n] += w * (x[i][idx[r]] / norm[r]) * y[i];
    }
  }
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    if (!(std::fabs(a[piv][c]) > 1e-9)) return false;  // unit diagonal before elimination
    for (int k = 0; k <= n; ++k) std::swap(a[c][k], a[piv][k]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
    }
  }
  coef = {0, 0, 0};
  for (int r = 0; r < n; ++r) coef[idx[r]] = a[r][n] / a[r][r] / norm[r];
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
