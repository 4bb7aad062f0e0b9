#pragma once
// Closed-form alpha-beta-gamma costs of every (collective, algorithm), with the tier each message
// crosses (inside a node vs the network, the NICs of a node shared by its ranks), and NCCL-style
// protocol variants. Pure functions: the fast path of `commsim predict` and the cross-check of
// schedule pricing (model/price.h). The closed forms live one file per algorithm family beside this
// header (closed_forms.h lists them); the table of model/algorithms.h says which applies where.
//
// Sizes follow nccl-tests: `bytes` is the per-rank buffer for allreduce, broadcast, reduce and
// sendrecv, and the whole gathered/scattered buffer for allgather, reducescatter and alltoall.
#include <string>

#include "model/algorithms.h"  // is_pipelined, takes_channels
#include "model/collective.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {

struct CostQuery {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;  // hand-written, or Nccl / a forced NCCL algorithm (NCCL's own model)
  Protocol protocol = Protocol::None;     // None: plain alpha-beta-gamma; LL/LL128/Simple: NCCL protocol variant
  int nodes = 1;
  int ranks_per_node = 1;
  Bytes bytes = 0;
  // Channels of ring, tree and hierarchical allreduce/allgather (ScheduleRequest::channels in
  // collectives/generators.h), 1 to kMaxChannels; 0: the topology's default (default_channels).
  // Other algorithms have one.
  int channels = 0;
  // The NCCL release whose tuning model prices NCCL's own collectives ("2.21", "2.28.9"; see
  // nccl::find_version); empty: the topology's nccl.version, else the newest ported release.
  std::string nccl_version = {};
};

// The channels NCCL runs a ring or tree with on `nodes` nodes of this topology, which
// CostQuery::channels = 0 stands for: on a GPU topology across nodes, two per NIC of a node. NCCL's
// topology search finds as many concurrent rings as the node has NICs on an NVLink node (each
// entering and leaving the node through a NIC; NVIDIA/nccl issue #412), then doubles the channel
// count (ncclTopoPostset; NVIDIA/nccl issue #524): 16 on a DGX A100 or H100 with 8 NICs. One
// channel on one node (every channel's ring is then a rotation of the same ring, over the same
// NVLink links, and prices the same), and on host topologies (MPI and the host executor run one
// ring).
int default_channels(const Topology& topo, int nodes);
// The network bandwidth of a node whose ranks run on `ranks_per_node` of its GPUs: all of
// node_bw_Bps() when they use every GPU (and on host topologies); otherwise only the NICs next to
// their GPUs, ceil(nics x ranks_per_node / gpus_per_node) of them, as each GPU's traffic leaves
// through its nearest NIC (NCCL's model does the same: model/nccl/from_topology.h). The closed
// forms and schedule pricing (model/price.h) both use it.
BytesPerSecond node_network_bw_Bps(const Topology& topo, int ranks_per_node);
// The channels a query prices: 1 for the algorithms that take no channel count (takes_channels in
// model/algorithms.h), q.channels, or the default. Throws Error when q.channels is out of range.
int channels_for(const Topology& topo, const CostQuery& q);

// The predicted time and its parts (time_s = latency_s + bandwidth_s + reduction_s + copy_s).
struct Cost {
  Seconds time_s = 0;
  Seconds latency_s = 0;                  // alpha terms
  Seconds bandwidth_s = 0;                // beta terms
  Seconds reduction_s = 0;                // gamma terms
  Seconds copy_s = 0;                     // local copies on the critical path, at the memory bandwidth
  Protocol protocol = Protocol::None;     // the protocol priced (for Algorithm::Nccl: the one NCCL's model picks)
  Algorithm algorithm = Algorithm::Ring;  // for Algorithm::Nccl: the algorithm NCCL's model picks
};

// Throws Error when the algorithm does not apply to the collective, the rank count is invalid, or a
// protocol is asked for on a topology without NCCL constants.
Cost closed_form(const Topology& topo, const CostQuery& q);

// True when closed_form() prices (collective, algorithm, protocol) on this topology for valid node
// counts: the algorithm applies to the collective and has a model (Mpi has none), a protocol is
// asked only of Ring/Tree and NCCL's algorithms (Tree with a protocol: allreduce only, as NCCL's
// tree), and NCCL's model is asked only of a GPU topology with `nccl` constants. Whether NCCL can
// run a forced algorithm (NVLS, PAT, CollNet) depends on the node count too: closed_form() throws
// Error saying why when it cannot.
bool has_closed_form(const Topology& topo, Collective c, Algorithm a, Protocol p);

// Where the nodes cut the double binary tree (src/collectives/tree.cc) of `nodes` nodes of
// `ranks_per_node` ranks, block placement, root 0, counted on the trees themselves and remembered
// per (nodes, ranks_per_node, rooted); `rooted`: broadcast and reduce, otherwise allreduce.
//  - flows: the most messages one node sends, or receives, across the network in a step of the
//    steady state (every tree edge between two nodes carries one half-chunk a step, both ways in
//    allreduce, one way in broadcast and reduce). Allreduce: 2, 3, then 4 from 4 nodes with one
//    rank per node; 4, 5, then 6 with 2, 4 or 8; more where the ranks per node are not a power of
//    two. Broadcast and reduce: 2 and 3;
//  - levels: the most edges between nodes on a path from a root to a leaf: ceil(lg nodes) with
//    one rank per node, one more with 2, 4 or 8;
//  - height: the taller tree's height (ceil(lg p) for allreduce).
struct TreeCut {
  double flows = 1;
  long long levels = 0, height = 0;
};
TreeCut tree_cut(long long nodes, long long ranks_per_node, bool rooted);

// Pipeline depth k (number of chunks) that the closed form of Algorithm::Tree uses: the k in [1,
// max(1, bytes / 4 KiB)] that minimises the closed form (allreduce, broadcast, reduce; 1 otherwise).
// With channels (0: the default), the pipeline of one channel's part of the bytes.
int tree_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes,
                         int channels = 1);
// The same for the pipelined chain of Algorithm::Ring broadcast and reduce (1 for other collectives).
int ring_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes);
// What to pass as ScheduleRequest::pipeline_chunk_bytes so that the schedule priced is the one the
// closed form assumes: Tree and Ring broadcast/reduce ceil(ceil(bytes / channels) / k) (channels:
// channels_for(topo, q)); 0 (not pipelined) for everything else (Hierarchical broadcast/reduce are
// binomial trees, not pipelined).
Bytes pipeline_chunk_bytes(const Topology& topo, const CostQuery& q);

}  // namespace commsim
