#pragma once
// Closed-form alpha-beta-gamma costs of every (collective, algorithm), with the tier each message
// crosses (inside a node vs the network, the NICs of a node shared by its ranks), and NCCL-style
// protocol variants. Pure functions: the fast path of `commsim predict` and the cross-check of
// schedule pricing (model/price.h).
//
// Sizes follow nccl-tests: `bytes` is the per-rank buffer for allreduce, broadcast, reduce and
// sendrecv, and the whole gathered/scattered buffer for allgather, reducescatter and alltoall.
#include "model/collective.h"
#include "model/topology.h"
#include "model/units.h"

namespace commsim {

struct CostQuery {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;  // hand-written, or NcclRing / NcclTree / Nccl (NCCL's own model)
  Protocol protocol = Protocol::None;     // None: plain alpha-beta-gamma; LL/LL128/Simple: NCCL protocol variant
  int nodes = 1;
  int ranks_per_node = 1;
  Bytes bytes = 0;
};

// The predicted time and its parts (time_s = latency_s + bandwidth_s + reduction_s).
struct Cost {
  Seconds time_s = 0;
  Seconds latency_s = 0;    // alpha terms
  Seconds bandwidth_s = 0;  // beta terms
  Seconds reduction_s = 0;  // gamma terms
  Protocol protocol = Protocol::None;  // the protocol priced (for Algorithm::Nccl: the one NCCL's model picks)
  Algorithm algorithm = Algorithm::Ring;  // for Algorithm::Nccl: the algorithm NCCL's model picks
};

// Throws Error when the algorithm does not apply to the collective, the rank count is invalid, or a
// protocol is asked for on a topology without NCCL constants.
Cost closed_form(const Topology& topo, const CostQuery& q);

}  // namespace commsim
