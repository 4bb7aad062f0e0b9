// Checks the merged results file of a Slurm sweep (tests/slurm/test_sweep.sh):
//
//   check_sweep_results MERGED.h5 --nodes 1,2,3 --ranks-per-node 2 --points K
//                       [--partition P] [--runs-of-nodes N:R]
//
// - every node count has exactly K distinct points, none stored twice (a resumed run adds only
//   what the killed one had not finished), each with a prediction and a measurement, status ok;
// - every run of N nodes ran N x ranks-per-node ranks on N distinct hosts, inside a Slurm job of
//   the partition, and the points' nodes/ranks agree with their run;
// - the model used the placement the ranks really had: each hand-written point's stored prediction
//   is its schedule priced on the run's topology with the ranks placed by hostname; on 2+ nodes
//   that schedule sends bytes both inside a node and across the network, and its price differs
//   from the same ranks on one node;
// - --runs-of-nodes N:R: the points of N nodes come from exactly R runs (a job killed at its time
//   limit and resumed gives two).
// Prints one line per run and exits 0 when all holds, 1 with the reasons otherwise.
//
//   check_sweep_results FILE.h5 --count          prints the number of points in the file
//   check_sweep_results FILE.h5 --count-run R    prints the number of points of run R
//   check_sweep_results FILE.h5 --status-run R   prints the status of run R
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectives/generators.h"
#include "model/collective.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/placement.h"
#include "model/price.h"
#include "model/topology/topology.h"
#include "runtime/h5/results_file.h"

