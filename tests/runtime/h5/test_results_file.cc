// The HDF5 results file: round trip, no silent overwrite, .partial + rename, a killed writer,
// resume, schema version checks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "model/error.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/results_file.h"
#include "test_util.h"

namespace commsim {
namespace {

using test::error_of;

using test::TempDir;

// Equal, or both NaN.
void expect_same(double a, double b, const char* what) {
  if (std::isnan(a) || std::isnan(b))
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  else
    EXPECT_EQ(a, b) << what;
}

void expect_same_point(const Point& a, const Point& b) {
  EXPECT_EQ(a.collective, b.collective);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.transport, b.transport);
  EXPECT_EQ(a.protocol, b.protocol);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.redop, b.redop);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.ranks, b.ranks);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.pipeline_chunk_bytes, b.pipeline_chunk_bytes);
  expect_same(a.predicted_us, b.predicted_us, "predicted_us");
  expect_same(a.predicted_busbw_gbps, b.predicted_busbw_gbps, "predicted_busbw_gbps");
  EXPECT_EQ(a.predicted_winner, b.predicted_winner);
  EXPECT_EQ(a.iters, b.iters);
  expect_same(a.measured_min_us, b.measured_min_us, "measured_min_us");
  expect_same(a.measured_median_us, b.measured_median_us, "measured_median_us");
  expect_same(a.measured_mean_us, b.measured_mean_us, "measured_mean_us");
  expect_same(a.measured_p95_us, b.measured_p95_us, "measured_p95_us");
  expect_same(a.measured_max_us, b.measured_max_us, "measured_max_us");
  expect_same(a.algbw_gbps, b.algbw_gbps, "algbw_gbps");
  expect_same(a.busbw_gbps, b.busbw_gbps, "busbw_gbps");
  expect_same(a.rel_error, b.rel_error, "rel_error");
  EXPECT_EQ(a.wrong, b.wrong);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.note, b.note);
  EXPECT_EQ(a.nccl_algo, b.nccl_algo);
  EXPECT_EQ(a.nccl_proto, b.nccl_proto);
  EXPECT_EQ(a.nccl_channels, b.nccl_channels);
  EXPECT_EQ(a.in_place, b.in_place);
  EXPECT_EQ(a.timing, b.timing);
  EXPECT_EQ(a.samples_us, b.samples_us);
}


TEST(ResultsFile, RoundTripKeepsEveryFieldNaNAndSamples) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  RunContext ctx = test::sample_context();
  std::vector<Point> points = {test::measured_point(1024), test::measured_point(8, Algorithm::Tree),
                               test::predicted_point(Collective::AllGather, 1 << 20)};
  points[0].note = "picked ring/LL128, \"quoted\", comma";
  points[1].status = "wrong";
  points[1].wrong = 17;
  points[1].rel_error = -kNaN;  // any NaN stays NaN
  points[1].pipeline_chunk_bytes = 96 * 1024;
  points[2].algorithm = Algorithm::Nccl;
  points[2].nccl_algo = "Ring";
  points[2].nccl_proto = "LL128";
  points[2].nccl_channels = 24;
  {
    ResultsFile f = ResultsFile::create(path, false, ctx);
    EXPECT_TRUE(test::exists(path + ".partial"));
    EXPECT_FALSE(test::exists(path));
    for (const Point& p : points) f.append(p);
    EXPECT_EQ(f.points_in_file(), 3u);
    f.finish(RunStatus::Complete);
  }
  EXPECT_TRUE(test::exists(path));
  EXPECT_FALSE(test::exists(path + ".partial"));

  ResultsContents r = read_results(path);
  EXPECT_EQ(r.schema_version, kResultsSchemaVersion);
  EXPECT_EQ(r.command_line, ctx.command_line);
  EXPECT_EQ(r.created.size(), 20u) << r.created;  // 2026-01-31T12:34:56Z
  ASSERT_EQ(r.runs.size(), 1u);
  const RunContext& c = r.runs[0];
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.status, "complete");
  EXPECT_FALSE(c.finished.empty());
  EXPECT_EQ(c.hostnames, ctx.hostnames);
  EXPECT_EQ(c.cpus, ctx.cpus);
  EXPECT_EQ(c.cpu_binding, ctx.cpu_binding);
  EXPECT_EQ(c.ranks, 4);
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.backend, "host");
  EXPECT_EQ(c.transport, "mpi");
  EXPECT_EQ(c.mpi_version, ctx.mpi_version);
  EXPECT_EQ(c.nccl_version, "");
  EXPECT_TRUE(c.gpu_names.empty());
  EXPECT_EQ(c.environment, ctx.environment);
  EXPECT_EQ(c.slurm.job_id, "1234");
  EXPECT_EQ(c.slurm.partition, "gpu");
  EXPECT_EQ(c.slurm.node_list, "node-[a-b]");
  EXPECT_EQ(c.topology_name, "local-cpu");
  EXPECT_EQ(c.topology_text, ctx.topology_text);
  EXPECT_EQ(c.piece_bytes, std::optional<std::uint64_t>(64 * 1024));
  EXPECT_EQ(c.command_line, ctx.command_line);
  ASSERT_EQ(r.points.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_point(r.points[i], points[i]);
    EXPECT_EQ(r.run_of_point[i], 0);
  }
  EXPECT_TRUE(std::isnan(r.points[2].measured_median_us));
  EXPECT_EQ(r.points[2].wrong, -1);

  ResultsContents lean = read_results(path, false);
  ASSERT_EQ(lean.points.size(), 3u);
  EXPECT_TRUE(lean.points[0].samples_us.empty());
  EXPECT_EQ(read_points(path).size(), 3u);
}

