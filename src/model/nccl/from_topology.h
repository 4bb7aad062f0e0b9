#pragma once
// NCCL's model of a cluster described by a topology file: the `nccl:` section's machine fields
// (NcclMachine in model/topology/topology.h) and the tiers become a Machine for make_system(),
// and the section's overrides (GRAPH values, the NET latency, SHARP, NCCL_ALGO / NCCL_PROTO) are
// applied to the System it returns.
//
// Defaults, for a topology whose `nccl:` section leaves a field out (or has no section):
//  - compute capability: from device.name (A100 8.0, H100/H200 9.0, B200/GB200 10.0, B300/GB300
//    10.3, RTX 4090/L40 8.9, ...), else 9.0;
//  - NVLink: 18 links per GPU on Hopper and Blackwell, 12 on A100 (NVLink 3), 6 on V100, 4 on
//    other Ampere parts, when intra_node.fabric is nvswitch or nvlink-mesh; none otherwise (PCIe);
//    NCCL's per-link rate for the architecture;
//  - NVLS: on an nvswitch node with compute capability 9.0 or newer;
//  - the NVLink domain is one host (gpus_per_node);
//  - PCIe Gen5 x16 on Hopper and newer, Gen4 x16 on Ampere and Ada, Gen3 x16 before;
//  - NICs: network.nics_per_node at network.nic_bandwidth each; no NET latency; CollNet off;
//  - CPU x86, Intel; NCCL_ALGO and NCCL_PROTO unset.
#include <string>

#include "model/nccl/graphs.h"
#include "model/nccl/system.h"
#include "model/nccl/versions.h"

namespace commsim {
struct Topology;
}

namespace commsim::nccl {

// The release the topology names (nccl.version), or the newest ported one.
const Version& topology_version(const Topology& topology);

// The compute capability (x10) NCCL would see on the topology's GPUs: nccl.compute_capability,
// else guessed from device.name, else 90.
int topology_compute_capability(const Topology& topology);

// The Machine of `nodes` hosts with `ranks_per_node` ranks each (one GPU per rank). Hosts of one
// NVLink domain (nccl.nvlink_domain larger than gpus_per_node) form one NCCL node; a partly used
// host gives its ranks only the NICs next to their GPUs. Throws commsim::Error for a host-rank
// topology, more ranks per node than GPUs, or fewer than one node.
Machine nccl_machine(const Topology& topology, int nodes, int ranks_per_node);

// make_system() on nccl_machine(), then the overrides: nccl.graphs replaces the ring, tree and
// NVLS graphs (channels and per-channel bandwidth; NVLS stays off where make_system finds no
// NVLS, and the tree graph also serves PAT, the NVLS graph NVLS_TREE); nccl.net_latency becomes every graph's
// latencyInter; nccl.collnet enables CollNet with its heads (AllReduce only: the plugin's
// AllGather / ReduceScatter features stay off); nccl.algo / nccl.proto become the
// enable masks.
System nccl_system(const Topology& topology, int nodes, int ranks_per_node, const Version& version);

// The host's cost of one NCCL call per GPU it launches on, which NCCL's tuning model leaves out
// (its latencies are the GPU's): ncclGroupEnd's enqueue and one kernel launch per GPU. A CUDA
// kernel launch costs the host a few microseconds (NVIDIA, "Getting Started with CUDA Graphs",
// developer.nvidia.com/blog/cuda-graphs/: 3.8 us per kernel back to back from a stream, 3.4 us
// from a graph, on V100 and x86) and NCCL's enqueue adds its plan of the call to it.
inline constexpr double kDefaultLaunchUs = 5.0;       // nccl.launch_overhead unset
inline constexpr double kDefaultGraphLaunchUs = 3.5;  // nccl.graph_launch_overhead unset

// The host time of one call of the measured run: nccl.gpus_per_thread x the launch overhead (the
// graph one with nccl.cuda_graphs). Back-to-back calls (nccl-tests' timing) overlap the host's
// launches with the GPUs' work, so a call takes the longer of the two: the host's time only shows
// when one thread drives several GPUs (nccl-tests -g N) or NCCL's own time is below it.
double host_call_us(const Topology& topology);

}  // namespace commsim::nccl
