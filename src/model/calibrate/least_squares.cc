// Line fits and their held-out checks, and the linear algebra the fits share.
#include "model/calibrate/least_squares.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "model/calibrate/calibrate.h"
#include "model/error.h"

namespace commsim {

namespace least_squares {

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

bool solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, Eigen::VectorXd& x, double tolerance, double scale) {
  if (scale <= 0) scale = a.diagonal().cwiseAbs().maxCoeff();
  if (!(scale > 0)) return false;
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
  if ((lu.matrixLU().diagonal().array().abs() <= tolerance * scale).any()) return false;
  x = lu.solve(b);
  return true;
}

}  // namespace least_squares

namespace {

using least_squares::weight_of;

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
  fit.r2 = least_squares::r_squared(measured, fitted);
  fit.median_abs_rel_residual = median_abs(rel);
  for (double r : rel) fit.max_abs_rel_residual = std::max(fit.max_abs_rel_residual, std::fabs(r));
  return fit;
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

}  // namespace commsim