TEST(ResultsFile, RefusesToOverwriteWithoutForce) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(test::measured_point(8));
    f.finish(RunStatus::Complete);
  }
  std::string msg = error_of([&] { ResultsFile::create(path, false, test::sample_context()); });
  EXPECT_NE(msg.find(path + " exists"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--force"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--resume"), std::string::npos) << msg;
  EXPECT_EQ(read_points(path).size(), 1u);  // untouched

  {
    ResultsFile f = ResultsFile::create(path, true, test::sample_context());
    EXPECT_EQ(read_points(path).size(), 1u);  // the old file stays until finish
    f.append(test::measured_point(16));
    f.append(test::measured_point(32));
    f.finish(RunStatus::Complete);
  }
  auto pts = read_points(path);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].bytes, 16u);
}

TEST(ResultsFile, LeftoverPartialBlocksCreateUnlessForced) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  std::ofstream(path + ".partial") << "left over";
  std::string msg = error_of([&] { ResultsFile::create(path, false, test::sample_context()); });
  EXPECT_NE(msg.find(".partial exists"), std::string::npos) << msg;
  ResultsFile f = ResultsFile::create(path, true, test::sample_context());
  f.finish(RunStatus::Complete);
  EXPECT_EQ(read_results(path).runs.size(), 1u);
}

TEST(ResultsFile, MissingDirectoryIsAClearError) {
  TempDir dir;
  std::string msg = error_of([&] { ResultsFile::create(dir.file("no/such/dir/r.h5"), false, test::sample_context()); });
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
}

// A writer killed without any cleanup (what SIGKILL or a node failure does) leaves a .partial
// file holding every appended point; resume continues it in a new run.
TEST(ResultsFile, KilledWriterKeepsEveryPointAndResumeSkipsThem) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    for (Bytes b : {8, 16, 32}) f.append(test::measured_point(b));
    _exit(0);  // no destructor, no close
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_FALSE(test::exists(path));
  ASSERT_TRUE(test::exists(path + ".partial"));

  ResultsContents killed = read_results(path + ".partial");
  ASSERT_EQ(killed.points.size(), 3u);
  EXPECT_EQ(killed.runs[0].status, "running");
  EXPECT_EQ(killed.points[2].samples_us, test::measured_point(32).samples_us);

  {
    ResultsFile f = ResultsFile::resume(path, test::sample_context());
    EXPECT_EQ(f.current_run(), 1);
    EXPECT_EQ(f.existing_keys().size(), 3u);
    EXPECT_TRUE(f.contains(key_of(test::measured_point(16))));
    EXPECT_FALSE(f.contains(key_of(test::measured_point(64))));
    PointKey other_algo = key_of(test::measured_point(16, Algorithm::Tree));
    EXPECT_FALSE(f.contains(other_algo));
    for (Bytes b : {8, 16, 32, 64, 128})
      if (!f.contains(key_of(test::measured_point(b)))) f.append(test::measured_point(b));
    EXPECT_TRUE(f.contains(key_of(test::measured_point(64))));
    f.finish(RunStatus::Complete);
  }
  ResultsContents r = read_results(path);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].status, "running");
  EXPECT_EQ(r.runs[1].status, "complete");
  ASSERT_EQ(r.points.size(), 5u);
  std::vector<Bytes> sizes;
  for (const Point& p : r.points) sizes.push_back(p.bytes);
  EXPECT_EQ(sizes, (std::vector<Bytes>{8, 16, 32, 64, 128}));
  EXPECT_EQ(r.run_of_point, (std::vector<int>{0, 0, 0, 1, 1}));
  // samples of the resumed run are found through their offsets
  EXPECT_EQ(r.points[4].samples_us, test::measured_point(128).samples_us);
}

