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

}  // namespace commsim
