#pragma once
// The machine portrait `commsim probe` measures, and its HDF5 group /probe (documented in
// HDF5_SCHEMA.md, section "/probe"). A probe file is an ordinary results file (root attributes,
// /runs/0000 with the hosts and libraries) plus this group; `commsim calibrate` reads it.
#include <string>
#include <vector>

#include "model/units.h"
#include "runtime/probe/nvml_topology.h"
#include "runtime/probe/storage.h"

namespace commsim {

// One timed operation at one size.
//  kind:   "pingpong"   half the round trip of one message between a pair of ranks (latency)
//          "stream"     a window of messages one way between a pair, time per message (bandwidth)
//          "ring-shift" every rank sends to the next and receives from the previous rank of its
//                       tier at once (one step of a ring collective; what calibrate fits)
//          "ring-shift-written"  the intra-node ring shift of data each rank has just written
//                       (before every operation, untimed): calibrate's written_scale
//          "ring-shift-control"  the same, each rank writing another buffer instead: what the
//                       written shift is compared with
//          "memcpy"     local copy of host memory on one rank
//          "reduce"     local dst += src on one rank (float32, the executors' reduction loop)
//          "d2d", "h2d", "d2h", "peer"  cudaMemcpy device-device, host-device (pinned),
//                       device-host, and between two GPUs
//  tier:   "intra-node" (ranks share a node), "network" (ranks on different nodes), "local",
//          "gpu", "host-link"
struct ProbeMeasurement {
  std::string kind;
  std::string tier;
  std::string memory = "host";  // "host", "device", "pinned"
  Bytes bytes = 0;
  int ranks = 0;       // ranks taking part
  int iters = 0;       // timed samples
  int reps = 1;        // operations per sample (small messages are repeated to beat timer noise)
  double min_us = 0, median_us = 0, mean_us = 0, p95_us = 0, max_us = 0;  // per operation
  double bw_gbps = 0;  // bytes / median time, GB/s (1e9)
};

struct ProbeData {
  int probe_version = 1;
  std::string portrait;  // the text printed, verbatim
  std::string cpu_model;
  int cpu_cores = 0;       // logical CPUs of rank 0's host
  int nodes = 1, ranks = 1, ranks_per_node = 1;  // ranks_per_node: the most on one node
  std::vector<std::string> hosts;  // distinct hostnames, in node order
  std::vector<std::string> gpu_names;  // GPUs visible to rank 0 (empty: none)
  std::string gpu_topology;  // `nvidia-smi topo -m`, "" when unavailable
  std::string intra_fabric;  // "shared-memory", "nvlink", "pcie", ...
  std::string network;       // what carried messages between nodes ("" with one node)
  std::string gpu_note;      // why there are no GPU measurements, when there are none
  std::vector<ProbeMeasurement> rows;
  // Optional parts (absent in files of older probes): the GPU link matrix of rank 0's host
  // (/probe/gpu_links; empty with a note when NVML was not found) and the storage tiers
  // measured with --storage (/probe/storage), one row per node, mode and operation.
  GpuLinkMatrix gpu_links;
  std::vector<StorageRow> storage;
};

// Adds /probe to an existing (finished) results file. Throws Error naming the file on failure or
// when the file already has a /probe group.
void write_probe_group(const std::string& path, const ProbeData& data);
// Reads /probe. Throws Error when the file has no /probe group ("not a probe file: run commsim
// probe --out FILE.h5").
ProbeData read_probe_group(const std::string& path);
// True when the file has a /probe group. Throws Error when the file cannot be opened.
bool has_probe_group(const std::string& path);

}  // namespace commsim