TEST(ResultsFile, ResumeOfACompleteFileAddsARun) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(test::measured_point(8));
    f.finish(RunStatus::Interrupted);
  }
  EXPECT_EQ(read_results(path).runs[0].status, "interrupted");
  {
    ResultsFile f = ResultsFile::resume(path, test::sample_context());
    EXPECT_TRUE(test::exists(path + ".partial"));
    EXPECT_FALSE(test::exists(path));
    f.append(test::measured_point(16));
    f.finish(RunStatus::Complete);
  }
  ResultsContents r = read_results(path);
  EXPECT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.points.size(), 2u);
}

// Rewrites /points without one of its fields, as a file written before that field existed.
void drop_points_field(const std::string& path, const std::string& field) {
  h5::File f = h5::open_file(path, true);
  h5::Dataset points = h5::open_dataset(f.get(), "points");
  h5::Datatype full(H5Dget_type(points.get()), "H5Dget_type");
  std::vector<std::pair<std::string, h5::Datatype>> kept;
  std::size_t size = 0;
  for (int i = 0; i < H5Tget_nmembers(full.get()); ++i) {
    char* name = H5Tget_member_name(full.get(), static_cast<unsigned>(i));
    std::string n = name;
    H5free_memory(name);
    if (n == field) continue;
    kept.emplace_back(n, h5::Datatype(H5Tget_member_type(full.get(), static_cast<unsigned>(i)), "member type"));
    size += H5Tget_size(kept.back().second.get());
  }
  ASSERT_LT(kept.size(), static_cast<std::size_t>(H5Tget_nmembers(full.get()))) << field << " is not in " << path;
  h5::Datatype lean(H5Tcreate(H5T_COMPOUND, size), "H5Tcreate");
  std::size_t offset = 0;
  for (const auto& [name, type] : kept) {
    h5::check_status(H5Tinsert(lean.get(), name.c_str(), offset, type.get()), "H5Tinsert");
    offset += H5Tget_size(type.get());
  }
  const hsize_t n = h5::rows(points);
  std::vector<char> rows(n * size);
  h5::Dataset copy = h5::create_table(f.get(), "points_lean", lean.get(), 16);
  if (n > 0) {
    h5::read_rows(points, lean.get(), rows.data(), 0, n);
    h5::append_rows(copy, lean.get(), rows.data(), n);
    h5::reclaim(lean.get(), rows.data(), n);
  }
  points.reset();
  copy.reset();
  h5::check_status(H5Ldelete(f.get(), "points", H5P_DEFAULT), "H5Ldelete");
  h5::check_status(H5Lmove(f.get(), "points_lean", f.get(), "points", H5P_DEFAULT, H5P_DEFAULT), "H5Lmove");
}

bool points_have_field(const std::string& path, const std::string& field) {
  h5::File f = h5::open_file(path, false);
  h5::Dataset points = h5::open_dataset(f.get(), "points");
  h5::Datatype type(H5Dget_type(points.get()), "H5Dget_type");
  return H5Tget_member_index(type.get(), field.c_str()) >= 0;
}

