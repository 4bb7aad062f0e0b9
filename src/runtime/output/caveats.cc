#include "runtime/output/caveats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/units.h"
#include "runtime/h5/results_file.h"

namespace commsim {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool measured_ok(const Point& p) {
  return p.status == "ok" && p.measured() && p.measured_median_us > 0;
}

}  // namespace

double spread_of(const Point& p) {
  if (!(p.measured_median_us > 0) || !std::isfinite(p.measured_p95_us)) return kNaN;
  return p.measured_p95_us / p.measured_median_us;
}

std::string spread_text(double spread) {
  return std::isfinite(spread) ? fmt::format("{:.2f}x", spread) : "-";
}

std::vector<std::string> noisy_point_lines(const std::vector<Point>& points, std::size_t max_named) {
  std::vector<const Point*> noisy;
  std::size_t measured = 0;
  for (const Point& p : points) {
    if (!measured_ok(p)) continue;
    ++measured;
    if (spread_of(p) > kNoisySpread) noisy.push_back(&p);
  }
  if (noisy.empty()) return {};
  std::stable_sort(noisy.begin(), noisy.end(),
                   [](const Point* a, const Point* b) { return spread_of(*a) > spread_of(*b); });
  std::vector<std::string> lines;
  lines.push_back(fmt::format("{} of {} measured points are noisy (p95 more than {:g}x the median):", noisy.size(),
                              measured, kNoisySpread));
  for (std::size_t i = 0; i < noisy.size() && i < max_named; ++i) {
    const Point& p = *noisy[i];
    lines.push_back(fmt::format("  {} {} {} ranks={}: median {:.2f} us, p95 {:.2f} us ({})", to_string(p.collective),
                                to_string(p.algorithm), format_bytes(p.bytes), p.ranks, p.measured_median_us,
                                p.measured_p95_us, spread_text(spread_of(p))));
  }
  if (noisy.size() > max_named) lines.push_back(fmt::format("  and {} more", noisy.size() - max_named));
  lines.push_back(
      "their medians, and the model's error on them, are uncertain: take more samples (--iters), spread them over "
      "the run (--passes 4) so that a slow spell touches every point a little, bind each rank to its own CPUs "
      "(mpirun --bind-to core) and keep other work off the machine");
  return lines;
}

Repeatability machine_against_itself(const std::vector<std::vector<Point>>& runs) {
  Repeatability r;
  r.files = runs.size();
  std::vector<double> diffs;
  auto first_rows = [](const std::vector<Point>& run) {
    std::map<PointKey, const Point*> rows;
    for (const Point& p : run)
      if (measured_ok(p) && p.ranks >= 2) rows.try_emplace(key_of(p), &p);
    return rows;
  };
  for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
    const auto a = first_rows(runs[i]), b = first_rows(runs[i + 1]);
    for (const auto& [key, pa] : a) {
      auto it = b.find(key);
      if (it == b.end()) continue;
      const double d =
          std::fabs(pa->measured_median_us - it->second->measured_median_us) / it->second->measured_median_us;
      diffs.push_back(d);
      r.max_abs = std::max(r.max_abs, d);
    }
  }
  r.pairs = diffs.size();
  r.median_abs = median_of(std::move(diffs));
  return r;
}

std::string uncalibrated_note(const std::string& topology_name) {
  return "topology '" + topology_name +
         "' is not calibrated for this machine (no calibrated: section): it describes the machine its preset was "
         "written for, and on another one its predictions are typically " +
         kUncalibratedTypicalError + " off at the median, against " + kCalibratedTypicalError +
         " once calibrated (README, How accurate it is). Calibrate: mpirun -np 2 commsim probe --out portrait.h5; "
         "commsim calibrate portrait.h5 --out mymachine.yaml; run with --topology mymachine.yaml, then refit on "
         "that run: commsim calibrate portrait.h5 run1.h5 --refine all --out refined.yaml";
}

}  // namespace commsim
