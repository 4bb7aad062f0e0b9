#pragma once
// What `run --resume` checks before it appends to a file (ResultsFile::resume).
#include <string>

#include "runtime/output/run_context.h"

namespace commsim {

// Throws Error naming the difference unless `path` is a results file of the same job as `ctx`: not
// a probe file, every point readable (read_results), and every run measured with the same backend,
// transport, piece size, topology (name and text) and, where the file records them, element types
// and reductions (RunContext::measure_settings) as ctx. Iterations and warm-up may differ (each row
// records its own `iters`: a preempted sweep may be finished with fewer).
void check_resumable(const std::string& path, const RunContext& ctx);

}  // namespace commsim