// Files written before the pipeline chunk was recorded: read with the chunk 0 (unknown) and every
// other field intact; resumed in their own layout.
TEST(ResultsFile, FilesWithoutThePipelineChunkAreReadAndResumed) {
  TempDir dir;
  const std::string path = dir.file("old.h5");
  std::vector<Point> points = {test::measured_point(1024, Algorithm::Tree), test::measured_point(64)};
  points[0].pipeline_chunk_bytes = 512 * 1024;
  points[0].note = "a note";
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    for (const Point& p : points) f.append(p);
    f.finish(RunStatus::Complete);
  }
  ASSERT_TRUE(points_have_field(path, "pipeline_chunk_bytes"));
  drop_points_field(path, "pipeline_chunk_bytes");
  ASSERT_FALSE(points_have_field(path, "pipeline_chunk_bytes"));

  ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 2u);
  points[0].pipeline_chunk_bytes = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_point(r.points[i], points[i]);
  }

  Point more = test::measured_point(4096, Algorithm::Tree);
  more.pipeline_chunk_bytes = 256 * 1024;
  {
    ResultsFile f = ResultsFile::resume(path, test::sample_context());
    EXPECT_EQ(f.points_in_file(), 2u);
    f.append(more);
    f.finish(RunStatus::Complete);
  }
  EXPECT_FALSE(points_have_field(path, "pipeline_chunk_bytes"));
  r = read_results(path);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.runs.size(), 2u);
  more.pipeline_chunk_bytes = 0;
  expect_same_point(r.points[2], more);
}

// Files written before what NCCL ran was recorded: read with the three fields empty; resumed in
// their own layout (a row appended then loses them).
TEST(ResultsFile, FilesWithoutNcclChoiceAreReadAndResumed) {
  TempDir dir;
  const std::string path = dir.file("old.h5");
  std::vector<Point> points = {test::measured_point(1024), test::measured_point(64)};
  points[1].algorithm = Algorithm::Nccl;
  points[1].nccl_algo = "Tree";
  points[1].nccl_proto = "LL";
  points[1].nccl_channels = 2;
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    for (const Point& p : points) f.append(p);
    f.finish(RunStatus::Complete);
  }
  ASSERT_EQ(read_results(path).points[1].nccl_channels, 2);
  for (const char* field : {"nccl_algo", "nccl_proto", "nccl_channels"}) drop_points_field(path, field);
  ASSERT_FALSE(points_have_field(path, "nccl_algo"));
  ASSERT_TRUE(points_have_field(path, "pipeline_chunk_bytes"));

  ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 2u);
  points[1].nccl_algo = points[1].nccl_proto = "";
  points[1].nccl_channels = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_point(r.points[i], points[i]);
  }
  Point more = test::measured_point(4096);
  more.algorithm = Algorithm::Nccl;
  more.nccl_algo = "Ring";
  more.nccl_proto = "Simple";
  more.nccl_channels = 8;
  {
    ResultsFile f = ResultsFile::resume(path, test::sample_context());
    f.append(more);
    f.finish(RunStatus::Complete);
  }
  EXPECT_FALSE(points_have_field(path, "nccl_proto"));
  r = read_results(path);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[2].nccl_algo, "");
  EXPECT_EQ(r.points[2].nccl_channels, 0);
  EXPECT_EQ(r.points[2].bytes, 4096u);
}

// How a point was timed and where its output went survive the file; a file written before those
// columns reads as out of place and unnamed timing, and its points keep their keys for --resume.
TEST(ResultsFile, TimingAndInPlaceRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("timing.h5");
  std::vector<Point> points = {test::measured_point(1024), test::measured_point(64)};
  points[0].timing = "nccl-tests";
  points[0].in_place = 1;
  points[1].timing = "per-iteration";
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    for (const Point& p : points) f.append(p);
    f.finish(RunStatus::Complete);
  }
  ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 2u);
  for (std::size_t i = 0; i < points.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_point(r.points[i], points[i]);
  }
  Point out_of_place = points[0];
  out_of_place.in_place = 0;
  EXPECT_FALSE(key_of(points[0]) == key_of(out_of_place));  // both are stored by one run

  for (const char* field : {"in_place", "timing"}) drop_points_field(path, field);
  ASSERT_FALSE(points_have_field(path, "timing"));
  r = read_results(path);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].timing, "");
  EXPECT_EQ(r.points[0].in_place, 0);
  // An old point is the per-iteration point of a resumed run.
  EXPECT_EQ(key_of(r.points[1]), key_of(points[1]));
}

