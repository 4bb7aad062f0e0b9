#pragma once
// Runs a schedule in plain memory, all ranks in one process, no MPI: the way the generators are
// tested. Messages are delivered in posting order between each pair of ranks; a deadlock (no rank
// can progress while some have rounds left) throws Error.
#include <cstdint>
#include <vector>

#include "collectives/elements/dtype.h"
#include "model/schedule.h"

namespace commsim {

// inputs[r] holds rank r's Input (schedule.input_count elements of `dtype`, as raw bytes); returns
// every rank's Output.
std::vector<std::vector<std::uint8_t>> run_reference(const Schedule& schedule, DType dtype, RedOp op,
                                                     const std::vector<std::vector<std::uint8_t>>& inputs);

}  // namespace commsim
