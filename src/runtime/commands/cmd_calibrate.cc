// commsim calibrate: fits alpha and beta per tier (and gamma) to probe measurements and, optionally,
// collective measurements, and NCCL's constants to forced NCCL runs; prints the fit quality; writes a
// topology file that predict and run accept. The fit is calibrate() (model/calibrate/procedure.h).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "collectives/elements/cpus.h"
#include "model/calibrate/procedure.h"
#include "model/error.h"
#include "model/topology/topology.h"
#include "runtime/command.h"
#include "runtime/commands/calibrate_inputs.h"
#include "runtime/commands/cli.h"
#include "runtime/output/calibrate_report.h"
#include "runtime/output/run_context.h"
#include "runtime/probe/nvml_topology.h"

namespace commsim {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::string out;
  std::string base;
  std::string name;
  std::string refine = "auto";
  std::string weighting = "robust";
  int threads = 0;  // 0: the cores this process may run on
  bool force = false;
};

FitWeighting parse_weighting(const std::string& name) {
  if (name == "relative") return FitWeighting::Relative;
  if (name == "absolute") return FitWeighting::Absolute;
  if (name == "robust") return FitWeighting::Robust;
  throw Error("--weighting '" + name + "': use robust, relative or absolute");
}

// Writes through a temporary file, so a failed write leaves no half file behind.
void write_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path tmp = path + ".tmp";
  std::ofstream f(tmp);
  if (!f) throw Error("cannot write " + tmp.string());
  f << text;
  f.close();
  if (!f) throw Error("cannot write " + tmp.string());
  std::filesystem::rename(tmp, path);
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  Options o;
  CommandLine cli("calibrate",
                  "Fit the model to this machine: alpha (latency) and beta (1/bandwidth) per tier by least squares "
                  "on the ring-shift measurements of `commsim probe` (inside a node, across the network), gamma "
                  "(reduction) from the probe's reduction loop and, given measured runs, from reducing "
                  "collectives; for host ranks also the message library's protocol steps (inline, eager and "
                  "rendezvous latencies), per-message overheads, the node's shared bandwidth and how much slower "
                  "just-written data moves inside a node (written_scale), and across the network the rate of "
                  "each message size (network_message_scale); given runs of nccl-ring and nccl-tree with forced "
                  "protocols (--protocols LL,LL128,Simple), NCCL's base latency, hop latency and bus bandwidth per "
                  "algorithm x protocol (the nccl: section). Prints R^2, "
                  "residuals and held-out checks (fit on every other size, error on the sizes between; the collective "
                  "fit's check also keeps the largest size, so it never extrapolates), and writes a "
                  "topology file that `commsim predict` and `commsim run` accept.",
                  "commsim calibrate portrait.h5 --out configs/topologies/mycluster.yaml\n"
                  "commsim calibrate portrait.h5 run.h5 --base local-cpu --refine gamma --out mycluster.yaml");
  cli.options().add_options()                                                                                         //
      ("inputs", po::value(&o.inputs)->multitoken()->value_name("FILE.h5..."), "probe files (from commsim probe) and run files (commsim run)")  //
      ("out", po::value(&o.out)->value_name("FILE.yaml"), "topology file to write (required)")                                                 //
      ("base", po::value(&o.base)->value_name("NAME|FILE"),
       "topology whose unmeasured parts are kept (name or path; default local-cpu for host probes)")  //
      ("name", po::value(&o.name)->value_name("NAME"), "the written topology's name (default: the --out file's stem)")    //
      ("refine", po::value(&o.refine)->default_value(o.refine)->value_name("WHAT"),
       "with run files: none, gamma (fit gamma to reducing collectives), all (every term to the collectives: "
       "alpha and beta of each tier, gamma, message and call overheads, the rendezvous and inline latencies, "
       "the latency of one-way messages and of exchanges, the share of the message overheads paid by "
       "receivers, the send share, the cache curves by working set (a rank's, and its node's when the "
       "topology has a node_bandwidth), by local-operation size and by message size, the factor by message "
       "size of one sender's messages to many receivers (fan_out_scale), and the "
       "points of the network's rate by message size; where the probe shows two steps below the eager limit, "
       "the one of them the collectives follow better becomes the inline limit); "
       "auto = gamma when run files are given")  //
      ("weighting", po::value(&o.weighting)->default_value(o.weighting)->value_name("HOW"),
       "robust (default: relative residuals; the collective fit minimises the sum of |relative error|), "
       "relative (least squares on relative residuals) or absolute (on seconds)")  //
      ("threads", po::value(&o.threads)->value_name("N"),
       "threads for the collective fit (default: the cores this process may run on); the fit is the same "
       "with any number")  //
      ("force", po::bool_switch(&o.force), "overwrite an existing --out file");
  cli.positional("inputs", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (o.inputs.empty()) throw Error("give at least one probe file: commsim calibrate portrait.h5 --out FILE.yaml");
  if (o.out.empty()) throw Error("--out FILE.yaml is required (the topology file to write)");
  if (std::filesystem::exists(o.out) && !o.force) throw Error(o.out + " exists; pass --force to overwrite it");
  if (o.threads < 0) throw Error("--threads " + std::to_string(o.threads) + ": give 1 or more (or leave it out)");
  CalibrationOptions opt;
  opt.threads = o.threads > 0 ? o.threads : usable_cores();
  opt.weighting = parse_weighting(o.weighting);
  opt.refine = o.refine;

  const CalibrateFiles files = read_calibrate_files(o.inputs);
  const ProbeData& probe = files.probes.front();
  const std::string base_name = o.base.empty() ? "local-cpu" : o.base;
  if (o.base.empty() && !probe.gpu_names.empty())
    std::cerr << "commsim calibrate: GPUs were probed; without --base the host tiers are calibrated on local-cpu. "
                 "Pass --base (e.g. h200-node) to calibrate a GPU topology.\n";
  const Topology base = load_topology(resolve_topology_path(base_name));
  opt.name = o.name.empty() ? std::filesystem::path(o.out).stem().string() : o.name;
  opt.out = o.out;
  opt.created = iso8601_utc_now();
  opt.sources = o.inputs;
  std::string sources;
  for (const auto& f : o.inputs) sources += (sources.empty() ? "" : ", ") + f;

  const CalibrationResult r = calibrate(calibration_input(files, base, sources, opt.created.substr(0, 10)), opt);

  for (const auto& w : probe.gpu_links.non_uniform())
    std::cerr << "commsim calibrate: warning: the node is not uniform: " << w << "\n";
  bool storage_probed = false;
  for (const auto& p : files.probes) storage_probed = storage_probed || !p.storage.empty();
  const CalibrateReportContext ctx{files.probes.size(), files.run_files.size(), base.name,
                                   o.weighting,         &probe.gpu_links,       storage_probed};
  print_calibrate_report(std::cout, ctx, r);
  write_atomically(o.out, r.text);
  print_calibrate_written(std::cout, o.out, r);
  return 0;
}

}  // namespace commsim
