#include "runtime/output/report_tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "model/collective.h"
#include "runtime/output/caveats.h"
#include "runtime/output/reporter.h"
#include "runtime/sweep/stats.h"

namespace commsim {
namespace {

std::string pct(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}%", 100.0 * v) : "-";
}

// A band's error, or "no points" when no point fell in it (its zeros are not a 0.0% error).
std::string band_pct(const ErrorStats& s, double v) {
  return s.n == 0 ? "no points" : pct(v);
}

std::string size_list(const std::vector<double>& sizes) {
  if (sizes.empty()) return "none";
  std::string s;
  for (double b : sizes) {
    if (!s.empty()) s += ", ";
    s += format_bytes(static_cast<Bytes>(std::llround(b)));
  }
  return s;
}

std::string json_sizes(const std::vector<double>& sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + json_number(sizes[i]);
  return s + "]";
}

std::string stats_json(const ErrorStats& s) {
  return "{\"n\": " + std::to_string(s.n) + ", \"median_abs_rel_error\": " + json_number(s.median_abs) +
         ", \"geomean_abs_rel_error\": " + json_number(s.geomean_abs) +
         ", \"max_abs_rel_error\": " + json_number(s.max_abs) + "}";
}

}  // namespace

namespace {

std::string point_label(const Point& p) {
  return std::string(to_string(p.collective)) + " " + std::string(to_string(p.algorithm)) + " " + p.backend +
         " nodes=" + std::to_string(p.nodes) + " ranks=" + std::to_string(p.ranks) + " " + format_bytes(p.bytes);
}

void stats_line(std::ostream& out, const char* label, const ErrorStats& s) {
  out << fmt::format("  {:<22} {:>6} points   median |err| {:>8}   geomean |err| {:>8}   max |err| {:>8}\n", label, s.n,
                     band_pct(s, s.median_abs), band_pct(s, s.geomean_abs), band_pct(s, s.max_abs));
}

}  // namespace

namespace {

// "Ring/LL128, 24 ch" or "-".
std::string nccl_ran(const NcclChoiceCase& c) {
  if (c.nccl_pick.empty()) return "-";
  return c.nccl_pick + (c.nccl_channels > 0 ? ", " + std::to_string(c.nccl_channels) + " ch" : "");
}
std::string us_text(double us) {
  return std::isfinite(us) ? fmt::format("{:.2f}", us) : "-";
}
std::string signed_pct(double v) {
  return std::isfinite(v) ? fmt::format("{:+.1f}%", 100.0 * v) : "-";
}

void print_nccl_choices(std::ostream& out, const Report& r) {
  std::size_t logged = 0, fastest_known = 0, nccl_fastest = 0, model_known = 0, model_agrees = 0;
  for (const NcclChoiceCase& c : r.nccl_choices) {
    if (c.nccl_pick.empty()) continue;
    ++logged;
    if (!c.fastest.empty()) ++fastest_known, nccl_fastest += c.nccl_fastest ? 1 : 0;
    if (!c.model_pick.empty()) ++model_known, model_agrees += c.model_agrees ? 1 : 0;
  }
  out << "\n## NCCL's choice (what NCCL ran, from its TUNING log; NCCL's model's pick; the fastest forced variant)\n";
  out << fmt::format(
      "  {} cases, NCCL's choice logged in {}: it was the fastest forced variant in {} of {}, NCCL's model picked it "
      "in {} of {}\n",
      r.nccl_choices.size(), logged, nccl_fastest, fastest_known, model_agrees, model_known);
  constexpr const char* kRow = "{:<14} {:<6} {:>5} {:>5} {:>10} {:<20} {:<14} {:<14} {:>10} {:>10} {:>8}{}\n";
  out << fmt::format(kRow, "collective", "backend", "nodes", "ranks", "bytes", "NCCL ran", "model's pick",
                     "fastest forced", "NCCL us", "fastest us", "lost", "");
  for (const NcclChoiceCase& c : r.nccl_choices)
    out << fmt::format(kRow, c.collective, c.backend, c.nodes, c.ranks, format_bytes(c.bytes), nccl_ran(c),
                       c.model_pick.empty() ? "-" : c.model_pick, c.fastest.empty() ? "-" : c.fastest,
                       us_text(c.nccl_us), us_text(c.fastest_us), signed_pct(c.lost),
                       c.slower ? "  <- NCCL slower" : "");
  if (r.nccl_slower == 0) {
    out << "  NCCL's own choice measured no slower than every variant it could have been forced to (beyond the "
           "noise)\n";
    return;
  }
  out << "  NCCL ran a slower variant than one it could have been forced to in " << r.nccl_slower << " of "
      << r.nccl_choices.size() << " cases:\n";
  for (const NcclChoiceCase& c : r.nccl_choices) {
    if (!c.slower) continue;
    const std::string p = c.lost_p < 1 ? ", Mann-Whitney p " + fmt::format("{:.2g}", c.lost_p) : std::string();
    out << "    " << c.collective << " " << c.backend << " nodes=" << c.nodes << " ranks=" << c.ranks << " "
        << format_bytes(c.bytes) << ": NCCL ran " << (c.nccl_pick.empty() ? "an unlogged variant" : c.nccl_pick)
        << " in " << us_text(c.nccl_us) << " us; forcing " << c.fastest << " measured " << us_text(c.fastest_us)
        << " us: " << pct(c.lost) << " of the time lost" << p << "\n";
  }
}

}  // namespace

