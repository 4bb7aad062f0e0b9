#pragma once
// The points of results files as `report` judges them: every point of every file, with
// the prediction stored with it or, given a topology, predicted again on it (repredict), and notes
// on the runs (one that did not complete, the topology used).
#include <string>
#include <vector>

#include "runtime/sweep/point.h"

namespace commsim {

struct MeasuredPoints {
  std::vector<Point> points;
  std::vector<std::string> notes;          // "FILE: run N: interrupted", "predictions recomputed on topology ..."
  std::vector<std::size_t> file_of_point;  // [point] -> index into the files it was read from
  // The names of the topologies that predicted the points (the one given, else each run's) that
  // have no calibrated: section (Topology::calibrated), each once.
  std::vector<std::string> uncalibrated;
};

// Reads `files` (with their samples); with `topology_name` (a preset name or YAML file; "" for none)
// every point is predicted again on it, the pipelined algorithms with the chunk they ran with, the
// MPI baseline for the library of the point's run, the host piece of the point's run. Throws Error
// when a file or the topology cannot be read.
// How a point was timed (Point::timing), "per-iteration" for measured points of files written
// before the column; "" for points not measured.
std::string timing_of(const Point& p);
// `report` compares like with like: keeps the points timed as `timing` ("" keeps all) and the points
// not measured, and throws Error when the measured points kept were timed in more than one way
// (naming how many of each and --timing).
void select_timing(std::vector<Point>& points, const std::string& timing);

MeasuredPoints read_measured(const std::vector<std::string>& files, const std::string& topology_name = "");

}  // namespace commsim
