#include "runtime/h5/merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include "model/error.h"
#include "runtime/h5/guarded_read.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/probe_file.h"

namespace commsim {

OnDuplicate parse_on_duplicate(const std::string& text) {
  if (text == "keep-all") return OnDuplicate::KeepAll;
  if (text == "keep-last") return OnDuplicate::KeepLast;
  if (text == "error") return OnDuplicate::Error;
  throw Error("--on-duplicate '" + text + "' is not one of: keep-all, keep-last, error");
}

// "1 point", "3 points".
std::string count_of(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

namespace {

namespace fs = std::filesystem;

// A file's schema_version attribute; nullopt when the file has none.
std::optional<std::int64_t> schema_version_of(const std::string& path) {
  h5::File f = h5::open_file(path, false);
  if (!h5::has_attribute(f.get(), "schema_version")) return std::nullopt;
  return h5::get_int_attribute(f.get(), "schema_version");
}

// Reads one input. Schema versions other than ours go to `foreign` (the merge is refused later).
MergeInput load_input(const std::string& given, std::vector<std::string>& foreign) {
  MergeInput in{given, given, std::nullopt, ""};
  std::error_code ec;
  if (!fs::exists(given, ec)) {
    if (!fs::exists(given + ".partial", ec)) {
      in.problem = "missing: neither it nor " + given + ".partial exists (did the job that writes it fail?)";
      return in;
    }
    in.path = given + ".partial";  // a killed job: every point it finished is in there
  }
  try {
    // A damaged file can crash libhdf5, or upset its state, at any read: every read is tried in a
    // forked copy first (guarded_read.h), and this process reads only a file that passed.
    h5::read_in_child_first(in.path, [&] {
      if (!h5::is_hdf5(in.path)) return;
      if (auto v = schema_version_of(in.path); v && *v == kResultsSchemaVersion) (void)read_results(in.path, true);
    });
    if (!h5::is_hdf5(in.path)) {
      in.problem = "not an HDF5 file";
      return in;
    }
    auto version = schema_version_of(in.path);
    if (!version) {
      in.problem = "not a commsim results file (no schema_version attribute)";
      return in;
    }
    if (*version != kResultsSchemaVersion) {
      foreign.push_back(in.path + " (schema version " + std::to_string(*version) + ")");
      in.problem = "schema version " + std::to_string(*version);
      return in;
    }
    in.contents = read_results(in.path, /*with_samples=*/true);
    in.has_probe = has_probe_group(in.path);
  } catch (const Error& e) {
    in.problem = std::string("unreadable: ") + e.what();
  }
  return in;
}

// Where one row comes from: input, run within the input's runs, point within the input's points.
struct RowRef {
  std::size_t input;
  int run;
  std::size_t point;
};

std::string where(const std::vector<MergeInput>& inputs, const RowRef& r) {
  const RunContext& ctx = inputs[r.input].contents->runs[static_cast<std::size_t>(r.run)];
  std::string s = inputs[r.input].path + " run " + std::to_string(r.run);
  if (!ctx.slurm.job_id.empty()) s += " (job " + ctx.slurm.job_id + ")";
  return s;
}

// "nodes2-job6.h5 run 0: 42 points, complete, job 6 on node[1-2] (partition debug), 2 nodes, 4 ranks"
std::string describe_run(const MergeInput& in, const RunContext& ctx, std::size_t points) {
  std::string s = "  " + in.path + " run " + std::to_string(ctx.index) + ": " + std::to_string(points) + " points, " +
                  (ctx.status.empty() ? "status unknown" : ctx.status);
  if (!ctx.slurm.job_id.empty()) {
    s += ", job " + ctx.slurm.job_id;
    if (!ctx.slurm.array_task_id.empty())
      s += " (array " + ctx.slurm.array_job_id + "_" + ctx.slurm.array_task_id + ")";
    if (!ctx.slurm.node_list.empty()) s += " on " + ctx.slurm.node_list;
    if (!ctx.slurm.partition.empty()) s += " (partition " + ctx.slurm.partition + ")";
  }
  s += ", " + std::to_string(ctx.nodes) + (ctx.nodes == 1 ? " node, " : " nodes, ") + std::to_string(ctx.ranks) +
       (ctx.ranks == 1 ? " rank" : " ranks");
  return s;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// Reads every input; throws Error when one has another schema version (nothing written yet).
void load_inputs(const std::vector<std::string>& files, MergeSummary& s) {
  std::vector<MergeInput>& inputs = s.inputs;
  std::vector<std::string> foreign;
  for (const std::string& f : files) inputs.push_back(load_input(f, foreign));
  if (!foreign.empty()) {
    std::string readable;
    for (const MergeInput& in : inputs)
      if (in.contents) readable += "\n  " + in.path + " (schema version " + std::to_string(kResultsSchemaVersion) + ")";
    std::string list;
    for (const std::string& f : foreign) list += "\n  " + f;
    throw Error("refusing to merge: this commsim (" COMMSIM_VERSION ") reads and writes results schema version " +
                std::to_string(kResultsSchemaVersion) + ", but these inputs have another:" + list +
                (readable.empty() ? "" : "\nthe others are:" + readable) +
                "\nmerge each group of one schema version with the commsim that wrote it; nothing was written");
  }
}

// Which rows go into the merged file, per input and point: all of them, or (keep-last) only the
// row of the run that started last, the later input breaking ties. Counts the points measured
// more than once; throws Error naming some of them when on_duplicate is Error.
std::vector<std::vector<bool>> choose_rows(MergeSummary& s, OnDuplicate on_duplicate) {
  // Rows of the same point, in input order.
  std::map<PointKey, std::vector<RowRef>> rows_of_key;
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    if (!s.inputs[i].contents) continue;
    const ResultsContents& c = *s.inputs[i].contents;
    for (std::size_t p = 0; p < c.points.size(); ++p)
      rows_of_key[key_of(c.points[p])].push_back({i, c.run_of_point[p], p});
  }
  std::size_t& duplicated_points = s.duplicated_points;
  std::size_t& extra_rows = s.extra_rows;
  for (const auto& [key, refs] : rows_of_key)
    if (refs.size() > 1) {
      ++duplicated_points;
      extra_rows += refs.size() - 1;
    }

  // Which rows go into the merged file: all of them, or (keep-last) only the row of the run that
  // started last, the later input breaking ties.
  std::vector<std::vector<bool>> keep(s.inputs.size());
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    if (s.inputs[i].contents) keep[i].assign(s.inputs[i].contents->points.size(), true);
  if (duplicated_points > 0) {
    if (on_duplicate == OnDuplicate::Error) {
      std::string list;
      int shown = 0;
      for (const auto& [key, refs] : rows_of_key) {
        if (refs.size() < 2) continue;
        if (++shown > 5) {
          list += "\n  ...";
          break;
        }
        list += "\n  " + to_string(key) + ": ";
        for (std::size_t r = 0; r < refs.size(); ++r) list += (r ? ", " : "") + where(s.inputs, refs[r]);
      }
      throw Error(count_of(duplicated_points, "point") + (duplicated_points == 1 ? " was" : " were") +
                  " measured more than once (--on-duplicate error):" + list +
                  "\npass --on-duplicate keep-all or keep-last to merge anyway; nothing was written");
    }
    if (on_duplicate == OnDuplicate::KeepLast) {
      auto order = [&](const RowRef& r) {
        const std::string& started = s.inputs[r.input].contents->runs[static_cast<std::size_t>(r.run)].started;
        return std::tie(started, r.input, r.run, r.point);
      };
      for (const auto& [key, refs] : rows_of_key) {
        if (refs.size() < 2) continue;
        const RowRef& last = *std::max_element(refs.begin(), refs.end(),
                                               [&](const RowRef& a, const RowRef& b) { return order(a) < order(b); });
        for (const RowRef& r : refs) keep[r.input][r.point] = (&r == &last);
      }
    }
  }

  return keep;
}

}  // namespace

MergeSummary merge_results(const std::vector<std::string>& files, const std::string& out, bool force,
                           OnDuplicate on_duplicate, const std::string& command_line) {
  for (const std::string& f : files)
    if (same_file(f, out) || same_file(f, out + ".partial"))
      throw Error("--out " + out + " is also an input; write the merged file under another name");
  std::error_code ec;
  if (!force && fs::exists(out, ec)) throw Error(out + " exists; pass --force to overwrite it");

  MergeSummary s;
  load_inputs(files, s);
  const std::vector<std::vector<bool>> keep = choose_rows(s, on_duplicate);
  ResultsFile merged = ResultsFile::create_empty(out, force, command_line);
  // The inputs stay where they are, so a merge that dies loses nothing: write in large batches.
  merged.set_flush_interval(5.0);
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    if (!s.inputs[i].contents) continue;
    const ResultsContents& c = *s.inputs[i].contents;
    for (std::size_t r = 0; r < c.runs.size(); ++r) {
      std::vector<Point> points;
      for (std::size_t p = 0; p < c.points.size(); ++p)
        if (c.run_of_point[p] == static_cast<int>(r) && keep[i][p]) points.push_back(c.points[p]);
      // A run keeps its own status ("interrupted" for a job killed at its time limit, ...).
      RunStatus status = parse_run_status(c.runs[r].status).value_or(RunStatus::Failed);
      merged.add_run(c.runs[r], points, status);
      s.run_lines.push_back(describe_run(s.inputs[i], c.runs[r], points.size()));
      ++s.runs_written;
      s.points_written += points.size();
    }
  }
  merged.finish_as_is();

  s.read = static_cast<std::size_t>(
      std::count_if(s.inputs.begin(), s.inputs.end(), [](const MergeInput& in) { return in.contents.has_value(); }));
  return s;
}

}  // namespace commsim
