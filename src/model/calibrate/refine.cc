// The collective fit: the terms of Param adjusted so that the predictions match measured
// collectives (Gauss-Newton with Levenberg-Marquardt damping, Eigen for the normal equations).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "model/calibrate/calibrate.h"
#include "model/calibrate/least_squares.h"
#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim {

using least_squares::weight_of;

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
  fit.r2 = least_squares::r_squared(measured, predicted);
  fit.samples = after.used.size();
  fit.skipped = samples.size() - after.used.size();
}

}  // namespace

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

namespace {

// The Jacobian of the predictions of `base` in the free parameters at `theta`, by one-sided
// differences (exact for linear dependence), one column per parameter, each on its own copy of
// the topology: the columns are computed by up to `threads` threads at once. informative[j] is
// false when no sample depends on parameter j.
struct Jacobian {
  Eigen::MatrixXd columns;  // samples x parameters
  std::vector<char> informative;
};
Jacobian jacobian(const Topology& current, const std::vector<Param>& free_params, const std::vector<double>& theta,
                  const std::vector<CollectiveSample>& samples, const Evaluation& base, const SamplePredictor& predict,
                  int threads) {
  const std::size_t n = base.used.size(), m = free_params.size();
  Jacobian jac{Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(m)),
               std::vector<char>(m, 0)};
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
      const double t = predict(probe, samples[base.used[k]]);
      const double d = std::isfinite(t) ? (t - base.predicted[k]) / h : 0.0;
      jac.columns(static_cast<Eigen::Index>(k), static_cast<Eigen::Index>(j)) = d;
      if (d != 0.0) jac.informative[j] = 1;
    }
  });
  return jac;
}

// The normal equations A x = b of the weighted linearised problem, in the parameters scaled to
// 1 (they differ by 1e12 between a latency and a beta): x_j is the step of parameter j / scale_j.
struct NormalEquations {
  Eigen::MatrixXd a;
  Eigen::VectorXd b;
};
NormalEquations normal_equations(const Eigen::MatrixXd& jac, const Eigen::VectorXd& scale,
                                 const std::vector<CollectiveSample>& samples, const Evaluation& base,
                                 FitWeighting weighting) {
  const Eigen::Index n = jac.rows(), m = jac.cols();
  NormalEquations ne{Eigen::MatrixXd::Zero(m, m), Eigen::VectorXd::Zero(m)};
  for (Eigen::Index k = 0; k < n; ++k) {
    const double meas = samples[base.used[static_cast<std::size_t>(k)]].time_s;
    double w = weight_of(meas, weighting);
    const double r = meas - base.predicted[static_cast<std::size_t>(k)];
    // Least absolute relative error by reweighting: w = 1 / (t^2 |r / t|), |r / t| at least 1%.
    if (weighting == FitWeighting::Robust) w /= std::max(std::fabs(r) / meas, 0.01);
    for (Eigen::Index i = 0; i < m; ++i) {
      const double ji = jac(k, i) * scale(i);
      ne.b(i) += w * ji * r;
      for (Eigen::Index j = 0; j < m; ++j) ne.a(i, j) += w * ji * jac(k, j) * scale(j);
    }
  }
  return ne;
}

// The state of a fit between iterations.
struct FitState {
  std::vector<Param> free_params;
  std::vector<double> theta;
  Topology current;
  Evaluation base;
  double objective = 0;
  double damping = 0;  // lambda, relative to the diagonal
  std::map<Param, ParamRange> range;
};

// The scale a parameter's step is measured in (they differ by 1e12 between a latency and a beta).
double step_scale(Param p, double theta) {
  return std::max(std::fabs(theta), param_step(p, 0) * 1e3);
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * v);
  return buf;
}

