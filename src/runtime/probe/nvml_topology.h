#pragma once
// The GPU link matrix of `commsim probe`, as `nvidia-smi topo -m` shows it: for every pair of GPUs
// of a node the path between them (NV# over NVLink, with the number of links, else the PCIe path
// PIX / PXB / PHB / NODE / SYS), each GPU's NUMA node and its nearest NIC. Read through NVML, which
// is loaded at run time (libnvidia-ml.so.1; no NVML header or library is needed to build), and the
// PCI tree in sysfs. The classification is plain code on sysfs paths, so it is tested on fake trees.
#include <string>
#include <vector>

namespace commsim {

// How two PCI devices reach each other, nearest first (nvidia-smi's legend):
//  Single (PIX)      through at most one PCIe switch (bridge)
//  Multiple (PXB)    through several PCIe switches, without the host bridge
//  HostBridge (PHB)  through a PCIe host bridge (the CPU's root complex)
//  Node (NODE)       between host bridges inside one NUMA node
//  System (SYS)      across the interconnect between NUMA nodes (QPI / UPI / Infinity Fabric)
enum class PciPath { Single, Multiple, HostBridge, Node, System };
const char* pci_path_name(PciPath p);  // "PIX", "PXB", "PHB", "NODE", "SYS"

// Where a PCI device sits: its host bridge and the chain of devices from there down to itself.
struct PciLocation {
  std::string bus_id;              // "0000:19:00.0" (sysfs form, lower case)
  std::string root;                // "pci0000:00": the host bridge
  std::vector<std::string> chain;  // bus ids from below the host bridge down; the device itself last
  int numa_node = -1;              // -1: not known (a machine of one NUMA node: 0)
  int link_width = 0;              // PCIe lanes the link runs at (current_link_width); 0: not known
  int max_link_width = 0;          // lanes the device supports (max_link_width); 0: not known
};
// Reads <sysfs_root>/bus/pci/devices/<bus_id> (a link into <sysfs_root>/devices/pciDDDD:BB/...)
// and its numa_node. Throws Error naming the path when the device is not there.
PciLocation read_pci_location(const std::string& sysfs_root, const std::string& bus_id);
// The path between two devices (nvidia-smi's rules on the two chains).
PciPath classify_pci_path(const PciLocation& a, const PciLocation& b);

// "00000000:19:00.0" (NVML) -> "0000:19:00.0" (sysfs), lower case.
std::string sysfs_bus_id(const std::string& nvml_bus_id);

// A network adapter: an RDMA device (<sysfs>/class/infiniband/*), else a network interface
// backed by a PCI device (<sysfs>/class/net/*/device).
struct Nic {
  std::string name;  // "mlx5_0", "eth0"
  PciLocation where;
};
// The machine's NICs, by name. RDMA devices when there are any (what NCCL uses), else the
// interfaces with a PCI device behind them (virtual ones such as lo or docker0 have none).
std::vector<Nic> find_nics(const std::string& sysfs_root);

struct GpuLinkInfo {
  std::string name;         // "NVIDIA H200"
  std::string bus_id;       // sysfs form
  int numa_node = -1;       // the NUMA node nearest it (nvidia-smi's NUMA Affinity); -1: not known
  std::string nearest_nic;  // "" when the machine has no NIC
  std::string nic_path;     // the path to it ("PIX", ..., "SYS")
  int pcie_width = 0;       // PCIe lanes in use (x16, x8); 0: not known
  int pcie_max_width = 0;   // lanes the GPU supports; 0: not known
};

struct GpuLinkMatrix {
  std::string note;  // where it was read from, or why it is empty
  std::vector<GpuLinkInfo> gpus;
  std::vector<std::vector<std::string>> path;     // [i][j]: "X" on the diagonal, "NV18", "PIX", ...
  std::vector<std::vector<int>> nvlinks;          // [i][j]: NVLink links between the two (0: none)
  std::vector<std::vector<double>> peer_bw_gbps;  // [i][j]: measured GPU i -> GPU j, GB/s; NaN: not measured
  bool empty() const { return gpus.empty(); }
  // Why the node is not uniform: pairs of different path types ("GPU0-GPU3 PHB where the other
  // pairs are NV18"), a NIC farther from some GPUs than from others, a GPU whose PCIe link runs
  // on fewer lanes than it supports or than the others (a x8 slot). Empty: uniform.
  std::vector<std::string> non_uniform() const;
  // The slowest path type among the pairs ("" with fewer than two GPUs).
  std::string slowest_path() const;
};

// The NVLink links between every pair of GPUs, from each GPU's active links and the PCI bus id of
// what each link reaches. A link that reaches no GPU of the list reaches an NVSwitch: two GPUs
// that both have such links are joined through the switches by the fewer of their counts (as
// nvidia-smi shows NV18 for every pair of an HGX H100 board).
std::vector<std::vector<int>> count_nvlinks(const std::vector<std::string>& gpu_bus_ids,
                                            const std::vector<std::vector<std::string>>& link_remotes);

// The matrix from its parts: gpus (bus ids, names, NUMA nodes known), their NVLink counts, the PCI
// path of each pair where NVML gave one (pci_paths[i][j] empty: classify from sysfs locations),
// the GPUs' PCI locations, and the NICs. Fills path, nearest_nic and nic_path.
GpuLinkMatrix build_link_matrix(std::vector<GpuLinkInfo> gpus, const std::vector<std::vector<int>>& nvlinks,
                                const std::vector<std::vector<std::string>>& pci_paths,
                                const std::vector<PciLocation>& locations, const std::vector<Nic>& nics);

// Reads the matrix of this host through NVML (`library`, loaded with dlopen) and sysfs. Without
// NVML, or when NVML finds no GPU, the matrix is empty and `note` says why
// ("NVML not found (libnvidia-ml.so.1)"). Never throws for a missing or failing NVML.
GpuLinkMatrix read_gpu_link_matrix(const std::string& sysfs_root = "/sys",
                                   const std::string& library = "libnvidia-ml.so.1");

// The matrix as text, the way nvidia-smi topo -m lays it out (GPU columns, then NUMA node and
// nearest NIC), followed by the measured peer bandwidths in GB/s ("-" where not measured) and the
// legend of the path names used.
std::string format_link_matrix(const GpuLinkMatrix& m);

}  // namespace commsim
