#include "runtime/output/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace commsim {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return "?";
  if (seconds < 1) return fmt::format("{:.0f} ms", seconds * 1e3);
  if (seconds < 60) return fmt::format("{:.{}f} s", seconds, seconds < 10 ? 1 : 0);
  const auto whole = static_cast<long long>(std::llround(seconds));
  if (whole < 3600) return fmt::format("{} min {:02d} s", whole / 60, static_cast<int>(whole % 60));
  return fmt::format("{} h {:02d} min", whole / 3600, static_cast<int>(whole % 3600 / 60));
}

double ProgressState::eta_s() const {
  if (done <= 0 || total <= 0) return -1;
  return elapsed_s / done * std::max(0, total - done);
}

std::string progress_text(const ProgressState& s, bool bar, int bar_width) {
  const double fraction = s.total > 0 ? static_cast<double>(s.done) / s.total : 0;
  const int percent = static_cast<int>(std::floor(fraction * 100));
  const double eta = s.eta_s();
  const std::string when = format_duration(s.elapsed_s) + " elapsed" +
                           (s.done >= s.total ? "" : ", ETA " + (eta < 0 ? std::string("?") : format_duration(eta)));
  if (bar) {
    const int filled = static_cast<int>(std::lround(fraction * bar_width));
    return fmt::format("[{}{}] {:>{}}/{} {:>3}%  {}{}", std::string(filled, '#'), std::string(bar_width - filled, '.'),
                       s.done, std::to_string(s.total).size(), s.total, percent, when,
                       s.current.empty() ? "" : "  " + s.current);
  }
  return fmt::format("progress: {}/{} points ({}%), {}{}", s.done, s.total, percent, when,
                     s.current.empty() ? "" : "; running " + s.current);
}

ProgressReporter::ProgressReporter(std::FILE* out, bool tty, bool enabled, double line_interval_s)
    : out_(out), tty_(tty), enabled_(enabled), interval_s_(line_interval_s) {}

double ProgressReporter::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void ProgressReporter::start() {
  start_ = Clock::now();
  state_ = ProgressState{};
  next_quarter_ = 0;
}

void ProgressReporter::point_started(const std::string& label, int ordinal, int total, int pass, int passes) {
  state_.done = ordinal - 1;
  state_.total = total;
  state_.current = label + (passes > 1 ? fmt::format(" (pass {} of {})", pass, passes) : "");
  emit();
}

void ProgressReporter::clear() {
  if (!enabled_ || !tty_ || !drawn_) return;
  std::fprintf(out_, "\r\x1b[K");
  std::fflush(out_);
  drawn_ = false;
}

void ProgressReporter::finish(bool complete) {
  clear();
  if (!enabled_ || !complete || state_.total == 0) return;
  state_.done = state_.total;
  state_.elapsed_s = elapsed();
  std::fprintf(out_, "progress: %d/%d points in %s\n", state_.done, state_.total,
               format_duration(state_.elapsed_s).c_str());
  std::fflush(out_);
}

// On a terminal the bar is redrawn every time; otherwise a line at each quarter of the points and
// at most every interval_s_ seconds, so that a log holds a few lines, not one per point.
void ProgressReporter::emit() {
  if (!enabled_) return;
  state_.elapsed_s = elapsed();
  if (tty_) {
    std::fprintf(out_, "\r%s\x1b[K", progress_text(state_, true).c_str());
    drawn_ = true;
  } else {
    const bool quarter = state_.total > 0 && next_quarter_ < 4 && state_.done * 4 >= next_quarter_ * state_.total;
    if (!quarter && state_.elapsed_s - last_line_s_ < interval_s_) return;
    if (quarter)
      while (next_quarter_ < 4 && state_.done * 4 >= next_quarter_ * state_.total) ++next_quarter_;
    last_line_s_ = state_.elapsed_s;
    std::fprintf(out_, "%s\n", progress_text(state_, false).c_str());
  }
  std::fflush(out_);
}

}  // namespace commsim
