#pragma once
// The whole calibration as one function: from the probe's measurements, measured collectives,
// forced NCCL runs and a base topology to the fitted topology, its YAML text, and what each step
// fitted and how well. Prints nothing; `commsim calibrate` reads the files, calls calibrate(),
// prints the result (runtime/output/calibrate_report.h) and writes the text.
//
// The steps, in order (each changes the topology the next starts from):
//  1. the tiers from the probe's ring shift and local loops (line fits per tier; for host ranks
//     the message library's protocol steps, the node's shared bandwidth, message overheads and
//     the rate of just-written data; for GPU topologies the cudaMemcpy tiers); the network's rate
//     by message size;
//  2. with measured collectives, gamma (refine "gamma") or every term of Param (refine "all")
//     fitted to them, each term within its physical range (fit_range), terms the points do not pin
//     down refused; judged on held-out data (CollectiveStep) and kept only when it beats the
//     probe-only topology there;
//  3. where the probe's GPU link matrix shows pairs slower than the others, the intra-node tier
//     of a GPU topology takes the slowest pair's rate;
//  4. the storage tiers the caller derived from the probe;
//  5. NCCL's constants (fit_nccl) from the forced NCCL runs;
//  6. the record of what the fit saw, the header and the comments per field, and the YAML text,
//     checked to read back to the fitted values.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/calibrate/calibrate.h"
#include "model/topology/topology.h"

