#pragma once
// The files `commsim calibrate` reads, turned into calibrate()'s input (model/calibrate/procedure.h):
// probe files (runtime/h5/probe_file.h) and run files (runtime/h5/results_file.h).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/calibrate/procedure.h"
#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"

namespace commsim {

// The inputs as read, kept alive while calibrate() prices the schedules that ran.
struct CalibrateFiles {
  std::vector<ProbeData> probes;
  std::vector<std::string> run_files;
  std::vector<Point> points;                            // of every run file
  std::vector<std::string> run_topology_text;           // per point: the topology its run was predicted on
  std::vector<std::optional<std::uint64_t>> run_piece;  // per point: the host executor's piece in its run
  // The points from holdout_from on are of the holdout runs (add_holdout_files): the fit never
  // sees them; it is judged on them.
  std::size_t holdout_from = SIZE_MAX;
  std::vector<std::string> holdout_files;
  // NCCL's TUNING tables the runs kept (`commsim import` of a log that prints one), each once, in
  // file and run order (model/nccl/logged_table.h).
  std::vector<NcclTuningTable> nccl_tuning_tables;
};

// Reads every input: a file with a /probe group is a probe file, any other a run file. Throws
// Error when none is a probe file, unless every run is of NCCL's collectives (an imported
// nccl-tests log: calibrate then fits NCCL's model alone, fit_nccl_model).
CalibrateFiles read_calibrate_files(const std::vector<std::string>& inputs);

// The measured NCCL collectives (nccl and the forced nccl-* algorithms) of the run files.
std::vector<NcclSample> nccl_samples(const CalibrateFiles& files);
// The topology text the first NCCL run was predicted on ("" when none was stored).
std::string nccl_run_topology_text(const CalibrateFiles& files);

// Appends the points of `holdout` run files after every other point (CalibrateFiles::holdout_from).
// Throws Error when one of them is a probe file.
void add_holdout_files(CalibrateFiles& files, const std::vector<std::string>& holdout);

// calibrate()'s input from the files: the probe's rows and link matrix, the measured hand-written
// collectives (each priced by the schedule it ran, built once here and owned by the predictor), the forced and chosen
// NCCL runs, and the storage tiers (those of `base` with other names kept) with their YAML section.
CalibrationInput calibration_input(const CalibrateFiles& files, const Topology& base, const std::string& sources,
                                   const std::string& date);

}  // namespace commsim