namespace {

using namespace commsim;

int failures = 0;

template <typename... Args>
void fail(const char* fmt, Args... args) {
  std::fprintf(stderr, "check_sweep_results: FAIL: ");
  std::fprintf(stderr, fmt, args...);
  std::fprintf(stderr, "\n");
  ++failures;
}

std::vector<int> parse_ints(const std::string& text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    out.push_back(std::stoi(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Priced {
  double time_us;
  std::uint64_t intra_bytes, inter_bytes;
};

Priced price(const Point& p, const Topology& topo, const Placement& placement) {
  const std::uint32_t elem = static_cast<std::uint32_t>(p.bytes / p.count);
  const CostQuery query{p.collective, p.algorithm, p.protocol, placement.nnodes, placement.max_ranks_per_node(),
                        p.bytes};
  const ScheduleRequest request{p.collective, p.algorithm,  p.ranks,
                                p.count,      elem,         p.root,
                                &placement,   pipeline_chunk_bytes(topo, query)};
  const PriceBreakdown b = price_schedule(make_schedule(request), topo, placement);
  return {b.time_s * 1e6, b.intra_bytes, b.inter_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: check_sweep_results MERGED.h5 --nodes 1,2,3 --ranks-per-node R --points K "
                         "[--partition P] [--runs-of-nodes N:R]\n");
    return 2;
  }
  const std::string path = argv[1];
  const std::string mode = argc >= 3 ? argv[2] : "";
  if (mode == "--count" || mode == "--count-run" || mode == "--status-run") {
    try {
      const ResultsContents c = read_results(path, false);
      const int run = argc >= 4 ? std::atoi(argv[3]) : -1;
      if (mode == "--count")
        std::printf("%zu\n", c.points.size());
      else if (mode == "--count-run")
        std::printf("%zu\n", static_cast<std::size_t>(std::count(c.run_of_point.begin(), c.run_of_point.end(), run)));
      else if (run >= 0 && static_cast<std::size_t>(run) < c.runs.size())
        std::printf("%s\n", c.runs[static_cast<std::size_t>(run)].status.c_str());
      else
        throw Error("no run " + std::to_string(run));
      return 0;
    } catch (const Error& e) {
      std::fprintf(stderr, "check_sweep_results: %s\n", e.what());
      return 1;
    }
  }
  std::vector<int> node_counts;
  int ranks_per_node = 0;
  std::size_t points_per_count = 0;
  std::string partition;
  std::map<int, std::size_t> runs_of_nodes;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i], val = argv[i + 1];
    if (opt == "--nodes") node_counts = parse_ints(val);
    else if (opt == "--ranks-per-node") ranks_per_node = std::stoi(val);
    else if (opt == "--points") points_per_count = std::stoul(val);
    else if (opt == "--partition") partition = val;
    else if (opt == "--runs-of-nodes") runs_of_nodes[std::stoi(val.substr(0, val.find(':')))] = std::stoul(val.substr(val.find(':') + 1));
    else {
      std::fprintf(stderr, "check_sweep_results: unknown option %s\n", opt.c_str());
      return 2;
    }
  }

  ResultsContents c;
  try {
    c = read_results(path, false);
  } catch (const Error& e) {
    std::fprintf(stderr, "check_sweep_results: FAIL: %s\n", e.what());
    return 1;
  }

  // Runs and points per node count.
  std::map<int, std::vector<int>> runs_by_nodes;
  for (const RunContext& r : c.runs) runs_by_nodes[r.nodes].push_back(r.index);
  std::map<int, std::map<PointKey, int>> copies;  // nodes -> key -> rows
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const Point& p = c.points[i];
    const RunContext& run = c.runs[static_cast<std::size_t>(c.run_of_point[i])];
    ++copies[run.nodes][key_of(p)];
    if (p.nodes != run.nodes || p.ranks != run.ranks)
      fail("point %s says nodes=%d ranks=%d, its run %d has nodes=%d ranks=%d", to_string(key_of(p)).c_str(), p.nodes,
           p.ranks, run.index, run.nodes, run.ranks);
    if (!(p.predicted_us > 0) || !std::isfinite(p.predicted_us))
      fail("point %s (run %d) has no prediction", to_string(key_of(p)).c_str(), run.index);
    if (!(p.measured_median_us > 0) || !std::isfinite(p.measured_median_us))
      fail("point %s (run %d) has no measurement", to_string(key_of(p)).c_str(), run.index);
    if (p.status != "ok" || p.wrong > 0)
      fail("point %s (run %d) has status %s, %lld wrong elements (%s)", to_string(key_of(p)).c_str(), run.index,
           p.status.c_str(), static_cast<long long>(p.wrong), p.note.c_str());
  }
  for (int n : node_counts) {
    const auto& keys = copies[n];
    std::size_t twice = 0;
    for (const auto& [key, rows] : keys)
      if (rows > 1) {
        ++twice;
        fail("nodes=%d: point %s stored %d times", n, to_string(key).c_str(), rows);
      }
    if (keys.size() != points_per_count)
      fail("nodes=%d: %zu distinct points, expected %zu", n, keys.size(), points_per_count);
    if (runs_by_nodes[n].empty()) fail("nodes=%d: no run in %s", n, path.c_str());
    if (runs_of_nodes.count(n) && runs_by_nodes[n].size() != runs_of_nodes[n])
      fail("nodes=%d: %zu runs, expected %zu", n, runs_by_nodes[n].size(), runs_of_nodes[n]);
  }
  for (const auto& [n, runs] : runs_by_nodes)
    if (std::find(node_counts.begin(), node_counts.end(), n) == node_counts.end())
      fail("a run with nodes=%d, which the sweep did not ask for", n);

