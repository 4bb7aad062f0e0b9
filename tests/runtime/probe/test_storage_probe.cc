// The storage probe on the file system the tests run on (no privileges needed): the rows agree with
// the sizes written and the time the calls took, the file is gone afterwards, bad paths and a lack of
// room are clear errors, rows of several writers sum, and rows survive the text and HDF5 round trips.
// tests/runtime/storage_probe_test.sh covers tmpfs, a loop device, a full disk and a read-only mount.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <filesystem>

#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"
#include "runtime/probe/storage.h"
#include "test_util.h"

namespace commsim {
namespace {
namespace fs = std::filesystem;
using test::error_of;
using test::TempDir;

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

TEST(StorageProbe, RowsMatchTheBytesWrittenAndTheTimeTaken) {
  TempDir dir;
  const std::string d = dir.file("target");
  fs::create_directories(d);
  StorageOptions o;
  o.file_bytes = Bytes{8} << 20;
  o.block_bytes = Bytes{1} << 20;
  o.queue_depths = {1, 4};
  o.random_time_s = 0.05;
  const StorageTarget t = describe_storage(d);
  EXPECT_FALSE(t.fs_type.empty());
  EXPECT_FALSE(t.mount_point.empty());
  EXPECT_GT(t.free_bytes, o.file_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  const auto rows = measure_storage(t, o, "unit");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(files_in(d), 0u) << "the probe's file is left behind";
  ASSERT_EQ(rows.size(), 4u);
  const StorageRow& w = rows[0];
  const StorageRow& r = rows[1];
  EXPECT_EQ(w.op, "write");
  EXPECT_EQ(r.op, "read");
  EXPECT_EQ(w.bytes, o.file_bytes);
  EXPECT_EQ(r.bytes, o.file_bytes);
  EXPECT_EQ(w.ops, 8);  // 1 MiB calls
  EXPECT_EQ(r.ops, 8);
  EXPECT_GT(w.seconds, 0);
  EXPECT_GT(r.seconds, 0);
  EXPECT_LT(w.seconds + r.seconds, wall);
  EXPECT_DOUBLE_EQ(w.bw_Bps(), static_cast<double>(o.file_bytes) / w.seconds);
  EXPECT_EQ(w.direct, w.note.empty());
  double random_s = 0;
  for (std::size_t i = 2; i < rows.size(); ++i) {
    const StorageRow& q = rows[i];
    EXPECT_EQ(q.op, "randread");
    EXPECT_EQ(q.queue_depth, static_cast<int>(o.queue_depths[i - 2]));
    EXPECT_GT(q.ops, 0);
    EXPECT_EQ(q.bytes, static_cast<Bytes>(q.ops) * 4096);
    // Each thread stops at the first read that ends after the deadline.
    EXPECT_GE(q.seconds, o.random_time_s * 0.99);
    EXPECT_DOUBLE_EQ(q.iops(), q.ops / q.seconds);
    EXPECT_GT(q.latency_mean_us, 0);
    EXPECT_GT(q.latency_p99_us, 0);
    // The reads of one thread take at most its wall time: mean latency x reads per thread <= wall.
    EXPECT_LE(q.latency_mean_us * 1e-6 * q.ops / q.queue_depth, q.seconds * 1.01);
    random_s += q.seconds;
  }
  EXPECT_LT(w.seconds + r.seconds + random_s, wall);
}

TEST(StorageProbe, ReadsAreBoundedByTheOperationLimit) {
  TempDir dir;
  StorageOptions o;
  o.file_bytes = Bytes{1} << 20;
  o.queue_depths = {4};
  o.random_time_s = 30;  // the limit below ends it long before
  o.random_max_ops = 100;
  const auto rows = measure_storage(describe_storage(dir.file("")), o, "bounded");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].ops, 100);
  EXPECT_LT(rows[2].seconds, 30);
}

TEST(StorageProbe, BadPathsAndTooLittleRoomAreClearErrors) {
  TempDir dir;
  EXPECT_NE(error_of([&] { describe_storage(dir.file("missing")); }).find("no such directory"), std::string::npos);
  const std::string file = dir.file("plain");
  std::ofstream(file) << "x";
  EXPECT_NE(error_of([&] { describe_storage(file); }).find("not a directory"), std::string::npos);
  StorageTarget t = describe_storage(dir.file(""));
  const std::string e = error_of([&] { check_storage_room(t, t.free_bytes / 2 + 4096, 2); });
  EXPECT_NE(e.find("only"), std::string::npos) << e;
  EXPECT_NE(e.find("--storage-size"), std::string::npos) << e;
  EXPECT_EQ(error_of([&] { check_storage_room(t, 4096, 1); }), "(no error)");
  t.read_only = true;
  EXPECT_NE(error_of([&] { check_storage_room(t, 4096, 1); }).find("read-only"), std::string::npos);
  StorageOptions odd;
  odd.file_bytes = 5000;
  EXPECT_NE(error_of([&] { measure_storage(describe_storage(dir.file("")), odd, "odd"); }).find("multiple of 4 KiB"),
            std::string::npos);
  EXPECT_EQ(files_in(dir.file("")), 1u);  // only the plain file made above
}

// A write that fails half way (here the process's file size limit, as a disk that fills up during
// the write does) is a clear error, and the file is removed.
TEST(StorageProbe, AWriteThatFailsHalfWayLeavesNoFile) {
  TempDir dir;
  StorageOptions o;
  o.file_bytes = Bytes{4} << 20;
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 1 << 20;
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string e = error_of([&] { measure_storage(describe_storage(dir.file("")), o, "limited"); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(e.find("writing"), std::string::npos) << e;
  EXPECT_NE(e.find("lower --storage-size"), std::string::npos) << e;
  EXPECT_EQ(files_in(dir.file("")), 0u);
}

TEST(StorageProbe, RowsOfSeveralWritersSum) {
  StorageRow a;
  a.tier = "nvme", a.mode = "all-ranks", a.host = "n1", a.op = "randread", a.queue_depth = 4;
  a.bytes = 4096 * 100, a.ops = 100, a.seconds = 0.5, a.latency_mean_us = 10, a.latency_p99_us = 30, a.direct = true;
  StorageRow b = a;
  b.bytes = 4096 * 300, b.ops = 300, b.seconds = 0.6, b.latency_mean_us = 20, b.latency_p99_us = 25;
  StorageRow other = a;
  other.host = "n2";
  const auto c = combine_storage_rows({a, b, other});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].writers, 2);
  EXPECT_EQ(c[0].ops, 400);
  EXPECT_EQ(c[0].bytes, Bytes{4096} * 400);
  EXPECT_DOUBLE_EQ(c[0].seconds, 0.6);
  EXPECT_DOUBLE_EQ(c[0].latency_mean_us, (10.0 * 100 + 20.0 * 300) / 400);
  EXPECT_DOUBLE_EQ(c[0].latency_p99_us, 30);
  EXPECT_DOUBLE_EQ(c[0].iops(), 400 / 0.6);
  EXPECT_EQ(c[1].host, "n2");
}

TEST(StorageProbe, RowsRoundTripThroughTextAndTheProbeFile) {
  StorageRow r;
  r.tier = "scratch", r.path = "/scratch", r.mode = "one-per-node", r.host = "node-1", r.op = "write";
  r.bytes = Bytes{64} << 20, r.ops = 64, r.seconds = 0.0312345678901, r.fs_type = "tmpfs", r.device = "tmpfs";
  r.mount_point = "/scratch", r.note = "O_DIRECT unsupported on tmpfs: buffered write + fdatasync, buffered reads";
  const StorageRow back = parse_storage_row(serialize_storage_row(r));
  EXPECT_EQ(back.tier, r.tier);
  EXPECT_EQ(back.note, r.note);
  EXPECT_EQ(back.bytes, r.bytes);
  EXPECT_DOUBLE_EQ(back.seconds, r.seconds);
  EXPECT_NE(error_of([] { parse_storage_row("a\tb"); }).find("not 18"), std::string::npos);

  TempDir dir;
  const std::string path = dir.file("probe.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, RunContext{});
    f.finish(RunStatus::Complete);
  }
  ProbeData d;
  d.storage = {r, r};
  d.storage[1].op = "randread", d.storage[1].queue_depth = 32, d.storage[1].ops = 1000, d.storage[1].writers = 4;
  write_probe_group(path, d);
  const ProbeData got = read_probe_group(path);
  ASSERT_EQ(got.storage.size(), 2u);
  EXPECT_EQ(got.storage[0].note, r.note);
  EXPECT_EQ(got.storage[0].bytes, r.bytes);
  EXPECT_DOUBLE_EQ(got.storage[0].bw_Bps(), r.bw_Bps());
  EXPECT_EQ(got.storage[1].queue_depth, 32);
  EXPECT_EQ(got.storage[1].writers, 4);
  EXPECT_TRUE(got.gpu_links.empty());
}

}  // namespace
}  // namespace commsim
