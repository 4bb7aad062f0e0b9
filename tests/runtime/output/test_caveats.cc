// What a result says about itself: the spread of a point, the noisy points of a run, the machine
// against itself over two runs, the note on an uncalibrated topology.
#include <gtest/gtest.h>

#include <sstream>

#include "runtime/output/caveats.h"
#include "runtime/output/report_tables.h"
#include "runtime/output/reporter.h"

namespace commsim {
namespace {

Point measured(Algorithm a, Bytes bytes, double median_us, double p95_us, int ranks = 2) {
  Point p;
  p.collective = Collective::AllReduce;
  p.algorithm = a;
  p.backend = "host";
  p.transport = "mpi";
  p.ranks = ranks;
  p.bytes = bytes;
  p.count = bytes / 4;
  p.status = "ok";
  p.measured_median_us = median_us;
  p.measured_p95_us = p95_us;
  p.predicted_us = median_us * 1.07;
  return p;
}

TEST(Caveats, SpreadIsP95OverMedian) {
  EXPECT_DOUBLE_EQ(spread_of(measured(Algorithm::Ring, 1024, 10, 15)), 1.5);
  EXPECT_TRUE(std::isnan(spread_of(measured(Algorithm::Ring, 1024, kNaN, 15))));
  EXPECT_EQ(spread_text(1.5), "1.50x");
  EXPECT_EQ(spread_text(kNaN), "-");
}

TEST(Caveats, NoisyPointsNamedWorstFirstWithWhatToDo) {
  std::vector<Point> run = {measured(Algorithm::Ring, 1024, 10, 11), measured(Algorithm::Tree, 1024, 10, 16),
                            measured(Algorithm::Ring, 4096, 10, 190), measured(Algorithm::Tree, 4096, 10, 15)};
  const std::vector<std::string> lines = noisy_point_lines(run);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "2 of 4 measured points are noisy (p95 more than 1.5x the median):");
  EXPECT_NE(lines[1].find("allreduce ring 4KiB ranks=2: median 10.00 us, p95 190.00 us (19.00x)"), std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("allreduce tree 1KiB"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("--passes"), std::string::npos);
  EXPECT_NE(lines[3].find("--iters"), std::string::npos);
  EXPECT_NE(lines[3].find("--bind-to core"), std::string::npos);
  run.pop_back();
  run.erase(run.begin() + 1, run.begin() + 3);
  EXPECT_TRUE(noisy_point_lines(run).empty());  // 1.1x: quiet
}

TEST(Caveats, MachineAgainstItself) {
  // Run b measured 10%, 20%, 30% apart from run a; a one-rank point and a point only in a are left out.
  std::vector<Point> a = {measured(Algorithm::Ring, 1024, 11, 12), measured(Algorithm::Ring, 4096, 24, 25),
                          measured(Algorithm::Tree, 4096, 13, 14), measured(Algorithm::Ring, 1024, 50, 50, 1),
                          measured(Algorithm::Ring, 8192, 5, 5)};
  std::vector<Point> b = {measured(Algorithm::Ring, 1024, 10, 12), measured(Algorithm::Ring, 4096, 20, 25),
                          measured(Algorithm::Tree, 4096, 10, 14), measured(Algorithm::Ring, 1024, 10, 10, 1)};
  const Repeatability r = machine_against_itself({a, b});
  EXPECT_EQ(r.files, 2u);
  EXPECT_EQ(r.pairs, 3u);
  EXPECT_NEAR(r.median_abs, 0.2, 1e-12);
  EXPECT_NEAR(r.max_abs, 0.3, 1e-12);
  EXPECT_EQ(machine_against_itself({a}).pairs, 0u);

  // The verdict sets the model's error (7% on every point) beside the machine's 20%.
  std::vector<Point> all = a;
  all.insert(all.end(), b.begin(), b.end());
  Report rep = build_report(all);
  rep.files = {"run1.h5", "run2.h5"};
  rep.repeat = r;
  rep.per_file = error_per_file({a, b});
  std::ostringstream out;
  print_report_table(out, rep, false, all);
  EXPECT_NE(out.str().find("the machine differs from itself by 20.0% at the median"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("the model's 7.0% is within the machine's own noise"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("per file: run1.h5 7.0% (4 points), run2.h5 7.0% (3 points)"), std::string::npos)
      << out.str();
}

TEST(Caveats, UncalibratedNoteSaysHowFarOffAndHowToCalibrate) {
  const std::string n = uncalibrated_note("local-cpu");
  EXPECT_NE(n.find("'local-cpu' is not calibrated for this machine"), std::string::npos) << n;
  EXPECT_NE(n.find(kUncalibratedTypicalError), std::string::npos) << n;
  EXPECT_NE(n.find("commsim probe"), std::string::npos) << n;
  EXPECT_NE(n.find("commsim calibrate"), std::string::npos) << n;
}

TEST(Caveats, RunTableShowsSpreadAndMarksPerSize) {
  std::ostringstream out;
  TableReporter t(out, TableReporter::Columns::Measured);
  Point ring = measured(Algorithm::Ring, 1024, 10, 30), tree = measured(Algorithm::Tree, 1024, 8, 9);
  ring.predicted_winner = tree.predicted_winner = "ring";
  Point big = measured(Algorithm::Ring, 4096, 20, 21);
  big.predicted_winner = "ring";
  t.point(ring);
  t.point(tree);
  EXPECT_EQ(out.str().find("1024"), std::string::npos) << "rows of a size wait for the size to be complete";
  t.point(big);
  t.finalize();
  const std::string s = out.str();
  EXPECT_NE(s.find("spread"), std::string::npos) << s;
  EXPECT_NE(s.find("3.00x"), std::string::npos) << s;
  // ring: the model's pick; tree: the measured fastest; the lone 4 KiB row: the pick, no contest.
  EXPECT_NE(s.find("predicted            ok"), std::string::npos) << s;
  EXPECT_NE(s.find("fastest              ok"), std::string::npos) << s;
  EXPECT_EQ(s.find("predicted+fastest"), std::string::npos) << s;
  EXPECT_LT(s.find("     1024 "), s.find("     4096 ")) << s;
}

}  // namespace
}  // namespace commsim
