// `commsim import LOG... --out run.h5`: nccl-tests output (the text any `*_perf` tool prints, or
// its -J JSON file) into a results file, as measured rows that `report`, `calibrate` and
// analysis/ read like those of `commsim run`. The log is read by collectives/libraries/
// nccl_tests_log.h; this file turns its rows into points.
//
// Each log becomes two runs: its out-of-place rows, then its in-place rows (in_place says which, and
// every row's note starts with it; timing is nccl-tests'). A row's
// time is nccl-tests' average over its iterations, stored as the median and the mean; there are
// no per-iteration samples.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "collectives/elements/dtype.h"
#include "collectives/libraries/nccl_tests_log.h"
#include "model/error.h"
#include "model/nccl/logged_table.h"
#include "model/topology/topology.h"
#include "runtime/command.h"
#include "runtime/commands/cli.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/report_tables.h"
#include "runtime/sweep/sweep.h"

namespace commsim {
namespace {

struct ImportOptions {
  std::string collective, nccl_algo, nccl_proto, placement = "both";
  int nodes = 0, gpus_per_node = 0;
  bool keep_partial = false;
};

std::string read_log(const std::string& path) {
  std::stringstream s;
  if (path == "-") {
    s << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot read " + path);
    s << f.rdbuf();
  }
  return s.str();
}

RunContext context_of(const NcclTestsLog& log, const std::string& path, int ranks, int nodes, const ImportOptions& o,
                      const Topology* topology, const std::string& commsim_version) {
  RunContext ctx;
  ctx.command_line = log.command_line.empty() ? "nccl-tests (" + path + ")" : log.command_line;
  ctx.commsim_version = commsim_version;
  ctx.ranks = ranks;
  ctx.nodes = nodes;
  ctx.backend = "cuda";
  ctx.transport = "nccl";
  ctx.nccl_version = log.nccl_version;
  if (static_cast<int>(log.ranks.size()) == ranks) {
    for (const NcclTestsRank& r : log.ranks) {
      ctx.hostnames.push_back(r.host);
      ctx.gpu_names.push_back(r.gpu);
    }
  }
  ctx.environment = log.environment;
  if (log.forced_algo.empty() && !o.nccl_algo.empty()) ctx.environment.push_back("NCCL_ALGO=" + o.nccl_algo);
  if (log.forced_proto.empty() && !o.nccl_proto.empty()) ctx.environment.push_back("NCCL_PROTO=" + o.nccl_proto);
  std::sort(ctx.environment.begin(), ctx.environment.end());
  if (topology) {
    ctx.topology_name = topology->name;
    ctx.topology_path = topology->source_path;
    ctx.topology_text = topology->text;
  }
  return ctx;
}

// The rows of one placement ("out-of-place" or "in-place") as points.
std::vector<Point> points_of(const NcclTestsLog& log, const std::string& path, bool in_place, int ranks, int nodes,
                             const ImportOptions& o, std::set<std::string>& skipped) {
  const std::string algo = log.forced_algo.empty() ? o.nccl_algo : log.forced_algo;
  const std::string proto = log.forced_proto.empty() ? o.nccl_proto : log.forced_proto;
  const std::optional<Protocol> forced_protocol = parse_protocol(proto);
  // A forced NCCL_ALGO names the forced variant the model prices (nccl-ring, nccl-nvls, ...).
  Algorithm algorithm = Algorithm::Nccl;
  static constexpr std::pair<std::string_view, Algorithm> kForced[] = {
      {"Ring", Algorithm::NcclRing},          {"Tree", Algorithm::NcclTree},
      {"NVLS", Algorithm::NcclNvls},          {"NVLSTree", Algorithm::NcclNvlsTree},
      {"CollNetDirect", Algorithm::NcclCollnetDirect}, {"CollNetChain", Algorithm::NcclCollnetChain},
      {"PAT", Algorithm::NcclPat}};
  for (const auto& [name, a] : kForced)
    if (canonical_nccl_algorithm(algo) == name) algorithm = a;
  std::vector<Point> points;
  for (const NcclTestsRow& row : log.rows) {
    const NcclTestsTiming& t = in_place ? row.in_place : row.out_of_place;
    if (!t.present()) continue;
    if (row.collective.empty())
      throw Error(path + ":" + std::to_string(row.line) +
                  ": the log does not say which collective it measured (no `*_perf` command line): pass --collective");
    const std::optional<Collective> collective = parse_collective(row.collective);
    if (!collective) {
      skipped.insert(row.collective);
      continue;
    }
    Point p;
    p.collective = *collective;
    p.algorithm = algorithm;
    p.backend = "cuda";
    p.transport = "nccl";
    p.protocol = forced_protocol.value_or(Protocol::None);
    const std::optional<DType> dtype = parse_dtype(row.type);
    p.dtype = dtype ? std::string(to_string(*dtype)) : row.type;
    p.redop = row.redop;
    p.nodes = nodes;
    p.ranks = ranks;
    p.bytes = row.size_B;
    p.count = row.count;
    p.root = row.root < 0 ? 0 : row.root;
    p.iters = log.iters;
    p.in_place = in_place ? 1 : 0;
    p.timing = std::string(to_string(Timing::NcclTests));  // its iterations back to back, averaged over ranks
    p.measured_median_us = p.measured_mean_us = t.time_us;
    p.wrong = t.wrong;
    p.status = t.wrong > 0 ? "wrong" : "ok";
    p.note = std::string("nccl-tests ") + (in_place ? "in-place" : "out-of-place") + ": average of " +
             (log.iters > 0 ? std::to_string(log.iters) + " iterations" : "its iterations");
    if (t.max_error == t.max_error) {  // the old `error` column, printed as %g
      char error[32];
      std::snprintf(error, sizeof error, "%g", t.max_error);
      p.note += std::string(", largest error ") + error;
    }
    const bool tunable = p.collective != Collective::SendRecv && p.collective != Collective::AllToAll;
    const bool one_algo = !algo.empty() && algo.find_first_of(",^") == std::string::npos;
    p.nccl_algo = !row.nccl_algo.empty() ? row.nccl_algo : tunable && one_algo ? canonical_nccl_algorithm(algo) : "";
    p.nccl_proto = !row.nccl_proto.empty()      ? row.nccl_proto
                   : tunable && forced_protocol ? std::string(to_string(*forced_protocol))
                                                : "";
    p.nccl_channels = row.nccl_channels;
    derive_bandwidths(p);
    points.push_back(std::move(p));
  }
  return points;
}

}  // namespace

int cmd_import(int argc, char** argv) {
  std::vector<std::string> logs;
  std::string out, topology_name;
  bool force = false, report = false;
  ImportOptions o;
  CommandLine cli(
      "import",
      "Read nccl-tests output (what all_reduce_perf and the other *_perf tools print, pasted or saved, "
      "with mpirun or srun prefixes and NCCL's own lines mixed in; or their -J JSON file) into a results "
      "file, as measured rows of the `nccl` baseline that `report` and `calibrate` read like those of `run`. "
      "Ranks, nodes, GPUs, the NCCL version, NCCL_ALGO / NCCL_PROTO and the algorithm NCCL logged per size "
      "are read from the log where it prints them, and NCCL's TUNING table (NCCL_DEBUG_SUBSYS=TUNING) is kept for "
      "`calibrate`. Each log gives two runs in the file: its out-of-place "
      "rows, then its in-place rows. Times are nccl-tests' averages over its iterations, stored as median "
      "and mean. A bad line stops the import with its line number; a log cut short is imported up to there.",
      "commsim import all_reduce.log --out run.h5 --topology dgx-h100 --report\n"
      "commsim import run.json --out run.h5 && commsim report run.h5 --topology mycluster.yaml\n"
      "commsim import old.log --nodes 2 --gpus-per-node 8 --collective allreduce --out run.h5\n"
      "pbpaste | commsim import - --out run.h5");
  cli.options().add_options()  //
      ("logs", po::value(&logs)->multitoken()->value_name("LOG"),
       "nccl-tests logs (text or JSON); - reads standard input")                           //
      ("out", po::value(&out)->value_name("FILE.h5"), "results file to write (required)")  //
      ("force", po::bool_switch(&force), "overwrite FILE.h5 if it exists")                 //
      ("topology", po::value(&topology_name)->value_name("T"),
       "predict every row on this topology (preset name or YAML file) and store it with the run")              //
      ("nodes", po::value(&o.nodes)->value_name("N"), "nodes the run used, for logs without `#  Rank` lines")  //
      ("gpus-per-node", po::value(&o.gpus_per_node)->value_name("G"),
       "ranks (GPUs) per node, for logs without `#  Rank` lines")  //
      ("collective", po::value(&o.collective)->value_name("C"),
       "the collective of logs that do not name it (allreduce, allgather, reducescatter, alltoall, ...)")  //
      ("nccl-algo", po::value(&o.nccl_algo)->value_name("ALGO"),
       "NCCL_ALGO the run was forced with, when the log does not show it")  //
      ("nccl-proto", po::value(&o.nccl_proto)->value_name("PROTO"),
       "NCCL_PROTO the run was forced with, when the log does not show it")  //
      ("placement", po::value(&o.placement)->default_value(o.placement)->value_name("P"),
       "which rows to import: out-of-place, in-place or both")                                                     //
      ("keep-partial", po::bool_switch(&o.keep_partial), "import the rows before a bad line instead of stopping")  //
      ("report", po::bool_switch(&report), "print `commsim report`'s verdict on the imported rows afterwards");
  cli.positional("logs", "LOG...");
  if (!cli.parse(argc, argv)) return 0;
  if (logs.empty()) throw Error("give at least one nccl-tests log: commsim import all_reduce.log --out run.h5");
  if (out.empty()) throw Error("--out FILE.h5 is required");
  if (o.placement != "both" && o.placement != "out-of-place" && o.placement != "in-place")
    throw Error("--placement '" + o.placement + "': use out-of-place, in-place or both");
  std::optional<Topology> topology;
  if (!topology_name.empty()) topology = load_topology(resolve_topology_path(topology_name));

  // Every log is read before the file is created, so a bad one leaves no file behind.
  const RunContext local = RunContext::collect_local(argc, argv);
  std::vector<std::pair<RunContext, std::vector<Point>>> runs;
  std::vector<Point> all;
  for (const std::string& path : logs) {
    const std::string name = path == "-" ? "stdin" : path;
    const NcclTestsLog log = parse_nccl_tests_log(read_log(path), name, o.collective);
    if (!log.error.empty() && !o.keep_partial)
      throw Error(log.error + " (pass --keep-partial to import the " + std::to_string(log.rows.size()) +
                  " rows before it)");
    if (!log.error.empty()) std::fprintf(stderr, "warning: %s; the rows before it are imported\n", log.error.c_str());
    for (const std::string& w : log.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    NcclTestsPlacement placement;
    try {
      placement = placement_of(log, name, o.nodes, o.gpus_per_node);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + ": pass --nodes and --gpus-per-node");
    }
    if (!placement.note.empty()) std::fprintf(stderr, "warning: %s (--nodes)\n", placement.note.c_str());
    const int ranks = placement.ranks, nodes = placement.nodes;
    // The run's topology: the one given, with how this log drove its GPUs (GPUs per host thread,
    // CUDA graphs), which NCCL's model prices as the host's cost per call (model/nccl/from_topology.h).
    std::optional<Topology> run_topology = topology;
    if (run_topology && (log.gpus_per_thread > 1 || log.cuda_graphs)) {
      run_topology->nccl.machine.gpus_per_thread = std::max(1, log.gpus_per_thread);
      run_topology->nccl.machine.cuda_graphs = log.cuda_graphs;
      run_topology->text = topology_yaml(*run_topology, {"imported with " + name}, {}, nullptr, true);
    }
    RunContext ctx =
        context_of(log, name, ranks, nodes, o, run_topology ? &*run_topology : nullptr, local.commsim_version);
    // NCCL's TUNING table is kept with the runs (calibrate writes it into the topology), once read.
    if (!log.nccl_tuning_table.empty()) {
      try {
        nccl::parse_tuning_table(log.nccl_tuning_table, ranks, nodes, false);
        ctx.nccl_tuning_table = log.nccl_tuning_table;
      } catch (const Error& e) {
        std::fprintf(stderr, "warning: %s: %s; the table is not kept\n", name.c_str(), e.what());
      }
    }
    std::set<std::string> skipped;
    std::size_t imported = 0;
    for (bool in_place : {false, true}) {
      if (o.placement == (in_place ? "out-of-place" : "in-place")) continue;
      std::vector<Point> points = points_of(log, name, in_place, ranks, nodes, o, skipped);
      if (points.empty()) continue;
      if (run_topology) repredict(points, *run_topology);
      imported += points.size();
      all.insert(all.end(), points.begin(), points.end());
      runs.emplace_back(ctx, std::move(points));
    }
    for (const std::string& c : skipped)
      std::fprintf(stderr, "warning: %s: the rows of %s are not imported (commsim has no such collective)\n",
                   name.c_str(), c.c_str());
    std::printf("%s: %zu rows, %d ranks on %d node%s%s%s%s\n", name.c_str(), imported, ranks, nodes,
                nodes == 1 ? "" : "s", log.nccl_version.empty() ? "" : (", NCCL " + log.nccl_version).c_str(),
                log.forced_algo.empty() ? "" : (", NCCL_ALGO=" + log.forced_algo).c_str(),
                ctx.nccl_tuning_table.empty() ? "" : ", NCCL's TUNING table kept");
  }
  ResultsFile file = ResultsFile::create_empty(out, force, local.command_line);
  for (const auto& [ctx, points] : runs) file.add_run(ctx, points, RunStatus::Complete);
  file.finish_as_is();
  std::printf("wrote %s (%zu points in %zu run%s: out-of-place and in-place rows of each log apart)\n", out.c_str(),
              all.size(), runs.size(), runs.size() == 1 ? "" : "s");
  if (report) {
    Report r = build_report(all);
    r.files = {out};
    print_report_table(std::cout, r, false, all);
  }
  return 0;
}

}  // namespace commsim