// A name longer than the table's field is cut to fit, not refused: the row is still written.
TEST(ResultsFile, LongNcclProtocolIsCutToFit) {
  TempDir dir;
  const std::string path = dir.file("long.h5");
  Point p = test::measured_point(1024);
  p.algorithm = Algorithm::Nccl;
  p.nccl_algo = "Symmetric";
  p.nccl_proto = std::string(40, 'K');
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(p);
    f.finish(RunStatus::Complete);
  }
  const ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_EQ(r.points[0].nccl_algo, "Symmetric");
  EXPECT_EQ(r.points[0].nccl_proto, std::string(32, 'K'));
}

TEST(ResultsFile, ResumeOfNothingIsAnError) {
  TempDir dir;
  std::string msg = error_of([&] { ResultsFile::resume(dir.file("none.h5"), test::sample_context()); });
  EXPECT_NE(msg.find("neither"), std::string::npos) << msg;
}

TEST(ResultsFile, SchemaVersionMismatchNamesBothVersions) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.finish(RunStatus::Complete);
  }
  {
    h5::File raw = h5::open_file(path, true);
    h5::set_attribute(raw.get(), "schema_version", std::int64_t{7});
  }
  std::string msg = error_of([&] { read_results(path); });
  EXPECT_NE(msg.find("version 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("version " + std::to_string(kResultsSchemaVersion)), std::string::npos) << msg;
  msg = error_of([&] { ResultsFile::resume(path, test::sample_context()); });
  EXPECT_NE(msg.find("version 7"), std::string::npos) << msg;
  EXPECT_TRUE(test::exists(path));  // not renamed by the failed resume
}

TEST(ResultsFile, NonResultsFilesAreRejected) {
  TempDir dir;
  const std::string text = dir.file("text.h5");
  std::ofstream(text) << "not hdf5\n";
  EXPECT_NE(error_of([&] { read_results(text); }).find("not an HDF5 file"), std::string::npos);
  const std::string other = dir.file("other.h5");
  { h5::File f = h5::create_file(other); }
  EXPECT_NE(error_of([&] { read_results(other); }).find("not a commsim results file"), std::string::npos);
  std::string missing = error_of([&] { read_results(dir.file("missing.h5")); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

TEST(ResultsFile, DestructorWithoutFinishMarksFailedAndKeepsPartial) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(test::measured_point(8));
  }
  ASSERT_TRUE(test::exists(path + ".partial"));
  ResultsContents r = read_results(path + ".partial");
  EXPECT_EQ(r.runs[0].status, "failed");
  EXPECT_EQ(r.points.size(), 1u);

  // Nothing written: nothing left behind.
  const std::string empty = dir.file("e.h5");
  { ResultsFile f = ResultsFile::create(empty, false, test::sample_context()); }
  EXPECT_FALSE(test::exists(empty + ".partial"));
  EXPECT_FALSE(test::exists(empty));
}

TEST(ResultsFile, TooLongNameIsAnErrorAndWritesNothing) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  ResultsFile f = ResultsFile::create(path, false, test::sample_context());
  Point p = test::measured_point(8);
  p.backend = std::string(40, 'x');
  std::string msg = error_of([&] { f.append(p); });
  EXPECT_NE(msg.find("backend"), std::string::npos) << msg;
  EXPECT_EQ(f.points_in_file(), 0u);
  f.append(test::measured_point(8));
  f.finish(RunStatus::Complete);
  ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 1u);
  EXPECT_EQ(r.points[0].samples_us, test::measured_point(8).samples_us);
}

