// The verdict on the model, as data: error statistics per group, the winners, the crossovers and
// NCCL's own choices (report_tables.h). report_tables.cc prints it.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "collectives/predict.h"
#include "model/collective.h"
#include "runtime/output/report_tables.h"
#include "runtime/sweep/stats.h"

namespace commsim {
namespace {

// Candidates whose predicted times differ by less than this (relative) are tied in the model: at
// two ranks, for example, ring and Rabenseifner allreduce have the same closed form.
constexpr double kTieTolerance = 1e-6;

double median_of_abs(std::vector<double> v) {
  if (v.empty()) return 0;
  for (double& x : v) x = std::fabs(x);
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

double rel_error_of(const Point& p) {
  return (p.predicted_us - p.measured_median_us) / p.measured_median_us;
}

SizeBand band_of(Bytes bytes) {
  if (bytes < kSmallBandLimit) return SizeBand::Small;
  if (bytes < kLargeBandStart) return SizeBand::Medium;
  return SizeBand::Large;
}

std::string_view to_string(SizeBand b) {
  switch (b) {
    case SizeBand::Small: return "<64KiB";
    case SizeBand::Medium: return "64KiB-16MiB";
    case SizeBand::Large: return ">=16MiB";
  }
  return "?";
}

double geomean_abs(const std::vector<double>& errors) {
  if (errors.empty()) return 0;
  double s = 0;
  for (double e : errors) s += std::log(std::max(std::fabs(e), kGeomeanFloor));
  return std::exp(s / static_cast<double>(errors.size()));
}

bool comparable(const Point& p) {
  return p.ranks >= 2 && p.status == "ok" && p.measured() && p.measured_median_us > 0 && std::isfinite(p.predicted_us);
}

bool one_rank_measured(const Point& p) {
  return p.ranks < 2 && p.status == "ok" && p.measured();
}

ErrorStats error_stats(const std::vector<double>& rel_errors) {
  ErrorStats s;
  s.n = rel_errors.size();
  s.median_abs = median_of_abs(rel_errors);
  s.geomean_abs = geomean_abs(rel_errors);
  for (double e : rel_errors) s.max_abs = std::max(s.max_abs, std::fabs(e));
  return s;
}

std::vector<double> crossover_sizes(const std::vector<double>& sizes, const std::vector<double>& t_a,
                                    const std::vector<double>& t_b) {
  std::vector<double> out;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    double d0 = std::log(t_a[i] / t_b[i]), d1 = std::log(t_a[i + 1] / t_b[i + 1]);
    if (!(d0 * d1 < 0)) continue;
    double x0 = std::log(sizes[i]), x1 = std::log(sizes[i + 1]);
    out.push_back(std::exp(x0 + (x1 - x0) * d0 / (d0 - d1)));
  }
  return out;
}

std::vector<ErrorStats> error_per_file(const std::vector<std::vector<Point>>& runs) {
  std::vector<ErrorStats> out;
  for (const std::vector<Point>& run : runs) {
    std::vector<double> errors;
    for (const Point& p : run)
      if (comparable(p)) errors.push_back(rel_error_of(p));
    out.push_back(error_stats(errors));
  }
  return out;
}

namespace {

bool tied(double a, double b) {
  return std::fabs(a - b) <= kTieTolerance * std::min(a, b);
}

// Whether two algorithms measured at one point ran one schedule: their schedules, rebuilt as they
// ran (point_schedule_fingerprint), move the same messages in the same rounds. Where a schedule
// cannot be rebuilt (too many ranks, no element count), tied predictions stand in for it.
class ScheduleIdentity {
 public:
  bool same(const Point& a, const Point& b) {
    const auto fa = of(a), fb = of(b);
    if (fa && fb) return *fa == *fb;
    return tied(a.predicted_us, b.predicted_us);
  }

