// The progress of a sweep: durations as people read them, the ETA, the bar and the line, and
// how often a reporter writes to a pipe (a few lines, not one per point).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "runtime/output/progress.h"

namespace commsim {
namespace {

TEST(Progress, DurationsReadAsPeopleSayThem) {
  EXPECT_EQ(format_duration(0.85), "850 ms");
  EXPECT_EQ(format_duration(4.25), "4.2 s");
  EXPECT_EQ(format_duration(42), "42 s");
  EXPECT_EQ(format_duration(185), "3 min 05 s");
  EXPECT_EQ(format_duration(7620), "2 h 07 min");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, EtaIsTheMeanTimePerPointTimesThePointsLeft) {
  ProgressState s{50, 200, 10.0, "allreduce ring 1MiB"};
  EXPECT_DOUBLE_EQ(s.eta_s(), 30.0);
  EXPECT_EQ(progress_text(s, false),
            "progress: 50/200 points (25%), 10 s elapsed, ETA 30 s; running allreduce ring 1MiB");
  EXPECT_EQ(progress_text(s, true, 8), "[##......]  50/200  25%  10 s elapsed, ETA 30 s  allreduce ring 1MiB");
  ProgressState first{0, 200, 0.2, ""};
  EXPECT_LT(first.eta_s(), 0);
  EXPECT_EQ(progress_text(first, false), "progress: 0/200 points (0%), 200 ms elapsed, ETA ?");
}

std::string run_reporter(bool tty, bool enabled, int total) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  {
    ProgressReporter progress(out, tty, enabled, /*line_interval_s=*/3600);
    progress.start();
    for (int i = 1; i <= total; ++i) {
      progress.point_started("allreduce ring 8B", i, total, 1, 1);
      progress.clear();
    }
    progress.finish(/*complete=*/true);
  }
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Progress, OnAPipeALineAtEachQuarterAndAtTheEnd) {
  const std::string text = run_reporter(/*tty=*/false, /*enabled=*/true, 200);
  EXPECT_EQ(count(text, "\n"), 5) << text;  // 0, 25, 50, 75 % and the end
  EXPECT_NE(text.find("progress: 50/200 points (25%)"), std::string::npos) << text;
  EXPECT_NE(text.find("progress: 200/200 points in "), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "no carriage returns in a log";
}

TEST(Progress, OnATerminalABarRedrawnInPlaceAndErasedBeforeRows) {
  const std::string text = run_reporter(/*tty=*/true, /*enabled=*/true, 4);
  EXPECT_EQ(count(text, "\r["), 4) << text;
  EXPECT_EQ(count(text, "\r\x1b[K"), 4) << text;  // erased before each row
  EXPECT_EQ(count(text, "\n"), 1) << text;        // only the last line ends one
}

TEST(Progress, QuietWritesNothing) {
  EXPECT_EQ(run_reporter(false, false, 10), "");
}

}  // namespace
}  // namespace commsim
