// Reads a results file with the results_file reader and checks what the MPI
// tests expect of it.
//   read_results_check FILE [--points N] [--status S] [--all-ok] [--unique]
//   [--has-status S]
//                           [--samples N] [--has-note TEXT] [--cpus]
// --cpus: the last run records the CPUs of every rank, each a CPU list, and says how they bind.
// Prints one line per failed expectation and exits 1 when any failed; 2 when
// the file cannot be read.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "runtime/job/cpu_binding.h"
#include "runtime/h5/results_file.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: read_results_check FILE [--points N] "
                 "[--status S] [--all-ok] [--unique] "
                 "[--has-status S] [--samples N] [--has-note TEXT] [--cpus]\n");
    return 2;
  }
  commsim::ResultsContents r;
  try {
    r = commsim::read_results(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_results_check: %s\n", e.what());
    return 2;
  }
  int failures = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "read_results_check %s: %s\n", argv[1], what.c_str());
    ++failures;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string opt = argv[i];
    const std::string val = i + 1 < argc ? argv[i + 1] : "";
    if (opt == "--points") {
      ++i;
      if (r.points.size() != std::stoul(val))
        fail("holds " + std::to_string(r.points.size()) + " points, expected " + val);
    } else if (opt == "--status") {
      ++i;
      if (r.runs.empty() || r.runs.back().status != val)
        fail("last run's status is '" + (r.runs.empty() ? std::string("(no run)") : r.runs.back().status) +
             "', expected '" + val + "'");
    } else if (opt == "--has-status") {
      ++i;
      bool found = false;
      for (const auto& p : r.points) found = found || p.status == val;
      if (!found) fail("no point has status '" + val + "'");
    } else if (opt == "--all-ok") {
      for (const auto& p : r.points) {
        const std::string key = commsim::to_string(commsim::key_of(p));
        if (p.status != "ok") fail(key + ": status '" + p.status + "' (" + p.note + ")");
        if (p.wrong != 0) fail(key + ": wrong = " + std::to_string(p.wrong));
        if (!(p.measured_median_us > 0) || !(p.measured_min_us <= p.measured_median_us) ||
            !(p.measured_median_us <= p.measured_max_us) || !(p.measured_p95_us <= p.measured_max_us))
          fail(key + ": inconsistent measured statistics");
        // nccl-tests timing keeps one sample (the mean of the iterations) per pass.
        if (p.timing != "nccl-tests" && static_cast<int>(p.samples_us.size()) != p.iters)
          fail(key + ": " + std::to_string(p.samples_us.size()) + " samples for " + std::to_string(p.iters) +
               " iterations");
        if (p.bytes > 0 && !(p.algbw_gbps > 0)) fail(key + ": no algbw");
        if (p.algorithm != commsim::Algorithm::Mpi && std::isnan(p.predicted_us)) fail(key + ": no prediction");
      }
    } else if (opt == "--unique") {
      std::map<commsim::PointKey, int> seen;
      for (const auto& p : r.points)
        if (++seen[commsim::key_of(p)] == 2)
          fail("point " + commsim::to_string(commsim::key_of(p)) + " is stored twice");
    } else if (opt == "--has-note") {
      ++i;
      bool found = false;
      for (const auto& p : r.points) found = found || p.note.find(val) != std::string::npos;
      if (!found) fail("no point's note says '" + val + "'");
    } else if (opt == "--samples") {
      ++i;
      for (const auto& p : r.points)
        if (p.status == "ok" && p.samples_us.size() != std::stoul(val))
          fail(commsim::to_string(commsim::key_of(p)) + ": " + std::to_string(p.samples_us.size()) + " samples");
    } else if (opt == "--cpus") {
      if (r.runs.empty()) {
        fail("no run");
        continue;
      }
      const commsim::RunContext& c = r.runs.back();
      if (static_cast<int>(c.cpus.size()) != c.ranks)
        fail(std::to_string(c.cpus.size()) + " CPU lists for " + std::to_string(c.ranks) + " ranks");
      for (const std::string& list : c.cpus) {
        try {
          if (commsim::parse_cpu_list(list).empty()) fail("CPU list '" + list + "' names no CPU");
        } catch (const std::exception& e) {
          fail("CPU list '" + list + "': " + e.what());
        }
      }
      if (c.cpu_binding.empty()) fail("no cpu_binding");
    } else {
      std::fprintf(stderr, "read_results_check: unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  std::printf("%s: %zu points in %zu run(s)%s\n", argv[1], r.points.size(), r.runs.size(),
              failures ? ", expectations failed" : ", as expected");
  return failures ? 1 : 0;
}
