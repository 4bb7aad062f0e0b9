// `commsim merge A.h5 B.h5 ... --out all.h5`: one results file from the files of several runs
// (typically one per Slurm job of a sweep across node counts).
//
// Every run of every input is copied with its context (hosts, Slurm job, environment, topology)
// and all its points, so a point in the merged file still says where and how it was measured.
// Inputs of a schema version other than this binary's are refused before anything is written. An
// input that is missing or unreadable (its job failed) is reported, the others are still merged,
// and the exit code is 1. A point measured more than once (the same collective, algorithm,
// backend, transport, protocol, dtype, nodes, ranks and size in two runs) is kept every time by
// default, each row tied to its own run, with a warning that counts them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/error.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/results_file.h"

namespace commsim {
namespace {

namespace fs = std::filesystem;

enum class OnDuplicate { KeepAll, KeepLast, Error };

OnDuplicate parse_on_duplicate(const std::string& text) {
  if (text == "keep-all") return OnDuplicate::KeepAll;
  if (text == "keep-last") return OnDuplicate::KeepLast;
  if (text == "error") return OnDuplicate::Error;
  throw Error("--on-duplicate '" + text + "' is not one of: keep-all, keep-last, error");
}

// An input file as read, or why it could not be.
struct Input {
  std::string given;  // as typed
  std::string path;   // the file read: `given`, or `given`.partial when only that exists
  std::optional<ResultsContents> contents;
  std::string problem;  // why it was not read ("" when read)
};

// A file's schema_version attribute; nullopt when the file has none.
std::optional<std::int64_t> schema_version_of(const std::string& path) {
  h5::File f = h5::open_file(path, false);
  if (!h5::has_attribute(f.get(), "schema_version")) return std::nullopt;
  return h5::get_int_attribute(f.get(), "schema_version");
}

// Reads one input. Schema versions other than ours go to `foreign` (the merge is refused later).
Input load_input(const std::string& given, std::vector<std::string>& foreign) {
  Input in{given, given, std::nullopt, ""};
  std::error_code ec;
  if (!fs::exists(given, ec)) {
    if (!fs::exists(given + ".partial", ec)) {
      in.problem = "missing: neither it nor " + given + ".partial exists (did the job that writes it fail?)";
      return in;
    }
    in.path = given + ".partial";  // a killed job: every point it finished is in there
  }
  try {
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

std::string where(const std::vector<Input>& inputs, const RowRef& r) {
  const RunContext& ctx = inputs[r.input].contents->runs[static_cast<std::size_t>(r.run)];
  std::string s = inputs[r.input].path + " run " + std::to_string(r.run);
  if (!ctx.slurm.job_id.empty()) s += " (job " + ctx.slurm.job_id + ")";
  return s;
}

// "nodes2-job6.h5 run 0: 42 points, complete, job 6 on node[1-2] (partition debug), 2 nodes, 4 ranks"
std::string describe_run(const Input& in, const RunContext& ctx, std::size_t points) {
  std::string s = "  " + in.path + " run " + std::to_string(ctx.index) + ": " + std::to_string(points) + " points, " +
                  (ctx.status.empty() ? "status unknown" : ctx.status);
  if (!ctx.slurm.job_id.empty()) {
    s += ", job " + ctx.slurm.job_id;
    if (!ctx.slurm.array_task_id.empty()) s += " (array " + ctx.slurm.array_job_id + "_" + ctx.slurm.array_task_id + ")";
    if (!ctx.slurm.node_list.empty()) s += " on " + ctx.slurm.node_list;
    if (!ctx.slurm.partition.empty()) s += " (partition " + ctx.slurm.partition + ")";
  }
  s += ", " + std::to_string(ctx.nodes) + (ctx.nodes == 1 ? " node, " : " nodes, ") + std::to_string(ctx.ranks) +
       (ctx.ranks == 1 ? " rank" : " ranks");
  return s;
}

// "1 point", "3 points".
std::string count_of(std::size_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

}  // namespace

int cmd_merge(int argc, char** argv) {
  CommandLine cli("merge",
                  "Merge the results files of several runs (e.g. one per Slurm job of a sweep) into one. Every run\n"
                  "keeps its context (hosts, Slurm job, environment, topology) and every point. A file left as\n"
                  "FILE.h5.partial by a killed job is read when FILE.h5 is missing. Missing or unreadable inputs are\n"
                  "reported and the rest is merged, with exit code 1. Files of another schema version are refused.\n"
                  "The same point measured in two runs is kept twice by default (each row names its run), with a\n"
                  "warning; --on-duplicate chooses otherwise.",
                  "commsim merge results/nodes1-job11.h5 results/nodes2-job12.h5 --out results/all.h5\n"
                  "commsim merge results/*.h5 --out all.h5 --force --on-duplicate keep-last");
  std::vector<std::string> files;
  std::string out, on_duplicate_text = "keep-all";
  bool force = false;
  cli.options().add_options()
      ("inputs", po::value(&files)->value_name("FILE.h5"), "input results files (positional)")
      ("out,o", po::value(&out)->value_name("FILE.h5"), "the merged file to write (required)")
      ("force", po::bool_switch(&force), "overwrite --out when it exists")
      ("on-duplicate", po::value(&on_duplicate_text)->default_value(on_duplicate_text)->value_name("WHAT"),
       "a point measured in more than one run: keep-all (every row, each tied to its run; a warning counts "
       "them), keep-last (only the row of the run that started last), error (refuse to merge)");
  cli.positional("inputs", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (out.empty()) throw Error("--out FILE.h5 is required (see commsim merge --help)");
  if (files.empty()) throw Error("no input files; usage: commsim merge A.h5 B.h5 ... --out all.h5");
  const OnDuplicate on_duplicate = parse_on_duplicate(on_duplicate_text);
  for (const std::string& f : files)
    if (same_file(f, out) || same_file(f, out + ".partial"))
      throw Error("--out " + out + " is also an input; write the merged file under another name");
  std::error_code ec;
  if (!force && fs::exists(out, ec)) throw Error(out + " exists; pass --force to overwrite it");

  std::vector<Input> inputs;
  std::vector<std::string> foreign;
  for (const std::string& f : files) inputs.push_back(load_input(f, foreign));
  if (!foreign.empty()) {
    std::string readable;
    for (const Input& in : inputs)
      if (in.contents) readable += "\n  " + in.path + " (schema version " + std::to_string(kResultsSchemaVersion) + ")";
    std::string list;
    for (const std::string& f : foreign) list += "\n  " + f;
    throw Error("refusing to merge: this commsim (" COMMSIM_VERSION ") reads and writes results schema version " +
                std::to_string(kResultsSchemaVersion) + ", but these inputs have another:" + list +
                (readable.empty() ? "" : "\nthe others are:" + readable) +
                "\nmerge each group of one schema version with the commsim that wrote it; nothing was written");
  }

  // Rows of the same point, in input order.
  std::map<PointKey, std::vector<RowRef>> rows_of_key;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].contents) continue;
    const ResultsContents& c = *inputs[i].contents;
    for (std::size_t p = 0; p < c.points.size(); ++p) rows_of_key[key_of(c.points[p])].push_back({i, c.run_of_point[p], p});
  }
  std::size_t duplicated_points = 0, extra_rows = 0;
  for (const auto& [key, refs] : rows_of_key)
    if (refs.size() > 1) {
      ++duplicated_points;
      extra_rows += refs.size() - 1;
    }

  // Which rows go into the merged file: all of them, or (keep-last) only the row of the run that
  // started last, the later input breaking ties.
  std::vector<std::vector<bool>> keep(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].contents) keep[i].assign(inputs[i].contents->points.size(), true);
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
        for (std::size_t r = 0; r < refs.size(); ++r) list += (r ? ", " : "") + where(inputs, refs[r]);
      }
      throw Error(count_of(duplicated_points, "point") + (duplicated_points == 1 ? " was" : " were") +
                  " measured more than once (--on-duplicate error):" +
                  list + "\npass --on-duplicate keep-all or keep-last to merge anyway; nothing was written");
    }
    if (on_duplicate == OnDuplicate::KeepLast) {
      auto order = [&](const RowRef& r) {
        const std::string& started = inputs[r.input].contents->runs[static_cast<std::size_t>(r.run)].started;
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

  ResultsFile merged = ResultsFile::create_empty(out, force, "commsim " + join_command_line(argc, argv));
  // The inputs stay where they are, so a merge that dies loses nothing: write in large batches.
  merged.set_flush_interval(5.0);
  std::size_t runs_written = 0, points_written = 0;
  std::vector<std::string> run_lines;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].contents) continue;
    const ResultsContents& c = *inputs[i].contents;
    for (std::size_t r = 0; r < c.runs.size(); ++r) {
      std::vector<Point> points;
      for (std::size_t p = 0; p < c.points.size(); ++p)
        if (c.run_of_point[p] == static_cast<int>(r) && keep[i][p]) points.push_back(c.points[p]);
      // A run keeps its own status ("interrupted" for a job killed at its time limit, ...).
      RunStatus status = parse_run_status(c.runs[r].status).value_or(RunStatus::Failed);
      merged.add_run(c.runs[r], points, status);
      run_lines.push_back(describe_run(inputs[i], c.runs[r], points.size()));
      ++runs_written;
      points_written += points.size();
    }
  }
  merged.finish_as_is();

  std::size_t read_ok = static_cast<std::size_t>(
      std::count_if(inputs.begin(), inputs.end(), [](const Input& in) { return in.contents.has_value(); }));
  std::printf("merged %zu of %zu files (%zu runs, %zu points) into %s\n", read_ok, inputs.size(), runs_written,
              points_written, out.c_str());
  for (const std::string& line : run_lines) std::printf("%s\n", line.c_str());
  for (const Input& in : inputs)
    if (in.contents && in.path != in.given)
      std::printf("note: %s is missing; read %s, left by a run that did not finish\n", in.given.c_str(), in.path.c_str());
  std::fflush(stdout);
  if (duplicated_points > 0) {
    const std::string what = count_of(duplicated_points, "point") + (duplicated_points == 1 ? " was" : " were") +
                             " measured more than once";
    if (on_duplicate == OnDuplicate::KeepAll)
      std::fprintf(stderr,
                   "commsim merge: warning: %s (%s); all rows kept, each tied to its run (--on-duplicate keep-last "
                   "keeps only the latest)\n",
                   what.c_str(), count_of(extra_rows, "extra row").c_str());
    else
      std::fprintf(stderr,
                   "commsim merge: warning: %s; kept the row of the run that started last, dropped %s "
                   "(--on-duplicate keep-last)\n",
                   what.c_str(), count_of(extra_rows, "row").c_str());
  }
  int failed = 0;
  for (const Input& in : inputs)
    if (!in.contents) {
      std::fprintf(stderr, "commsim merge: error: %s: %s\n", in.given.c_str(), in.problem.c_str());
      ++failed;
    }
  if (failed > 0) {
    std::fprintf(stderr, "commsim merge: %d of %zu inputs could not be read; %s holds the other %zu\n", failed,
                 inputs.size(), out.c_str(), read_ok);
    return 1;
  }
  return 0;
}

}  // namespace commsim
