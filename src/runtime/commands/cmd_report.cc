// commsim report: the verdict on the model from measured results files (error tables, winners,
// crossovers, outliers, failed points). The tables are built by runtime/output/report_tables.h.
#include <algorithm>
#include <iostream>

#include "model/error.h"
#include "runtime/command.h"
#include "runtime/commands/cli.h"
#include "runtime/output/report_tables.h"
#include "runtime/sweep/measured.h"

namespace commsim {

int cmd_report(int argc, char** argv) {
  std::vector<std::string> files;
  std::string format = "table";
  std::string table = "groups";
  std::size_t outliers = 10;
  bool points_too = false;
  std::string topology_name;
  std::string timing;
  CommandLine cli(
      "report",
      "How far the model is from the measurement: relative error per point; median and geometric-mean "
      "|error| per collective x algorithm x size band (< 64 KiB, 64 KiB - 16 MiB, >= 16 MiB); whether the "
      "model's fastest hand-written algorithm was the measured fastest, and whether the per-iteration samples "
      "tell the two apart (one-sided Mann-Whitney U test, p < 0.05); predicted vs measured crossover "
      "sizes; the worst outliers; failed or missing points. Reads results files of `commsim run` "
      "(several are combined). Given two or more runs of the same sweep, it also says how far the machine "
      "differs from itself (median |run1 - run2| / run2 over the points both measured), the closest any model "
      "can be judged; it says when the topology that predicted the points is an uncalibrated preset. Each "
      "point's spread is its p95 / median (--points). One-rank points are listed, not counted; algorithms "
      "that ran one schedule (ring and rabenseifner at 2 ranks) are one contender. With --topology, every point is "
      "first predicted again on that topology: "
      "how a calibrated topology does on measurements already taken.",
      "commsim report run.h5\n"
      "commsim report run1.h5 run2.h5   (two runs of one sweep: the machine against itself)\n"
      "commsim report a.h5 b.h5 --format json > verdict.json\n"
      "commsim report run.h5 --format csv --table winners\n"
      "commsim report run.h5 --topology mycluster.yaml");
  cli.options().add_options()                                                      //
      ("files", po::value(&files)->multitoken()->value_name("FILE.h5..."), "results files (.h5)")            //
      ("format", po::value(&format)->default_value(format)->value_name("FMT"), "table, csv or json")  //
      ("table", po::value(&table)->default_value(table)->value_name("TABLE"),
       "with --format csv, which table: groups, points, winners, crossovers, nccl (NCCL's choice per size), outliers, "
       "failed")                                                                                             //
      ("outliers", po::value(&outliers)->default_value(outliers)->value_name("N"), "how many of the worst points to list")    //
      ("points", po::bool_switch(&points_too), "also list the relative error of every point (table, json)")  //
      ("topology", po::value(&topology_name)->value_name("NAME|FILE"),
       "predict every point again on this topology (preset name or YAML file) instead of the prediction stored "
       "with it; ranks are placed evenly on each point's nodes")  //
      ("timing", po::value(&timing)->value_name("MODE"),
       "report only the points timed this way: per-iteration or nccl-tests (points timed differently do not "
       "compare; files that hold both need it)");
  cli.positional("files", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (files.empty()) throw Error("give at least one results file: commsim report run.h5");
  OutputFormat fmt = parse_format(format);
  const std::vector<std::string> tables = {"groups", "points", "winners", "crossovers", "nccl", "outliers", "failed"};
  if (std::find(tables.begin(), tables.end(), table) == tables.end())
    throw Error("--table '" + table + "': use groups, points, winners, crossovers, nccl, outliers or failed");

  MeasuredPoints m = read_measured(files, topology_name);
  select_timing(m.points, timing);
  const std::vector<Point>& points = m.points;
  Report r = build_report(points, outliers);
  r.files = files;
  r.run_notes = m.notes;
  r.uncalibrated = m.uncalibrated;
  std::vector<std::vector<Point>> runs(files.size());
  for (std::size_t i = 0; i < points.size(); ++i) runs[m.file_of_point[i]].push_back(points[i]);
  r.repeat = machine_against_itself(runs);
  if (files.size() > 1) r.per_file = error_per_file(runs);
  switch (fmt) {
    case OutputFormat::Table: print_report_table(std::cout, r, points_too, points); break;
    case OutputFormat::Json: print_report_json(std::cout, r, points_too, points); break;
    case OutputFormat::Csv: print_report_csv(std::cout, r, table, points); break;
  }
  return 0;
}

}  // namespace commsim
