#pragma once
// Helpers of the runtime tests: a fresh temporary directory per test, and sample points.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <string>

#include "model/error.h"
#include "runtime/sweep/point.h"
#include "runtime/output/run_context.h"

namespace commsim::test {

// The message of the Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}


// A directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("commsim-" + std::string(info->test_suite_name()) + "-" + info->name() + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline bool exists(const std::string& p) { return std::filesystem::exists(p); }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// What a command printed and its exit code (128 + N when killed by signal N).
struct CommandResult {
  int rc = -1;
  std::string out, err;
};

// Runs `BINARY ARGS` through the shell (args written as a user types them), stdout and stderr
// captured in files of `dir`.
inline CommandResult run_binary(const std::string& binary, const std::string& args, const TempDir& dir) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const std::string cmd = "'" + binary + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// A measured host point with samples and a prediction.
inline Point measured_point(Bytes bytes, Algorithm a = Algorithm::Ring) {
  Point p;
  p.collective = Collective::AllReduce;
  p.algorithm = a;
  p.backend = "host";
  p.transport = "mpi";
  p.dtype = "float32";
  p.nodes = 2;
  p.ranks = 4;
  p.bytes = bytes;
  p.count = bytes / 4;
  p.predicted_us = 10.0 + static_cast<double>(bytes) / 1000.0;
  p.predicted_busbw_gbps = 12.5;
  p.predicted_winner = "tree";
  p.iters = 3;
  p.samples_us = {11.0 + bytes, 12.5 + bytes, 10.25 + bytes};
  p.measured_min_us = 10.25 + bytes;
  p.measured_median_us = 11.0 + bytes;
  p.measured_mean_us = (11.0 + 12.5 + 10.25) / 3 + bytes;
  p.measured_p95_us = 12.5 + bytes;
  p.measured_max_us = 12.5 + bytes;
  p.wrong = 0;
  p.status = "ok";
  derive_bandwidths(p);
  return p;
}

// A model-only point: measurement fields stay NaN.
inline Point predicted_point(Collective c, Bytes bytes) {
  Point p;
  p.collective = c;
  p.algorithm = Algorithm::Tree;
  p.protocol = Protocol::LL128;
  p.nodes = 16;
  p.ranks = 128;
  p.bytes = bytes;
  p.count = bytes / 4;
  p.predicted_us = 42.5;
  p.predicted_busbw_gbps = 99.0;
  p.predicted_winner = "tree";
  return p;
}

inline RunContext sample_context() {
  const char* argv[] = {"commsim", "run", "--sizes", "8B:1MiB", "--note", "it's here"};
  RunContext c = RunContext::collect_local(6, argv);
  c.backend = "host";
  c.transport = "mpi";
  c.hostnames = {"node-a", "node-a", "node-b", "node-b"};
  c.ranks = 4;
  c.nodes = 2;
  c.cpus = {"0", "1", "0-3", "4-7"};
  c.cpu_binding = "node-a: each rank bound to its own CPU; node-b: each rank bound to its own 4 CPUs";
  c.mpi_version = "Open MPI v4.1.4";
  c.gpu_names = {};
  c.environment = {"NCCL_ALGO=Ring", "OMPI_MCA_btl=self,tcp"};
  c.slurm.job_id = "1234";
  c.slurm.partition = "gpu";
  c.slurm.node_list = "node-[a-b]";
  c.topology_name = "local-cpu";
  c.topology_path = "configs/topologies/local-cpu.yaml";
  c.topology_text = "name: local-cpu\n# a comment with unicode: \xc2\xb5s\n";
  c.piece_bytes = 64 * 1024;
  return c;
}

}  // namespace commsim::test