namespace {

// The model's error beside the machine's own: no model can be judged more closely than the
// machine repeats itself.
void print_noise_verdict(std::ostream& out, const Report& r) {
  if (r.repeat.pairs == 0) {
    out << "  how far the machine differs from itself is not known: run the same sweep again (--out run2.h5) and "
           "give both files (commsim report run1.h5 run2.h5)\n";
    return;
  }
  const bool within = r.all.median_abs <= r.repeat.median_abs;
  out << "  the machine differs from itself by " << pct(r.repeat.median_abs) << " at the median (|run a - run b| / "
      << "run b over the " << r.repeat.pairs << " points measured in two of the " << r.repeat.files
      << " files; at most " << pct(r.repeat.max_abs) << "): the model's " << pct(r.all.median_abs)
      << (within ? " is within the machine's own noise\n" : " is beyond the machine's own noise\n");
}

}  // namespace

// The answer first: how far off, where worst, whether the picks were right, NCCL's slow picks.
void print_verdict(std::ostream& out, const Report& r) {
  if (r.compared == 0) return;
  out << "\n## Verdict\n";
  out << "  the model is " << pct(r.all.median_abs) << " off at the median over " << r.compared
      << " points: " << band_pct(r.below_64KiB, r.below_64KiB.median_abs) << " below 64 KiB, "
      << band_pct(r.from_64KiB, r.from_64KiB.median_abs) << " from 64 KiB\n";
  if (r.per_file.size() == r.files.size() && r.per_file.size() > 1) {
    out << "  per file:";
    for (std::size_t i = 0; i < r.files.size(); ++i)
      out << (i ? "," : "") << " " << r.files[i] << " "
          << (r.per_file[i].n ? pct(r.per_file[i].median_abs) + " (" + std::to_string(r.per_file[i].n) + " points)"
                              : std::string("no point to compare"));
    out << "\n";
  }
  print_noise_verdict(out, r);
  for (const std::string& name : r.uncalibrated) out << "  note: " << uncalibrated_note(name) << "\n";
  if (r.one_rank > 0)
    out << "  " << r.one_rank << " one-rank point(s) (a local copy: no algorithm at work) are listed but kept out of "
        << "every statistic\n";
  std::vector<const ErrorGroup*> worst;
  for (const ErrorGroup& g : r.groups)
    if (g.stats.n > 0 && g.stats.median_abs > kVerdictWithin) worst.push_back(&g);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const ErrorGroup* a, const ErrorGroup* b) { return a->stats.median_abs > b->stats.median_abs; });
  out << "  " << r.groups.size() - worst.size() << " of " << r.groups.size()
      << " (collective, algorithm, size band) groups within " << pct(kVerdictWithin) << " at the median";
  if (worst.empty()) {
    out << "\n";
  } else {
    out << "; worst:";
    for (std::size_t i = 0; i < worst.size() && i < 3; ++i)
      out << (i ? "," : "") << " " << worst[i]->collective << " " << worst[i]->algorithm << " "
          << to_string(worst[i]->band) << " " << pct(worst[i]->stats.median_abs);
    out << "\n";
  }
  if (!r.winners.empty()) {
    std::size_t agree = 0, slower = 0;
    for (const WinnerCase& w : r.winners) agree += w.agree, slower += w.pick_slower;
    out << "  it picked the measured fastest algorithm in " << agree << " of " << r.winners.size()
        << " cases; its pick was slower beyond the noise in " << slower << "\n";
  }
  std::size_t nccl_slow = 0;
  for (const NcclChoiceCase& c : r.nccl_choices) nccl_slow += c.slower;
  if (!r.nccl_choices.empty())
    out << "  NCCL's own choice was slower than a variant it could have been forced to in " << nccl_slow << " of "
        << r.nccl_choices.size() << " sizes (## NCCL's choice)\n";
}

