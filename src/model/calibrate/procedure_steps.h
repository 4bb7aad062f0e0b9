#pragma once
// The later steps of calibrate() (model/calibrate/procedure.h), internal to model/calibrate.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/calibrate/procedure.h"

namespace commsim::calibration {

// One comment per field of the written topology: (dotted field, comment).
using FieldComments = std::vector<std::pair<std::string, std::string>>;

// "fitted YYYY-MM-DD from WHAT".
std::string fitted_from(const CalibrationOptions& opt, const std::string& what);

// Step 2: `refine` (gamma or all) fitted to the collectives, starting from `topo`; `topo` becomes
// the fitted topology. `candidates` (eager limit, inline limit; 0: none) are the probe's faint
// protocol steps, `other` its other step below the eager limit (other_inline_bytes > 0).
CollectiveStep fit_collectives(Topology& topo, FieldComments& comments, const CalibrationInput& in,
                               const CalibrationOptions& opt, const std::string& refine,
                               std::pair<Bytes, Bytes> candidates, const ProtocolFit& other);
// Step 3: the slowest GPU pair of the link matrix, for GPU topologies whose pairs differ.
LinkStep apply_link_summary(const LinkMatrixSummary& m, Topology& topo, FieldComments& comments);
// Step 5: NCCL's constants; none when the runs have no NCCL collectives.
std::optional<NcclStep> fit_nccl_constants(const CalibrationInput& in, const CalibrationOptions& opt, Topology& topo,
                                           FieldComments& comments);
// Step 6: the record, description, header and text of r.topology (with r.comments), checked to
// read back. Throws Error when it does not.
void finish_calibration(const CalibrationInput& in, const CalibrationOptions& opt, CalibrationResult& r);

}  // namespace commsim::calibration
