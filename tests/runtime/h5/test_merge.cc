// `commsim merge`: every run and point kept with its context, .partial inputs, missing inputs,
// schema versions, points measured twice, no silent overwrite. Runs the command as users do
// (cmd_merge with an argv) and reads what it wrote with read_results; the last tests call merge_results directly.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/error.h"
#include "runtime/command.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/merge.h"
#include "runtime/h5/results_file.h"
#include "test_util.h"

namespace commsim {
namespace {

using test::error_of;

using test::TempDir;

struct Outcome {
  int rc = -1;
  std::string out, err;
};

Outcome merge(std::vector<std::string> args) {
  args.insert(args.begin(), "merge");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Outcome o;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  try {
    o.rc = cmd_merge(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    testing::internal::GetCapturedStdout();
    testing::internal::GetCapturedStderr();
    throw;
  }
  o.out = testing::internal::GetCapturedStdout();
  o.err = testing::internal::GetCapturedStderr();
  return o;
}

RunContext job_context(const std::string& job_id, int nodes, const std::string& started) {
  RunContext c = test::sample_context();
  c.slurm.job_id = job_id;
  c.slurm.node_list = nodes == 1 ? "node1" : "node[1-" + std::to_string(nodes) + "]";
  c.nodes = nodes;
  c.ranks = 2 * nodes;
  c.hostnames.clear();
  for (int n = 1; n <= nodes; ++n) c.hostnames.insert(c.hostnames.end(), 2, "node" + std::to_string(n));
  c.started = started;
  return c;
}

Point point_of(int nodes, Bytes bytes, Algorithm a = Algorithm::Ring) {
  Point p = test::measured_point(bytes, a);
  p.nodes = nodes;
  p.ranks = 2 * nodes;
  return p;
}

// One finished file with one run per entry of `runs` (context, its points, its status).
struct RunSpec {
  RunContext ctx;
  std::vector<Point> points;
  RunStatus status = RunStatus::Complete;
};
void write_file(const std::string& path, const std::vector<RunSpec>& runs) {
  ResultsFile f = ResultsFile::create_empty(path, false, "commsim run (test)");
  for (const RunSpec& r : runs) f.add_run(r.ctx, r.points, r.status);
  f.finish_as_is();
}

TEST(Merge, KeepsEveryRunPointAndContext) {
  TempDir dir;
  const std::string a = dir.file("nodes1-job11.h5"), b = dir.file("nodes2-job12.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("11", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8), point_of(1, 1024)}}});
  // b: a run killed at its time limit, then the run that resumed it.
  write_file(b, {{job_context("12", 2, "2026-01-01T10:01:00Z"), {point_of(2, 8)}, RunStatus::Interrupted},
                 {job_context("15", 2, "2026-01-01T10:05:00Z"), {point_of(2, 1024), point_of(2, 4096)}}});
  const ResultsContents in_b = read_results(b);

  Outcome o = merge({a, b, "--out", out});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("3 runs, 5 points"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("interrupted, job 12"), std::string::npos) << o.out;

  ResultsContents m = read_results(out);
  ASSERT_EQ(m.runs.size(), 3u);
  ASSERT_EQ(m.points.size(), 5u);
  const std::vector<std::string> jobs = {"11", "12", "15"};
  const std::vector<int> nodes = {1, 2, 2};
  for (std::size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(m.runs[r].slurm.job_id, jobs[r]);
    EXPECT_EQ(m.runs[r].nodes, nodes[r]);
    EXPECT_EQ(m.runs[r].hostnames.size(), static_cast<std::size_t>(2 * nodes[r]));
    EXPECT_EQ(m.runs[r].topology_text, test::sample_context().topology_text);
    EXPECT_EQ(m.runs[r].environment, test::sample_context().environment);
  }
  // Statuses and finish times as the inputs had them, not rewritten by the merge.
  EXPECT_EQ(m.runs[1].status, "interrupted");
  EXPECT_EQ(m.runs[2].status, "complete");
  EXPECT_EQ(m.runs[1].finished, in_b.runs[0].finished);
  EXPECT_EQ(m.runs[2].finished, in_b.runs[1].finished);
  // Each point stays with its run, with its samples.
  const std::vector<int> run_of = {0, 0, 1, 2, 2};
  EXPECT_EQ(m.run_of_point, run_of);
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    EXPECT_EQ(m.points[i].nodes, m.runs[static_cast<std::size_t>(m.run_of_point[i])].nodes);
    EXPECT_EQ(m.points[i].samples_us.size(), 3u);
    EXPECT_TRUE(m.points[i].measured());
  }
  EXPECT_NE(m.command_line.find("merge"), std::string::npos);
}

TEST(Merge, ReadsThePartialFileOfAKilledJob) {
  TempDir dir;
  const std::string a = dir.file("nodes1-job21.h5"), b = dir.file("nodes2-job22.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("21", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8)}}});
  {
    // Never finished: the destructor leaves b.partial behind, as a killed job does.
    ResultsFile f = ResultsFile::create(b, false, job_context("22", 2, "2026-01-01T10:01:00Z"));
    f.append(point_of(2, 8));
    f.append(point_of(2, 64));
  }
  ASSERT_FALSE(test::exists(b));
  ASSERT_TRUE(test::exists(b + ".partial"));

  Outcome o = merge({a, b, "--out", out});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find(b + ".partial"), std::string::npos) << o.out;
  ResultsContents m = read_results(out);
  ASSERT_EQ(m.points.size(), 3u);
  EXPECT_EQ(m.runs[1].slurm.job_id, "22");
  EXPECT_NE(m.runs[1].status, "complete");
}

TEST(Merge, MissingAndUnreadableInputsAreReportedAndTheRestIsMerged) {
  TempDir dir;
  const std::string a = dir.file("nodes1-job31.h5"), missing = dir.file("nodes2-job32.h5"),
                    junk = dir.file("nodes3-job33.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("31", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8), point_of(1, 16)}}});
  std::ofstream(junk) << "slurmstepd: error: *** JOB 33 CANCELLED ***\n";

  Outcome o = merge({a, missing, junk, "--out", out});
  EXPECT_EQ(o.rc, 1);
  EXPECT_NE(o.err.find(missing + ": missing"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(junk + ": not an HDF5 file"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("2 of 3 inputs could not be read"), std::string::npos) << o.err;
  ResultsContents m = read_results(out);
  EXPECT_EQ(m.runs.size(), 1u);
  EXPECT_EQ(m.points.size(), 2u);
}

// A probe file's runs and points are merged; its /probe measurements are not, and merge says so.
TEST(Merge, SaysWhenAProbeFilesMeasurementsAreLeftOut) {
  TempDir dir;
  const std::string a = dir.file("probe.h5"), b = dir.file("nodes2-job32.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("31", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8)}}});
  h5::create_group(h5::open_file(a, true).get(), "probe");
  write_file(b, {{job_context("32", 2, "2026-01-01T11:00:00Z"), {point_of(2, 8)}}});

  Outcome o = merge({a, b, "--out", out});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.err.find(a + " is a probe file: its runs and points were merged, its /probe measurements were not"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.err.find(b + " is a probe file"), std::string::npos) << o.err;
  EXPECT_EQ(read_results(out).points.size(), 2u);
}

TEST(Merge, RefusesMixedSchemaVersionsAndWritesNothing) {
  TempDir dir;
  const std::string a = dir.file("a.h5"), b = dir.file("b.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("41", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8)}}});
  write_file(b, {{job_context("42", 2, "2026-01-01T10:00:00Z"), {point_of(2, 8)}}});
  {
    h5::File f = h5::open_file(b, true);
    h5::set_attribute(f.get(), "schema_version", static_cast<std::int64_t>(kResultsSchemaVersion + 1));
  }
  std::string msg = error_of([&] { merge({a, b, "--out", out}); });
  EXPECT_NE(msg.find("refusing to merge"), std::string::npos) << msg;
  EXPECT_NE(msg.find(b + " (schema version " + std::to_string(kResultsSchemaVersion + 1) + ")"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(a + " (schema version " + std::to_string(kResultsSchemaVersion) + ")"), std::string::npos) << msg;
  EXPECT_FALSE(test::exists(out));
  EXPECT_FALSE(test::exists(out + ".partial"));
}

class MergeDuplicates : public testing::Test {
 protected:
  void SetUp() override {
    // The 8-byte point was measured by both jobs; job 52 started later.
    Point first = point_of(2, 8), second = point_of(2, 8);
    first.measured_median_us = 100;
    second.measured_median_us = 200;
    write_file(a, {{job_context("51", 2, "2026-01-01T10:00:00Z"), {first, point_of(2, 64)}}});
    write_file(b, {{job_context("52", 2, "2026-01-01T11:00:00Z"), {second, point_of(2, 4096)}}});
  }
  TempDir dir;
  const std::string a = dir.file("a.h5"), b = dir.file("b.h5"), out = dir.file("all.h5");
};

TEST_F(MergeDuplicates, KeepAllIsTheDefaultAndWarns) {
  Outcome o = merge({b, a, "--out", out});
  EXPECT_EQ(o.rc, 0);
  EXPECT_NE(o.err.find("1 point was measured more than once (1 extra row)"), std::string::npos) << o.err;
  ResultsContents m = read_results(out);
  ASSERT_EQ(m.points.size(), 4u);
  int eights = 0;
  for (std::size_t i = 0; i < m.points.size(); ++i)
    if (m.points[i].bytes == 8) {
      ++eights;
      // Each copy stays tied to the run that measured it.
      EXPECT_EQ(m.points[i].measured_median_us,
                m.runs[static_cast<std::size_t>(m.run_of_point[i])].slurm.job_id == "51" ? 100 : 200);
    }
  EXPECT_EQ(eights, 2);
}

TEST_F(MergeDuplicates, KeepLastKeepsTheRunThatStartedLast) {
  // Input order b, a: "last" is by start time, not by position on the command line.
  Outcome o = merge({b, a, "--out", out, "--on-duplicate", "keep-last"});
  EXPECT_EQ(o.rc, 0);
  EXPECT_NE(o.err.find("dropped 1 row"), std::string::npos) << o.err;
  ResultsContents m = read_results(out);
  ASSERT_EQ(m.points.size(), 3u);
  EXPECT_EQ(m.runs.size(), 2u);
  for (const Point& p : m.points)
    if (p.bytes == 8) {
      EXPECT_EQ(p.measured_median_us, 200);
    }
}

TEST_F(MergeDuplicates, ErrorNamesTheRunsAndWritesNothing) {
  std::string msg = error_of([&] { merge({a, b, "--out", out, "--on-duplicate", "error"}); });
  EXPECT_NE(msg.find("bytes=8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(job 51)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(job 52)"), std::string::npos) << msg;
  EXPECT_FALSE(test::exists(out));
  EXPECT_NE(error_of([&] {
              merge({a, b, "--out", out, "--on-duplicate", "newest"});
            }).find("keep-all"),
            std::string::npos);
}

TEST(Merge, NeverOverwritesSilently) {
  TempDir dir;
  const std::string a = dir.file("a.h5"), out = dir.file("all.h5");
  write_file(a, {{job_context("61", 1, "2026-01-01T10:00:00Z"), {point_of(1, 8)}}});
  ASSERT_EQ(merge({a, "--out", out}).rc, 0);
  EXPECT_NE(error_of([&] { merge({a, "--out", out}); }).find("--force"), std::string::npos);
  EXPECT_NE(error_of([&] { merge({a, "--out", a}); }).find("also an input"), std::string::npos);
  EXPECT_NE(error_of([&] { merge({a}); }).find("--out"), std::string::npos);
  EXPECT_EQ(merge({a, "--out", out, "--force"}).rc, 0);
  EXPECT_EQ(read_results(out).points.size(), 1u);
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

// merge_results itself, as a library: what it returns, without a command line or printing.
TEST_F(MergeDuplicates, LibraryReturnsTheSummaryAndKeepsTheLatestRow) {
  const std::string missing = dir.file("never-written.h5");
  const MergeSummary s = merge_results({b, a, missing}, out, false, OnDuplicate::KeepLast, "commsim merge (test)");
  EXPECT_EQ(s.read, 2u);
  EXPECT_EQ(s.runs_written, 2u);
  EXPECT_EQ(s.points_written, 3u);
  EXPECT_EQ(s.duplicated_points, 1u);
  EXPECT_EQ(s.extra_rows, 1u);
  ASSERT_EQ(s.inputs.size(), 3u);
  EXPECT_FALSE(s.inputs[2].contents.has_value());
  EXPECT_NE(s.inputs[2].problem.find("missing"), std::string::npos) << s.inputs[2].problem;
  ASSERT_EQ(s.run_lines.size(), 2u);
  EXPECT_NE(s.run_lines[0].find("job 52"), std::string::npos) << s.run_lines[0];
  const ResultsContents m = read_results(out);
  EXPECT_EQ(m.command_line, "commsim merge (test)");
  for (const Point& p : m.points) {
    if (p.bytes == 8) {
      EXPECT_EQ(p.measured_median_us, 200);
    }
  }
}

TEST(MergeLibrary, OnDuplicateNames) {
  EXPECT_EQ(parse_on_duplicate("keep-all"), OnDuplicate::KeepAll);
  EXPECT_EQ(parse_on_duplicate("keep-last"), OnDuplicate::KeepLast);
  EXPECT_EQ(parse_on_duplicate("error"), OnDuplicate::Error);
  EXPECT_THROW(parse_on_duplicate("newest"), Error);
  EXPECT_EQ(count_of(1, "point"), "1 point");
  EXPECT_EQ(count_of(3, "point"), "3 points");
}

}  // namespace
}  // namespace commsim