namespace {

// Every comparable point with its spread beside its median; one-rank points listed and marked.
void print_point_errors(std::ostream& out, const std::vector<Point>& points) {
  out << "\n## Relative error per point (spread: p95 / median of the samples)\n";
  constexpr const char* kRow = "{:<14} {:<19} {:<6} {:>5} {:>5} {:>12} {:>12} {:>7} {:>12} {:>9}{}\n";
  out << fmt::format(kRow, "collective", "algorithm", "backend", "nodes", "ranks", "bytes", "measured_us", "spread",
                     "predicted_us", "error", "");
  for (const Point& p : points) {
    const bool one_rank = one_rank_measured(p);
    if (!comparable(p) && !one_rank) continue;
    out << fmt::format(kRow, to_string(p.collective), to_string(p.algorithm), p.backend, p.nodes, p.ranks, p.bytes,
                       us_text(p.measured_median_us), spread_text(spread_of(p)), us_text(p.predicted_us),
                       one_rank ? "-" : pct(rel_error_of(p)), one_rank ? "  one rank: not in the statistics" : "");
  }
}

}  // namespace

void print_report_table(std::ostream& out, const Report& r, bool with_points, const std::vector<Point>& points) {
  out << "# commsim report: " << r.points << " points read, " << r.measured << " measured, " << r.compared
      << " with a prediction to compare\n";
  for (const auto& f : r.files) out << "#   " << f << "\n";
  for (const auto& n : r.run_notes) out << "# " << n << "\n";
  print_verdict(out, r);
  out << "\n## Accuracy (|error| = |predicted - measured| / measured)\n";
  stats_line(out, "all sizes", r.all);
  stats_line(out, "below 64 KiB", r.below_64KiB);
  stats_line(out, "64 KiB and above", r.from_64KiB);
  if (r.schedules_below_64KiB.n + r.schedules_from_64KiB.n > 0 &&
      r.library_below_64KiB.n + r.library_from_64KiB.n > 0) {
    out << "  hand-written schedules:\n";
    stats_line(out, "  below 64 KiB", r.schedules_below_64KiB);
    stats_line(out, "  64 KiB and above", r.schedules_from_64KiB);
    out << "  library baselines (MPI: the library's own choice where known, else the model's fastest; NCCL's "
           "model):\n";
    stats_line(out, "  below 64 KiB", r.library_below_64KiB);
    stats_line(out, "  64 KiB and above", r.library_from_64KiB);
  }
  if (r.nccl_below_64KiB.n + r.nccl_from_64KiB.n > 0) {
    out << "  NCCL's collectives (nccl, nccl-ring, nccl-tree; predicted by NCCL's model):\n";
    stats_line(out, "  below 64 KiB", r.nccl_below_64KiB);
    stats_line(out, "  64 KiB and above", r.nccl_from_64KiB);
    if (r.mpi_below_64KiB.n + r.mpi_from_64KiB.n > 0) {
      out << "  the MPI library's collectives:\n";
      stats_line(out, "  below 64 KiB", r.mpi_below_64KiB);
      stats_line(out, "  64 KiB and above", r.mpi_from_64KiB);
    }
  }

  if (with_points) print_point_errors(out, points);

  out << "\n## Error per collective x algorithm x size band\n";
  constexpr const char* kGroupRow = "{:<14} {:<19} {:<6} {:<12} {:>6} {:>10} {:>10} {:>10}\n";
  out << fmt::format(kGroupRow, "collective", "algorithm", "backend", "band", "n", "median", "geomean", "max");
  for (const auto& g : r.groups)
    out << fmt::format(kGroupRow, g.collective, g.algorithm, g.backend, to_string(g.band), g.stats.n,
                       pct(g.stats.median_abs), pct(g.stats.geomean_abs), pct(g.stats.max_abs));

  out << "\n## Winners (fastest hand-written algorithm: model vs measurement)\n";
  if (r.winner_one_schedule > 0)
    out << "  " << r.winner_one_schedule << " point(s) where the algorithms measured ran one schedule (the same "
        << "messages in the same rounds, e.g. ring and rabenseifner at 2 ranks) are no contest and not counted\n";
  if (r.winners.empty()) {
    out << "  no point has two or more different hand-written schedules measured\n";
  } else {
    out << fmt::format(
        "  model picked the measured winner in {} of {} cases ({}); its pick measured within 5% of the "
        "best in {}\n",
        r.winner_agree, r.winners.size(), pct(r.winner_agreement), r.winner_within_5pct);
    // The samples' verdict (one-sided Mann-Whitney U tests): where the measurement itself names a
    // winner, and where the model's pick is slower than the winner beyond the noise.
    const double clear_share =
        r.winner_clear ? static_cast<double>(r.winner_clear_agree) / static_cast<double>(r.winner_clear) : 0.0;
    out << fmt::format(
        "  measured winner clear (faster than every other schedule, one-sided Mann-Whitney U test on the "
        "per-iteration samples, p < {:g}) in {} cases: the model picked it in {} ({})\n"
        "  model's pick slower than the measured winner beyond the noise (p < {:g}) in {} of {} cases\n",
        kWinnerAlpha, r.winner_clear, r.winner_clear_agree, pct(clear_share), kWinnerAlpha, r.winner_pick_slower,
        r.winners.size());
    out << fmt::format("{:<14} {:<6} {:>5} {:>5} {:>10} {:<28} {:<19} {:>8} {:>8}\n", "collective", "backend", "nodes",
                       "ranks", "bytes", "predicted", "measured", "loss", "winner p");
    for (const auto& w : r.winners)
      out << fmt::format("{:<14} {:<6} {:>5} {:>5} {:>10} {:<28} {:<19} {:>8} {:>8.2g}{}\n", w.collective, w.backend,
                         w.nodes, w.ranks, format_bytes(w.bytes), w.predicted_winner, w.measured_winner, pct(w.loss),
                         w.winner_p,
                         w.agree         ? ""
                         : w.pick_slower ? "  <- differs"
                                         : "  <- differs (within the noise)");
  }

  out << "\n## Crossovers (sizes where the faster of two algorithms changes)\n";
  std::size_t crossing = 0;
  for (const auto& c : r.crossovers) {
    if (c.predicted_bytes.empty() && c.measured_bytes.empty()) continue;
    ++crossing;
    out << "  " << c.collective << " " << c.backend << " nodes=" << c.nodes << " ranks=" << c.ranks << " " << c.a
        << " vs " << c.b << ": predicted " << size_list(c.predicted_bytes) << "; measured "
        << size_list(c.measured_bytes) << "\n";
  }
  if (crossing == 0) out << "  none predicted or measured\n";

  if (!r.nccl_choices.empty())
    print_nccl_choices(out, r);
  else if (r.nccl_one_rank > 0)
    out << "\n## NCCL's choice\n  " << r.nccl_one_rank << " NCCL point(s), all of one rank: NCCL copies locally, "
        << "there is no algorithm or protocol to choose\n";

  out << "\n## Worst outliers\n";
  if (r.outliers.empty()) out << "  none\n";
  for (const Point& p : r.outliers) {
    out << fmt::format("  {:<60} measured {:>12.2f} us  predicted {:>12.2f} us  error {:>9}\n", point_label(p),
                       p.measured_median_us, p.predicted_us, pct(rel_error_of(p)));
  }

  out << "\n## Failed or missing points\n";
  if (r.failed.empty()) out << "  none\n";
  for (const auto& f : r.failed) out << "  " << point_label(f.point) << ": " << f.why << "\n";
  out.flush();
}