 private:
  std::optional<std::uint64_t> of(const Point& p) {
    auto [it, added] = cache_.try_emplace(&p);
    if (added && p.count > 0 && p.bytes % p.count == 0)
      it->second =
          point_schedule_fingerprint(p.collective, p.algorithm, p.nodes, p.ranks, p.count,
                                     static_cast<std::uint32_t>(p.bytes / p.count), p.root, p.pipeline_chunk_bytes);
    return it->second;
  }
  std::map<const Point*, std::optional<std::uint64_t>> cache_;
};

// The algorithms measured at one point that ran one schedule, as one contender: "rabenseifner=ring".
struct Contender {
  std::string name;
  const Point* best = nullptr;  // the member that measured fastest
  double predicted_us = 0;      // the first member's prediction
};

std::vector<Contender> contenders_of(const std::map<std::string, const Point*>& algs, ScheduleIdentity& identity) {
  std::vector<Contender> out;
  for (const auto& [name, p] : algs) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Contender& c) { return identity.same(*c.best, *p); });
    if (same == out.end()) {
      out.push_back({name, p, p->predicted_us});
      continue;
    }
    same->name += "=" + name;
    if (p->measured_median_us < same->best->measured_median_us) same->best = p;
  }
  return out;
}

// WinnerCase's verdict from the samples: is the measured winner faster than every other contender,
// and than the model's pick, beyond the noise of the measurement? Needs two or more contenders.
void judge_by_samples(WinnerCase& w, const std::vector<Contender>& contenders, const Contender& winner,
                      const Contender& pick) {
  auto p_faster = [&](const Point* other) {
    if (winner.best->samples_us.size() < kMinTestSamples || other->samples_us.size() < kMinTestSamples) return 1.0;
    return mann_whitney_p_less(winner.best->samples_us, other->samples_us);
  };
  double worst = -1;  // the largest p over the rivals: the winner must beat each of them
  for (const Contender& c : contenders)
    if (&c != &winner) worst = std::max(worst, p_faster(c.best));
  w.winner_p = worst < 0 ? 1.0 : worst;
  w.clear = w.winner_p < kWinnerAlpha;
  w.pick_p = w.agree ? 1.0 : p_faster(pick.best);
  w.pick_slower = w.pick_p < kWinnerAlpha;
}

// "Ring/LL128" for a forced row.
std::string variant_of(const Point& p) {
  return std::string(p.algorithm == Algorithm::NcclTree ? "Tree" : "Ring") + "/" + std::string(to_string(p.protocol));
}

