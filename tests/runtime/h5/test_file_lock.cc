// Files under faults: the writer lock (<file>.lock), a failed create, --resume of another job's
// file, and reading a file that crashes the reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include "model/error.h"
#include "runtime/h5/file_lock.h"
#include "runtime/h5/guarded_read.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"
#include "test_util.h"

namespace commsim {
namespace {

using test::error_of;
using test::TempDir;

void write_lock(const std::string& path, const std::string& host, long pid) {
  std::ofstream(WriterLock::lock_path(path)) << host << " " << pid << " 2026-01-01T00:00:00Z\n";
}

TEST(WriterLock, ASecondWriterIsRefusedNamingTheFirst) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  WriterLock first = WriterLock::acquire(path);
  EXPECT_TRUE(test::exists(path + ".lock"));
  const std::string msg = error_of([&] { WriterLock::acquire(path); });
  EXPECT_NE(msg.find("r.h5 is being written by another job: process " + std::to_string(getpid()) + " on host " +
                     local_hostname()),
            std::string::npos)
      << msg;
  first.release();
  EXPECT_FALSE(test::exists(path + ".lock"));
  EXPECT_NO_THROW(WriterLock::acquire(path));
}

TEST(WriterLock, ALockOfAProcessThatHasGoneIsTakenOver) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  write_lock(path, local_hostname(), 999999999);  // beyond any pid_max
  EXPECT_EQ(WriterLock::other_writer(path), "");
  WriterLock l = WriterLock::acquire(path);
  EXPECT_TRUE(l.held());
  EXPECT_NE(test::slurp(path + ".lock").find(std::to_string(getpid())), std::string::npos);
}

TEST(WriterLock, ALockFromAnotherHostIsRefusedSayingHowToClearIt) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  write_lock(path, "node-elsewhere", 1234);
  const std::string msg = error_of([&] { WriterLock::acquire(path); });
  EXPECT_NE(msg.find("process 1234 on host node-elsewhere"), std::string::npos) << msg;
  EXPECT_NE(msg.find("remove " + path + ".lock"), std::string::npos) << msg;
}

// --force never removes a file another live writer has: the refusal comes first, the file stays,
// and the message does not suggest --force.
TEST(WriterLock, ForceDoesNotTouchALiveFile) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(test::measured_point(1024));
    // r.h5.partial stays open and locked by `f` while a second writer tries.
    for (bool force : {true, false}) {
      const std::string msg = error_of([&] { ResultsFile::create(path, force, test::sample_context()); });
      EXPECT_NE(msg.find("is being written by another job"), std::string::npos) << msg;
      EXPECT_EQ(msg.find("--force"), std::string::npos) << msg;
    }
    EXPECT_TRUE(test::exists(path + ".partial"));
    f.finish(RunStatus::Complete);
  }
  EXPECT_EQ(read_points(path).size(), 1u);
  EXPECT_FALSE(test::exists(path + ".lock"));
}

TEST(ResumeCheck, AFileOfAnotherTopologyOrBackendIsRefused) {
  TempDir dir;
  const std::string path = dir.file("r.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.append(test::measured_point(1024));
    f.finish(RunStatus::Complete);
  }
  RunContext other = test::sample_context();
  other.topology_name = "dgx-h100";
  std::string msg = error_of([&] { ResultsFile::resume(path, other); });
  EXPECT_NE(msg.find("used topology '" + test::sample_context().topology_name + "', this run uses 'dgx-h100'"),
            std::string::npos)
      << msg;
  other = test::sample_context();
  other.backend = "model";
  msg = error_of([&] { ResultsFile::resume(path, other); });
  EXPECT_NE(msg.find("backend"), std::string::npos) << msg;
  other = test::sample_context();
  other.topology_text += "# edited\n";
  msg = error_of([&] { ResultsFile::resume(path, other); });
  EXPECT_NE(msg.find("another version of topology"), std::string::npos) << msg;
  // Refused before anything was touched: the file is still there, complete, and resumable.
  EXPECT_TRUE(test::exists(path));
  EXPECT_NO_THROW(ResultsFile::resume(path, test::sample_context()));
}

TEST(GuardedRead, AReaderThatCrashesBecomesAnError) {
  TempDir dir;
  const std::string path = dir.file("x.h5");
  std::ofstream(path) << "x";
  const std::string msg = error_of([&] { h5::read_in_child_first(path, [] {
    std::signal(SIGSEGV, SIG_DFL);  // die by the signal, as a crash in libhdf5 does (not a sanitizer's report)
    std::raise(SIGSEGV);
  }); });
  EXPECT_NE(msg.find(path + " is damaged: reading it crashed the HDF5 library (signal " + std::to_string(SIGSEGV)),
            std::string::npos)
      << msg;
}

TEST(GuardedRead, AReadersErrorIsPassedOnAndASuccessReturns) {
  TempDir dir;
  const std::string path = dir.file("x.h5");
  std::ofstream(path) << "x";
  EXPECT_EQ(error_of([&] { h5::read_in_child_first(path, [] { throw Error("bad row 7"); }); }), "bad row 7");
  EXPECT_NO_THROW(h5::read_in_child_first(path, [] {}));
}

}  // namespace
}  // namespace commsim
