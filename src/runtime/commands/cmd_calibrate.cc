// commsim calibrate: fits alpha and beta per tier (and gamma) to probe measurements and, optionally,
// collective measurements, and NCCL's constants to forced NCCL runs; prints the fit quality; writes a
// topology file that predict and run accept. The fit is calibrate() (model/calibrate/procedure.h).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "collectives/elements/cpus.h"
#include "model/calibrate/nccl_fit.h"
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
  std::vector<std::string> holdout;
  std::string out;
  std::string base;
  std::string topology;  // --topology: the same as --base
  std::string collectives;  // files of NCCL runs only: the collectives fitted ("" = all)
  std::string name;
  std::string refine = "auto";
  std::string weighting = "robust";
  int threads = 0;  // 0: the cores this process may run on
  bool force = false;
  bool keep_refit = false;
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

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// Files of NCCL runs alone (an imported nccl-tests log), no probe: NCCL's model fitted to them
// (fit_nccl_model), on the topology given, else the one the runs were imported onto.
int calibrate_nccl_only(const Options& o, const CalibrateFiles& files) {
  const std::string stored = nccl_run_topology_text(files);
  if (o.base.empty() && stored.empty())
    throw Error("the runs store no topology: pass --topology NAME (the preset they ran on) to fit NCCL's model");
  Topology base = o.base.empty() ? parse_topology(stored, "the runs' topology")
                                 : load_topology(resolve_topology_path(o.base));
  if (!o.base.empty() && !stored.empty()) {
    // How the runs drove their GPUs (GPUs per host thread, CUDA graphs) is the runs', not the preset's.
    const NcclMachine ran = parse_topology(stored, "the runs' topology").nccl.machine;
    base.nccl.machine.gpus_per_thread = ran.gpus_per_thread;
    base.nccl.machine.cuda_graphs = ran.cuda_graphs;
  }
  base.name = o.name.empty() ? std::filesystem::path(o.out).stem().string() : o.name;
  std::cout << "commsim calibrate: no probe file: fitting NCCL's model alone (nccl.bandwidth_scale, "
               "nccl.latency_offset) to the NCCL runs, on topology '"
            << base.name << "'\n";
  // NCCL's own TUNING table, where a run kept one, is taken as logged (not fitted); the two terms
  // are fitted on top of it. The topology holds one table: the first.
  for (const NcclTuningTable& t : files.nccl_tuning_tables) {
    const bool used = &t == &files.nccl_tuning_tables.front();
    if (used) base.nccl.machine.tuning_table = t;
    std::cout << "  NCCL's TUNING table of " << t.source << " (" << t.ranks << " ranks on " << t.nodes << " node"
              << (t.nodes == 1 ? "" : "s")
              << "): " << (used ? "written as nccl.tuning_table" : "not used (one table per topology)") << "\n";
  }
  std::vector<NcclSample> samples = nccl_samples(files);
  if (!o.collectives.empty()) {
    const std::vector<Collective> only = parse_collectives(o.collectives);
    std::erase_if(samples, [&](const NcclSample& s) { return std::ranges::find(only, s.collective) == only.end(); });
  }
  const NcclModelFit f = fit_nccl_model(base, samples);
  std::cout << "  samples: " << f.samples << "\n  bandwidth_scale: " << f.bandwidth_scale
            << (f.scale_at_bound ? " (at its bound, 0.05 or 1)" : "")
            << "\n  latency_offset: " << f.latency_offset_s * 1e6 << " us"
            << (f.offset_at_bound ? " (at its bound: a call's latency reaches 0)" : "")
            << "\n  median |error|: " << percent(f.median_abs_rel_error_before) << " before, "
            << percent(f.median_abs_rel_error) << " after\n";
  if (!f.held_out.empty()) {
    std::cout << "  held-out (fitted on every other size, judged on the sizes between):\n";
    for (const NcclModelSampleError& e : f.held_out)
      std::cout << "    held-out " << to_string(e.collective) << " " << e.bytes << " B " << percent(e.rel_error)
                << "\n";
  }
  const std::vector<std::string> header = {"NCCL's model fitted by commsim calibrate to " +
                                           std::to_string(f.samples) + " measured NCCL calls"};
  write_atomically(o.out, topology_yaml(f.topology, header, {}, nullptr, false));
  std::cout << "wrote " << o.out << "\n";
  return 0;
}

