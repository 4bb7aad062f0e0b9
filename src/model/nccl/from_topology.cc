// The topology's `nccl:` section and tiers as NCCL's model sees them (from_topology.h).
#include "model/nccl/from_topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "model/error.h"
#include "model/topology/topology.h"

namespace commsim::nccl {
namespace {

// Compute capability by product name: the first entry whose text device.name contains (so "A100"
// before "A10", and the Blackwell names before their Hopper look-alikes).
constexpr std::pair<std::string_view, int> kComputeCapabilities[] = {
    {"GB300", 103}, {"B300", 103}, {"GB200", 100}, {"B200", 100}, {"B100", 100}, {"H100", 90}, {"H200", 90},
    {"H800", 90},   {"H20", 90},   {"A100", 80},   {"A800", 80},  {"A30", 80},   {"4090", 89}, {"L40", 89},
    {"L4", 89},     {"A10", 86},   {"A40", 86},    {"3090", 86},  {"A6000", 86}, {"V100", 70}};

int default_nvlinks(int compCap) {
  // NVLink links per GPU: NVLink 4/5 18 (H100, B200 datasheets), NVLink 3 12 on A100, NVLink 2
  // 6 on V100, 4 on the other Ampere parts with NVLink bridges (A40, A6000).
  if (compCap >= 90) return 18;
  if (compCap == 80) return 12;
  if (compCap >= 80) return 4;
  return 6;
}

int default_pcie_gen(int compCap) {
  return compCap >= 90 ? 5 : compCap >= 80 ? 4 : 3;
}

CpuArch cpu_arch(const std::string& arch) {
  return arch == "arm" ? kCpuArm : arch == "power" ? kCpuPower : kCpuX86;
}

// NCCL reads the vendor only to find AMD (its own llMaxBws row and net overhead); any other
// vendor reads like Intel.
CpuVendor cpu_vendor(const std::string& vendor) {
  return vendor == "amd" ? kVendorAmd : vendor == "zhaoxin" ? kVendorZhaoxin : kVendorIntel;
}

int divup(int a, int b) {
  return (a + b - 1) / b;
}

void apply_graph(const NcclGraphOverride& o, Graph& g) {
  if (!o.given()) return;
  g.nChannels = o.channels;
  g.bwIntra = static_cast<float>(o.bw_intra_Bps / 1e9);
  g.bwInter = static_cast<float>(o.bw_inter_Bps / 1e9);
}

}  // namespace

const Version& topology_version(const Topology& topology) {
  const std::string& v = topology.nccl.machine.version;
  return v.empty() ? newest_version() : find_version(v);
}

int topology_compute_capability(const Topology& topology) {
  if (topology.nccl.machine.compute_capability > 0) return topology.nccl.machine.compute_capability;
  for (auto [name, cc] : kComputeCapabilities)
    if (topology.device_name.find(name) != std::string::npos) return cc;
  return 90;
}

Machine nccl_machine(const Topology& t, int nodes, int ranks_per_node) {
  if (!t.gpu) throw Error(fmt::format("{}: NCCL's model needs GPU nodes (gpus_per_node)", t.name));
  if (nodes < 1 || ranks_per_node < 1 || ranks_per_node > t.ranks_per_node)
    throw Error(fmt::format("{}: NCCL's model of {} nodes x {} ranks (the node has {} GPUs)", t.name, nodes,
                            ranks_per_node, t.ranks_per_node));
  const NcclMachine& n = t.nccl.machine;
  // Hosts of one NVLink domain are one NCCL node (init.cc: an MNNVL clique counts as one node).
  const int domain_hosts = std::max(1, n.nvlink_domain_gpus / t.ranks_per_node);
  const int domains = divup(nodes, domain_hosts);
  const int hosts = divup(nodes, domains);  // hosts per domain in use (the last may have fewer)

  Machine m;
  m.compCap = topology_compute_capability(t);
  m.gpusPerNode = hosts * t.ranks_per_node;
  m.gpusInUse = hosts * ranks_per_node;
  m.nNodes = domains;
  const bool nvlink = t.intra.fabric == "nvswitch" || t.intra.fabric == "nvlink-mesh";
  m.nvswitch = t.intra.fabric == "nvswitch";
  m.multicast = n.nvls.value_or(m.nvswitch && m.compCap >= 90);
  m.nvlinksPerGpu = n.nvlinks_per_gpu >= 0 ? n.nvlinks_per_gpu : nvlink ? default_nvlinks(m.compCap) : 0;
  m.nvlinkGBps = n.nvlink_bw_Bps / 1e9;
  m.pcieGen = n.pcie_gen > 0 ? n.pcie_gen : default_pcie_gen(m.compCap);
  m.pcieWidth = n.pcie_width;
  m.nicsPerNode = hosts * t.network.nics_per_node;
  m.nicGBps = (n.nic_speed_Bps > 0 ? n.nic_speed_Bps : t.network.nic_bw_Bps) / 1e9;
  m.cpuArch = cpu_arch(n.cpu_arch);
  m.cpuVendor = cpu_vendor(n.cpu_vendor);
  return m;
}

double host_call_us(const Topology& t) {
  const NcclMachine& n = t.nccl.machine;
  const Seconds given = n.cuda_graphs ? n.graph_launch_s : n.launch_s;
  const double per_gpu_us = given >= 0 ? given * 1e6 : n.cuda_graphs ? kDefaultGraphLaunchUs : kDefaultLaunchUs;
  return std::max(1, n.gpus_per_thread) * per_gpu_us;
}

System nccl_system(const Topology& t, int nodes, int ranks_per_node, const Version& version) {
  const Machine m = nccl_machine(t, nodes, ranks_per_node);
  System s = make_system(m, version);
  const NcclMachine& n = t.nccl.machine;
  apply_graph(n.ring, s.graphs[kRing]);
  apply_graph(n.tree, s.graphs[kTree]);
  // NVLS runs where make_system found it (NVSwitch, 9.0 or newer, multicast); a stated NVLS graph
  // replaces its channels and speeds only.
  apply_graph(n.nvls_graph, s.graphs[kNvls]);
  for (Graph& g : s.graphs) {
    g.latencyInter = static_cast<float>(n.net_latency_s * 1e6);
    g.bwIntra *= static_cast<float>(n.bandwidth_scale);
    g.bwInter *= static_cast<float>(n.bandwidth_scale);
  }
  if (n.collnet) {
    s.collNet.enabled = true;
    s.collNet.headsNum = n.collnet_heads > 0 ? n.collnet_heads : std::max(1, m.nicsPerNode);
  }
  s.masks = parse_enable_masks(n.algo, n.proto, version);
  return s;
}

}  // namespace commsim::nccl
