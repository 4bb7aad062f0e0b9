#pragma once
// Progress of a sweep on stderr, with the time left: a bar rewritten in place on a terminal; on a
// pipe or a file (mpirun, Slurm logs) a line at 0 %, every quarter of the points and at most every
// few seconds in between, then one at the end. The table goes to stdout and never holds these.
//
//   ProgressReporter progress(stderr, isatty(STDERR_FILENO), /*enabled=*/!quiet);
//   progress.start();
//   progress.point_started("allreduce ring 1MiB", ordinal, total, pass, passes);  // before each point
//   progress.clear();                                                            // before a table row
//   progress.finish();
#include <chrono>
#include <cstdio>
#include <string>

namespace commsim {

// "850 ms", "42 s", "3 min 05 s", "2 h 07 min": a duration as people read it.
std::string format_duration(double seconds);

// What the progress says at one moment (the pure part, tested on its own).
struct ProgressState {
  int done = 0;   // points finished
  int total = 0;  // points in the sweep
  double elapsed_s = 0;
  std::string current;  // the point running ("allreduce ring 1MiB (pass 2 of 3)"), "" between points
  // Seconds left at the mean time per finished point so far; < 0 before the first point finished.
  double eta_s() const;
};
// "[#########...........]  37/200  18%  12 s elapsed, ETA 52 s  allreduce ring 1MiB" (bar) or
// "progress: 37/200 points (18%), 12 s elapsed, ETA 52 s; running allreduce ring 1MiB" (line).
std::string progress_text(const ProgressState& s, bool bar, int bar_width = 24);

class ProgressReporter {
 public:
  // Reports to `out` (stderr), as a bar when `tty`; nothing at all unless `enabled`.
  // `line_interval_s`: the most seconds between two lines when not a terminal.
  ProgressReporter(std::FILE* out, bool tty, bool enabled, double line_interval_s = 5.0);
  void start();
  // Point number `ordinal` (1-based, counted over every pass) of `total` is starting.
  void point_started(const std::string& label, int ordinal, int total, int pass, int passes);
  // Erases the bar (on a terminal) so that a table row can be printed on a clean line.
  void clear();
  // Clears the bar; after a complete sweep (`complete`) the last line ("progress: 200/200 points
  // in 3.2 s").
  void finish(bool complete);

 private:
  using Clock = std::chrono::steady_clock;
  double elapsed() const;
  void emit();

  std::FILE* out_;
  bool tty_, enabled_;
  double interval_s_;
  ProgressState state_;
  Clock::time_point start_;
  double last_line_s_ = -1e300;
  int next_quarter_ = 0;  // the next quarter of the points (0..4) that gets a line
  bool drawn_ = false;
};

}  // namespace commsim
