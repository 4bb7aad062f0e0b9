#include "runtime/sweep/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace commsim {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats summarize(std::vector<double> samples) {
  SampleStats s;
  if (samples.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan, nan, nan};
  }
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile_sorted(samples, 0.5);
  s.p95 = quantile_sorted(samples, 0.95);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return s;
}

double mann_whitney_p_less(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) return 1.0;
  // Ranks of the pooled samples (average ranks for ties), and the tie term sum(t^3 - t).
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  pooled.reserve(a.size() + b.size());
  for (double x : a) pooled.emplace_back(x, true);
  for (double x : b) pooled.emplace_back(x, false);
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, ties = 0;
  for (std::size_t i = 0; i < pooled.size();) {
    std::size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double rank = 0.5 * static_cast<double>(i + 1 + j);  // mean of ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_a += rank;
    const double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
  // U counts the pairs (x in a, y in b) with y < x (half for ties): small when a is the faster.
  const double u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return 1.0;  // every sample equal: no evidence either way
  const double z = (u - n1 * n2 / 2 + 0.5) / std::sqrt(var);
  return 0.5 * std::erfc(-z / std::sqrt(2.0));  // P(Z <= z)
}

}  // namespace commsim
