#pragma once
// The /plan group `commsim plan --out FILE.h5` adds to a results file (HDF5_SCHEMA.md, section
// "/plan"): the job, the options, the assumptions and warnings as attributes, and three tables:
// layouts (every ranked layout), collectives (of every ranked layout, by rank) and excluded.
#include <string>

#include "model/plan/plan.h"
#include "runtime/output/plan_report.h"

namespace commsim {

// Adds /plan to the results file at `path` (created beforehand, e.g. by ResultsFile::create).
// Writes every ranked layout of report.result, not only those shown, and report.warnings.
// Throws h5::Error on an HDF5 failure or when the file already has a /plan group.
void write_plan_group(const std::string& path, const PlanReport& report);

// The message sizes and node counts of the correctly measured points of a results file, for
// --calibrated-range. Throws Error when the file holds none.
CalibrationRange calibration_range_from_results(const std::string& path);

}  // namespace commsim
