// The report's tables on crafted points whose answers are known by construction.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "runtime/output/report_tables.h"
#include "runtime/sweep/stats.h"

namespace commsim {
namespace {

Point make(Algorithm a, Bytes bytes, double measured_us, double predicted_us, std::string status = "ok") {
  Point p;
  p.collective = Collective::AllReduce;
  p.algorithm = a;
  p.backend = "host";
  p.transport = "mpi";
  p.nodes = 1;
  p.ranks = 2;
  p.bytes = bytes;
  p.measured_median_us = measured_us;
  p.predicted_us = predicted_us;
  p.status = status;
  return p;
}

// ring and tree at 1 KiB, 1 MiB, 32 MiB. Predicted: tree wins at 1 KiB only. Measured: tree wins at
// 1 KiB and 1 MiB. So the winners agree at 1 KiB and 32 MiB, not at 1 MiB; the predicted crossover
// lies between 1 KiB and 1 MiB, the measured one between 1 MiB and 32 MiB.
std::vector<Point> crafted() {
  const Bytes k1 = 1024, m1 = 1 << 20, m32 = Bytes{32} << 20;
  return {
      make(Algorithm::Ring, k1, 10.0, 11.0),       // +10%
      make(Algorithm::Tree, k1, 8.0, 8.8),         // +10%
      make(Algorithm::Ring, m1, 200.0, 160.0),     // -20%
      make(Algorithm::Tree, m1, 190.0, 171.0),     // -10%
      make(Algorithm::Ring, m32, 5000.0, 5250.0),  // +5%
      make(Algorithm::Tree, m32, 6000.0, 6600.0),  // +10%
      make(Algorithm::Mpi, m1, 150.0, 300.0),      // +100%, a baseline: in the tables, not in the winners
      make(Algorithm::Ring, 4096, kNaN, 20.0, "wrong"),
  };
}

TEST(ReportTables, ErrorStatisticsPerBand) {
  Report r = build_report(crafted(), 3);
  EXPECT_EQ(r.points, 8u);
  EXPECT_EQ(r.compared, 7u);
  EXPECT_EQ(r.below_64KiB.n, 2u);
  EXPECT_NEAR(r.below_64KiB.median_abs, 0.10, 1e-12);
  EXPECT_EQ(r.from_64KiB.n, 5u);
  // |errors| 0.2, 0.1, 1.0, 0.05, 0.1 -> median 0.1
  EXPECT_NEAR(r.from_64KiB.median_abs, 0.10, 1e-12);
  EXPECT_NEAR(r.from_64KiB.geomean_abs, std::pow(0.2 * 0.1 * 1.0 * 0.05 * 0.1, 0.2), 1e-12);
  EXPECT_NEAR(r.from_64KiB.max_abs, 1.0, 1e-12);
  // Groups: (allreduce, mpi, Medium), (ring, Small/Medium/Large), (tree, Small/Medium/Large).
  ASSERT_EQ(r.groups.size(), 7u);
  EXPECT_EQ(r.groups[0].algorithm, "mpi");
  for (const auto& g : r.groups) EXPECT_EQ(g.stats.n, 1u);
}

TEST(ReportTables, WinnersAmongHandWrittenAlgorithms) {
  Report r = build_report(crafted(), 3);
  ASSERT_EQ(r.winners.size(), 3u);
  EXPECT_EQ(r.winner_agree, 2u);
  EXPECT_NEAR(r.winner_agreement, 2.0 / 3.0, 1e-12);
  const WinnerCase& mid = r.winners[1];
  EXPECT_EQ(mid.bytes, Bytes{1} << 20);
  EXPECT_EQ(mid.predicted_winner, "ring");
  EXPECT_EQ(mid.measured_winner, "tree");
  EXPECT_FALSE(mid.agree);
  EXPECT_NEAR(mid.loss, 200.0 / 190.0 - 1.0, 1e-12);
  EXPECT_EQ(r.winner_within_5pct, 2u);  // at 1 MiB the pick costs 200/190 - 1 = 5.3%
}

// A point of an allreduce of `bytes` as it ran (element count set, so its schedule can be rebuilt),
// with ten samples from `first` up.
Point ran(Algorithm a, Bytes bytes, int ranks, double first, double predicted_us) {
  Point p = make(a, bytes, first + 4.5, predicted_us);
  p.ranks = ranks;
  p.count = bytes / 4;
  for (int i = 0; i < 10; ++i) p.samples_us.push_back(first + i);
  return p;
}

TEST(ReportTables, IdenticalSchedulesAreOneContender) {
  // At two ranks ring and Rabenseifner allreduce are one schedule, and so is the tree while the
  // data is one pipeline chunk: measured apart "clearly" (10..19 against 30..39 us), they are still
  // a coin flip between names. No winner case, no crossover, even where the model prices them apart.
  std::vector<Point> pts;
  for (Bytes b : {Bytes{1024}, Bytes{4096}, Bytes{16384}}) {
    pts.push_back(ran(Algorithm::Ring, b, 2, b == 4096 ? 30 : 10, 5.0));
    pts.push_back(ran(Algorithm::Rabenseifner, b, 2, b == 4096 ? 10 : 30, 6.0));
    pts.push_back(ran(Algorithm::Tree, b, 2, 50, 7.0));
  }
  Report r = build_report(pts);
  EXPECT_TRUE(r.winners.empty());
  EXPECT_EQ(r.winner_one_schedule, 3u);
  EXPECT_EQ(r.winner_clear, 0u);
  EXPECT_TRUE(r.crossovers.empty());
  std::ostringstream table;
  print_report_table(table, r, false, pts);
  EXPECT_NE(table.str().find("3 point(s) where the algorithms measured ran one schedule"), std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("## Crossovers (sizes where the faster of two algorithms changes)\n  none"),
            std::string::npos)
      << table.str();

  // Recursive doubling at two ranks is another schedule (all the data at once): one real contest
  // per size, ring=rabenseifner=tree against it, its winner judged against that one rival only.
  for (Bytes b : {Bytes{1024}, Bytes{4096}, Bytes{16384}})
    pts.push_back(ran(Algorithm::RecursiveDoubling, b, 2, b == 16384 ? 5 : 60, 4.0));
  r = build_report(pts);
  ASSERT_EQ(r.winners.size(), 3u);
  EXPECT_EQ(r.winners[0].candidates, 2);
  EXPECT_EQ(r.winners[0].measured_winner, "rabenseifner=ring=tree");
  EXPECT_EQ(r.winners[0].predicted_winner, "recursive-doubling");
  EXPECT_TRUE(r.winners[0].clear);  // 10..19 against 60..69
  EXPECT_EQ(r.winners[2].measured_winner, "recursive-doubling");
  EXPECT_TRUE(r.winners[2].clear);     // 5..14 against the contender's fastest member, ring's 10..19
  ASSERT_EQ(r.crossovers.size(), 3u);  // each of ring, rabenseifner, tree against recursive doubling
  for (const CrossoverRow& c : r.crossovers) {
    EXPECT_EQ(c.sizes.size(), 3u);
    EXPECT_TRUE(c.a == "recursive-doubling" || c.b == "recursive-doubling") << c.a << " " << c.b;
  }
}

TEST(ReportTables, TiedPredictionsOfDifferentSchedulesAreTwoContenders) {
  // The model prices ring and recursive doubling the same here, but they are two schedules: a
  // contest the model calls a tie ("a | b"), whichever measures fastest agrees.
  std::vector<Point> pts = {ran(Algorithm::Ring, 4096, 2, 10, 5.0),
                            ran(Algorithm::RecursiveDoubling, 4096, 2, 30, 5.0)};
  Report r = build_report(pts);
  ASSERT_EQ(r.winners.size(), 1u);
  EXPECT_TRUE(r.winners[0].agree);
  EXPECT_EQ(r.winners[0].predicted_winner, "recursive-doubling | ring");
  EXPECT_TRUE(r.crossovers.empty());  // one size only
}

TEST(MannWhitney, OneSidedPValuesAsScipyGivesThem) {
  // Expected values: scipy.stats.mannwhitneyu(a, b, alternative="less", method="asymptotic").
  auto seq = [](double first, double step, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(first + step * i);
    return v;
  };
  EXPECT_NEAR(mann_whitney_p_less(seq(1, 1, 10), seq(11, 1, 10)), 9.133589555477501e-05, 1e-12);       // a all faster
  EXPECT_NEAR(mann_whitney_p_less(seq(11, 1, 10), seq(1, 1, 10)), 0.9999325785388228, 1e-12);          // a all slower
  EXPECT_NEAR(mann_whitney_p_less(seq(1, 2, 10), seq(2, 2, 10)), 0.3668649978481236, 1e-12);           // interleaved
  EXPECT_NEAR(mann_whitney_p_less({1, 1, 2, 2, 3}, {2, 3, 3, 4, 4, 4}), 0.015211892074231353, 1e-12);  // ties
  EXPECT_EQ(mann_whitney_p_less({5, 5, 5}, {5, 5, 5}), 1.0);
  EXPECT_EQ(mann_whitney_p_less({}, {1, 2}), 1.0);
}

// Three algorithms at each of three sizes, with samples: the winner's verdict from the samples.
TEST(ReportTables, WinnerJudgedByTheSamples) {
  auto with = [](Point p, double first, std::size_t n = 10) {
    for (std::size_t i = 0; i < n; ++i) p.samples_us.push_back(first + static_cast<double>(i));
    return p;
  };
  const Bytes a = 1024, b = 2048, c = 4096;
  std::vector<Point> pts = {
      // a: ring clearly fastest (10..19 against 30..39 and 50..59), the model picks it.
      with(make(Algorithm::Ring, a, 14.5, 10), 10),
      with(make(Algorithm::Tree, a, 34.5, 20), 30),
      with(make(Algorithm::RecursiveDoubling, a, 54.5, 30), 50),
      // b: ring and recursive doubling within the noise (10..19, 11..20); the model picks the latter.
      with(make(Algorithm::Ring, b, 14.5, 20), 10),
      with(make(Algorithm::Tree, b, 34.5, 30), 30),
      with(make(Algorithm::RecursiveDoubling, b, 15.5, 10), 11),
      // c: as b, but the model picks tree, measurably slower; and recursive doubling has too few
      // samples to be tested (its median is the winner's, so it cannot be the winner).
      with(make(Algorithm::Ring, c, 14.5, 20), 10),
      with(make(Algorithm::Tree, c, 34.5, 10), 30),
      with(make(Algorithm::RecursiveDoubling, c, 16.5, 30), 15, 3),
  };
  Report r = build_report(pts);
  ASSERT_EQ(r.winners.size(), 3u);
  const WinnerCase &wa = r.winners[0], &wb = r.winners[1], &wc = r.winners[2];
  EXPECT_TRUE(wa.agree);
  EXPECT_TRUE(wa.clear);
  EXPECT_LT(wa.winner_p, 1e-3);
  EXPECT_EQ(wa.pick_p, 1.0);
  EXPECT_FALSE(wb.agree);
  EXPECT_FALSE(wb.clear);  // ring against recursive doubling: p = 0.25
  EXPECT_NEAR(wb.winner_p, 0.247, 0.001);
  EXPECT_FALSE(wb.pick_slower);
  EXPECT_NEAR(wb.pick_p, wb.winner_p, 1e-12);  // the pick is the runner-up
  EXPECT_FALSE(wc.agree);
  EXPECT_EQ(wc.winner_p, 1.0);  // recursive doubling cannot be tested: the winner is not clear
  EXPECT_TRUE(wc.pick_slower);
  EXPECT_LT(wc.pick_p, 1e-3);
  EXPECT_EQ(r.winner_clear, 1u);
  EXPECT_EQ(r.winner_clear_agree, 1u);
  EXPECT_EQ(r.winner_pick_slower, 1u);
  std::ostringstream table, csv;
  print_report_table(table, r, false, pts);
  print_report_csv(csv, r, "winners", pts);
  EXPECT_NE(table.str().find("in 1 cases: the model picked it in 1 (100.0%)"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("beyond the noise (p < 0.05) in 1 of 3 cases"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("<- differs (within the noise)"), std::string::npos);
  EXPECT_NE(table.str().find("## Verdict\n  the model is "), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("it picked the measured fastest algorithm in " + std::to_string(r.winner_agree) +
                             " of 3 cases; "
                             "its pick was slower beyond the noise in 1\n"),
            std::string::npos)
      << table.str();
  EXPECT_NE(csv.str().find(",winner_p,clear,pick_p,pick_slower\n"), std::string::npos) << csv.str();
}

TEST(ReportTables, CrossoversPredictedAndMeasured) {
  Report r = build_report(crafted(), 3);
  ASSERT_EQ(r.crossovers.size(), 1u);
  const CrossoverRow& c = r.crossovers[0];
  EXPECT_EQ(c.a, "ring");
  EXPECT_EQ(c.b, "tree");
  ASSERT_EQ(c.predicted_bytes.size(), 1u);
  EXPECT_GT(c.predicted_bytes[0], 1024.0);
  EXPECT_LT(c.predicted_bytes[0], 1048576.0);
  ASSERT_EQ(c.measured_bytes.size(), 1u);
  EXPECT_GT(c.measured_bytes[0], 1048576.0);
  EXPECT_LT(c.measured_bytes[0], 33554432.0);
  // Interpolation in log size: log(ta/tb) goes from log(1/2) to log(2) between 1 and 100 -> 10.
  auto x = crossover_sizes({1.0, 100.0}, {1.0, 4.0}, {2.0, 2.0});
  ASSERT_EQ(x.size(), 1u);
  EXPECT_NEAR(x[0], 10.0, 1e-9);
}

TEST(ReportTables, OutliersAndFailedPoints) {
  Report r = build_report(crafted(), 3);
  ASSERT_EQ(r.outliers.size(), 3u);
  EXPECT_EQ(r.outliers[0].algorithm, Algorithm::Mpi);
  EXPECT_EQ(r.outliers[1].bytes, Bytes{1} << 20);  // ring -20%
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_EQ(r.failed[0].point.bytes, 4096u);
  EXPECT_NE(r.failed[0].why.find("wrong"), std::string::npos);
}

// Only small sizes measured: the band from 64 KiB has no point, which is not a 0.0% error.
TEST(ReportTables, AnEmptyBandSaysNoPoints) {
  std::vector<Point> pts = {make(Algorithm::Ring, 1024, 10.0, 11.0), make(Algorithm::Tree, 1024, 8.0, 8.8)};
  Report r = build_report(pts, 3);
  ASSERT_EQ(r.from_64KiB.n, 0u);
  std::ostringstream table;
  print_report_table(table, r, false, pts);
  const std::string s = table.str();
  EXPECT_NE(s.find("10.0% below 64 KiB, no points from 64 KiB"), std::string::npos) << s;
  EXPECT_EQ(s.find("0.0% from 64 KiB"), std::string::npos) << s;
  EXPECT_EQ(s.find("0 points   median |err|     0.0%"), std::string::npos) << s;
  EXPECT_NE(s.find("median |err| no points"), std::string::npos) << s;
}

TEST(ReportTables, PrintedFormatsCarryTheNumbers) {
  std::vector<Point> pts = crafted();
  Report r = build_report(pts, 3);
  std::ostringstream table, json, csv;
  print_report_table(table, r, true, pts);
  print_report_json(json, r, true, pts);
  print_report_csv(csv, r, "groups", pts);
  EXPECT_NE(table.str().find("model picked the measured winner in 2 of 3 cases"), std::string::npos);
  EXPECT_NE(json.str().find("\"agree\": 2"), std::string::npos);
  EXPECT_NE(csv.str().find("allreduce,ring,host,64KiB-16MiB,1,0.2"), std::string::npos) << csv.str();
  EXPECT_EQ(geomean_abs({}), 0.0);
  EXPECT_EQ(band_of(65535), SizeBand::Small);
  EXPECT_EQ(band_of(65536), SizeBand::Medium);
  EXPECT_EQ(band_of(Bytes{16} << 20), SizeBand::Large);
}

// NCCL's own choice against the forced variants. 64 KiB: NCCL ran Ring/LL (what its model picks)
// in 10 us while forcing Tree/LL measured 8 us: 25% lost, beyond the noise of ten samples each.
// 16 MiB: NCCL ran Ring/Simple, the fastest forced variant within 1%, no samples: not flagged.
std::vector<Point> nccl_points() {
  auto nccl = [](Algorithm a, Protocol p, Bytes b, double measured, double predicted) {
    Point x = make(a, b, measured, predicted);
    x.backend = "cuda";
    x.transport = "nccl";
    x.protocol = p;
    return x;
  };
  auto samples = [](double around) {
    std::vector<double> v;
    for (int i = 0; i < 10; ++i) v.push_back(around * (1.0 + 0.01 * (i - 5)));
    return v;
  };
  const Bytes k64 = 65536, m16 = Bytes{16} << 20;
  std::vector<Point> v = {
      nccl(Algorithm::Nccl, Protocol::None, k64, 10.0, 8.0),
      nccl(Algorithm::NcclRing, Protocol::LL, k64, 10.1, 8.0),
      nccl(Algorithm::NcclTree, Protocol::LL, k64, 8.0, 9.0),
      nccl(Algorithm::NcclRing, Protocol::Simple, k64, 15.0, 12.0),
      nccl(Algorithm::Nccl, Protocol::None, m16, 100.0, 90.0),
      nccl(Algorithm::NcclRing, Protocol::Simple, m16, 99.0, 90.0),
      nccl(Algorithm::NcclTree, Protocol::Simple, m16, 101.0, 95.0),
      nccl(Algorithm::Nccl, Protocol::None, k64, 5.0, 1.0),  // one rank: no choice
      make(Algorithm::Mpi, k64, 20.0, 30.0),                 // +50%, the MPI library's
  };
  v[0].nccl_algo = "Ring";
  v[0].nccl_proto = "LL";
  v[0].nccl_channels = 8;
  v[0].samples_us = samples(10.0);
  v[2].samples_us = samples(8.0);
  v[4].nccl_algo = "Ring";
  v[4].nccl_proto = "Simple";
  v[4].nccl_channels = 24;
  v[7].ranks = 1;
  return v;
}

TEST(ReportTables, NcclChoicePerSize) {
  const Report r = build_report(nccl_points());
  ASSERT_EQ(r.nccl_choices.size(), 2u);
  EXPECT_EQ(r.nccl_one_rank, 1u);
  const NcclChoiceCase& a = r.nccl_choices[0];
  EXPECT_EQ(a.bytes, 65536u);
  EXPECT_EQ(a.nccl_pick, "Ring/LL");
  EXPECT_EQ(a.nccl_channels, 8);
  EXPECT_EQ(a.model_pick, "Ring/LL");
  EXPECT_EQ(a.fastest, "Tree/LL");
  EXPECT_EQ(a.forced, 3);
  EXPECT_NEAR(a.lost, 10.0 / 8.0 - 1.0, 1e-12);
  EXPECT_LT(a.lost_p, kWinnerAlpha);
  EXPECT_TRUE(a.slower);
  EXPECT_TRUE(a.model_agrees);
  EXPECT_FALSE(a.nccl_fastest);
  const NcclChoiceCase& b = r.nccl_choices[1];
  EXPECT_EQ(b.nccl_pick, "Ring/Simple");
  EXPECT_EQ(b.fastest, "Ring/Simple");
  EXPECT_TRUE(b.nccl_fastest);
  EXPECT_NEAR(b.lost, 100.0 / 99.0 - 1.0, 1e-12);
  EXPECT_EQ(b.lost_p, 1.0);  // no samples
  EXPECT_FALSE(b.slower);    // within kNcclLossNoise
  EXPECT_EQ(r.nccl_slower, 1u);
}

TEST(ReportTables, NcclErrorApartFromTheOthers) {
  const Report r = build_report(nccl_points());
  // NCCL: 64 KiB rows -20%, -20.8%, +12.5%, -20%; 16 MiB -10%, -9.1%, -5.9%. The one-rank row
  // (-80%, a local copy) is listed but in no statistic.
  EXPECT_EQ(r.nccl_below_64KiB.n, 0u);
  EXPECT_EQ(r.nccl_from_64KiB.n, 7u);
  EXPECT_EQ(r.one_rank, 1u);
  EXPECT_EQ(r.mpi_from_64KiB.n, 1u);
  EXPECT_NEAR(r.mpi_from_64KiB.median_abs, 0.5, 1e-12);
  EXPECT_EQ(r.library_from_64KiB.n, 8u);
  for (const Point& p : r.outliers) EXPECT_GE(p.ranks, 2);
  EXPECT_EQ(r.schedules_from_64KiB.n, 0u);
}

TEST(ReportTables, NcclChoiceInEveryFormat) {
  const std::vector<Point> pts = nccl_points();
  const Report r = build_report(pts);
  std::ostringstream table, json, csv;
  print_report_table(table, r, false, pts);
  print_report_json(json, r, false, pts);
  print_report_csv(csv, r, "nccl", pts);
  const std::string t = table.str();
  EXPECT_NE(t.find("## NCCL's choice"), std::string::npos) << t;
  // The verdict comes first and names NCCL's slow pick.
  EXPECT_LT(t.find("## Verdict"), t.find("## Accuracy")) << t;
  EXPECT_NE(t.find("NCCL's own choice was slower than a variant it could have been forced to in 1 of 2 sizes"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("NCCL's collectives (nccl, nccl-ring, nccl-tree"), std::string::npos) << t;
  EXPECT_NE(t.find("Ring/LL, 8 ch"), std::string::npos) << t;
  EXPECT_NE(t.find("<- NCCL slower"), std::string::npos) << t;
  EXPECT_NE(t.find("NCCL ran Ring/LL in 10.00 us; forcing Tree/LL measured 8.00 us: 25.0% of the time lost"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("it was the fastest forced variant in 1 of 2, NCCL's model picked it in 2 of 2"), std::string::npos)
      << t;
  EXPECT_NE(json.str().find("\"nccl_choices\": {\"cases\": 2, \"slower\": 1"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"nccl_from_64KiB\": {\"n\": 7"), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"one_rank_points\": 1"), std::string::npos) << json.str();
  EXPECT_NE(t.find("1 one-rank point(s) (a local copy: no algorithm at work) are listed but kept out of every "
                   "statistic"),
            std::string::npos)
      << t;
  std::ostringstream listed;
  print_report_table(listed, r, true, pts);
  EXPECT_NE(listed.str().find("one rank: not in the statistics"), std::string::npos) << listed.str();
  const std::string c = csv.str();
  EXPECT_EQ(c.substr(0, c.find('\n')),
            "collective,backend,nodes,ranks,bytes,nccl_pick,nccl_channels,model_pick,fastest_forced,forced,nccl_us,"
            "fastest_us,lost,lost_p,slower");
  EXPECT_NE(c.find("allreduce,cuda,1,2,65536,Ring/LL,8,Ring/LL,Tree/LL,3,10,8,0.25,"), std::string::npos) << c;
}

}  // namespace
}  // namespace commsim
