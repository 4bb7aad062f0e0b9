#pragma once
// The one-screen summary of `commsim predict`: per collective, one line per node count with the
// fastest of our schedules per size band and the sizes where it changes, ring against tree, and
// NCCL's own pick by size.
#include <cstddef>
#include <ostream>
#include <vector>

#include "runtime/sweep/predictions.h"

namespace commsim {

// `rows`: how many rows the full table would have (said at the end).
void print_predict_summary(std::ostream& os, const PredictSettings& s, const std::vector<SweepCandidates>& priced,
                           std::size_t rows);

}  // namespace commsim
