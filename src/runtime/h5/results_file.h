#pragma once
// The HDF5 results file (schema version 1, documented in src/runtime/h5/HDF5_SCHEMA.md): one file
// holds one or more runs, each with its context (/runs/<NNNN>), all their points in one table
// (/points, one row per Point, with the run index) and the per-iteration times (/samples).
//
// A file is written under "<path>.partial" and renamed to <path> by finish(); every append()
// flushes, so a job killed at any moment leaves a readable .partial file holding every finished
// point. An existing file is never overwritten unless asked (force). Readable with plain h5py.
//
// Not thread-safe; under MPI only one rank (rank 0) owns a ResultsFile.
#include <compare>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/collective.h"
#include "model/units.h"
#include "runtime/sweep/point.h"
#include "runtime/output/run_context.h"

namespace commsim {

inline constexpr int kResultsSchemaVersion = 1;

enum class RunStatus { Running, Complete, Interrupted, Failed };
std::string_view to_string(RunStatus s);  // "running", "complete", "interrupted", "failed"
std::optional<RunStatus> parse_run_status(std::string_view text);

// What identifies a point: `run --resume` skips every key already in the file.
struct PointKey {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::string backend;
  std::string transport;
  Protocol protocol = Protocol::None;
  std::string dtype;
  int nodes = 0;
  int ranks = 0;
  Bytes bytes = 0;
  int in_place = 0;
  std::string timing;  // "" in files written before the column
  std::string redop;
  auto operator<=>(const PointKey&) const = default;
};
PointKey key_of(const Point& p);
// "allreduce/ring/host/mpi//float32/nodes=1/ranks=4/bytes=1024", for messages.
std::string to_string(const PointKey& k);

class ResultsFile {
 public:
  // Creates "<path>.partial" with the root attributes and no run yet (merge starts here).
  // Throws Error when <path> or <path>.partial exists and !force ("FILE exists; pass --force to
  // overwrite or --resume to continue it"); with force both are removed first.
  static ResultsFile create_empty(const std::string& path, bool force, const std::string& command_line);
  // create_empty(path, force, ctx.command_line) + begin_run(ctx): the usual start of predict/run.
  static ResultsFile create(const std::string& path, bool force, const RunContext& ctx);
  // Opens an existing results file to continue it: <path> if it exists (renamed to
  // <path>.partial while writing), else <path>.partial (left by a killed job). Error when
  // neither exists, when both exist, or when the schema version is not kResultsSchemaVersion.
  // Starts a new run (begin_run(ctx)); existing_keys() holds every point already stored.
  static ResultsFile resume(const std::string& path, const RunContext& ctx);

  ResultsFile(ResultsFile&&) noexcept;
  ResultsFile& operator=(ResultsFile&&) noexcept;
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;
  // Without finish(): the current run is marked "failed" and the file closed, left under
  // <path>.partial (removed instead when this object created it and it holds no point). Never
  // throws.
  ~ResultsFile();

  // Adds /runs/<NNNN> (N = number of runs so far) with ctx and the given status; later appends
  // belong to it. Returns N.
  int begin_run(const RunContext& ctx, RunStatus status = RunStatus::Running);
  // Appends one row to /points and its samples_us to /samples, for the current run, then flushes
  // the file to disk. Error when no run was begun.
  void append(const Point& p);
  // 0 (the default): every append() is on disk when it returns. > 0: appends are buffered and
  // written (and flushed) at most every `seconds`, and by begin_run/set_status/finish/the
  // destructor; for writers of many cheap points (predict, merge) whose points a crash may lose.
  void set_flush_interval(double seconds);
  // begin_run(ctx, status) + append of every point (merge: copy a run of another file).
  int add_run(const RunContext& ctx, const std::vector<Point>& points, RunStatus status = RunStatus::Complete);
  // Sets the current run's status attribute (and `finished` unless Running) and flushes.
  void set_status(RunStatus status);
  // set_status(status), close the file, rename <path>.partial -> <path>. Safe to call once; the
  // object is closed afterwards.
  void finish(RunStatus status);
  // Closes the file and renames <path>.partial -> <path>, leaving every run's status and
  // `finished` time as written (merge: copied runs keep their own). Safe to call once.
  void finish_as_is();

  // Keys of all points in the file, every run, including those appended by this object.
  const std::set<PointKey>& existing_keys() const;
  bool contains(const PointKey& k) const;
  int current_run() const;                  // -1 before begin_run
  std::size_t points_in_file() const;       // rows of /points
  const std::string& path() const;          // the final name
  std::string partial_path() const;         // path() + ".partial"
  bool is_open() const;

 private:
  struct Impl;
  explicit ResultsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Everything a results file holds.
struct ResultsContents {
  int schema_version = 0;
  std::string commsim_version;  // of the binary that created the file
  std::string created;          // ISO 8601 UTC
  std::string command_line;     // that created the file
  std::vector<RunContext> runs;  // runs[i].index == i
  std::vector<Point> points;     // in file order, samples_us filled when asked for
  std::vector<int> run_of_point;  // parallel to points: index into runs
};

// Reads a results file (complete or .partial: pass the actual name). Throws Error when the file is
// not a commsim results file or its schema_version differs from kResultsSchemaVersion (the message
// names both versions).
ResultsContents read_results(const std::string& path, bool with_samples = true);
// read_results(path).points.
std::vector<Point> read_points(const std::string& path);

}  // namespace commsim
