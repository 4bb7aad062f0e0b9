#pragma once
// Summary statistics of a point's per-iteration times.
#include <vector>

namespace commsim {

struct SampleStats {
  double min = 0;
  double median = 0;
  double mean = 0;
  double p95 = 0;  // 95th percentile, linear interpolation between order statistics (numpy's default)
  double max = 0;
};

// All fields NaN for no samples.
SampleStats summarize(std::vector<double> samples);
// The q-quantile (0 <= q <= 1) of sorted samples, interpolated linearly; NaN when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

// One-sided Mann-Whitney U test on two sets of samples: the p-value of the hypothesis that `a` is
// not faster than `b` (no shift), against "a's samples tend to be smaller" (rank-sum test, normal
// approximation with the tie and continuity corrections; close to the exact test from about 8
// samples each; scipy.stats.mannwhitneyu(a, b, alternative="less", method="asymptotic") gives the
// same). Small p: a is measurably faster than b. 1 when either set is empty or
// every sample is equal.
double mann_whitney_p_less(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace commsim