  // Each run: its hosts, its Slurm job, the tiers its predictions used.
  for (const RunContext& run : c.runs) {
    const std::set<std::string> hosts(run.hostnames.begin(), run.hostnames.end());
    std::string host_list;
    for (const auto& h : hosts) host_list += (host_list.empty() ? "" : ",") + h;
    if (run.ranks != run.nodes * ranks_per_node)
      fail("run %d: %d ranks on %d nodes, expected %d per node", run.index, run.ranks, run.nodes, ranks_per_node);
    if (run.hostnames.size() != static_cast<std::size_t>(run.ranks))
      fail("run %d: %zu hostnames for %d ranks", run.index, run.hostnames.size(), run.ranks);
    if (hosts.size() != static_cast<std::size_t>(run.nodes))
      fail("run %d: nodes=%d but its ranks ran on %zu distinct hosts (%s)", run.index, run.nodes, hosts.size(),
           host_list.c_str());
    if (run.slurm.job_id.empty() || run.slurm.node_list.empty())
      fail("run %d: no Slurm job id / node list recorded", run.index);
    if (!partition.empty() && run.slurm.partition != partition)
      fail("run %d: partition '%s', expected '%s'", run.index, run.slurm.partition.c_str(), partition.c_str());

    std::size_t priced = 0, both_tiers = 0;
    double example_real = 0, example_one = 0;
    try {
      const Topology topo = parse_topology(run.topology_text, "run " + std::to_string(run.index) + " topology");
      const Placement real = Placement::from_hostnames(run.hostnames);
      const Placement one_node = Placement::uniform(1, run.ranks);
      for (std::size_t i = 0; i < c.points.size(); ++i) {
        const Point& p = c.points[i];
        if (c.run_of_point[i] != run.index || !is_hand_written(p.algorithm) || p.count == 0) continue;
        const Priced here = price(p, topo, real);
        ++priced;
        if (std::fabs(here.time_us - p.predicted_us) > 1e-6 * p.predicted_us)
          fail("run %d: %s predicted %.6g us, but its schedule on the real placement prices at %.6g us", run.index,
               to_string(key_of(p)).c_str(), p.predicted_us, here.time_us);
        if (run.nodes == 1) {
          if (here.inter_bytes != 0) fail("run %d: one node, yet %s crosses the network", run.index, to_string(key_of(p)).c_str());
          continue;
        }
        const Priced alone = price(p, topo, one_node);
        if (here.intra_bytes > 0 && here.inter_bytes > 0) ++both_tiers;
        if (here.inter_bytes == 0)
          fail("run %d: %s on %d nodes sends nothing across the network", run.index, to_string(key_of(p)).c_str(),
               run.nodes);
        if (alone.time_us == here.time_us)
          fail("run %d: %s priced the same on %d nodes as on one node (%.6g us)", run.index,
               to_string(key_of(p)).c_str(), run.nodes, here.time_us);
        if (example_real == 0) {
          example_real = here.time_us;
          example_one = alone.time_us;
        }
      }
    } catch (const Error& e) {
      fail("run %d: cannot re-price its points: %s", run.index, e.what());
    }
    if (priced == 0) fail("run %d: no hand-written point to check the model's placement with", run.index);
    if (run.nodes > 1 && both_tiers == 0)
      fail("run %d: no point used both tiers (shared memory inside a node and the network)", run.index);

    std::size_t points = 0;
    for (int r : c.run_of_point) points += (r == run.index);
    std::printf("run %d: job %s%s, partition %s, %s, %d node%s x %d ranks on %s, %zu points", run.index,
                run.slurm.job_id.c_str(),
                run.slurm.array_task_id.empty() ? "" : (" (array task " + run.slurm.array_task_id + ")").c_str(),
                run.slurm.partition.c_str(), run.status.c_str(), run.nodes, run.nodes == 1 ? "" : "s",
                run.ranks / std::max(run.nodes, 1),
                host_list.c_str(), points);
    if (run.nodes > 1)
      std::printf("; %zu of %zu priced points use both tiers; e.g. %.3g us here vs %.3g us on one node", both_tiers,
                  priced, example_real, example_one);
    std::printf("\n");
  }
  if (failures) {
    std::fprintf(stderr, "check_sweep_results: %d failed checks in %s\n", failures, path.c_str());
    return 1;
  }
  std::printf("check_sweep_results: OK (%zu runs, %zu points)\n", c.runs.size(), c.points.size());
  return 0;
}