void print_report_json(std::ostream& out, const Report& r, bool with_points, const std::vector<Point>& points) {
  out << "{\n  \"files\": [";
  for (std::size_t i = 0; i < r.files.size(); ++i) out << (i ? ", " : "") << json_string(r.files[i]);
  out << "],\n  \"points\": " << r.points << ", \"measured\": " << r.measured << ", \"compared\": " << r.compared
      << ",\n";
  out << "  \"run_notes\": [";
  for (std::size_t i = 0; i < r.run_notes.size(); ++i) out << (i ? ", " : "") << json_string(r.run_notes[i]);
  out << "],\n";
  out << "  \"uncalibrated_topologies\": [";
  for (std::size_t i = 0; i < r.uncalibrated.size(); ++i) out << (i ? ", " : "") << json_string(r.uncalibrated[i]);
  out << "],\n  \"one_rank_points\": " << r.one_rank << ",\n";
  out << "  \"machine_against_itself\": {\"files\": " << r.repeat.files << ", \"points\": " << r.repeat.pairs
      << ", \"median_abs_rel_diff\": " << (r.repeat.pairs ? json_number(r.repeat.median_abs) : "null")
      << ", \"max_abs_rel_diff\": " << (r.repeat.pairs ? json_number(r.repeat.max_abs) : "null") << "},\n";
  out << "  \"per_file\": [";
  for (std::size_t i = 0; i < r.per_file.size() && i < r.files.size(); ++i)
    out << (i ? ", " : "") << "{\"file\": " << json_string(r.files[i]) << ", \"stats\": " << stats_json(r.per_file[i])
        << "}";
  out << "],\n";
  out << "  \"summary\": {\"all\": " << stats_json(r.all) << ",\n    \"below_64KiB\": " << stats_json(r.below_64KiB)
      << ",\n    \"from_64KiB\": " << stats_json(r.from_64KiB)
      << ",\n    \"schedules_below_64KiB\": " << stats_json(r.schedules_below_64KiB)
      << ",\n    \"schedules_from_64KiB\": " << stats_json(r.schedules_from_64KiB)
      << ",\n    \"library_below_64KiB\": " << stats_json(r.library_below_64KiB)
      << ",\n    \"library_from_64KiB\": " << stats_json(r.library_from_64KiB)
      << ",\n    \"nccl_below_64KiB\": " << stats_json(r.nccl_below_64KiB)
      << ",\n    \"nccl_from_64KiB\": " << stats_json(r.nccl_from_64KiB)
      << ",\n    \"mpi_below_64KiB\": " << stats_json(r.mpi_below_64KiB)
      << ",\n    \"mpi_from_64KiB\": " << stats_json(r.mpi_from_64KiB) << "},\n";
  out << "  \"groups\": [";
  for (std::size_t i = 0; i < r.groups.size(); ++i) {
    const auto& g = r.groups[i];
    out << (i ? ",\n    " : "\n    ") << "{\"collective\": " << json_string(g.collective)
        << ", \"algorithm\": " << json_string(g.algorithm) << ", \"backend\": " << json_string(g.backend)
        << ", \"band\": " << json_string(to_string(g.band)) << ", \"n\": " << g.stats.n
        << ", \"median_abs_rel_error\": " << json_number(g.stats.median_abs)
        << ", \"geomean_abs_rel_error\": " << json_number(g.stats.geomean_abs)
        << ", \"max_abs_rel_error\": " << json_number(g.stats.max_abs) << "}";
  }
  out << "],\n  \"winners\": {\"cases\": " << r.winners.size() << ", \"agree\": " << r.winner_agree
      << ", \"agreement\": " << json_number(r.winner_agreement) << ", \"within_5pct\": " << r.winner_within_5pct
      << ", \"alpha\": " << json_number(kWinnerAlpha) << ", \"clear\": " << r.winner_clear
      << ", \"clear_agree\": " << r.winner_clear_agree << ", \"pick_slower\": " << r.winner_pick_slower
      << ", \"one_schedule\": " << r.winner_one_schedule << ", \"rows\": [";
  for (std::size_t i = 0; i < r.winners.size(); ++i) {
    const auto& w = r.winners[i];
    out << (i ? ",\n      " : "\n      ") << "{\"collective\": " << json_string(w.collective)
        << ", \"backend\": " << json_string(w.backend) << ", \"nodes\": " << w.nodes << ", \"ranks\": " << w.ranks
        << ", \"bytes\": " << w.bytes << ", \"candidates\": " << w.candidates
        << ", \"predicted_winner\": " << json_string(w.predicted_winner)
        << ", \"measured_winner\": " << json_string(w.measured_winner)
        << ", \"agree\": " << (w.agree ? "true" : "false") << ", \"loss\": " << json_number(w.loss)
        << ", \"winner_p\": " << json_number(w.winner_p) << ", \"clear\": " << (w.clear ? "true" : "false")
        << ", \"pick_p\": " << json_number(w.pick_p) << ", \"pick_slower\": " << (w.pick_slower ? "true" : "false")
        << "}";
  }
  out << "]},\n  \"crossovers\": [";
  for (std::size_t i = 0; i < r.crossovers.size(); ++i) {
    const auto& c = r.crossovers[i];
    out << (i ? ",\n    " : "\n    ") << "{\"collective\": " << json_string(c.collective)
        << ", \"backend\": " << json_string(c.backend) << ", \"nodes\": " << c.nodes << ", \"ranks\": " << c.ranks
        << ", \"a\": " << json_string(c.a) << ", \"b\": " << json_string(c.b)
        << ", \"predicted_bytes\": " << json_sizes(c.predicted_bytes)
        << ", \"measured_bytes\": " << json_sizes(c.measured_bytes) << ", \"sizes\": " << json_sizes(c.sizes)
        << ", \"predicted_ratio\": " << json_sizes(c.predicted_ratio)
        << ", \"measured_ratio\": " << json_sizes(c.measured_ratio) << "}";
  }
  out << "],\n  \"nccl_choices\": {\"cases\": " << r.nccl_choices.size() << ", \"slower\": " << r.nccl_slower
      << ", \"rows\": [";
  for (std::size_t i = 0; i < r.nccl_choices.size(); ++i) {
    const auto& c = r.nccl_choices[i];
    out << (i ? ",\n      " : "\n      ") << "{\"collective\": " << json_string(c.collective)
        << ", \"backend\": " << json_string(c.backend) << ", \"nodes\": " << c.nodes << ", \"ranks\": " << c.ranks
        << ", \"bytes\": " << c.bytes << ", \"nccl_pick\": " << json_string(c.nccl_pick)
        << ", \"nccl_channels\": " << c.nccl_channels << ", \"model_pick\": " << json_string(c.model_pick)
        << ", \"fastest_forced\": " << json_string(c.fastest) << ", \"forced\": " << c.forced
        << ", \"nccl_us\": " << json_number(c.nccl_us) << ", \"fastest_us\": " << json_number(c.fastest_us)
        << ", \"lost\": " << json_number(c.lost) << ", \"lost_p\": " << json_number(c.lost_p)
        << ", \"slower\": " << (c.slower ? "true" : "false") << "}";
  }
  out << "]},\n  \"outliers\": [";
  for (std::size_t i = 0; i < r.outliers.size(); ++i) out << (i ? ",\n    " : "\n    ") << point_json(r.outliers[i]);
  out << "],\n  \"failed\": [";
  for (std::size_t i = 0; i < r.failed.size(); ++i) {
    out << (i ? ",\n    " : "\n    ") << "{\"why\": " << json_string(r.failed[i].why)
        << ", \"point\": " << point_json(r.failed[i].point) << "}";
  }
  out << "]";
  if (with_points) {
    out << ",\n  \"point_errors\": [";
    bool first = true;
    for (const Point& p : points) {
      if (!comparable(p)) continue;
      out << (first ? "\n    " : ",\n    ") << "{\"collective\": " << json_string(to_string(p.collective))
          << ", \"algorithm\": " << json_string(to_string(p.algorithm)) << ", \"backend\": " << json_string(p.backend)
          << ", \"nodes\": " << p.nodes << ", \"ranks\": " << p.ranks << ", \"bytes\": " << p.bytes
          << ", \"measured_median_us\": " << json_number(p.measured_median_us)
          << ", \"spread\": " << json_number(spread_of(p)) << ", \"predicted_us\": " << json_number(p.predicted_us)
          << ", \"rel_error\": " << json_number(rel_error_of(p)) << "}";
      first = false;
    }
    out << "]";
  }
  out << "\n}\n";
  out.flush();
}