// NCCL's own choice against the forced variants, per (collective, backend, dtype, nodes, ranks,
// bytes) where the unforced `nccl` row was measured, with more than one rank (one rank copies locally: there is nothing
// to choose). Only rows measured ok take part; the first row of each variant counts.
std::vector<NcclChoiceCase> nccl_choices(const std::vector<Point>& points) {
  using Where = std::tuple<std::string, std::string, int, int, Bytes,
                           std::string>;  // collective, backend, nodes, ranks, bytes, dtype
  struct Cell {
    const Point* own = nullptr;
    std::map<std::string, const Point*> forced;
  };
  std::map<Where, Cell> cells;
  for (const Point& p : points) {
    if (!is_nccl_algorithm(p.algorithm) || p.status != "ok" || !p.measured() || !(p.measured_median_us > 0) ||
        p.ranks < 2)
      continue;
    Cell& c = cells[{std::string(to_string(p.collective)), p.backend, p.nodes, p.ranks, p.bytes, p.dtype}];
    if (p.algorithm == Algorithm::Nccl && p.protocol == Protocol::None) {
      if (!c.own) c.own = &p;
    } else if (p.algorithm != Algorithm::Nccl && p.protocol != Protocol::None) {
      c.forced.try_emplace(variant_of(p), &p);
    }
  }
  std::vector<NcclChoiceCase> out;
  for (const auto& [where, cell] : cells) {
    if (!cell.own) continue;  // NCCL's own choice was not measured here
    NcclChoiceCase k;
    std::tie(k.collective, k.backend, k.nodes, k.ranks, k.bytes, std::ignore) = where;
    k.forced = static_cast<int>(cell.forced.size());
    if (!cell.own->nccl_algo.empty()) k.nccl_pick = cell.own->nccl_algo + "/" + cell.own->nccl_proto;
    k.nccl_channels = cell.own->nccl_channels;
    k.nccl_us = cell.own->measured_median_us;
    const Point* fastest = nullptr;
    double best_pred = INFINITY;
    for (const auto& [name, p] : cell.forced) {
      if (std::isfinite(p->predicted_us) && p->predicted_us < best_pred)
        best_pred = p->predicted_us, k.model_pick = name;
      if (!fastest || p->measured_median_us < fastest->measured_median_us) fastest = p, k.fastest = name;
    }
    if (fastest) k.fastest_us = fastest->measured_median_us;
    if (fastest) {
      k.lost = k.nccl_us / k.fastest_us - 1.0;
      const bool tested =
          cell.own->samples_us.size() >= kMinTestSamples && fastest->samples_us.size() >= kMinTestSamples;
      if (tested) k.lost_p = mann_whitney_p_less(fastest->samples_us, cell.own->samples_us);
      k.slower = k.lost > 0 && (tested ? k.lost_p < kWinnerAlpha : k.lost > kNcclLossNoise);
    }
    k.model_agrees = !k.model_pick.empty() && k.model_pick == k.nccl_pick;
    k.nccl_fastest = !k.fastest.empty() && k.fastest == k.nccl_pick;
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

namespace {

// (collective, backend, dtype, nodes, ranks) -> bytes -> algorithm -> its first comparable point.
using GridWhere = std::tuple<std::string, std::string, std::string, int, int>;
using BySize = std::map<Bytes, std::map<std::string, const Point*>>;

// Crossovers between every pair of algorithms over the sizes where both were measured and ran
// different schedules (sizes where they are one schedule say nothing about which is faster), when
// there are two or more such sizes and the model does not price them the same at every one.
void add_crossovers(Report& r, const GridWhere& where, const BySize& by_size, ScheduleIdentity& identity) {
  std::set<std::string> names;
  for (const auto& [bytes, algs] : by_size)
    for (const auto& [name, p] : algs) names.insert(name);
  for (auto ia = names.begin(); ia != names.end(); ++ia) {
    for (auto ib = std::next(ia); ib != names.end(); ++ib) {
      CrossoverRow c;
      std::vector<double> pa, pb, ma, mb;
      bool model_tied = true;
      for (const auto& [bytes, algs] : by_size) {
        auto fa = algs.find(*ia), fb = algs.find(*ib);
        if (bytes == 0 || fa == algs.end() || fb == algs.end() || identity.same(*fa->second, *fb->second)) continue;
        c.sizes.push_back(static_cast<double>(bytes));
        pa.push_back(fa->second->predicted_us);
        pb.push_back(fb->second->predicted_us);
        ma.push_back(fa->second->measured_median_us);
        mb.push_back(fb->second->measured_median_us);
        c.predicted_ratio.push_back(pb.back() / pa.back());
        c.measured_ratio.push_back(mb.back() / ma.back());
        if (!tied(pa.back(), pb.back())) model_tied = false;
      }
      if (c.sizes.size() < 2 || model_tied) continue;
      std::tie(c.collective, c.backend, std::ignore, c.nodes, c.ranks) = where;
      c.a = *ia;
      c.b = *ib;
      c.predicted_bytes = crossover_sizes(c.sizes, pa, pb);
      c.measured_bytes = crossover_sizes(c.sizes, ma, mb);
      r.crossovers.push_back(std::move(c));
    }
  }
}

}  // namespace

Report build_report(const std::vector<Point>& points, std::size_t max_outliers) {
  Report r;
  r.points = points.size();
  std::vector<double> small, large, all, sched_small, sched_large, lib_small, lib_large, nccl_small, nccl_large,
      mpi_small, mpi_large;
  std::map<std::tuple<std::string, std::string, std::string, int>, std::vector<double>> by_group;
  std::vector<const Point*> cmp;
  for (const Point& p : points) {
    if (p.measured()) ++r.measured;
    if (p.status != "ok" && p.status != "predicted")
      r.failed.push_back({p, p.status + (p.note.empty() ? "" : ": " + p.note)});
    else if (p.status == "ok" && !p.measured())
      r.failed.push_back({p, "status ok but no measured time"});
    if (one_rank_measured(p)) ++r.one_rank;  // listed with the points, kept out of every statistic
    if (!comparable(p)) continue;
    cmp.push_back(&p);
    double e = rel_error_of(p);
    all.push_back(e);
    (p.bytes < kSmallBandLimit ? small : large).push_back(e);
    if (is_hand_written(p.algorithm))
      (p.bytes < kSmallBandLimit ? sched_small : sched_large).push_back(e);
    else
      (p.bytes < kSmallBandLimit ? lib_small : lib_large).push_back(e);
    if (is_nccl_algorithm(p.algorithm))
      (p.bytes < kSmallBandLimit ? nccl_small : nccl_large).push_back(e);
    else if (!is_hand_written(p.algorithm))
      (p.bytes < kSmallBandLimit ? mpi_small : mpi_large).push_back(e);
    by_group[{std::string(to_string(p.collective)), std::string(to_string(p.algorithm)), p.backend,
              static_cast<int>(band_of(p.bytes))}]
        .push_back(e);
  }
  r.compared = cmp.size();
  r.all = error_stats(all);
  r.below_64KiB = error_stats(small);
  r.from_64KiB = error_stats(large);
  r.schedules_below_64KiB = error_stats(sched_small);
  r.schedules_from_64KiB = error_stats(sched_large);
  r.library_below_64KiB = error_stats(lib_small);
  r.library_from_64KiB = error_stats(lib_large);
  r.nccl_below_64KiB = error_stats(nccl_small);
  r.nccl_from_64KiB = error_stats(nccl_large);
  r.mpi_below_64KiB = error_stats(mpi_small);
  r.mpi_from_64KiB = error_stats(mpi_large);
  for (const auto& [key, errs] : by_group) {
    ErrorGroup g;
    std::tie(g.collective, g.algorithm, g.backend, std::ignore) = key;
    g.band = static_cast<SizeBand>(std::get<3>(key));
    g.stats = error_stats(errs);
    r.groups.push_back(g);
  }

  // Winners and crossovers: the first comparable point of each (collective, backend, dtype, nodes,
  // ranks, algorithm, bytes), hand-written algorithms only.
  std::map<GridWhere, BySize> grid;
  for (const Point* p : cmp) {
    if (!is_hand_written(p->algorithm)) continue;
    auto& slot = grid[{std::string(to_string(p->collective)), p->backend, p->dtype, p->nodes, p->ranks}][p->bytes]
                     [std::string(to_string(p->algorithm))];
    if (!slot) slot = p;
  }
  ScheduleIdentity identity;
  for (const auto& [where, by_size] : grid) {
    for (const auto& [bytes, algs] : by_size) {
      if (algs.size() < 2) continue;
      const std::vector<Contender> contenders = contenders_of(algs, identity);
      if (contenders.size() < 2) {  // one schedule under several names: nothing to choose
        ++r.winner_one_schedule;
        continue;
      }
      WinnerCase w;
      std::tie(w.collective, w.backend, std::ignore, w.nodes, w.ranks) = where;
      w.bytes = bytes;
      w.candidates = static_cast<int>(contenders.size());
      double best_pred = INFINITY;
      const Contender* winner = nullptr;
      for (const Contender& c : contenders) {
        best_pred = std::min(best_pred, c.predicted_us);
        if (!winner || c.best->measured_median_us < winner->best->measured_median_us) winner = &c;
      }
      w.measured_winner = winner->name;
      // Every contender tied with the predicted best is a model winner; the model's pick is the
      // one of them that measured fastest.
      const Contender* pick = nullptr;
      std::string tied_names;
      for (const Contender& c : contenders) {
        if (c.predicted_us > best_pred * (1 + kTieTolerance)) continue;
        tied_names += (tied_names.empty() ? "" : " | ") + c.name;
        if (!pick || c.best->measured_median_us < pick->best->measured_median_us) pick = &c;
        if (&c == winner) w.agree = true;
      }
      w.predicted_winner = tied_names;
      w.loss = pick->best->measured_median_us / winner->best->measured_median_us - 1.0;
      judge_by_samples(w, contenders, *winner, *pick);
      if (w.agree) ++r.winner_agree;
      if (w.loss <= 0.05) ++r.winner_within_5pct;
      if (w.clear) ++r.winner_clear;
      if (w.clear && w.agree) ++r.winner_clear_agree;
      if (w.pick_slower) ++r.winner_pick_slower;
      r.winners.push_back(w);
    }
    add_crossovers(r, where, by_size, identity);
  }
  r.winner_agreement =
      r.winners.empty() ? 0.0 : static_cast<double>(r.winner_agree) / static_cast<double>(r.winners.size());
  r.nccl_choices = nccl_choices(points);
  for (const NcclChoiceCase& c : r.nccl_choices) r.nccl_slower += c.slower ? 1 : 0;
  for (const Point& p : points)
    r.nccl_one_rank += is_nccl_algorithm(p.algorithm) && p.measured() && p.ranks == 1 ? 1 : 0;

  std::vector<const Point*> sorted = cmp;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Point* a, const Point* b) {
    return std::fabs(rel_error_of(*a)) > std::fabs(rel_error_of(*b));
  });
  for (std::size_t i = 0; i < sorted.size() && i < max_outliers; ++i) r.outliers.push_back(*sorted[i]);
  return r;
}

}  // namespace commsim