// Refuses the terms the samples do not pin down, before the first step: the Jacobian's columns in
// relative residuals, each scaled to unit length, are taken in the order the terms were asked for
// (the tiers' terms before the curves' points that refine them); a term is kept while its column
// keeps kCollinearTolerance of its length once the kept ones are projected out (Gram-Schmidt) and
// while fewer than samples / kPointsPerTerm terms are kept. Sets the condition number of the kept
// columns (JacobiSVD).
void refuse_unpinned(FitState& st, Jacobian& jac, const std::vector<CollectiveSample>& samples,
                     std::vector<RefusedTerm>& refused, double& condition) {
  const Eigen::Index n = jac.columns.rows(), m = jac.columns.cols();
  if (m == 0) return;
  Eigen::MatrixXd a(n, m);
  for (Eigen::Index j = 0; j < m; ++j) {
    const auto jj = static_cast<std::size_t>(j);
    for (Eigen::Index k = 0; k < n; ++k)
      a(k, j) = jac.columns(k, j) * step_scale(st.free_params[jj], st.theta[jj]) /
                samples[st.base.used[static_cast<std::size_t>(k)]].time_s;
    const double norm = a.col(j).norm();
    if (norm > 0) a.col(j) /= norm;
  }
  const std::size_t most = std::max<std::size_t>(1, static_cast<std::size_t>(n) / kPointsPerTerm);
  std::vector<Eigen::Index> kept;
  std::vector<std::pair<Eigen::Index, double>> dropped;  // column, its independent share
  Eigen::MatrixXd basis(n, 0);                           // orthonormal, spanning the kept columns
  for (Eigen::Index j = 0; j < m; ++j) {
    Eigen::VectorXd r = a.col(j);
    for (int pass = 0; pass < 2; ++pass) r -= basis * (basis.transpose() * r);
    const double independent = r.norm();
    if (independent >= kCollinearTolerance && kept.size() < most) {
      kept.push_back(j);
      basis.conservativeResize(Eigen::NoChange, basis.cols() + 1);
      basis.col(basis.cols() - 1) = r / independent;
    } else {
      dropped.push_back({j, independent});
    }
  }
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(a(Eigen::all, kept));
  const auto& sv = svd.singularValues();
  condition = sv.size() > 0 && sv(sv.size() - 1) > 0 ? sv(0) / sv(sv.size() - 1) : INFINITY;
  if (dropped.empty()) return;
  const Eigen::MatrixXd kept_columns = a(Eigen::all, kept);
  for (const auto& [col, independent] : dropped) {
    const Param p = st.free_params[static_cast<std::size_t>(col)];
    std::string why;
    if (independent >= kCollinearTolerance) {
      why = "too few points: " + std::to_string(n) + " points pin down at most " + std::to_string(most) + " terms (" +
            std::to_string(kPointsPerTerm) + " a term); the terms asked for before it were kept";
    } else if (kept.empty()) {
      why = "the points hardly depend on it";
    } else {
      // The kept terms whose effect it repeats: the largest coefficients of its column on theirs.
      const Eigen::VectorXd c = kept_columns.colPivHouseholderQr().solve(a.col(col));
      std::vector<std::pair<double, Eigen::Index>> by_weight;
      for (Eigen::Index i = 0; i < c.size(); ++i)
        by_weight.push_back({-std::fabs(c(i)), kept[static_cast<std::size_t>(i)]});
      std::sort(by_weight.begin(), by_weight.end());
      why = "its effect on the predictions is that of ";
      for (std::size_t i = 0; i < std::min<std::size_t>(2, by_weight.size()); ++i)
        why +=
            (i ? " and " : "") + std::string(to_string(st.free_params[static_cast<std::size_t>(by_weight[i].second)]));
      why += " (" + percent(independent) + " of it independent of them; at least " + percent(kCollinearTolerance) +
             " needed)";
    }
    refused.push_back({p, why});
  }
  std::vector<Param> keep_p;
  std::vector<double> keep_t;
  for (Eigen::Index j : kept) {
    keep_p.push_back(st.free_params[static_cast<std::size_t>(j)]);
    keep_t.push_back(st.theta[static_cast<std::size_t>(j)]);
  }
  st.free_params = std::move(keep_p);
  st.theta = std::move(keep_t);
  jac.columns = Eigen::MatrixXd(jac.columns(Eigen::all, kept));
}

// Drops the parameters no sample depends on from `state` (and their columns from `jac`): a
// parameter moved by earlier steps to where no sample depends on it any more (a share below the
// point where it binds) is fitted, at that value (moved_then_flat); one never moved is held.
void drop_flat(FitState& state, Jacobian& jac, const Topology& start, std::vector<Param>& moved_then_flat,
               std::vector<Param>& held) {
  std::vector<Param> keep_p;
  std::vector<double> keep_t;
  std::vector<Eigen::Index> keep_j;
  for (std::size_t j = 0; j < state.free_params.size(); ++j) {
    const Param p = state.free_params[j];
    if (jac.informative[j]) {
      keep_p.push_back(p);
      keep_t.push_back(state.theta[j]);
      keep_j.push_back(static_cast<Eigen::Index>(j));
    } else if (get_param(state.current, p) != get_param(start, p)) {
      moved_then_flat.push_back(p);
    } else {
      held.push_back(p);
    }
  }
  state.free_params = std::move(keep_p);
  state.theta = std::move(keep_t);
  jac.columns = Eigen::MatrixXd(jac.columns(Eigen::all, keep_j));
}

