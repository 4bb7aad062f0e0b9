// NCCL's System built from topology files (model/nccl/from_topology.h): the presets give the
// graph values of src/model/nccl/NCCL_MODEL.md section 2.8, the defaults describe a topology
// without the new `nccl:` fields, and the section's overrides reach the System.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/error.h"
#include "model/nccl/from_topology.h"
#include "model/nccl/tuning.h"
#include "model/topology/topology.h"

namespace commsim::nccl {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

Topology preset(const char* name) {
  return load_topology(resolve_topology_path(name));
}

System system_of(const char* name, int nodes, int ranks_per_node = 0) {
  Topology t = preset(name);
  return nccl_system(t, nodes, ranks_per_node > 0 ? ranks_per_node : t.ranks_per_node, topology_version(t));
}

void expect_graph(const System& s, Algorithm a, int channels, float bw_intra, float bw_inter) {
  EXPECT_EQ(s.graphs[a].nChannels, channels) << kAlgorithmNames[a];
  EXPECT_FLOAT_EQ(s.graphs[a].bwIntra, bw_intra) << kAlgorithmNames[a];
  EXPECT_FLOAT_EQ(s.graphs[a].bwInter, bw_inter) << kAlgorithmNames[a];
}

// A minimal GPU topology: 8 GPUs on NVSwitch, 8 NICs, no `nccl:` section unless `nccl` is given.
Topology minimal(const std::string& nccl = "", const std::string& device = "NVIDIA H100 80GB HBM3") {
  std::string text = "name: t\ngpus_per_node: 8\ndevice: { name: \"" + device +
                     "\", memory_bandwidth: 3 TB/s }\n"
                     "intra_node: { fabric: nvswitch, bandwidth: 370 GB/s, latency: 2 us }\n"
                     "host_link: { bandwidth: 64 GB/s, latency: 1 us }\n"
                     "network: { kind: infiniband, nics_per_node: 8, nic_bandwidth: 50 GB/s, latency: 5 us }\n" +
                     nccl;
  return parse_topology(text, "t.yaml");
}

TEST(NcclFromTopology, DgxH100GraphsAsNcclPrintsThem) {
  System one = system_of("dgx-h100", 1);
  expect_graph(one, kRing, 12, 30, 30);
  expect_graph(one, kNvls, 8, 40, 60);
  EXPECT_TRUE(one.nvlsSupport);
  EXPECT_EQ(one.nvlsChannels, 16);
  EXPECT_EQ(one.cpuVendor, kVendorIntel);
  System four = system_of("dgx-h100", 4);
  expect_graph(four, kRing, 8, 48, 48);
  EXPECT_EQ(four.nNodes, 4);
  EXPECT_EQ(four.nRanks, 32);
  // H200 is the same Hopper node.
  expect_graph(system_of("h200-node", 1), kRing, 12, 30, 30);
  expect_graph(system_of("h200-node", 1), kNvls, 8, 40, 60);
}

TEST(NcclFromTopology, DgxA100HasNoNvls) {
  System one = system_of("dgx-a100", 1);
  expect_graph(one, kRing, 12, 20, 20);
  EXPECT_FALSE(one.nvlsSupport);
  EXPECT_EQ(one.cpuVendor, kVendorAmd);
  expect_graph(system_of("dgx-a100", 2), kRing, 8, 24, 24);
}

TEST(NcclFromTopology, Gb200Nvl72IsOneNvlinkDomain) {
  System s = system_of("gb200-nvl72", 1);
  expect_graph(s, kRing, 16, 45, 45);
  expect_graph(s, kNvls, 32, 20, 40);
  EXPECT_EQ(s.nNodes, 1);
  EXPECT_EQ(s.cpuArch, kCpuArm);
  EXPECT_EQ(s.minCompCap, 100);
}

TEST(NcclFromTopology, Gb300HostsOfOneRackAreOneNode) {
  // 2 hosts x 4 GPUs inside one rack: one NVLink domain of 8 GPUs; 32 hosts are two racks.
  System two = system_of("gb300-nvl72", 2);
  EXPECT_EQ(two.nNodes, 1);
  EXPECT_EQ(two.nRanks, 8);
  EXPECT_EQ(two.minCompCap, 103);
  EXPECT_TRUE(two.nvlsSupport);
  System racks = system_of("gb300-nvl72", 32);
  EXPECT_EQ(racks.nNodes, 2);
  EXPECT_EQ(racks.nRanks, 128);
}

TEST(NcclFromTopology, DgxH100OneNodePicksRingLLThenNvls) {
  // NCCL_MODEL.md 2.9 and nccl-tests #309: Ring/LL up to 1 MiB, NVLS/Simple from 2 MiB.
  Topology t = preset("dgx-h100");
  const Version& v = topology_version(t);
  System s = nccl_system(t, 1, 8, v);
  TuningTable table = tune_model(s, v);
  for (std::size_t bytes : {std::size_t{8}, 64 * KiB, 1 * MiB}) {
    Call call;
    call.nBytes = bytes;
    Choice c = choose(table, s, call);
    EXPECT_EQ(c.algorithm, kRing) << bytes;
    EXPECT_EQ(c.protocol, kLL) << bytes;
  }
  for (std::size_t bytes : {2 * MiB, 256 * MiB}) {
    Call call;
    call.nBytes = bytes;
    Choice c = choose(table, s, call);
    EXPECT_EQ(c.algorithm, kNvls) << bytes;
    EXPECT_EQ(c.protocol, kSimple) << bytes;
  }
}

TEST(NcclFromTopology, OneGpuPerNodeGetsOneNic) {
  // --gpus-per-node 1 on an 8-NIC node: the rank's own NIC, not all eight.
  System s = system_of("dgx-h100", 2, 1);
  const Graph& ring = s.graphs[kRing];
  EXPECT_EQ(s.nRanks, 2);
  EXPECT_GT(ring.nChannels * ring.bwInter, 40.0f);
  EXPECT_LE(ring.nChannels * ring.bwInter, 50.0f);
  // Two ranks per node get two NICs' worth.
  System two = system_of("dgx-h100", 2, 2);
  EXPECT_GT(two.graphs[kRing].nChannels * two.graphs[kRing].bwInter, 80.0f);
}

TEST(NcclFromTopology, NewPresetsState) {
  System p4d = system_of("aws-p4d", 2);
  EXPECT_FLOAT_EQ(p4d.graphs[kRing].latencyInter, 20.0f);  // EFA's network step
  EXPECT_FALSE(p4d.nvlsSupport);
  System polaris = system_of("polaris", 2);
  EXPECT_EQ(polaris.nvsCount, 0);
  EXPECT_EQ(polaris.cpuVendor, kVendorAmd);
  EXPECT_EQ(polaris.nRanks, 8);
  System oci = system_of("oci-a100", 1);
  expect_graph(oci, kRing, 12, 20, 20);
  // The consumer node: PCIe only, Ada.
  System pcie = system_of("consumer-pcie-4090", 1);
  EXPECT_EQ(pcie.minCompCap, 89);
  EXPECT_EQ(pcie.nvsCount, 0);
  EXPECT_EQ(pcie.graphs[kRing].typeIntra, kPathPhb);
}

TEST(NcclFromTopology, DefaultsWithoutTheSection) {
  Topology t = minimal();
  EXPECT_FALSE(t.nccl.present);
  EXPECT_EQ(topology_compute_capability(t), 90);
  EXPECT_EQ(&topology_version(t), &newest_version());
  System s = nccl_system(t, 1, 8, newest_version());
  expect_graph(s, kRing, 12, 30, 30);  // 18 NVLink 4 links, as on DGX H100
  EXPECT_TRUE(s.nvlsSupport);
  EXPECT_EQ(topology_compute_capability(minimal("", "NVIDIA A100-SXM4-80GB")), 80);
  System a100 = nccl_system(minimal("", "NVIDIA A100-SXM4-80GB"), 1, 8, newest_version());
  expect_graph(a100, kRing, 12, 20, 20);
  EXPECT_FALSE(a100.nvlsSupport);
  EXPECT_EQ(topology_compute_capability(minimal("", "Some GPU")), 90);
}

TEST(NcclFromTopology, OverridesReachTheSystem) {
  Topology t = minimal(
      "nccl:\n"
      "  version: \"2.21\"\n"
      "  compute_capability: 9.0\n"
      "  nvls: no\n"
      "  collnet: { enabled: yes, heads: 4 }\n"
      "  cpu: { arch: x86, vendor: amd }\n"
      "  net_latency: 7 us\n"
      "  graphs:\n"
      "    ring: { channels: 16, bw_intra: 24 GB/s, bw_inter: 12 GB/s }\n"
      "    tree: { channels: 4, bw_intra: 10 GB/s }\n"
      "  algo: ring\n"
      "  proto: ^LL128\n");
  const NcclMachine& m = t.nccl.machine;
  EXPECT_FALSE(t.nccl.present);  // no latency tables: the closed forms see no NCCL constants
  EXPECT_EQ(m.version, "2.21");
  const Version& v = topology_version(t);
  EXPECT_EQ(v.minor, 21);
  System s = nccl_system(t, 2, 8, v);
  expect_graph(s, kRing, 16, 24, 12);
  expect_graph(s, kTree, 4, 10, 10);
  EXPECT_FALSE(s.nvlsSupport);
  EXPECT_TRUE(s.collNet.enabled);
  EXPECT_EQ(s.collNet.headsNum, 4);
  EXPECT_EQ(s.cpuVendor, kVendorAmd);
  EXPECT_FLOAT_EQ(s.graphs[kTree].latencyInter, 7.0f);
  EXPECT_EQ(s.masks.algo[kAllReduce][kTree], 0);
  EXPECT_EQ(s.masks.algo[kAllReduce][kRing], 1);
  EXPECT_EQ(s.masks.proto[kAllReduce][kLL128], 0);
}

// What the writer (topology/write_yaml.cc, used by `commsim calibrate`) writes of the machine
// fields reads back the same, so a calibrated file keeps what NCCL needs.
void expect_same_machine(const NcclMachine& a, const NcclMachine& b, const std::string& what) {
  EXPECT_EQ(a.version, b.version) << what;
  EXPECT_EQ(a.compute_capability, b.compute_capability) << what;
  EXPECT_EQ(a.nvlinks_per_gpu, b.nvlinks_per_gpu) << what;
  EXPECT_DOUBLE_EQ(a.nvlink_bw_Bps, b.nvlink_bw_Bps) << what;
  EXPECT_EQ(a.nvls, b.nvls) << what;
  EXPECT_EQ(a.nvlink_domain_gpus, b.nvlink_domain_gpus) << what;
  EXPECT_EQ(a.collnet, b.collnet) << what;
  EXPECT_EQ(a.collnet_heads, b.collnet_heads) << what;
  EXPECT_EQ(a.cpu_arch, b.cpu_arch) << what;
  EXPECT_EQ(a.cpu_vendor, b.cpu_vendor) << what;
  EXPECT_EQ(a.pcie_gen, b.pcie_gen) << what;
  EXPECT_EQ(a.pcie_width, b.pcie_width) << what;
  EXPECT_NEAR(a.nic_speed_Bps, b.nic_speed_Bps, 1e-6 * a.nic_speed_Bps) << what;
  EXPECT_NEAR(a.net_latency_s, b.net_latency_s, 1e-12) << what;
  EXPECT_NEAR(a.launch_s, b.launch_s, 1e-12) << what;
  EXPECT_NEAR(a.graph_launch_s, b.graph_launch_s, 1e-12) << what;
  EXPECT_EQ(a.gpus_per_thread, b.gpus_per_thread) << what;
  EXPECT_EQ(a.cuda_graphs, b.cuda_graphs) << what;
  EXPECT_NEAR(a.bandwidth_scale, b.bandwidth_scale, 1e-9) << what;
  EXPECT_NEAR(a.latency_offset_s, b.latency_offset_s, 1e-12) << what;
  for (auto [x, y] : {std::pair{&a.ring, &b.ring}, {&a.tree, &b.tree}, {&a.nvls_graph, &b.nvls_graph}}) {
    EXPECT_EQ(x->channels, y->channels) << what;
    EXPECT_NEAR(x->bw_intra_Bps, y->bw_intra_Bps, 1e-6 * x->bw_intra_Bps) << what;
    EXPECT_NEAR(x->bw_inter_Bps, y->bw_inter_Bps, 1e-6 * x->bw_inter_Bps) << what;
  }
  EXPECT_EQ(a.algo, b.algo) << what;
  EXPECT_EQ(a.proto, b.proto) << what;
}

TEST(NcclFromTopology, WrittenMachineFieldsReadBack) {
  std::vector<std::pair<std::string, Topology>> cases;
  for (const char* name : {"dgx-h100", "h200-node", "dgx-a100", "gb200-nvl72", "consumer-pcie-4090", "aws-p4d",
                           "oci-a100", "polaris", "gb300-nvl72"})
    cases.emplace_back(name, preset(name));
  cases.emplace_back("overrides", minimal("nccl:\n  version: \"2.21\"\n  nvls: no\n  collnet: { enabled: yes, heads: 4 }\n"
                                          "  cpu: { arch: arm, vendor: other }\n  pcie: { gen: 4, width: 8 }\n"
                                          "  net_latency: 7 us\n  nic_speed: 25 GB/s\n"
                                          "  graphs:\n    ring: { channels: 16, bw_intra: 24 GB/s, bw_inter: 12 GB/s }\n"
                                          "  algo: ring\n  proto: ^LL128\n  launch_overhead: 4 us\n"
                                          "  graph_launch_overhead: 2 us\n  gpus_per_thread: 4\n  cuda_graphs: yes\n"
                                          "  bandwidth_scale: 0.75\n  latency_offset: -2.5 us\n"));
  for (const auto& [name, t] : cases) {
    const std::string text = topology_yaml(t, {}, {}, nullptr, false);
    const Topology back = parse_topology(text, name + " (written)");
    expect_same_machine(t.nccl.machine, back.nccl.machine, name);
    EXPECT_EQ(t.nccl.present, back.nccl.present) << name;
  }
}

TEST(NcclFromTopology, RefusesWhatItCannotDescribe) {
  Topology t = minimal();
  EXPECT_THROW(nccl_system(t, 1, 9, newest_version()), Error);
  EXPECT_THROW(nccl_system(t, 0, 8, newest_version()), Error);
  Topology host = load_topology(resolve_topology_path("local-cpu"));
  EXPECT_THROW(nccl_system(host, 1, 1, newest_version()), Error);
}

}  // namespace
}  // namespace commsim::nccl
