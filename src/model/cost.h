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

// True when closed_form() prices (collective, algorithm, protocol) on this topology for valid node
// counts: the algorithm applies to the collective and has a model (Mpi has none), a protocol is
// asked only of Ring/Tree/NcclRing/NcclTree/Nccl (Tree with a protocol: allreduce only, as NCCL's
// tree), and NCCL's model is asked only of a topology with `nccl` constants.
bool has_closed_form(const Topology& topo, Collective c, Algorithm a, Protocol p);

// Pipeline depth k (number of chunks) that the closed form of Algorithm::Tree uses: the k in [1,
// max(1, bytes / 4 KiB)] that minimises the closed form (allreduce, broadcast, reduce; 1 otherwise).
int tree_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes);
// The same for the pipelined chain of Algorithm::Ring broadcast and reduce (1 for other collectives).
int ring_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes);
// What to pass as ScheduleRequest::pipeline_chunk_bytes so that the schedule priced is the one the
// closed form assumes: Tree and Ring broadcast/reduce ceil(bytes / k); 0 (not pipelined) for
// everything else (Hierarchical broadcast/reduce are binomial trees, not pipelined).
Bytes pipeline_chunk_bytes(const Topology& topo, const CostQuery& q);

}  // namespace commsim
