// The fits to the probe's own measurements: protocol steps, the node's shared bandwidth, message
// overheads, the rate of just-written data and the network's rate by message size.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "model/calibrate/calibrate.h"
#include "model/error.h"

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