void print_report_csv(std::ostream& out, const Report& r, const std::string& table, const std::vector<Point>& points) {
  if (table == "groups") {
    out << "collective,algorithm,backend,band,n,median_abs_rel_error,geomean_abs_rel_error,max_abs_rel_error\n";
    for (const auto& g : r.groups)
      out << g.collective << "," << g.algorithm << "," << g.backend << "," << to_string(g.band) << "," << g.stats.n
          << "," << json_number(g.stats.median_abs) << "," << json_number(g.stats.geomean_abs) << ","
          << json_number(g.stats.max_abs) << "\n";
  } else if (table == "points") {
    for (std::size_t i = 0; i < std::size(kCsvColumns); ++i) out << (i ? "," : "") << kCsvColumns[i];
    for (auto c : kCsvExtraColumns) out << "," << c;
    out << "\n";
    for (const Point& p : points) {
      auto cells = csv_cells(p);
      for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_quote(cells[i]);
      out << "\n";
    }
  } else if (table == "winners") {
    out << "collective,backend,nodes,ranks,bytes,candidates,predicted_winner,measured_winner,agree,loss,winner_p,clear,"
           "pick_p,pick_slower\n";
    for (const auto& w : r.winners)
      out << w.collective << "," << w.backend << "," << w.nodes << "," << w.ranks << "," << w.bytes << ","
          << w.candidates << "," << w.predicted_winner << "," << w.measured_winner << "," << (w.agree ? 1 : 0) << ","
          << json_number(w.loss) << "," << json_number(w.winner_p) << "," << (w.clear ? 1 : 0) << ","
          << json_number(w.pick_p) << "," << (w.pick_slower ? 1 : 0) << "\n";
  } else if (table == "crossovers") {
    out << "collective,backend,nodes,ranks,a,b,predicted_bytes,measured_bytes\n";
    auto join = [](const std::vector<double>& v) {
      std::string s;
      for (double b : v) {
        if (!s.empty()) s += ';';
        s += json_number(b);
      }
      return s;
    };
    for (const auto& c : r.crossovers)
      out << c.collective << "," << c.backend << "," << c.nodes << "," << c.ranks << "," << c.a << "," << c.b << ","
          << join(c.predicted_bytes) << "," << join(c.measured_bytes) << "\n";
  } else if (table == "nccl") {
    out << "collective,backend,nodes,ranks,bytes,nccl_pick,nccl_channels,model_pick,fastest_forced,forced,nccl_us,"
           "fastest_us,lost,lost_p,slower\n";
    for (const auto& c : r.nccl_choices)
      out << c.collective << "," << c.backend << "," << c.nodes << "," << c.ranks << "," << c.bytes << ","
          << c.nccl_pick << "," << c.nccl_channels << "," << c.model_pick << "," << c.fastest << "," << c.forced << ","
          << json_number(c.nccl_us) << "," << json_number(c.fastest_us) << "," << json_number(c.lost) << ","
          << json_number(c.lost_p) << "," << (c.slower ? 1 : 0) << "\n";
  } else if (table == "outliers" || table == "failed") {
    for (std::size_t i = 0; i < std::size(kCsvColumns); ++i) out << (i ? "," : "") << kCsvColumns[i];
    out << (table == "failed" ? ",why\n" : "\n");
    auto row = [&](const Point& p, const std::string* why) {
      auto cells = csv_cells(p);
      for (std::size_t i = 0; i < std::size(kCsvColumns); ++i) out << (i ? "," : "") << csv_quote(cells[i]);
      if (why) out << "," << csv_quote(*why);
      out << "\n";
    };
    if (table == "outliers")
      for (const Point& p : r.outliers) row(p, nullptr);
    else
      for (const auto& f : r.failed) row(f.point, &f.why);
  }
  out.flush();
}

}  // namespace commsim
