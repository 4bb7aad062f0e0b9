#include "runtime/sweep/point.h"

namespace commsim {

void derive_bandwidths(Point& p) {
  if (!p.measured() || p.measured_median_us <= 0) return;
  double t_s = p.measured_median_us * 1e-6;
  p.algbw_gbps = static_cast<double>(p.bytes) / t_s / 1e9;
  p.busbw_gbps = p.algbw_gbps * busbw_factor(p.collective, p.ranks);
  if (!std::isnan(p.predicted_us)) p.rel_error = (p.predicted_us - p.measured_median_us) / p.measured_median_us;
}

}  // namespace commsim
