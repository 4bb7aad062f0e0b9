// The topology loader: presets load, and every kind of bad file is rejected with a message that
// names the file, the line and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

// A valid file, one value per line so that every field has its own line number.
const std::vector<std::string> kGood = {
    "name: test-node",               // 1
    "description: \"a test\"",       // 2
    "gpus_per_node: 4",              // 3
    "device:",                       // 4
    "  name: \"GPU\"",               // 5
    "  memory: 16 GiB",              // 6
    "  memory_bandwidth: 1.5 TB/s",  // 7
    "intra_node:",                   // 8
    "  fabric: nvswitch",            // 9
    "  bandwidth: 100 GB/s",         // 10
    "  latency: 1.5 us",             // 11
    "host_link:",                    // 12
    "  bandwidth: 32 GB/s",          // 13
    "  latency: 1 us",               // 14
    "network:",                      // 15
    "  kind: infiniband",            // 16
    "  fabric: fat-tree",            // 17
    "  nics_per_node: 2",            // 18
    "  nic_bandwidth: 200 Gb/s",     // 19
    "  latency: 3 us",               // 20
    "  oversubscription: 2",         // 21
};

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// kGood with line `line` (1-based) replaced by `text` (an empty replacement deletes it).
std::string with_line(int line, const std::string& text) {
  std::vector<std::string> lines = kGood;
  if (text.empty())
    lines.erase(lines.begin() + (line - 1));
  else
    lines[line - 1] = text;
  return join_lines(lines);
}

class TopologyFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::string path = (std::filesystem::temp_directory_path() /
                        ("commsim_topo_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".yaml"))
                           .string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  // Loads `text` from a file and returns the error message (fails the test if it loads).
  std::string error_of(const std::string& text, std::string* path_out = nullptr) {
    std::string path = write(text);
    if (path_out) *path_out = path;
    try {
      load_topology(path);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "loaded without error:\n" << text;
    return "";
  }
  // The error names the file, the line and the field, in the form FILE:LINE: FIELD: ...
  void expect_error(const std::string& text, int line, const std::string& field, const std::string& also = "") {
    std::string path;
    std::string msg = error_of(text, &path);
    std::string prefix = path + ":" + std::to_string(line) + ": " + field + ":";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << "message: " << msg << "\nexpected prefix: " << prefix;
    if (!also.empty()) {
      EXPECT_NE(msg.find(also), std::string::npos) << "message: " << msg << "\nmissing: " << also;
    }
  }

 private:
  int counter_ = 0;
  std::vector<std::string> paths_;
};

TEST_F(TopologyFile, GoodFileLoads) {
  std::string text = join_lines(kGood);
  std::string path = write(text);
  Topology t = load_topology(path);
  EXPECT_EQ(t.name, "test-node");
  EXPECT_EQ(t.description, "a test");
  EXPECT_EQ(t.source_path, path);
  EXPECT_EQ(t.text, text);
  EXPECT_TRUE(t.gpu);
  EXPECT_EQ(t.ranks_per_node, 4);
  EXPECT_EQ(t.device_name, "GPU");
  EXPECT_EQ(t.device_memory_bytes, 16ull << 30);
  EXPECT_DOUBLE_EQ(t.memory_bw_Bps, 1.5e12);
  EXPECT_EQ(t.intra.fabric, "nvswitch");
  EXPECT_DOUBLE_EQ(t.intra.bw_Bps, 100e9);
  EXPECT_DOUBLE_EQ(t.intra.latency_s, 1.5e-6);
  EXPECT_DOUBLE_EQ(t.host_link.bw_Bps, 32e9);
  EXPECT_EQ(t.network.kind, "infiniband");
  EXPECT_EQ(t.network.fabric_shape, "fat-tree");
  EXPECT_EQ(t.network.nics_per_node, 2);
  EXPECT_DOUBLE_EQ(t.network.nic_bw_Bps, 25e9);
  EXPECT_DOUBLE_EQ(t.network.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(t.network.oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(t.network.node_bw_Bps(), 25e9);  // 2 x 25 GB/s / 2
  // No `reduction`: a separate pass reading two operands and writing one.
  EXPECT_DOUBLE_EQ(t.reduce_bw_Bps, 0.5e12);
  EXPECT_FALSE(t.nccl.present);
  EXPECT_EQ(t.max_nodes, 0);
}

TEST_F(TopologyFile, HostOnlyAndOptionalParts) {
  std::string text =
      "name: hosts\n"
      "ranks_per_node: 16\n"
      "device: { name: CPU, memory_bandwidth: 20 GB/s }\n"
      "intra_node: { fabric: shared-memory, bandwidth: 5 GB/s, latency: 0.5 us }\n"
      "network: { kind: none }\n"
      "reduction: { bandwidth: 3 GB/s }\n"
      "nccl:\n"
      "  base_latency: { ring: { LL: 6.6 us, LL128: 14 us, Simple: 8.4 us }, tree: { LL: 6.8 us, LL128: 14 us, Simple: "
      "8.4 us } }\n"
      "  intra_hop_latency: { ring: { LL: 0.6 us, LL128: 1.9 us, Simple: 3.4 us }, tree: { LL: 0.6 us, LL128: 1.25 us, "
      "Simple: 4 us } }\n"
      "  inter_hop_latency: { ring: { LL: 2.7 us, LL128: 4 us, Simple: 14 us }, tree: { LL: 5 us, LL128: 8.5 us, "
      "Simple: 14 us } }\n"
      "  bandwidth_fraction: { LL: 0.25 }\n";
  Topology t = parse_topology(text, "inline");
  EXPECT_FALSE(t.gpu);
  EXPECT_EQ(t.ranks_per_node, 16);
  EXPECT_FALSE(t.network.present());
  EXPECT_EQ(t.max_nodes, 1);  // no network: a single node
  EXPECT_DOUBLE_EQ(t.reduce_bw_Bps, 3e9);
  ASSERT_TRUE(t.nccl.present);
  EXPECT_DOUBLE_EQ(t.nccl.base_latency_s[kNcclTableRing][0], 6.6e-6);
  EXPECT_DOUBLE_EQ(t.nccl.intra_hop_latency_s[kNcclTableTree][1], 1.25e-6);
  EXPECT_DOUBLE_EQ(t.nccl.inter_hop_latency_s[kNcclTableTree][2], 14e-6);
  EXPECT_DOUBLE_EQ(t.nccl.bw_fraction[0], 0.25);
  EXPECT_DOUBLE_EQ(t.nccl.bw_fraction[1], 120.0 / 128.0);  // default kept
  EXPECT_DOUBLE_EQ(t.nccl.bw_fraction[2], 1.0);
}

TEST_F(TopologyFile, UnknownKey) {
  expect_error(with_line(19, "  nic_bandwith: 200 Gb/s"), 19, "network.nic_bandwith", "nic_bandwidth");
  expect_error(with_line(2, "descripton: x"), 2, "descripton", "description");
  expect_error(with_line(6, "  memmory: 16 GiB"), 6, "device.memmory", "memory_bandwidth");
}

TEST_F(TopologyFile, MissingField) {
  // A missing key is reported at the map that should hold it (its first line).
  expect_error(with_line(19, ""), 16, "network.nic_bandwidth", "missing required field");
  expect_error(with_line(1, ""), 1, "name", "missing required field");
  expect_error(with_line(10, ""), 9, "intra_node.bandwidth", "missing required field");
  expect_error(with_line(3, ""), 1, "gpus_per_node", "ranks_per_node");
  // GPU topologies need the host link.
  std::vector<std::string> no_host = kGood;
  no_host.erase(no_host.begin() + 11, no_host.begin() + 14);
  expect_error(join_lines(no_host), 1, "host_link", "missing required field");
  // A key with no value.
  expect_error(with_line(20, "  latency:"), 20, "network.latency", "no value");
}

TEST_F(TopologyFile, WrongType) {
  // A value where a map belongs.
  std::vector<std::string> lines = kGood;
  lines[7] = "intra_node: fast";
  lines.erase(lines.begin() + 8, lines.begin() + 11);
  expect_error(join_lines(lines), 8, "intra_node", "expected a map");
  // A map where a value belongs.
  expect_error(with_line(10, "  bandwidth: { value: 100 GB/s }"), 10, "intra_node.bandwidth",
               "expected a single value");
  // Not a number.
  expect_error(with_line(3, "gpus_per_node: eight"), 3, "gpus_per_node", "not a whole number");
  expect_error(with_line(18, "  nics_per_node: 2.5"), 18, "network.nics_per_node", "not a whole number");
  expect_error(with_line(21, "  oversubscription: two"), 21, "network.oversubscription", "not a number");
  // Not one of the allowed words.
  expect_error(with_line(9, "  fabric: nvswich"), 9, "intra_node.fabric", "nvswitch");
  expect_error(with_line(16, "  kind: carrier-pigeon"), 16, "network.kind", "infiniband");
  // Out of range.
  expect_error(with_line(3, "gpus_per_node: 0"), 3, "gpus_per_node", "out of range");
  expect_error(with_line(21, "  oversubscription: 0.5"), 21, "network.oversubscription", "must be from 1");
  // The whole file is a list, not a map.
  expect_error("- a\n- b\n", 1, "(top level)", "expected a map");
}

TEST_F(TopologyFile, NonPositiveBandwidth) {
  expect_error(with_line(10, "  bandwidth: 0 GB/s"), 10, "intra_node.bandwidth", "positive");
  expect_error(with_line(19, "  nic_bandwidth: -5 Gb/s"), 19, "network.nic_bandwidth", "positive");
  expect_error(with_line(7, "  memory_bandwidth: 0 TB/s"), 7, "device.memory_bandwidth", "positive");
}

TEST_F(TopologyFile, UnknownUnit) {
  expect_error(with_line(20, "  latency: 3 parsecs"), 20, "network.latency", "unknown unit");
  expect_error(with_line(10, "  bandwidth: 100 GB"), 10, "intra_node.bandwidth", "unknown unit");
  expect_error(with_line(10, "  bandwidth: 100"), 10, "intra_node.bandwidth", "unknown unit");
  expect_error(with_line(6, "  memory: 16 gigs"), 6, "device.memory", "unknown unit");
}

TEST_F(TopologyFile, EmptyFile) {
  expect_error("", 1, "(top level)", "empty");
  expect_error("# only a comment\n\n   \n", 1, "(top level)", "empty");
}

TEST_F(TopologyFile, NotYaml) {
  std::string path;
  std::string msg = error_of("name: x\ngpus_per_node: 8\ndevice: [1, 2\nintra_node: 3\n", &path);
  EXPECT_EQ(msg.rfind(path + ":", 0), 0u) << msg;
  EXPECT_TRUE(std::regex_search(msg, std::regex(":[0-9]+: \\(yaml\\): not valid YAML"))) << msg;
  // The line of the parse error is that of the broken construct (3 or later), not 1.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(msg, m, std::regex("\\.yaml:([0-9]+):")));
  EXPECT_GE(std::stoi(m[1]), 3) << msg;

  // A stray list item in a map, on line 3.
  msg = error_of("name: x\ngpus_per_node: 8\n- item\n", &path);
  EXPECT_EQ(msg.rfind(path + ":3: (yaml): not valid YAML", 0), 0u) << msg;
  // A tab used for indentation, on line 2.
  msg = error_of("name: x\n\tgpus_per_node: 8\n", &path);
  EXPECT_EQ(msg.rfind(path + ":2: (yaml): not valid YAML", 0), 0u) << msg;
}

TEST_F(TopologyFile, Inconsistent) {
  expect_error(with_line(4, "ranks_per_node: 4\ndevice:"), 4, "ranks_per_node", "not both");
  expect_error(with_line(18, "  nics_per_node: 2\n  nics_per_node: 3"), 19, "network.nics_per_node", "twice");
  // No network only for single-node topologies.
  std::vector<std::string> lines = kGood;
  lines.resize(14);
  lines.push_back("max_nodes: 4");
  lines.push_back("network:");
  lines.push_back("  kind: none");
  expect_error(join_lines(lines), 17, "network.kind", "single-node");
  lines.back() = "  kind: none\n  nics_per_node: 2";
  lines[14] = "max_nodes: 1";
  expect_error(join_lines(lines), 18, "network.nics_per_node", "must be 0");
  // A network needs at least one NIC.
  expect_error(with_line(18, "  nics_per_node: 0"), 18, "network.nics_per_node", "out of range");
}

TEST_F(TopologyFile, IncompleteNcclTable) {
  std::string text = join_lines(kGood) +
                     "nccl:\n"
                     "  base_latency:\n"
                     "    ring: { LL: 6.6 us, LL128: 14 us, Simple: 8.4 us }\n"
                     "    tree: { LL: 6.8 us, Simple: 8.4 us }\n"
                     "  intra_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 "
                     "us, Simple: 1 us } }\n"
                     "  inter_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 "
                     "us, Simple: 1 us } }\n";
  expect_error(text, 25, "nccl.base_latency.tree.LL128", "missing required field");
  std::string frac = join_lines(kGood) +
                     "nccl:\n"
                     "  base_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 us, "
                     "Simple: 1 us } }\n"
                     "  intra_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 "
                     "us, Simple: 1 us } }\n"
                     "  inter_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 "
                     "us, Simple: 1 us } }\n"
                     "  bandwidth_fraction: { LL: 1.5 }\n";
  expect_error(frac, 26, "nccl.bandwidth_fraction.LL", "(0, 1]");
}

TEST_F(TopologyFile, NcclMachineFields) {
  // What NCCL's tuning model reads: every field optional, the latency tables too.
  Topology t = parse_topology(join_lines(kGood) +
                                  "nccl:\n"
                                  "  version: 2.21.5\n"
                                  "  compute_capability: 10.3\n"
                                  "  nvlinks_per_gpu: 18\n"
                                  "  nvlink_bandwidth: 40 GB/s\n"
                                  "  nvls: yes\n"
                                  "  nvlink_domain: 72\n"
                                  "  collnet: { enabled: yes, heads: 8 }\n"
                                  "  cpu: { arch: arm, vendor: other }\n"
                                  "  pcie: { gen: 5, width: 16 }\n"
                                  "  nic_speed: 400 Gb/s\n"
                                  "  net_latency: 20 us\n"
                                  "  graphs: { nvls: { channels: 8, bw_intra: 40 GB/s, bw_inter: 60 GB/s } }\n"
                                  "  algo: \"allreduce:ring,nvls\"\n"
                                  "  proto: Simple\n",
                              "t.yaml");
  const NcclMachine& m = t.nccl.machine;
  EXPECT_FALSE(t.nccl.present);
  EXPECT_EQ(m.version, "2.21.5");
  EXPECT_EQ(m.compute_capability, 103);
  EXPECT_EQ(m.nvlinks_per_gpu, 18);
  EXPECT_DOUBLE_EQ(m.nvlink_bw_Bps, 40e9);
  EXPECT_EQ(m.nvls, true);
  EXPECT_EQ(m.nvlink_domain_gpus, 72);
  EXPECT_TRUE(m.collnet);
  EXPECT_EQ(m.collnet_heads, 8);
  EXPECT_EQ(m.cpu_arch, "arm");
  EXPECT_EQ(m.cpu_vendor, "other");
  EXPECT_EQ(m.pcie_gen, 5);
  EXPECT_DOUBLE_EQ(m.nic_speed_Bps, 50e9);
  EXPECT_DOUBLE_EQ(m.net_latency_s, 20e-6);
  EXPECT_FALSE(m.ring.given());
  EXPECT_EQ(m.nvls_graph.channels, 8);
  EXPECT_DOUBLE_EQ(m.nvls_graph.bw_inter_Bps, 60e9);
  EXPECT_EQ(m.algo, "allreduce:ring,nvls");
  EXPECT_EQ(m.proto, "Simple");
  // Defaults.
  const NcclMachine d = load_topology(resolve_topology_path("dgx-h100")).nccl.machine;
  EXPECT_EQ(d.version, "");
  EXPECT_EQ(d.compute_capability, 90);
  EXPECT_DOUBLE_EQ(d.net_latency_s, 0);
  EXPECT_FALSE(d.collnet);
}

TEST_F(TopologyFile, NcclMachineErrors) {
  const std::string head = join_lines(kGood) + "nccl:\n";  // nccl: is line 22
  expect_error(head + "  version: 2.99\n", 23, "nccl.version", "2.28");
  expect_error(head + "  compute_capability: 9\n", 23, "nccl.compute_capability", "MAJOR.MINOR");
  expect_error(head + "  nvls: maybe\n", 23, "nccl.nvls", "yes or no");
  expect_error(head + "  cpu: { arch: sparc }\n", 23, "nccl.cpu.arch", "x86");
  expect_error(head + "  pcie: { gen: 7 }\n", 23, "nccl.pcie.gen", "out of range");
  expect_error(head + "  pcie: { width: 12 }\n", 23, "nccl.pcie.width", "lanes");
  expect_error(head + "  collnet: { heads: 2 }\n", 23, "nccl.collnet.enabled", "missing required field");
  expect_error(head + "  graphs: { ring: { bw_intra: 30 GB/s } }\n", 23, "nccl.graphs.ring.channels",
               "missing required field");
  expect_error(head + "  graphs: { ring: { channels: 12, bw_intra: 30 } }\n", 23, "nccl.graphs.ring.bw_intra",
               "unknown unit");
  expect_error(head + "  algo: rnig\n", 23, "nccl.algo", "rnig");
  expect_error(head + "  version: \"2.28\"\n  proto: LL256\n", 24, "nccl.proto", "LL256");
  expect_error(head + "  nic_sped: 50 GB/s\n", 23, "nccl.nic_sped", "nic_speed");
  // The latency tables come together.
  expect_error(head + "  base_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 "
                      "us, Simple: 1 us } }\n",
               23, "nccl.intra_hop_latency", "missing required field");
}

TEST_F(TopologyFile, NetworkKindsOfCloudsAndSupercomputers) {
  for (const char* kind : {"efa", "slingshot", "tcpxo"}) {
    Topology t = parse_topology(with_line(16, std::string("  kind: ") + kind), "t.yaml");
    EXPECT_EQ(t.network.kind, kind);
  }
}

TEST(TopologyPresets, AllLoadAndResolveByName) {
  const char* names[] = {"consumer-pcie-4090", "dgx-a100", "dgx-h100", "h200-node", "gb200-nvl72", "local-cpu",
                         "aws-p4d",            "oci-a100", "polaris",  "gb300-nvl72"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    std::string path = resolve_topology_path(name);
    EXPECT_NE(path.find(std::string("topologies/") + name + ".yaml"), std::string::npos) << path;
    Topology t = load_topology(path);
    EXPECT_EQ(t.name, name);
    EXPECT_FALSE(t.description.empty());
    EXPECT_GT(t.intra.bw_Bps, 0);
    EXPECT_GT(t.reduce_bw_Bps, 0);
    EXPECT_FALSE(t.text.empty());
    // A path that exists is used as it is.
    EXPECT_EQ(resolve_topology_path(path), path);
  }
  EXPECT_FALSE(load_topology(resolve_topology_path("local-cpu")).gpu);
  EXPECT_FALSE(load_topology(resolve_topology_path("h200-node")).network.present());
  EXPECT_TRUE(load_topology(resolve_topology_path("dgx-h100")).nccl.present);
}

TEST(TopologyPresets, UnknownNameListsPresets) {
  try {
    resolve_topology_path("dgx-h9000");
    FAIL() << "resolved a preset that does not exist";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("dgx-h9000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dgx-h100"), std::string::npos) << msg;
    EXPECT_NE(msg.find("local-cpu"), std::string::npos) << msg;
  }
  EXPECT_THROW(resolve_topology_path("no/such/dir/file.yaml"), Error);
  EXPECT_THROW(load_topology("/nonexistent-commsim-file.yaml"), Error);
}

// The message of parsing `text` as "bad.yaml", or "no error".
std::string parse_error(const std::string& text) {
  try {
    parse_topology(text, "bad.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TopologyMessageTerms, OptionalFieldsParseAndDefaultOff) {
  const std::string base = R"(
name: h
ranks_per_node: 8
device: { name: CPU, memory_bandwidth: 20 GB/s }
network: { kind: tcp, nics_per_node: 1, nic_bandwidth: 10 Gb/s, latency: 30 us, eager_limit: 64 KiB, rendezvous_latency: 60 us, message_overhead: 2 us }
)";
  const Topology t = parse_topology(base + R"(intra_node: { fabric: shared-memory, bandwidth: 13.2 GB/s, latency: 0.7 us,
  node_bandwidth: 33 GB/s, eager_limit: 8 KiB, rendezvous_latency: 3.3 us, message_overhead: 0.4 us,
  rendezvous_overhead: 1.2 us }
)",
                                    "inline");
  EXPECT_NEAR(t.intra.node_bw_Bps, 33e9, 1);
  EXPECT_EQ(t.intra.msg.eager_limit_bytes, 8192u);
  EXPECT_NEAR(t.intra.msg.rendezvous_latency_s, 3.3e-6, 1e-15);
  EXPECT_NEAR(t.intra.msg.message_overhead_s, 0.4e-6, 1e-15);
  EXPECT_NEAR(t.intra.message_latency_s(8192), 0.7e-6, 1e-15);
  EXPECT_NEAR(t.intra.message_latency_s(8193), 3.3e-6, 1e-15);
  EXPECT_NEAR(t.intra.msg.overhead_s(8192), 0.4e-6, 1e-15);
  EXPECT_NEAR(t.intra.msg.overhead_s(8193), 1.2e-6, 1e-15);
  EXPECT_NEAR(t.network.msg.overhead_s(1e9), 2e-6, 1e-15);  // no rendezvous_overhead: message_overhead
  EXPECT_EQ(t.network.msg.eager_limit_bytes, 65536u);
  EXPECT_NEAR(t.network.msg.message_overhead_s, 2e-6, 1e-15);
  const Topology plain =
      parse_topology(base + "intra_node: { fabric: shared-memory, bandwidth: 13.2 GB/s, latency: 0.7 us }\n", "inline");
  EXPECT_EQ(plain.intra.node_bw_Bps, 0.0);
  EXPECT_EQ(plain.intra.msg.eager_limit_bytes, 0u);
  EXPECT_EQ(plain.intra.msg.message_overhead_s, 0.0);
  EXPECT_NEAR(plain.intra.message_latency_s(1e9), 0.7e-6, 1e-15);
}

TEST(TopologyMessageTerms, BadValuesNameTheField) {
  const std::string head = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                           "network: { kind: none }\nintra_node:\n  fabric: shared-memory\n  bandwidth: 5 GB/s\n"
                           "  latency: 1 us\n";
  auto error_of = [&](const std::string& extra) { return parse_error(head + extra); };
  EXPECT_NE(error_of("  eager_limit: 8 KiB\n").find("bad.yaml:9: intra_node.rendezvous_latency"), std::string::npos)
      << error_of("  eager_limit: 8 KiB\n");
  EXPECT_NE(error_of("  rendezvous_latency: 3 us\n").find("intra_node.eager_limit"), std::string::npos);
  EXPECT_NE(error_of("  node_bandwidth: 0 GB/s\n").find("bad.yaml:9: intra_node.node_bandwidth"), std::string::npos)
      << error_of("  node_bandwidth: 0 GB/s\n");
  EXPECT_NE(error_of("  message_overhead: 3 parsecs\n").find("bad.yaml:9: intra_node.message_overhead"),
            std::string::npos);
  EXPECT_NE(error_of("  eager_limit: 0 B\n  rendezvous_latency: 3 us\n").find("intra_node.eager_limit"),
            std::string::npos);
  EXPECT_NE(error_of("  rendezvous_overhead: 1 us\n").find("bad.yaml:9: intra_node.rendezvous_overhead: needs eager_limit"),
            std::string::npos)
      << error_of("  rendezvous_overhead: 1 us\n");
}

TEST(TopologyMessageTerms, InlineRegimeBelowTheEagerLimit) {
  const std::string head = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                           "network: { kind: none }\nintra_node:\n  fabric: shared-memory\n  bandwidth: 5 GB/s\n"
                           "  latency: 1 us\n  eager_limit: 4 KiB\n  rendezvous_latency: 3 us\n"
                           "  message_overhead: 0.4 us\n";
  const Topology t =
      parse_topology(head + "  inline_limit: 256 B\n  inline_latency: 0.5 us\n  inline_overhead: 0.1 us\n", "inline");
  EXPECT_EQ(t.intra.msg.inline_limit_bytes, 256u);
  EXPECT_NEAR(t.intra.message_latency_s(256), 0.5e-6, 1e-15);
  EXPECT_NEAR(t.intra.message_latency_s(257), 1e-6, 1e-15);
  EXPECT_NEAR(t.intra.message_latency_s(4097), 3e-6, 1e-15);
  EXPECT_NEAR(t.intra.msg.overhead_s(100), 0.1e-6, 1e-15);
  EXPECT_NEAR(t.intra.msg.overhead_s(300), 0.4e-6, 1e-15);
  // Without inline_overhead the inline messages post at message_overhead.
  const Topology no_ovh = parse_topology(head + "  inline_limit: 256 B\n  inline_latency: 0.5 us\n", "inline");
  EXPECT_NEAR(no_ovh.intra.msg.overhead_s(100), 0.4e-6, 1e-15);
  auto error_of = [&](const std::string& extra) { return parse_error(head + extra); };
  EXPECT_NE(error_of("  inline_limit: 256 B\n").find("intra_node.inline_latency"), std::string::npos)
      << error_of("  inline_limit: 256 B\n");
  const std::string above = error_of("  inline_limit: 8 KiB\n  inline_latency: 0.5 us\n");
  EXPECT_NE(above.find("intra_node.inline_limit: must be below eager_limit (4KiB)"), std::string::npos) << above;
  EXPECT_NE(error_of("  inline_overhead: 1 us\n").find("intra_node.inline_overhead: needs inline_limit"),
            std::string::npos);
}

// The per-message factors of a tier: default, a value read back, and values out of range.
TEST(TopologyMessageTerms, LatencyFactorsAndOverheadShare) {
  const std::string head = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                           "network: { kind: none }\nintra_node:\n  fabric: shared-memory\n  bandwidth: 5 GB/s\n"
                           "  latency: 1 us\n";
  struct Field {
    std::string key;
    double MessageCosts::*member;
    double default_value, good;
    std::vector<std::string> bad;
    std::string message;
  };
  const std::string factor = "must be more than 0 and at most 10";
  const std::vector<Field> fields = {
      {"one_way_factor", &MessageCosts::one_way_factor, 1.0, 0.7, {"0", "-1", "11"}, factor},
      {"exchange_factor", &MessageCosts::exchange_factor, 1.0, 1.2, {"0", "-1", "11"}, factor},
      {"overhead_receive_share", &MessageCosts::overhead_receive_share, 0.0, 0.8, {"-0.1", "1.5", "2"},
       "must be from 0 to 1"},
  };
  for (const Field& f : fields) {
    EXPECT_EQ(parse_topology(head, "inline").intra.msg.*f.member, f.default_value) << f.key;
    const std::string good = head + "  " + f.key + ": " + std::to_string(f.good) + "\n";
    EXPECT_DOUBLE_EQ(parse_topology(good, "inline").intra.msg.*f.member, f.good) << f.key;
    for (const std::string& bad : f.bad) {
      const std::string e = parse_error(head + "  " + f.key + ": " + bad + "\n");
      EXPECT_NE(e.find("bad.yaml:9: intra_node." + f.key + ": " + f.message), std::string::npos) << e;
    }
  }
  EXPECT_EQ(parse_topology(head + "  overhead_receive_share: 1\n", "inline").intra.msg.overhead_receive_share, 1.0);
  EXPECT_NE(parse_error(head + "  exchange_factor: half\n").find("bad.yaml:9: intra_node.exchange_factor"),
            std::string::npos);
}

TEST(TopologyRuntimeTerms, CallOverheadAndWorkingSetCurve) {
  const std::string base = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                           "network: { kind: none }\nintra_node: { fabric: shared-memory, bandwidth: 10 GB/s, latency: 1 us }\n";
  const Topology plain = parse_topology(base, "inline");
  EXPECT_EQ(plain.call_overhead_s, 0.0);
  EXPECT_TRUE(plain.working_set_scale.empty());
  EXPECT_EQ(plain.scale_at(1e12), 1.0);
  const Topology t = parse_topology(base + R"(call_overhead: 1.5 us
working_set_scale:
  - { working_set: 1MiB, scale: 1 }
  - { working_set: 4MiB, scale: 0.8 }
  - { working_set: 64MiB, scale: 0.4 }
)", "inline");
  EXPECT_NEAR(t.call_overhead_s, 1.5e-6, 1e-15);
  ASSERT_EQ(t.working_set_scale.size(), 3u);
  EXPECT_EQ(t.scale_at(1024), 1.0);                      // below the first point: its factor
  EXPECT_NEAR(t.scale_at(2 << 20), 0.9, 1e-12);          // halfway in log between 1 and 4 MiB
  EXPECT_NEAR(t.scale_at(16 << 20), 0.6, 1e-12);         // halfway in log between 4 and 64 MiB
  EXPECT_EQ(t.scale_at(1e12), 0.4);                      // beyond the last point: its factor

  auto error_of = [&](const std::string& extra) { return parse_error(base + extra); };
  EXPECT_NE(error_of("call_overhead: 3 parsecs\n").find("bad.yaml:6: call_overhead"), std::string::npos)
      << error_of("call_overhead: 3 parsecs\n");
  EXPECT_NE(error_of("working_set_scale: 0.5\n").find("working_set_scale"), std::string::npos);
  const std::string descending = "working_set_scale:\n  - { working_set: 4MiB, scale: 1 }\n  - { working_set: 1MiB, scale: 0.5 }\n";
  EXPECT_NE(error_of(descending).find("bad.yaml:8: working_set_scale[1].working_set"), std::string::npos)
      << error_of(descending);
  EXPECT_NE(error_of("working_set_scale:\n  - { working_set: 4MiB, scale: 0 }\n").find("working_set_scale[0].scale"),
            std::string::npos);
  EXPECT_NE(error_of("working_set_scale:\n  - { working_set: 4MiB, factor: 1 }\n").find("unknown key"),
            std::string::npos);

  // The node's curve reads the same way; it needs the node bandwidth it scales.
  const std::string node_curve = "node_working_set_scale:\n  - { working_set: 8MiB, scale: 1 }\n"
                                 "  - { working_set: 512MiB, scale: 0.5 }\n";
  const std::string with_node_bw = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                                   "network: { kind: none }\nintra_node: { fabric: shared-memory, bandwidth: 10 GB/s, "
                                   "latency: 1 us, node_bandwidth: 30 GB/s }\n";
  const Topology node = parse_topology(with_node_bw + node_curve, "inline");
  ASSERT_EQ(node.node_working_set_scale.size(), 2u);
  EXPECT_EQ(node.node_working_set_scale[1].working_set, Bytes{512} << 20);
  EXPECT_EQ(node.node_scale_at(1 << 20, 8), 1.0);                  // 8 MiB on the node: the first point
  EXPECT_NEAR(node.node_scale_at(8 << 20, 8), 0.75, 1e-12);        // 64 MiB: halfway in log
  EXPECT_EQ(node.node_scale_at(double(Bytes{1} << 30), 8), 0.5);   // held beyond the last point
  EXPECT_NE(error_of(node_curve).find("node_working_set_scale: needs intra_node.node_bandwidth"), std::string::npos)
      << error_of(node_curve);

  // The local-operation curve reads the same way, keyed by bytes.
  const Topology ops = parse_topology(base + "local_op_scale:\n  - { bytes: 64KiB, scale: 1 }\n  - { bytes: 16MiB, scale: 0.25 }\n",
                                      "inline");
  ASSERT_EQ(ops.local_op_scale.size(), 2u);
  EXPECT_EQ(ops.local_op_scale[1].bytes, Bytes{16} << 20);
  EXPECT_NEAR(ops.local_op_scale_at(1 << 20), 0.625, 1e-12);  // halfway in log between 64 KiB and 16 MiB
  EXPECT_EQ(ops.local_op_scale_at(1e12), 0.25);
  EXPECT_EQ(plain.local_op_scale_at(1e12), 1.0);
  const std::string ops_descending = "local_op_scale:\n  - { bytes: 4MiB, scale: 1 }\n  - { bytes: 1MiB, scale: 0.5 }\n";
  EXPECT_NE(error_of(ops_descending).find("bad.yaml:8: local_op_scale[1].bytes"), std::string::npos)
      << error_of(ops_descending);
  EXPECT_NE(error_of("local_op_scale:\n  - { working_set: 4MiB, scale: 1 }\n").find("unknown key"), std::string::npos);

  // The message-size curve too.
  const Topology msgs = parse_topology(
      base + "message_scale:\n  - { bytes: 1KiB, scale: 1 }\n  - { bytes: 1MiB, scale: 0.5 }\n", "inline");
  ASSERT_EQ(msgs.message_scale.size(), 2u);
  EXPECT_EQ(msgs.message_scale[1].bytes, Bytes{1} << 20);
  EXPECT_NEAR(msgs.message_scale_at(32 * 1024), 0.75, 1e-12);  // halfway in log between 1 KiB and 1 MiB
  EXPECT_EQ(msgs.message_scale_at(8), 1.0);
  EXPECT_EQ(msgs.message_scale_at(1e12), 0.5);
  EXPECT_EQ(plain.message_scale_at(1e12), 1.0);
  EXPECT_NE(error_of("message_scale:\n  - { bytes: 4MiB, scale: -1 }\n").find("bad.yaml:7: message_scale[0].scale"),
            std::string::npos)
      << error_of("message_scale:\n  - { bytes: 4MiB, scale: -1 }\n");

  // And the one-to-many curve.
  const Topology fan = parse_topology(
      base + "fan_out_scale:\n  - { bytes: 4KiB, scale: 2 }\n  - { bytes: 4MiB, scale: 1 }\n", "inline");
  ASSERT_EQ(fan.fan_out_scale.size(), 2u);
  EXPECT_NEAR(fan.fan_out_scale_at(128 * 1024), 1.5, 1e-12);  // halfway in log between 4 KiB and 4 MiB
  EXPECT_EQ(fan.fan_out_scale_at(8), 2.0);
  EXPECT_EQ(plain.fan_out_scale_at(8), 1.0);
  const std::string fan_descending = "fan_out_scale:\n  - { bytes: 4MiB, scale: 1 }\n  - { bytes: 1MiB, scale: 0.5 }\n";
  EXPECT_NE(error_of(fan_descending).find("bad.yaml:8: fan_out_scale[1].bytes"), std::string::npos)
      << error_of(fan_descending);
}

TEST(TopologyStorage, TiersParseWithUnitsAndSharedCaps) {
  const std::string base = "name: h\nranks_per_node: 8\ndevice: { name: CPU, memory_bandwidth: 20 GB/s }\n"
                           "network: { kind: none }\nintra_node: { fabric: shared-memory, bandwidth: 10 GB/s, latency: 1 us }\n";
  EXPECT_TRUE(parse_topology(base, "inline").storage.empty());
  EXPECT_EQ(parse_topology(base, "inline").peak_tflops, 0.0);
  const Topology t = parse_topology(base + R"(storage:
  - { name: local-nvme, kind: local, read_bandwidth: 6 GB/s, write_bandwidth: 3 GB/s, latency: 80 us }
  - name: lustre
    kind: shared
    read_bandwidth: 20 GB/s
    write_bandwidth: 16 GB/s
    latency: 1 ms
    aggregate_write_bandwidth: 400 GB/s
)", "inline");
  ASSERT_EQ(t.storage.size(), 2u);
  EXPECT_EQ(t.storage[0].name, "local-nvme");
  EXPECT_FALSE(t.storage[0].shared);
  EXPECT_DOUBLE_EQ(t.storage[0].read_bw_Bps, 6e9);
  EXPECT_DOUBLE_EQ(t.storage[0].write_bw_Bps, 3e9);
  EXPECT_NEAR(t.storage[0].latency_s, 80e-6, 1e-15);
  EXPECT_DOUBLE_EQ(t.storage[0].write_bw_per_node(64), 3e9);  // a local disk per node: no sharing
  EXPECT_TRUE(t.storage[1].shared);
  EXPECT_DOUBLE_EQ(t.storage[1].write_bw_per_node(10), 16e9);  // 10 x 16 GB/s fits under 400 GB/s
  EXPECT_DOUBLE_EQ(t.storage[1].write_bw_per_node(100), 4e9);  // 400 GB/s shared by 100 nodes
  EXPECT_DOUBLE_EQ(t.storage[1].read_bw_per_node(100), 20e9);  // no aggregate read cap given

  const Topology peak = parse_topology(
      "name: g\ngpus_per_node: 8\ndevice: { name: GPU, memory_bandwidth: 3 TB/s, peak_tflops: 989 }\n"
      "network: { kind: none }\nintra_node: { fabric: nvswitch, bandwidth: 300 GB/s, latency: 1 us }\n"
      "host_link: { bandwidth: 64 GB/s, latency: 1 us }\n",
      "inline");
  EXPECT_DOUBLE_EQ(peak.peak_tflops, 989.0);

  auto error_of = [&](const std::string& extra) { return parse_error(base + extra); };
  const std::string tier = "storage:\n  - { name: d, kind: local, read_bandwidth: 1 GB/s, write_bandwidth: 1 GB/s, latency: 1 ms";
  EXPECT_NE(error_of("storage: { name: d }\n").find("storage: expected a list"), std::string::npos);
  EXPECT_NE(error_of(tier + " }\n  - { name: d, kind: local, read_bandwidth: 1 GB/s, write_bandwidth: 1 GB/s, "
                            "latency: 1 ms }\n")
                .find("storage[1].name: 'd' is given twice"),
            std::string::npos);
  EXPECT_NE(error_of("storage:\n  - { name: d, kind: tape, read_bandwidth: 1 GB/s, write_bandwidth: 1 GB/s, latency: 1 ms }\n")
                .find("storage[0].kind: 'tape' is not one of: local, shared"),
            std::string::npos);
  EXPECT_NE(error_of("storage:\n  - { name: d, kind: local, read_bandwidth: 1 GB/s, latency: 1 ms }\n")
                .find("storage[0].write_bandwidth: missing required field"),
            std::string::npos);
  EXPECT_NE(error_of(tier + ", aggregate_write_bandwidth: 9 GB/s }\n")
                .find("storage[0].aggregate_write_bandwidth: applies to kind shared only"),
            std::string::npos);
  EXPECT_NE(error_of("storage:\n  - { name: d, kind: local, read_bandwidth: 1, write_bandwidth: 1 GB/s, latency: 1 ms }\n")
                .find("bad.yaml:7: storage[0].read_bandwidth"),
            std::string::npos);
}

}  // namespace
}  // namespace commsim
