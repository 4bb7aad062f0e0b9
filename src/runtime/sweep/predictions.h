#pragma once
// `commsim predict` as a library: the model's sweep (model/predict_sweep.h) handed to reporters as
// result rows. No MPI, no GPU.
#include <string>
#include <vector>

#include "collectives/elements/dtype.h"
#include "model/predict_sweep.h"
#include "runtime/output/reporter.h"

namespace commsim {

// The model's sweep plus the element type, for the element counts of the rows.
struct PredictSettings : PredictSweep {
  DType dtype = DType::Float32;
};

// Every point of the sweep to `out` (in collective, node count, size, candidate order), each with
// the predicted winner of its size; returns the crossover lines ("on 16 nodes (128 ranks),
// allreduce: tree beats ring below 2MiB"). A point the model refuses (a forced NCCL algorithm NCCL
// cannot run at that node count) is left out and said once per node count in `skipped`.
std::vector<std::string> predict_points(const PredictSettings& s, const std::vector<SweepCandidates>& priced,
                                        Reporter& out, std::vector<std::string>& skipped);

}  // namespace commsim