namespace commsim {

// One probe measurement row (the fields of the probe file the fit uses).
struct ProbeSample {
  std::string kind;  // "ring-shift", "stream", "reduce", "memcpy", "peer", "h2d", "d2d", ...
  std::string tier;  // "intra-node", "network", "local", "gpu", "host-link"
  Bytes bytes = 0;
  double median_us = 0;  // per operation
  double min_us = 0;     // the fastest sample (0: not recorded)
};

// What the probe's GPU link matrix says about the slowest pair of GPUs (filled by the caller
// from the matrix; gpus < 2 when there is none).
struct LinkMatrixSummary {
  std::size_t gpus = 0;
  std::string slowest_path;        // "PIX", "NV12", ...: the slowest path type among the pairs
  bool pairs_differ = false;       // some pair has another path type than the slowest
  double slowest_pair_bw_Bps = 0;  // the lowest peer bandwidth measured on a slowest pair; inf: none
  int most_nvlinks = 0;            // the most NVLink links between any pair
};

// One probe file.
struct ProbeInput {
  std::vector<ProbeSample> rows;
  std::string cpu_model;
  int cpu_cores = 0;       // logical CPUs of rank 0's host
  Bytes memory_bytes = 0;  // rank 0's host memory (0: not recorded)
  std::size_t gpus = 0;    // GPUs visible to rank 0 (0: a host probe)
  int nodes = 1, ranks = 1, ranks_per_node = 1;
  LinkMatrixSummary links;
};

struct CalibrationInput {
  std::vector<ProbeInput> probes;  // at least one; the first describes the machine
  Topology base;                   // unmeasured parts are kept from it
  // Measured hand-written collectives (refine), priced by `predict` (the schedules that ran).
  std::vector<CollectiveSample> collectives;
  SamplePredictor predict = predict_closed_form;
  std::size_t run_files = 0;
  // Measured collectives of runs the fit must not see (`--holdout`), priced by `predict`: the refit
  // is judged on them (without any, on the sizes split_held_out leaves out).
  std::vector<CollectiveSample> holdout;
  std::vector<std::string> holdout_file_names;
  // NCCL's collectives: whether the runs have any; the forced runs (fit_nccl); the runs of
  // NCCL's own choice (Algorithm::Nccl), whose error before and after the fit is reported.
  bool any_nccl = false;
  std::vector<NcclSample> nccl_forced;
  std::vector<NcclSample> nccl_own;
  std::vector<std::string> run_file_names;  // for the comments of the nccl: rows
  // Storage tiers derived from the probe (the topology's storage:), and the YAML section that
  // describes them, appended to the written text.
  std::vector<StorageTier> storage;
  std::string storage_yaml;
};

struct CalibrationOptions {
  std::string name;                  // the written topology's name
  std::string out;                   // the file it will be written to (names it in error messages)
  std::string created;               // ISO 8601 UTC: the date in comments and the record
  std::vector<std::string> sources;  // the input files, in the header and the record
  FitWeighting weighting = FitWeighting::Robust;
  std::string refine = "auto";  // auto, none, gamma or all
  bool keep_refit = false;      // write the refit even where it does not beat the probe-only topology
  int threads = 1;
};

// ---- what each step found --------------------------------------------------------------------

// One tier's line fit t = alpha + bytes * beta, and where one line does not describe it.
struct TierFit {
  bool done = false;  // false: fewer than two sizes measured (the base's values kept)
  LineFit fit;
  bool held_out_done = false;  // with 4 sizes or more
  HeldOutCheck held_out;
  std::vector<TimedSize> samples;
  std::string source;  // "ring-shift intra-node, 24 sizes 8B..64MiB"
  // The sizes below 64 KiB and from 64 KiB fitted apart (each needs two sizes).
  bool halves_done = false;
  LineFit below_64k, from_64k;
  // The best split into two lines (6 sizes or more): where, and the two lines' residuals.
  Bytes split_bytes = 0;
  LineFit split_below, split_above;
  double split_median_abs_rel_residual = 0;
};

// The message library's terms inside a node (host ranks).
struct ProtocolStep {
  bool done = false;  // the protocol fit succeeded
  std::string error;  // why a step failed (the fit, or the stream's line fit)
  ProtocolFit fit;
  bool stream_done = false;  // a stream of two sizes >= 64 KiB
  BytesPerSecond pair_bw_Bps = 0, all_ranks_bw_Bps = 0;
  int ranks_per_node = 1;
  Seconds message_overhead_s = 0;  // fitted on sizes up to overhead_max_bytes (0: none)
  Bytes overhead_max_bytes = 0;
  bool inline_overhead_done = false;
  Seconds inline_overhead_s = 0;
};

// Just-written data inside a node (written_scale).
struct WrittenStep {
  bool done = false;
  std::vector<MessageScale> ratios;  // written_ratios
  std::vector<MessageScale> curve;   // the fitted written_scale
  std::string what;                  // "ring-shift-written vs ring-shift-control intra-node, 13 sizes"
  Seconds latency_s = 0;             // taken off both
};

struct TierStep {
  bool gpu = false;  // the GPU tiers (peer, h2d, d2d) instead of the host's (reduce, memcpy)
  TierFit intra, net, reduce, memcpy, peer, h2d, d2d;
  std::optional<ProtocolStep> protocol;  // host topologies with an intra-node fit
  std::optional<WrittenStep> written;
  std::optional<NetworkRateFit> network_rate;  // with a network fit
};

struct CollectiveStep {
  std::string refine;  // gamma or all
  ParamFit fit;
  Topology start;             // where the fit started (the values before)
  std::string protocol_note;  // lines on the protocol steps and curves decided here
  // The held-out check: fit on every other size and the largest, error on the sizes between.
  bool held_out_done = false;
  std::string held_out_error;  // when the check failed
  double held_out_median_abs_rel_error = 0;
  std::size_t held_out_points = 0;
  std::map<Bytes, double> held_out_by_size;  // median relative error per held-out size
  // The refit against the simpler model, the probe-only topology (the tiers as the probe measured
  // them), on data the refit did not see: the holdout runs when there are any, else the held-out
  // sizes (the refit then fitted on the other sizes). The refit is kept only when its median
  // |error| there is below the probe-only topology's; otherwise the probe-only topology is written.
  Topology probe_only;
  bool judged = false;    // false: nothing held out (fewer than 3 sizes, no holdout run)
  std::string judged_on;  // "run2.h5 (never fitted)", "the held-out sizes"
  std::size_t judged_points = 0;
  double probe_in_sample = 0;  // median |error| of the probe-only topology on the fitted points
  double refit_held_out = 0, probe_held_out = 0;
  bool kept = false;    // the refit is written
  std::string verdict;  // why the refit is or is not kept
};

struct LinkStep {
  bool changed = false;
  BytesPerSecond before_Bps = 0, after_Bps = 0;
  std::string slowest_path, how;
};

struct NcclStep {
  std::string error;  // not fitted: why
  NcclFit fit;
  std::vector<NcclSample> fitted;  // the samples fitted (empty when not fitted)
  std::size_t own_points = 0;      // runs of NCCL's own choice, and the model's error on them
  double own_error_before = 0, own_error_after = 0;
};

struct CalibrationResult {
  TierStep tiers;
  std::optional<CollectiveStep> collectives;  // when refine is not none
  LinkStep link;
  std::optional<NcclStep> nccl;  // when the runs have NCCL collectives
  Topology topology;             // the fitted topology, as written
  CalibrationInfo record;
  std::vector<std::string> header;
  std::vector<std::pair<std::string, std::string>> comments;  // per field, the last one kept
  std::string text;                                           // the YAML to write (the storage section appended)
  bool with_section = false;                                  // the text has a calibrated: section
};

// Runs the steps above. A host topology describes the probe's machine: ranks per node from its
// logical CPUs (at least the ranks the probe ran on a node), its memory and CPU model; every
// written value's comment names its source (the probe, the fit to runs, or the base preset).
// Throws Error when refine asks for collectives there are none of, for a bad refine value, when
// the base is a GPU topology and the probe measured no GPU (the file would hold the preset's GPU
// numbers, not this machine's), when a written value is outside what a file may hold
// (units.h: kMinBandwidth_Bps..kMaxBandwidth_Bps, times up to kMaxTime_s), or when the text does
// not read back to the fitted values.
CalibrationResult calibrate(const CalibrationInput& input, const CalibrationOptions& options);

}  // namespace commsim
