// Re-pricing measured points (report --topology, calibrate): the pipelined algorithms are priced
// with the chunk they ran with, which the results file records; read_measured reads files for it.
#include <gtest/gtest.h>

#include "model/cost/cost.h"
#include "model/price.h"
#include "model/schedule.h"
#include "runtime/h5/results_file.h"
#include "runtime/sweep/measured.h"
#include "runtime/sweep/sweep.h"
#include "test_util.h"

namespace commsim {
namespace {

Topology one_node(double bandwidth_Bps) {
  Topology t;
  t.name = "one-node";
  t.gpu = false;
  t.ranks_per_node = 64;
  t.intra = {"shared-memory", 2e-6, bandwidth_Bps};
  t.reduce_bw_Bps = 20e9;
  return t;
}

Point broadcast_point(Algorithm a, Bytes bytes, int ranks) {
  Point p;
  p.collective = Collective::Broadcast;
  p.algorithm = a;
  p.backend = "host";
  p.transport = "mpi";
  p.nodes = 1;
  p.ranks = ranks;
  p.bytes = bytes;
  p.count = bytes / 4;
  p.measured_median_us = 1000;
  return p;
}

double priced_us(const Topology& t, const Point& p, Bytes chunk) {
  const Placement pl = Placement::uniform(1, p.ranks);
  const Schedule s = make_schedule({p.collective, p.algorithm, p.ranks, p.count, 4, p.root, &pl, chunk});
  return price_schedule(s, t, pl).time_s * 1e6;
}

TEST(PredictRow, RecordsTheChunkOfPipelinedSchedulesOnly) {
  const Topology t = one_node(10e9);
  const Placement pl = Placement::uniform(1, 8);
  Point ring = broadcast_point(Algorithm::Ring, 8 << 20, 8);
  predict_row(ring, t, pl, 0, MpiLibrary{});
  const Bytes chosen = pipeline_chunk_bytes(t, {Collective::Broadcast, Algorithm::Ring, Protocol::None, 1, 8, 8 << 20});
  ASSERT_GT(chosen, 0u);
  EXPECT_EQ(ring.pipeline_chunk_bytes, chosen);
  predict_row(ring, t, pl, 64 << 10, MpiLibrary{});  // --pipeline-chunk
  EXPECT_EQ(ring.pipeline_chunk_bytes, 64u << 10);

  Point binomial = broadcast_point(Algorithm::Binomial, 8 << 20, 8);
  predict_row(binomial, t, pl, 64 << 10, MpiLibrary{});
  EXPECT_EQ(binomial.pipeline_chunk_bytes, 0u);
}

TEST(Repredict, PricesTheChunkThePointRanWith) {
  const Topology run = one_node(10e9);      // the topology the points ran on
  const Topology refined = one_node(40e9);  // a calibrated one, which would choose other chunks
  const Bytes bytes = 8 << 20;
  const CostQuery q{Collective::Broadcast, Algorithm::Ring, Protocol::None, 1, 8, bytes};
  const Bytes run_chunk = pipeline_chunk_bytes(run, q);
  const Bytes stored = 32 << 10;
  ASSERT_NE(stored, run_chunk);
  ASSERT_NE(stored, pipeline_chunk_bytes(refined, q));
  ASSERT_NE(priced_us(refined, broadcast_point(Algorithm::Ring, bytes, 8), stored),
            priced_us(refined, broadcast_point(Algorithm::Ring, bytes, 8), run_chunk));

  std::vector<Point> points = {broadcast_point(Algorithm::Ring, bytes, 8), broadcast_point(Algorithm::Ring, bytes, 8)};
  points[0].pipeline_chunk_bytes = stored;  // recorded by the run
  points[1].pipeline_chunk_bytes = 0;       // a file from before the chunk was recorded
  repredict(points, refined, {&run, &run});
  EXPECT_DOUBLE_EQ(points[0].predicted_us, priced_us(refined, points[0], stored));
  EXPECT_EQ(points[0].pipeline_chunk_bytes, stored);
  EXPECT_DOUBLE_EQ(points[1].predicted_us, priced_us(refined, points[1], run_chunk));
  EXPECT_EQ(points[1].pipeline_chunk_bytes, run_chunk);
  EXPECT_NEAR(points[0].rel_error, points[0].predicted_us / 1000 - 1, 1e-12);
}

// The host executor's piece: a run's combines on arrival are priced at the piece it recorded
// (--piece-size), a run that recorded none at the topology's own (the default piece).
TEST(Repredict, PricesThePieceThePointRanWith) {
  Topology refined = one_node(10e9);
  refined.local_op_scale = {{64 * 1024, 1.0}, {1 << 20, 0.6}, {16 << 20, 0.3}};
  ASSERT_EQ(refined.piece(), kHostPieceBytes);
  Point rs = broadcast_point(Algorithm::Pairwise, 64 << 20, 8);
  rs.collective = Collective::ReduceScatter;
  rs.count = (64 << 20) / 4;  // all of the Input: 8 MiB a step
  std::vector<Point> points = {rs, rs, rs};
  repredict(points, refined, {}, {}, {std::nullopt, std::uint64_t{0}, std::uint64_t{kHostPieceBytes}});
  Topology whole = refined;
  whole.piece_bytes = 0;
  EXPECT_DOUBLE_EQ(points[0].predicted_us, priced_us(refined, rs, 0));
  EXPECT_DOUBLE_EQ(points[1].predicted_us, priced_us(whole, rs, 0));  // --piece-size 0: not cut
  EXPECT_DOUBLE_EQ(points[2].predicted_us, points[0].predicted_us);
  // 8 MiB a step, combined a piece at a time while the piece is in the caches: faster.
  EXPECT_LT(points[0].predicted_us, 0.9 * points[1].predicted_us);
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

// read_measured: the points of results files with their stored predictions, or predicted again.
TEST(ReadMeasured, StoredPredictionsOrPredictedAgainOnATopology) {
  test::TempDir dir;
  const std::string path = dir.file("run.h5");
  {
    RunContext ctx = test::sample_context();
    ResultsFile f = ResultsFile::create_empty(path, false, "commsim run (test)");
    Point p = test::measured_point(1 << 20, Algorithm::Ring);
    p.predicted_us = 123;
    f.add_run(ctx, {p}, RunStatus::Interrupted);
    f.finish_as_is();
  }
  const MeasuredPoints stored = read_measured({path});
  ASSERT_EQ(stored.points.size(), 1u);
  EXPECT_EQ(stored.points[0].predicted_us, 123);
  ASSERT_EQ(stored.notes.size(), 1u);
  EXPECT_NE(stored.notes[0].find("interrupted"), std::string::npos) << stored.notes[0];

  const MeasuredPoints again = read_measured({path}, "local-cpu");
  ASSERT_EQ(again.points.size(), 1u);
  EXPECT_TRUE(std::isfinite(again.points[0].predicted_us));
  EXPECT_NE(again.points[0].predicted_us, 123);
  EXPECT_NE(again.notes.back().find("predictions recomputed on topology"), std::string::npos);
}

}  // namespace
}  // namespace commsim
