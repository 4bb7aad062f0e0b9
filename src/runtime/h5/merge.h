#pragma once
// Merging results files: one file from the files of several runs (typically one per Slurm job of a
// sweep across node counts).
//
// Every run of every input is copied with its context (hosts, Slurm job, environment, topology)
// and all its points, so a point in the merged file still says where and how it was measured.
// Inputs of a schema version other than this binary's are refused before anything is written. An
// input that is missing or unreadable (its job failed) is reported and the others are still
// merged. A point measured more than once (the same collective, algorithm, backend, transport,
// protocol, dtype, nodes, ranks and size in two runs) is kept every time by default, each row tied
// to its own run.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime/h5/results_file.h"

namespace commsim {

enum class OnDuplicate {
  KeepAll,   // every row, each tied to its run
  KeepLast,  // only the row of the run that started last (the later input breaking ties)
  Error,     // refuse to merge
};
// "keep-all", "keep-last", "error"; throws Error otherwise.
OnDuplicate parse_on_duplicate(const std::string& text);

// An input file as read, or why it could not be.
struct MergeInput {
  std::string given;  // as named
  std::string path;   // the file read: `given`, or `given`.partial when only that exists
  std::optional<ResultsContents> contents;
  std::string problem;  // why it was not read ("" when read)
  // It has /probe (a `commsim probe` file): its runs and points are merged, its probe measurements
  // are not (calibrate reads them from this file).
  bool has_probe = false;
};

struct MergeSummary {
  std::vector<MergeInput> inputs;
  std::size_t read = 0;  // inputs read
  std::size_t runs_written = 0;
  std::size_t points_written = 0;
  // One line per run written: "A.h5 run 0: 42 points, complete, job 6 on node[1-2] ..., 2 nodes, 4 ranks".
  std::vector<std::string> run_lines;
  std::size_t duplicated_points = 0;  // points measured in more than one run
  std::size_t extra_rows = 0;         // their rows beyond the first
};

// Merges `files` into `out` (which must not exist unless `force`; `command_line` is stored as the
// file's). Throws Error, writing nothing, when an input has another schema version, when `out` is
// an input or exists without `force`, or when points were measured twice and on_duplicate is Error.
// Inputs that are missing or unreadable are listed in the summary with their problem.
MergeSummary merge_results(const std::vector<std::string>& files, const std::string& out, bool force,
                           OnDuplicate on_duplicate, const std::string& command_line);

// "1 point", "3 points".
std::string count_of(std::size_t n, const std::string& noun);

}  // namespace commsim
