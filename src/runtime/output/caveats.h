#pragma once
// What a result must say about itself before anyone believes it: how noisy each point was (its
// spread), which points were too noisy and what to do about them, how far the machine differs
// from itself between two runs of the same sweep (no model can be judged more closely than that),
// and whether the topology that predicted it was ever calibrated for this machine.
// Pure functions returning data and text; the commands print them.
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/sweep/point.h"

namespace commsim {

// A point's spread: measured p95 / measured median (1 when every iteration took the same time);
// NaN when either is missing or the median is not positive.
double spread_of(const Point& p);
// A point whose spread is above this is noisy: one iteration in twenty took 1.5x the median or more.
inline constexpr double kNoisySpread = 1.5;
// "1.07x", or "-" for NaN: how the tables print a spread.
std::string spread_text(double spread);

// The end of a run: the measured points with a spread above kNoisySpread, worst first, at most
// `max_named` of them named, and what to do (more --iters, --passes, binding the ranks to CPUs).
// Empty when no point is noisy.
std::vector<std::string> noisy_point_lines(const std::vector<Point>& points, std::size_t max_named = 5);

// The machine against itself: the same points measured in two or more runs (results files of the
// same sweep), |median in one file - median in the next| / median in the next per point (file 1
// against 2, 2 against 3, ...), over the points both measured with status ok and two or more ranks
// (the first row of each point in each file). `runs[i]` holds the points of file i.
struct Repeatability {
  std::size_t files = 0;  // files compared
  std::size_t pairs = 0;  // points measured in two consecutive files
  double median_abs = 0;  // median |a - b| / b over them (0 when pairs == 0)
  double max_abs = 0;
};
Repeatability machine_against_itself(const std::vector<std::vector<Point>>& runs);

// How far an uncalibrated preset's predictions usually are from a machine it does not describe,
// as the README's accuracy table records it (2-core VM, 2 host ranks: the local-cpu preset
// against two runs), and how far a topology refitted on one run (calibrate --refine) is from
// another run (that table's band for the same machine).
inline constexpr const char* kUncalibratedTypicalError = "44-50%";
inline constexpr const char* kCalibratedTypicalError = "3-10%";
// The warning that a topology without a `calibrated:` section (Topology::calibrated) predicted the
// points: what that usually costs and how to calibrate; `topology_name` is its name.
std::string uncalibrated_note(const std::string& topology_name);

}  // namespace commsim
