#pragma once
// The verdict on the model: from measured points with their predictions, the tables `commsim
// report` prints (and analysis/report.py reads from its JSON):
//  - relative error per point, (predicted - measured median) / measured median;
//  - median and geometric-mean |error| per (collective, algorithm, backend) x size band;
//  - whether the model's winner was the measured winner, per (collective, backend, nodes, ranks,
//    bytes), among the hand-written algorithms measured there;
//  - predicted vs measured crossover sizes between each pair of algorithms;
//  - NCCL's own collectives apart: their error, and per size what NCCL ran (its TUNING log, the
//    rows' nccl_algo / nccl_proto / nccl_channels), what NCCL's model picks, and which forced
//    variant (nccl-ring / nccl-tree x LL / LL128 / Simple) measured fastest;
//  - the worst outliers, and the points that failed or were not measured.
// Pure functions over Points (verdict.cc); no I/O except the print functions (report_tables.cc).
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "runtime/output/caveats.h"
#include "runtime/sweep/point.h"

namespace commsim {

// Size bands of the error tables (bytes in the nccl-tests sense).
enum class SizeBand { Small, Medium, Large };  // < 64 KiB, 64 KiB - 16 MiB, >= 16 MiB
inline constexpr Bytes kSmallBandLimit = 64 * 1024;
inline constexpr Bytes kLargeBandStart = 16 * 1024 * 1024;
SizeBand band_of(Bytes bytes);
std::string_view to_string(SizeBand b);  // "<64KiB", "64KiB-16MiB", ">=16MiB"

// |error| below this counts as this in the geometric mean (log 0 is -inf).
inline constexpr double kGeomeanFloor = 1e-6;
// Geometric mean of max(|e|, kGeomeanFloor); 0 for an empty list.
double geomean_abs(const std::vector<double>& errors);

// A point enters the error tables when it was measured (status "ok") on two or more ranks, has a
// prediction, and a positive measured time. A one-rank collective is a local copy: its time says
// nothing about an algorithm, so it is listed (one_rank_measured) but kept out of every statistic.
bool comparable(const Point& p);
bool one_rank_measured(const Point& p);
// (predicted - measured median) / measured median, of a comparable point.
double rel_error_of(const Point& p);

struct ErrorStats {
  std::size_t n = 0;
  double median_abs = 0;   // median |rel_error|
  double geomean_abs = 0;  // geometric mean |rel_error|
  double max_abs = 0;
};
ErrorStats error_stats(const std::vector<double>& rel_errors);

struct ErrorGroup {
  std::string collective, algorithm, backend;
  SizeBand band = SizeBand::Small;
  ErrorStats stats;
};

struct WinnerCase {
  std::string collective, backend;
  int nodes = 1, ranks = 1;
  Bytes bytes = 0;
  // Contenders: the hand-written algorithms measured at this point, those that ran one schedule
  // (the same messages in the same rounds: point_schedule_fingerprint in collectives/predict.h)
  // merged into one named "rabenseifner=ring". A point with fewer than two contenders is no case.
  int candidates = 0;            // contenders
  std::string predicted_winner;  // fastest by predicted time among them ("a | b" when the model ties them)
  std::string measured_winner;   // fastest by measured median (a contender's fastest member)
  bool agree = false;
  // Measured time of the predicted winner over the measured best, minus 1 (0 when they agree):
  // what choosing by the model costs.
  double loss = 0;
  // The measurement's own verdict, from the per-iteration samples (one-sided Mann-Whitney U tests,
  // mann_whitney_p_less). winner_p: the largest p-value of "the measured winner is faster than
  // another contender" over the other contenders; 1 when one has fewer than kMinTestSamples samples.
  // `clear`: winner_p < kWinnerAlpha, the measurement names one winner.
  double winner_p = 1;
  bool clear = false;
  // pick_p: the p-value of "the measured winner is faster than the model's pick" (1 when they
  // agree); `pick_slower`: pick_p < kWinnerAlpha, the pick measured slower beyond the noise.
  double pick_p = 1;
  bool pick_slower = false;
};

// Significance level of the winner tests, and the fewest samples a point needs to take part.
inline constexpr double kWinnerAlpha = 0.05;
inline constexpr std::size_t kMinTestSamples = 5;

// Two algorithms at one (collective, backend, nodes, ranks) over the sizes where both were measured
// and ran different schedules; a row for every such pair with two or more sizes, crossovers or
// not (the plots of analysis/report.py draw these series and these crossovers).
struct CrossoverRow {
  std::string collective, backend;
  int nodes = 1, ranks = 1;
  std::string a, b;                     // algorithm names, a < b
  std::vector<double> sizes;            // bytes, ascending
  std::vector<double> predicted_ratio;  // predicted time of b / predicted time of a, per size
  std::vector<double> measured_ratio;   // the same measured (medians)
  std::vector<double> predicted_bytes;  // sizes where the faster of a and b changes, by prediction
  std::vector<double> measured_bytes;   // the same by measurement
};

// NCCL at one (collective, backend, dtype, nodes, ranks, bytes) where its own choice (the `nccl`
// row, nothing forced) was measured with two or more ranks: that choice against the variants
// forced there. A variant is named "Ring/LL128" (NCCL's algorithm / protocol names).
struct NcclChoiceCase {
  std::string collective, backend;
  int nodes = 1, ranks = 1;
  Bytes bytes = 0;
  std::string nccl_pick;     // what the unforced `nccl` row ran, from NCCL's log ("" when not logged)
  int nccl_channels = 0;     // its channel count (0 when not logged)
  std::string model_pick;    // NCCL's model: the forced variant with the lowest prediction ("" without forced rows)
  std::string fastest;       // the forced variant with the lowest measured median ("" without forced rows)
  int forced = 0;            // forced variants measured here
  double nccl_us = kNaN;     // the unforced row's measured median (NaN when it was not measured)
  double fastest_us = kNaN;  // the fastest forced variant's
  // nccl_us / fastest_us - 1: what NCCL's own choice costs against the best it could have been
  // forced to (NaN when either is missing).
  double lost = kNaN;
  double lost_p = 1;  // one-sided Mann-Whitney U p-value of "the fastest forced variant is faster"
  // NCCL ran slower than a variant it could have been forced to, beyond the noise: lost > 0 and
  // lost_p < kWinnerAlpha (lost > kNcclLossNoise when either side has fewer than kMinTestSamples
  // samples).
  bool slower = false;
  bool model_agrees = false;  // model_pick == nccl_pick (both known)
  bool nccl_fastest = false;  // nccl_pick == fastest (both known)
};
inline constexpr double kNcclLossNoise = 0.05;
// A group whose median |error| is at most this counts as right in the report's verdict.
inline constexpr double kVerdictWithin = 0.10;

struct FailedPoint {
  Point point;
  std::string why;  // the status and note
};

struct Report {
  std::vector<std::string> files;
  std::size_t points = 0;              // rows read
  std::size_t measured = 0;            // rows with a measurement
  std::size_t compared = 0;            // rows in the error tables
  ErrorStats below_64KiB, from_64KiB;  // all comparable points of each side of 64 KiB
  ErrorStats all;
  // The same split by what was predicted: hand-written schedules (priced as they ran) and library
  // baselines (MPI's, NCCL's own collectives: predicted by the model's fastest algorithm or NCCL's
  // model, so their error also says how far the library is from that).
  ErrorStats schedules_below_64KiB, schedules_from_64KiB, library_below_64KiB, library_from_64KiB;
  // The library baselines split: NCCL's collectives (nccl, nccl-ring, nccl-tree: NCCL's model)
  // and the rest (MPI's).
  ErrorStats nccl_below_64KiB, nccl_from_64KiB, mpi_below_64KiB, mpi_from_64KiB;
  std::vector<ErrorGroup> groups;  // sorted by collective, algorithm, backend, band
  std::vector<WinnerCase> winners;
  std::size_t winner_agree = 0;
  double winner_agreement = 0;          // winner_agree / winners.size(), 0 when none
  std::size_t winner_within_5pct = 0;   // cases where the model's pick measured within 5% of the best
  std::size_t winner_clear = 0;         // cases whose measured winner is clear (WinnerCase::clear)
  std::size_t winner_clear_agree = 0;   // ... and the model picked it
  std::size_t winner_pick_slower = 0;   // cases where the model's pick measured slower beyond the noise
  std::size_t winner_one_schedule = 0;  // points whose algorithms all ran one schedule (no case)
  std::size_t one_rank = 0;             // measured one-rank points (not in any statistic)
  std::vector<CrossoverRow> crossovers;
  std::vector<NcclChoiceCase> nccl_choices;  // sorted by collective, backend, nodes, ranks, bytes
  std::size_t nccl_slower = 0;               // cases with NcclChoiceCase::slower
  std::size_t nccl_one_rank = 0;             // measured NCCL rows of one rank (no choice to make)
  std::vector<Point> outliers;               // largest |rel_error| first
  std::vector<FailedPoint> failed;           // status not ok/predicted, or a run that did not complete
  std::vector<std::string> run_notes;        // "file run 2: interrupted" etc.
  // Set by the command, not by build_report: the machine against itself (two or more files of the
  // same sweep), and the topologies without a calibrated: section that predicted the points.
  Repeatability repeat;
  std::vector<std::string> uncalibrated;
  std::vector<ErrorStats> per_file;  // with two or more files: each file's comparable points (files order)
};

// The error statistics of each file's comparable points; `runs[i]` holds the points of file i.
std::vector<ErrorStats> error_per_file(const std::vector<std::vector<Point>>& runs);

// Builds every table. `outliers` caps the outlier list.
Report build_report(const std::vector<Point>& points, std::size_t outliers = 10);

// Crossover sizes of two series sampled at the same sizes: where sign(t_a - t_b) changes between
// consecutive sizes, the size at which log(t_a/t_b) interpolated linearly in log(size) is 0.
// Sizes must be ascending and positive.
std::vector<double> crossover_sizes(const std::vector<double>& sizes, const std::vector<double>& t_a,
                                    const std::vector<double>& t_b);

void print_report_table(std::ostream& out, const Report& r, bool with_points, const std::vector<Point>& points);
void print_report_json(std::ostream& out, const Report& r, bool with_points, const std::vector<Point>& points);
// CSV of one table: "groups" (default), "points", "winners", "crossovers", "nccl", "outliers", "failed".
void print_report_csv(std::ostream& out, const Report& r, const std::string& table, const std::vector<Point>& points);

}  // namespace commsim
