#pragma once
// NCCL's ported model (model/nccl/, priced by model/cost/nccl_tuned.cc) fitted to measured runs of
// NCCL's collectives alone, with no probe: nccl-tests output imported with `commsim import`.
#include <string>
#include <vector>

#include "model/calibrate/calibrate.h"
#include "model/topology/topology.h"

namespace commsim {

// Two terms of the `nccl:` section, each with a physical bound:
//   bandwidth_scale in [0.05, 1]: the share of NCCL's per-channel bandwidths the machine reaches
//     (NCCL's graph speeds are already at or below the links' rates, so a fit never exceeds them);
//   latency_offset (s): added to every call's latency, bounded so that no sample's latency goes
//     below 0.
// The objective is the sum of |relative error| over the samples (robust to the odd noisy size):
// for each bandwidth_scale on a grid of 0.005 the best offset is one of the samples' own
// breakpoints (the offset that makes one sample exact), so the search is exact on that grid.
// A call still takes at least the host's launch time (nccl.launch_overhead; from_topology.h).
struct NcclModelSampleError {
  Bytes bytes = 0;
  Collective collective = Collective::AllReduce;
  double rel_error = 0;  // (predicted - measured) / measured
};

struct NcclModelFit {
  Topology topology;  // the input with nccl.bandwidth_scale and nccl.latency_offset set
  double bandwidth_scale = 1;
  Seconds latency_offset_s = 0;
  bool scale_at_bound = false, offset_at_bound = false;  // the fit stopped at a physical bound
  std::size_t samples = 0;
  double median_abs_rel_error_before = 0, median_abs_rel_error = 0;
  // Held-out check: fitted on every other distinct size of each collective (the first, third, ...),
  // judged on the sizes between; empty with fewer than 4 distinct sizes.
  std::vector<NcclModelSampleError> held_out;
};

// Throws Error when no sample is a NCCL collective of two ranks or more with a measured time.
// Samples of NCCL's own choice (nccl) and of forced algorithms (nccl-ring, nccl-nvls, ...) are
// both fitted, each priced as it ran.
NcclModelFit fit_nccl_model(const Topology& topology, const std::vector<NcclSample>& samples);

}  // namespace commsim