TEST(ResultsFile, MergeCopiesRunsWithTheirContexts) {
  TempDir dir;
  const std::string a = dir.file("a.h5"), b = dir.file("b.h5"), all = dir.file("all.h5");
  for (const std::string* path : {&a, &b}) {
    RunContext c = test::sample_context();
    c.slurm.job_id = path == &a ? "100" : "200";
    ResultsFile f = ResultsFile::create(*path, false, c);
    f.append(test::measured_point(path == &a ? 8 : 16));
    f.finish(RunStatus::Complete);
  }
  {
    ResultsFile out = ResultsFile::create_empty(all, false, "commsim merge a.h5 b.h5");
    for (const std::string* path : {&a, &b}) {
      ResultsContents in = read_results(*path);
      for (std::size_t r = 0; r < in.runs.size(); ++r) {
        std::vector<Point> pts;
        for (std::size_t i = 0; i < in.points.size(); ++i)
          if (in.run_of_point[i] == static_cast<int>(r)) pts.push_back(in.points[i]);
        out.add_run(in.runs[r], pts, *parse_run_status(in.runs[r].status));
      }
    }
    out.finish(RunStatus::Complete);
  }
  ResultsContents r = read_results(all);
  EXPECT_EQ(r.command_line, "commsim merge a.h5 b.h5");
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].slurm.job_id, "100");
  EXPECT_EQ(r.runs[1].slurm.job_id, "200");
  EXPECT_EQ(r.runs[1].started, read_results(b).runs[0].started);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.run_of_point, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.points[1].samples_us, test::measured_point(16).samples_us);
}

TEST(Hdf5Wrapper, FailureCarriesTheHdf5ErrorStack) {
  TempDir dir;
  std::string msg = error_of([&] { h5::open_file(dir.file("missing.h5"), false); });
  EXPECT_NE(msg.find("cannot open HDF5 file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("H5F"), std::string::npos) << msg;  // a frame of the HDF5 stack
}

TEST(RunContext, CollectLocalFiltersTheEnvironment) {
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("SLURM_JOB_ID", "777", 1);
  setenv("SLURM_JWT", "secret", 1);
  setenv("HOME_UNRELATED_VAR", "x", 1);
  const char* argv[] = {"commsim", "predict", "--sizes", "1 KiB"};
  RunContext c = RunContext::collect_local(4, argv);
  EXPECT_EQ(c.command_line, "commsim predict --sizes '1 KiB'");
  EXPECT_EQ(c.slurm.job_id, "777");
  auto has = [&](const std::string& kv) {
    return std::find(c.environment.begin(), c.environment.end(), kv) != c.environment.end();
  };
  EXPECT_TRUE(has("NCCL_DEBUG=INFO"));
  EXPECT_TRUE(has("SLURM_JOB_ID=777"));
  EXPECT_FALSE(has("SLURM_JWT=secret"));
  EXPECT_FALSE(has("HOME_UNRELATED_VAR=x"));
  EXPECT_TRUE(std::is_sorted(c.environment.begin(), c.environment.end()));
  ASSERT_EQ(c.hostnames.size(), 1u);
  EXPECT_FALSE(c.hostnames[0].empty());
  unsetenv("NCCL_DEBUG");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_JWT");
  unsetenv("HOME_UNRELATED_VAR");
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

TEST(ResultsFile, BufferedAppendsAreWrittenByFinish) {
  test::TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.set_flush_interval(3600);
    for (Bytes b : {8, 16, 32}) {
      Point p = test::measured_point(b);
      p.note = "note " + std::to_string(b);  // the point dies here; its note must not
      f.append(p);
    }
    EXPECT_EQ(f.points_in_file(), 3u);
    EXPECT_TRUE(f.contains(key_of(test::measured_point(16))));
    EXPECT_EQ(read_results(path + ".partial").points.size(), 0u) << "still buffered";
    f.finish(RunStatus::Complete);
  }
  ResultsContents r = read_results(path);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[1].note, "note 16");
  EXPECT_EQ(r.points[2].samples_us, test::measured_point(32).samples_us);
}

}  // namespace
}  // namespace commsim

namespace commsim {
namespace {

TEST(RunContext, CommandLineNamesTheProgram) {
  const char* from_command[] = {"probe", "--out", "x.h5"};
  EXPECT_EQ(RunContext::collect_local(3, from_command).command_line, "commsim probe --out x.h5");
  const char* from_main[] = {"/opt/bin/commsim", "run", "--sizes", "8B:1MiB"};
  EXPECT_EQ(RunContext::collect_local(4, from_main).command_line, "/opt/bin/commsim run --sizes 8B:1MiB");
}

}  // namespace
}  // namespace commsim
