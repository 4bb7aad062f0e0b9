// The GPU link matrix without a GPU: PCI paths classified on fake sysfs trees, NVLink counts from
// fake link lists, the nearest NIC, the non-uniform warnings, the text layout, the round trip
// through /probe/gpu_links, and the probe's note when NVML is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "model/topology/topology.h"
#include "runtime/command.h"
#include "runtime/probe/nvml_topology.h"
#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"
#include "test_util.h"

namespace commsim {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

// A fake /sys: devices/<host bridge>/<chain...> with numa_node and link widths, the
// bus/pci/devices links, and class/<cls>/<name>/device links for NICs.
class FakeSysfs {
 public:
  explicit FakeSysfs(const std::string& root) : root_(root) { fs::create_directories(root_ + "/bus/pci/devices"); }
  // chain: "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0" (the device last).
  std::string device(const std::string& chain, int numa, int width = 16, int max_width = 16) {
    const fs::path dir = fs::path(root_) / "devices" / chain;
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << numa << "\n";
    std::ofstream(dir / "current_link_width") << width << "\n";
    std::ofstream(dir / "max_link_width") << max_width << "\n";
    const std::string bus = dir.filename().string();
    fs::create_directory_symlink(dir, fs::path(root_) / "bus/pci/devices" / bus);
    return bus;
  }
  void nic(const std::string& cls, const std::string& name, const std::string& chain) {
    const fs::path dir = fs::path(root_) / "devices" / chain;
    fs::create_directories(dir);
    fs::create_directories(fs::path(root_) / "class" / cls / name);
    fs::create_directory_symlink(dir, fs::path(root_) / "class" / cls / name / "device");
  }
  void virtual_nic(const std::string& name) { fs::create_directories(fs::path(root_) / "class/net" / name); }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// Two sockets: socket 0 has root complexes pci0000:00 (a switch with GPU0, GPU1 and NIC mlx5_0
// below it, and a second switch below the first with GPU2) and pci0000:40; socket 1 has
// pci0000:80 with GPU3 and NIC mlx5_1.
struct TwoSocketBox {
  TempDir dir;
  FakeSysfs sys{dir.file("sys")};
  std::string gpu0, gpu1, gpu2, gpu3, gpu4;
  TwoSocketBox() {
    gpu0 = sys.device("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0);
    gpu1 = sys.device("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0);
    gpu2 = sys.device("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0", 0, 8,
                      16);
    gpu3 = sys.device("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
    gpu4 = sys.device("pci0000:40/0000:40:01.0/0000:41:00.0", 0);
    sys.nic("infiniband", "mlx5_0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:03.0/0000:08:00.0");
    sys.nic("infiniband", "mlx5_1", "pci0000:80/0000:80:02.0/0000:82:00.0");
  }
};

TEST(NvmlTopology, BusIdsAreNormalisedToSysfsForm) {
  EXPECT_EQ(sysfs_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(sysfs_bus_id("0000:1b:00.0"), "0000:1b:00.0");
}

TEST(NvmlTopology, ReadsTheChainAndNumaNodeFromSysfs) {
  TwoSocketBox box;
  const PciLocation g = read_pci_location(box.sys.root(), "00000000:03:00.0");
  EXPECT_EQ(g.root, "pci0000:00");
  ASSERT_EQ(g.chain.size(), 4u);
  EXPECT_EQ(g.chain.front(), "0000:00:01.0");
  EXPECT_EQ(g.chain.back(), "0000:03:00.0");
  EXPECT_EQ(g.numa_node, 0);
  EXPECT_EQ(g.link_width, 16);
  const PciLocation g3 = read_pci_location(box.sys.root(), box.gpu3);
  EXPECT_EQ(g3.numa_node, 1);
  EXPECT_NE(test::error_of([&] { read_pci_location(box.sys.root(), "0000:99:00.0"); }).find("no such PCI device"),
            std::string::npos);
}

TEST(NvmlTopology, ClassifiesPathsTheWayNvidiaSmiNamesThem) {
  TwoSocketBox box;
  auto loc = [&](const std::string& b) { return read_pci_location(box.sys.root(), b); };
  // Same switch: one bridge between them.
  EXPECT_EQ(classify_pci_path(loc(box.gpu0), loc(box.gpu1)), PciPath::Single);
  // GPU2 sits below a second switch: several bridges, no host bridge.
  EXPECT_EQ(classify_pci_path(loc(box.gpu0), loc(box.gpu2)), PciPath::Multiple);
  // Other root complex, same socket; other socket.
  EXPECT_EQ(classify_pci_path(loc(box.gpu0), loc(box.gpu4)), PciPath::Node);
  EXPECT_EQ(classify_pci_path(loc(box.gpu0), loc(box.gpu3)), PciPath::System);
  // Two root ports of one root complex: through the host bridge.
  FakeSysfs& sys = box.sys;
  const std::string a = sys.device("pci0000:c0/0000:c0:01.0/0000:c1:00.0", 1);
  const std::string b = sys.device("pci0000:c0/0000:c0:02.0/0000:c2:00.0", 1);
  EXPECT_EQ(classify_pci_path(loc(a), loc(b)), PciPath::HostBridge);
  EXPECT_STREQ(pci_path_name(PciPath::HostBridge), "PHB");
  EXPECT_STREQ(pci_path_name(PciPath::System), "SYS");
}

TEST(NvmlTopology, FindsRdmaNicsBeforeNetworkInterfaces) {
  TwoSocketBox box;
  box.sys.nic("net", "eth0", "pci0000:00/0000:00:1c.0/0000:09:00.0");
  box.sys.virtual_nic("lo");
  auto nics = find_nics(box.sys.root());
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_EQ(nics[0].name, "mlx5_0");
  EXPECT_EQ(nics[1].name, "mlx5_1");
  EXPECT_EQ(nics[1].where.numa_node, -1);  // a fake NIC without numa_node on a machine of no known node

  TempDir other;
  FakeSysfs plain(other.file("sys"));
  plain.nic("net", "eth0", "pci0000:00/0000:00:1c.0/0000:09:00.0");
  plain.virtual_nic("lo");
  nics = find_nics(plain.root());
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].name, "eth0");
  EXPECT_EQ(nics[0].where.bus_id, "0000:09:00.0");
  // With one NUMA node a numa_node of -1 means node 0; with two it stays unknown.
  fs::create_directories(other.file("sys/devices/system/node/node0"));
  EXPECT_EQ(find_nics(plain.root())[0].where.numa_node, 0);
  fs::create_directories(other.file("sys/devices/system/node/node1"));
  EXPECT_EQ(find_nics(plain.root())[0].where.numa_node, -1);
}

TEST(NvmlTopology, CountsDirectLinksAndLinksThroughNvSwitches) {
  const std::vector<std::string> ids = {"00000000:03:00.0", "00000000:04:00.0", "00000000:05:00.0"};
  // GPU0 and GPU1: 4 direct links; GPU1 and GPU2: 2; GPU0 and GPU2: none.
  std::vector<std::vector<std::string>> remotes = {
      {"00000000:04:00.0", "00000000:04:00.0", "00000000:04:00.0", "00000000:04:00.0"},
      {"00000000:03:00.0", "00000000:03:00.0", "00000000:03:00.0", "00000000:03:00.0", "00000000:05:00.0",
       "00000000:05:00.0"},
      {"00000000:04:00.0", "00000000:04:00.0"}};
  auto n = count_nvlinks(ids, remotes);
  EXPECT_EQ(n[0][1], 4);
  EXPECT_EQ(n[1][0], 4);
  EXPECT_EQ(n[1][2], 2);
  EXPECT_EQ(n[0][2], 0);
  EXPECT_EQ(n[0][0], 0);
  // Every link to a switch (a bus id that is no GPU): 18 each, joined through the switches.
  std::vector<std::vector<std::string>> switched(3);
  for (int l = 0; l < 18; ++l)
    for (auto& r : switched) r.push_back("00000000:" + std::to_string(10 + l % 4) + ":00.0");
  switched[2].resize(12);  // GPU2 lost six links
  n = count_nvlinks(ids, switched);
  EXPECT_EQ(n[0][1], 18);
  EXPECT_EQ(n[0][2], 12);
  EXPECT_EQ(n[2][1], 12);
}

GpuLinkMatrix box_matrix(const TwoSocketBox& box, const std::vector<std::vector<int>>& links) {
  std::vector<GpuLinkInfo> gpus;
  std::vector<PciLocation> where;
  for (const auto& b : {box.gpu0, box.gpu1, box.gpu2, box.gpu3}) {
    GpuLinkInfo g;
    g.name = "Fake GPU";
    g.bus_id = b;
    gpus.push_back(g);
    where.push_back(read_pci_location(box.sys.root(), b));
  }
  std::vector<std::vector<std::string>> nvml_paths(4, std::vector<std::string>(4));
  return build_link_matrix(gpus, links, nvml_paths, where, find_nics(box.sys.root()));
}

TEST(NvmlTopology, BuildsTheMatrixWithNearestNicAndWarnsWhenNotUniform) {
  TwoSocketBox box;
  std::vector<std::vector<int>> links(4, std::vector<int>(4, 18));
  links[0][3] = links[3][0] = 0;  // one pair without NVLink
  const GpuLinkMatrix m = box_matrix(box, links);
  EXPECT_EQ(m.path[0][0], "X");
  EXPECT_EQ(m.path[0][1], "NV18");
  EXPECT_EQ(m.path[0][3], "SYS");  // no NVLink: the PCI path from sysfs
  EXPECT_EQ(m.gpus[0].nearest_nic, "mlx5_0");
  EXPECT_EQ(m.gpus[0].nic_path, "PIX");
  EXPECT_EQ(m.gpus[2].nic_path, "PXB");
  EXPECT_EQ(m.gpus[3].nearest_nic, "mlx5_1");
  EXPECT_EQ(m.gpus[3].nic_path, "PHB");
  EXPECT_EQ(m.gpus[3].numa_node, 1);
  EXPECT_EQ(m.slowest_path(), "SYS");
  const auto why = m.non_uniform();
  auto has = [&](const std::string& s) {
    for (const auto& w : why)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("GPU0-GPU3 is SYS where the other pairs are NV18"));
  EXPECT_TRUE(has("the nearest NIC is not equally near every GPU"));
  EXPECT_TRUE(has("GPU2's PCIe link runs at x8 of the x16 it supports"));

  // The NVML path, where NVML gave one, wins over sysfs; a node of NV18 everywhere is uniform
  // apart from the NICs and the x8 link.
  std::vector<std::vector<int>> all(4, std::vector<int>(4, 18));
  const GpuLinkMatrix u = box_matrix(box, all);
  for (const auto& w : u.non_uniform()) EXPECT_EQ(w.find("where the other pairs"), std::string::npos) << w;
  EXPECT_EQ(u.slowest_path(), "NV18");
}

TEST(NvmlTopology, PrintsTheMatrixWithBandwidthAndLegend) {
  TwoSocketBox box;
  std::vector<std::vector<int>> links(4, std::vector<int>(4, 0));
  GpuLinkMatrix m = box_matrix(box, links);
  m.peer_bw_gbps[0][1] = 25.25;
  const std::string text = format_link_matrix(m);
  EXPECT_NE(text.find("GPU0   X      PIX    PXB    SYS    0     mlx5_0 (PIX)"), std::string::npos) << text;
  EXPECT_NE(text.find("measured peer bandwidth, GB/s"), std::string::npos);
  EXPECT_NE(text.find("25.2"), std::string::npos) << text;
  EXPECT_NE(text.find("PXB = several PCIe switches"), std::string::npos);
  EXPECT_EQ(text.find("NV# ="), std::string::npos);  // no NVLink in this matrix, no NVLink legend
}

TEST(NvmlTopology, WithoutNvmlTheMatrixIsEmptyAndSaysWhy) {
  const GpuLinkMatrix m = read_gpu_link_matrix("/sys", "libnvidia-ml-absent.so.1");
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.note, "NVML not found (libnvidia-ml-absent.so.1)");
  EXPECT_EQ(format_link_matrix(m), m.note + "\n");
}

TEST(NvmlTopology, TheMatrixRoundTripsThroughTheProbeFile) {
  TwoSocketBox box;
  std::vector<std::vector<int>> links(4, std::vector<int>(4, 12));
  ProbeData d;
  d.gpu_links = box_matrix(box, links);
  d.gpu_links.note = "NVML (fake), 4 GPUs";
  d.gpu_links.peer_bw_gbps[1][2] = 300.5;
  RunContext ctx;
  const std::string path = box.dir.file("probe.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, ctx);
    f.finish(RunStatus::Complete);
  }
  write_probe_group(path, d);
  const ProbeData back = read_probe_group(path);
  ASSERT_EQ(back.gpu_links.gpus.size(), 4u);
  EXPECT_EQ(back.gpu_links.note, "NVML (fake), 4 GPUs");
  EXPECT_EQ(back.gpu_links.path, d.gpu_links.path);
  EXPECT_EQ(back.gpu_links.nvlinks[0][1], 12);
  EXPECT_EQ(back.gpu_links.gpus[3].nearest_nic, "mlx5_1");
  EXPECT_EQ(back.gpu_links.gpus[2].pcie_width, 8);
  EXPECT_DOUBLE_EQ(back.gpu_links.peer_bw_gbps[1][2], 300.5);
  EXPECT_TRUE(std::isnan(back.gpu_links.peer_bw_gbps[0][1]));
}

// calibrate on a probe whose node is not uniform (one pair on PCIe, the others NV18): it warns,
// and the GPU topology's intra-node tier takes the slowest pair's rate, the host link's.
TEST(NvmlTopology, CalibrateGivesANonUniformNodeTheSlowestPair) {
  TwoSocketBox box;
  std::vector<std::vector<int>> links(4, std::vector<int>(4, 18));
  links[1][2] = links[2][1] = 0;
  ProbeData d;
  d.gpu_links = box_matrix(box, links);
  d.gpu_links.note = "NVML (fake), 4 GPUs";
  d.gpu_names.assign(4, "Fake GPU");
  RunContext ctx;
  const std::string path = box.dir.file("probe.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, ctx);
    f.finish(RunStatus::Complete);
  }
  write_probe_group(path, d);
  const std::string out = box.dir.file("fitted.yaml");
  std::vector<std::string> args = {"calibrate", path, "--base", "h200-node", "--out", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int rc = cmd_calibrate(static_cast<int>(argv.size()), argv.data());
  const std::string printed = ::testing::internal::GetCapturedStdout();
  const std::string warned = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0) << printed << warned;
  EXPECT_NE(warned.find("warning: the node is not uniform: GPU1-GPU2 is PXB where the other pairs are NV18"),
            std::string::npos)
      << warned;
  EXPECT_NE(printed.find("## GPU link matrix"), std::string::npos) << printed;
  const Topology base = load_topology(resolve_topology_path("h200-node"));
  const Topology fitted = load_topology(out);
  ASSERT_GT(base.intra.bw_Bps, base.host_link.bw_Bps);
  EXPECT_NEAR(fitted.intra.bw_Bps, base.host_link.bw_Bps, 1e-6 * base.host_link.bw_Bps);
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("the slowest GPU pair of the probe's link matrix (PXB): the host link's rate"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace commsim
