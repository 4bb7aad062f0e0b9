#include "runtime/sweep/measured.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "model/error.h"
#include "model/topology/topology.h"
#include "runtime/h5/results_file.h"
#include "runtime/sweep/sweep.h"

namespace commsim {

MeasuredPoints read_measured(const std::vector<std::string>& files, const std::string& topology_name) {
  MeasuredPoints m;
  std::vector<Point>& points = m.points;
  std::vector<std::string>& notes = m.notes;
  std::vector<std::string> run_topology_text;           // per point: the topology its run was predicted on
  std::vector<MpiLibrary> run_library;                  // per point: the MPI library of its run
  std::vector<std::optional<std::uint64_t>> run_piece;  // per point: the host executor's piece in its run
  for (const auto& f : files) {
    ResultsContents c = read_results(f, true);
    points.insert(points.end(), c.points.begin(), c.points.end());
    m.file_of_point.insert(m.file_of_point.end(), c.points.size(), static_cast<std::size_t>(&f - files.data()));
    for (std::size_t i = 0; i < c.points.size(); ++i) {
      const int r = i < c.run_of_point.size() ? c.run_of_point[i] : -1;
      const bool known = r >= 0 && r < static_cast<int>(c.runs.size());
      run_topology_text.push_back(known ? c.runs[r].topology_text : "");
      run_library.push_back(known ? MpiLibrary{c.runs[r].mpi_version, c.runs[r].environment} : MpiLibrary{});
      run_piece.push_back(known ? c.runs[r].piece_bytes : std::nullopt);
    }
    for (const auto& run : c.runs)
      if (run.status != "complete") notes.push_back(f + ": run " + std::to_string(run.index) + ": " + run.status);
  }
  auto note_uncalibrated = [&](const Topology& t) {
    if (!t.calibrated.present &&
        std::find(m.uncalibrated.begin(), m.uncalibrated.end(), t.name) == m.uncalibrated.end())
      m.uncalibrated.push_back(t.name);
  };
  if (topology_name.empty()) {
    std::set<std::string> seen;
    for (const std::string& text : run_topology_text) {
      if (text.empty() || !seen.insert(text).second) continue;
      try {
        note_uncalibrated(parse_topology(text, "the run's topology"));
      } catch (const Error&) {  // an old file's topology that no longer parses: nothing to say
      }
    }
  }
  if (!topology_name.empty()) {
    const Topology topology = load_topology(resolve_topology_path(topology_name));
    note_uncalibrated(topology);
    // Each distinct run topology once; one that does not parse (an old file) leaves the chunk of
    // the pipelined algorithms to the new topology.
    std::map<std::string, std::optional<Topology>> parsed;
    std::vector<const Topology*> run_topology;
    for (const std::string& text : run_topology_text) {
      auto [it, added] = parsed.try_emplace(text);
      if (added && !text.empty()) {
        try {
          it->second = parse_topology(text, "the run's topology");
        } catch (const Error&) {
        }
      }
      run_topology.push_back(it->second ? &*it->second : nullptr);
    }
    repredict(points, topology, run_topology, run_library, run_piece);
    notes.push_back("predictions recomputed on topology '" + topology.name + "' (" + topology_name + ")");
  }
  return m;
}

std::string timing_of(const Point& p) {
  if (!p.measured()) return {};
  return p.timing.empty() ? "per-iteration" : p.timing;
}

void select_timing(std::vector<Point>& points, const std::string& timing) {
  if (!timing.empty() && timing != "per-iteration" && timing != "nccl-tests")
    throw Error("--timing: unknown mode '" + timing + "'; valid: per-iteration, nccl-tests");
  std::map<std::string, int> seen;
  std::vector<Point> kept;
  for (Point& p : points) {
    const std::string t = timing_of(p);
    if (!timing.empty() && !t.empty() && t != timing) continue;
    if (!t.empty()) ++seen[t];
    kept.push_back(std::move(p));
  }
  points = std::move(kept);
  if (seen.size() < 2) return;
  std::string counts;
  for (const auto& [t, n] : seen) counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + t;
  throw Error("the files hold points timed in different ways (" + counts +
              "), whose times do not compare: report one kind with --timing per-iteration or --timing nccl-tests");
}

}  // namespace commsim