// True when both paths name one file (through links too); false when either does not exist.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// The output must not be one of the files read (--force included): writing it would replace the
// measurements with YAML. A holdout run must not be fitted too.
void check_files(const Options& o) {
  std::vector<std::string> read = o.inputs;
  read.insert(read.end(), o.holdout.begin(), o.holdout.end());
  for (const auto& in : read)
    if (same_file(o.out, in))
      throw Error("--out " + o.out + " is the input " + in +
                  "; calibrate never writes over its input: give another --out file (e.g. fitted.yaml)");
  for (const auto& h : o.holdout)
    for (const auto& in : o.inputs)
      if (same_file(h, in))
        throw Error("--holdout " + h +
                    " is also an input: the fit would see the data it is judged on; give the "
                    "run of another pass of the same sweep");
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
                  "algorithm x protocol (the nccl: section); given only files of NCCL runs and no probe (nccl-tests "
                  "output imported with `commsim import`), NCCL's model alone: the share of its per-channel "
                  "bandwidth the machine reaches and a latency offset per call, on top of NCCL's own TUNING "
                  "table where the imported log printed one (NCCL_DEBUG_SUBSYS=TUNING; written as "
                  "nccl.tuning_table, not fitted). A refit to runs keeps each term in "
                  "its physical range (bandwidths 0.25x to 1.5x the probe's, latencies and overheads up to 10x, curve "
                  "factors 0.5x to 2x), refuses terms the points do not pin down (fewer than 3 points a term, or "
                  "collinear with others), and is kept only when it beats the probe-only topology on data it did not "
                  "see (--holdout, or the sizes it leaves out). Prints R^2, "
                  "residuals and held-out checks (fit on every other size, error on the sizes between; the collective "
                  "fit's check also keeps the largest size, so it never extrapolates), and writes a "
                  "topology file that `commsim predict` and `commsim run` accept.",
                  "commsim calibrate portrait.h5 --out configs/topologies/mycluster.yaml\n"
                  "commsim calibrate portrait.h5 run.h5 --base local-cpu --refine gamma --out mycluster.yaml\n"
                  "commsim calibrate portrait.h5 run1.h5 --holdout run2.h5 --refine all --out mycluster.yaml\n"
                  "commsim calibrate imported.h5 --topology dgx-h100 --out fitted.yaml   # NCCL runs, no probe");
  cli.options().add_options()                                                                                         //
      ("inputs", po::value(&o.inputs)->multitoken()->value_name("FILE.h5..."), "probe files (from commsim probe) and run files (commsim run)")  //
      ("out", po::value(&o.out)->value_name("FILE.yaml"), "topology file to write (required)")                                                 //
      ("base", po::value(&o.base)->value_name("NAME|FILE"),
       "topology whose unmeasured parts are kept, each labelled as the preset's in the written file (name "
       "or path; default local-cpu for host probes; a GPU preset needs a probe of the GPUs)")  //
      ("topology", po::value(&o.topology)->value_name("NAME|FILE"), "the same as --base")                                      //
      ("collectives", po::value(&o.collectives)->value_name("LIST"),
       "with files of NCCL runs only (no probe): fit NCCL's model to these collectives only, comma-separated "
       "(default: every one the files hold)")  //
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
      ("holdout", po::value(&o.holdout)->multitoken()->value_name("RUN.h5"),
       "run files the fit never sees (another run of the same sweep): the refit is judged on them against the "
       "probe-only topology and kept only when its median |error| there is lower; without it, it is judged "
       "on the sizes it leaves out (every other size)")  //
      ("keep-refit", po::bool_switch(&o.keep_refit),
       "write the refit even where it does not beat the probe-only topology on the held-out data (to study "
       "the fitted terms; the report still prints both and says so)")  //
      ("force", po::bool_switch(&o.force), "overwrite an existing --out file (never one of the inputs)");
  cli.positional("inputs", "FILE.h5...");
  if (!cli.parse(argc, argv)) return 0;
  if (o.inputs.empty()) throw Error("give at least one probe file: commsim calibrate portrait.h5 --out FILE.yaml");
  if (o.out.empty()) throw Error("--out FILE.yaml is required (the topology file to write)");
  check_files(o);
  if (std::filesystem::exists(o.out) && !o.force) throw Error(o.out + " exists; pass --force to overwrite it");
  if (o.threads < 0) throw Error("--threads " + std::to_string(o.threads) + ": give 1 or more (or leave it out)");
  CalibrationOptions opt;
  opt.threads = o.threads > 0 ? o.threads : usable_cores();
  opt.weighting = parse_weighting(o.weighting);
  opt.refine = o.refine;
  opt.keep_refit = o.keep_refit;

  if (!o.topology.empty() && !o.base.empty() && o.topology != o.base)
    throw Error("--topology and --base name the same thing: give one");
  if (!o.topology.empty()) o.base = o.topology;
  CalibrateFiles files = read_calibrate_files(o.inputs);
  if (files.probes.empty()) return calibrate_nccl_only(o, files);
  add_holdout_files(files, o.holdout);
  if (!o.holdout.empty() && files.run_files.empty())
    throw Error(
        "--holdout judges a refit on runs: give run files to fit as well (commsim calibrate portrait.h5 "
        "run1.h5 --holdout run2.h5)");
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