// One Levenberg-Marquardt iteration: tries damped steps until one lowers the objective (up to 12
// tries, the damping growing each time). False when no step is accepted or the accepted one
// moves no parameter measurably: the fit has converged.
bool lm_iteration(FitState& st, const Eigen::MatrixXd& jac, const std::vector<CollectiveSample>& samples,
                  FitWeighting weighting, const SamplePredictor& predict, int threads, std::size_t reference) {
  const std::size_t mm = st.free_params.size();
  Eigen::VectorXd scale(static_cast<Eigen::Index>(mm));
  for (std::size_t j = 0; j < mm; ++j) scale(static_cast<Eigen::Index>(j)) = step_scale(st.free_params[j], st.theta[j]);
  const NormalEquations ne = normal_equations(jac, scale, samples, st.base, weighting);
  for (int attempt = 0; attempt < 12; ++attempt) {
    Eigen::MatrixXd damped = ne.a;
    // A tiny ridge always: columns that move together (two latencies always summed) then take
    // the smallest change.
    for (Eigen::Index i = 0; i < damped.rows(); ++i) damped(i, i) += (st.damping + 1e-9) * std::max(ne.a(i, i), 1e-300);
    Eigen::VectorXd step;
    if (!least_squares::solve(damped, ne.b, step, 1e-13)) return false;
    Topology candidate = st.current;
    std::vector<double> next_theta = st.theta;
    double max_change = 0;
    for (std::size_t j = 0; j < mm; ++j) {
      const auto jj = static_cast<Eigen::Index>(j);
      // Projected onto the term's range: a step that would leave it stops at its end.
      const ParamRange& range = st.range.at(st.free_params[j]);
      double next = std::clamp(st.theta[j] + step(jj) * scale(jj), range.lo, range.hi);
      set_param(candidate, st.free_params[j], next);
      next = get_param(candidate, st.free_params[j]);  // as the topology holds it (a share stops at 1)
      max_change = std::max(max_change, std::fabs(next - st.theta[j]) / scale(jj));
      next_theta[j] = next;
    }
    if (max_change < 1e-9) return false;
    Evaluation tried = evaluate(candidate, samples, predict, threads);
    const double tried_objective = objective(tried, samples, weighting, reference);
    if (tried_objective < st.objective) {
      st.current = std::move(candidate);
      st.theta = std::move(next_theta);
      st.base = std::move(tried);
      st.objective = tried_objective;
      st.damping = st.damping / 4;
      return true;
    }
    st.damping = st.damping == 0 ? 1e-3 : st.damping * 8;
  }
  return false;
}

}  // namespace

ParamFit refine_parameters(const Topology& topo, const std::vector<CollectiveSample>& samples,
                           const std::vector<Param>& params, FitWeighting weighting, const SamplePredictor& predict,
                           int threads) {
  ParamFit fit;
  fit.topology = topo;
  for (Param p : params) fit.range[p] = fit_range(p, topo);
  const Evaluation before = evaluate(topo, samples, predict, threads);
  if (before.used.empty()) {
    fit.held = params;
    fill_quality(fit, samples, before, before);
    return fit;
  }
  // Gauss-Newton with Levenberg-Marquardt damping: the models are nearly linear in the parameters
  // for a fixed algorithm, so undamped steps usually land close to the solution; a step is kept
  // only when it lowers the objective (otherwise the damping grows and the step shrinks toward
  // gradient descent), so parameters that trade off against each other (gamma and the
  // local-operation curve) cannot wander off along a flat valley.
  FitState st{params, {}, topo, before, objective(before, samples, weighting, 0), 0, fit.range};
  for (Param p : params) st.theta.push_back(get_param(topo, p));
  std::vector<Param> moved_then_flat;
  const std::size_t reference = before.used.size();
  const int max_iterations = weighting == FitWeighting::Robust ? 60 : 30;
  for (int iter = 0; iter < max_iterations; ++iter) {
    fit.iterations = iter + 1;
    if (st.free_params.empty()) break;
    Jacobian jac = jacobian(st.current, st.free_params, st.theta, samples, st.base, predict, threads);
    drop_flat(st, jac, topo, moved_then_flat, fit.held);
    if (iter == 0) refuse_unpinned(st, jac, samples, fit.refused, fit.condition_number);
    if (st.free_params.empty()) break;
    if (!lm_iteration(st, jac.columns, samples, weighting, predict, threads, reference)) break;
  }
  fit.fitted = st.free_params;
  fit.fitted.insert(fit.fitted.end(), moved_then_flat.begin(), moved_then_flat.end());
  fit.topology = st.current;
  fill_quality(fit, samples, before, evaluate(st.current, samples, predict, threads));
  return fit;
}

}  // namespace commsim
