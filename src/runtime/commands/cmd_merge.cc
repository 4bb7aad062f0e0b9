// `commsim merge A.h5 B.h5 ... --out all.h5`: one results file from the files of several runs
// (typically one per Slurm job of a sweep across node counts).
//
// What is kept, refused and reported: runtime/h5/merge.h.
#include <cstdio>
#include <string>
#include <vector>

#include "model/error.h"
#include "runtime/command.h"
#include "runtime/commands/cli.h"
#include "runtime/h5/merge.h"

namespace commsim {

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
  cli.options().add_options()("inputs", po::value(&files)->value_name("FILE.h5"), "input results files (positional)")(
      "out,o", po::value(&out)->value_name("FILE.h5"), "the merged file to write (required)")(
      "force", po::bool_switch(&force), "overwrite --out when it exists")(
      "on-duplicate", po::value(&on_duplicate_text)->default_value(on_duplicate_text)->value_name("WHAT"),
      "a point measured in more than one run: keep-all (every row, each tied to its run; a warning counts "
      "them), keep-last (only the row of the run that started last), error (refuse to merge)");
  cli.positional("inputs", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (out.empty()) throw Error("--out FILE.h5 is required (see commsim merge --help)");
  if (files.empty()) throw Error("no input files; usage: commsim merge A.h5 B.h5 ... --out all.h5");
  const OnDuplicate on_duplicate = parse_on_duplicate(on_duplicate_text);
  const MergeSummary s = merge_results(files, out, force, on_duplicate, "commsim " + join_command_line(argc, argv));
  const std::vector<MergeInput>& inputs = s.inputs;
  const std::size_t read_ok = s.read, runs_written = s.runs_written, points_written = s.points_written;
  const std::size_t duplicated_points = s.duplicated_points, extra_rows = s.extra_rows;
  const std::vector<std::string>& run_lines = s.run_lines;

  std::printf("merged %zu of %zu files (%zu runs, %zu points) into %s\n", read_ok, inputs.size(), runs_written,
              points_written, out.c_str());
  for (const std::string& line : run_lines) std::printf("%s\n", line.c_str());
  for (const MergeInput& in : inputs)
    if (in.contents && in.path != in.given)
      std::printf("note: %s is missing; read %s, left by a run that did not finish\n", in.given.c_str(),
                  in.path.c_str());
  std::fflush(stdout);
  for (const MergeInput& in : inputs)
    if (in.has_probe)
      std::fprintf(stderr,
                   "commsim merge: warning: %s is a probe file: its runs and points were merged, its /probe "
                   "measurements were not; calibrate them from %s itself\n",
                   in.path.c_str(), in.path.c_str());
  if (duplicated_points > 0) {
    const std::string what =
        count_of(duplicated_points, "point") + (duplicated_points == 1 ? " was" : " were") + " measured more than once";
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
  for (const MergeInput& in : inputs)
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
