#pragma once
// The console report of `commsim calibrate`: what each step of calibrate()
// (model/calibrate/procedure.h) fitted and how well, section by section.
#include <ostream>
#include <string>

#include "model/calibrate/procedure.h"

namespace commsim {

struct GpuLinkMatrix;

// What the report says besides the result: the inputs' counts, the base and the weighting's name,
// the probe's GPU link matrix (printed as it is), and whether storage was probed.
struct CalibrateReportContext {
  std::size_t probe_files = 0, run_files = 0;
  std::string base_name;
  std::string weighting;  // "robust", "relative", "absolute"
  const GpuLinkMatrix* links = nullptr;
  bool storage_probed = false;
};

// Everything up to the written file: the tiers, the collectives, the link matrix, storage and
// NCCL's constants.
void print_calibrate_report(std::ostream& out, const CalibrateReportContext& ctx, const CalibrationResult& r);
// The closing section, once the file is written.
void print_calibrate_written(std::ostream& out, const std::string& path, const CalibrationResult& r);

}  // namespace commsim
