#include "runtime/probe/nvml_topology.h"

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "model/error.h"

namespace commsim {
namespace fs = std::filesystem;

namespace {

bool is_bus_id(const std::string& s) {
  static const std::regex re("[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]");
  return std::regex_match(s, re);
}
bool is_host_bridge(const std::string& s) {
  static const std::regex re("pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}");
  return std::regex_match(s, re);
}
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
int read_int_file(const fs::path& p, int fallback) {
  std::ifstream in(p);
  int v = fallback;
  if (in >> v) return v;
  return fallback;
}

// The location of the device at a canonical sysfs path (/sys/devices/pci0000:00/0000:00:01.0/...):
// the host bridge is the last pciDDDD:BB component, the chain the bus ids below it up to the last
// one (a NIC's net device sits below its PCI function).
PciLocation location_from_path(const fs::path& device_path, const std::string& sysfs_root) {
  PciLocation loc;
  std::vector<std::string> parts;
  for (const auto& c : device_path) parts.push_back(c.string());
  std::size_t root = parts.size();
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (is_host_bridge(parts[i])) root = i;
  if (root == parts.size()) throw Error(device_path.string() + ": not below a PCI host bridge (pciDDDD:BB)");
  loc.root = parts[root];
  fs::path dir;
  for (std::size_t i = 0; i <= root; ++i) dir /= parts[i];
  fs::path device_dir;
  for (std::size_t i = root + 1; i < parts.size() && is_bus_id(parts[i]); ++i) {
    loc.chain.push_back(lower(parts[i]));
    dir /= parts[i];
    device_dir = dir;
  }
  if (loc.chain.empty()) throw Error(device_path.string() + ": no PCI device below the host bridge " + loc.root);
  loc.bus_id = loc.chain.back();
  loc.numa_node = read_int_file(device_dir / "numa_node", -1);
  if (loc.numa_node < 0) {
    // A machine of one NUMA node often leaves the device's numa_node at -1: it is node 0.
    int nodes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(sysfs_root) / "devices/system/node", ec)) {
      const std::string n = e.path().filename().string();
      nodes += n.size() > 4 && n.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(n[4])) ? 1 : 0;
    }
    if (nodes == 1) loc.numa_node = 0;
  }
  loc.link_width = read_int_file(device_dir / "current_link_width", 0);
  loc.max_link_width = read_int_file(device_dir / "max_link_width", 0);
  return loc;
}

// Smaller is slower: NV# by its link count above every PCIe path, then PIX > PXB > PHB > NODE > SYS.
int path_speed(const std::string& p) {
  if (p.rfind("NV", 0) == 0) return 1000 + std::atoi(p.c_str() + 2);
  static const std::map<std::string, int> pcie = {{"PIX", 5}, {"PXB", 4}, {"PHB", 3}, {"NODE", 2}, {"SYS", 1}};
  auto it = pcie.find(p);
  return it == pcie.end() ? 0 : it->second;
}

}  // namespace

const char* pci_path_name(PciPath p) {
  switch (p) {
    case PciPath::Single: return "PIX";
    case PciPath::Multiple: return "PXB";
    case PciPath::HostBridge: return "PHB";
    case PciPath::Node: return "NODE";
    case PciPath::System: return "SYS";
  }
  return "?";
}

std::string sysfs_bus_id(const std::string& nvml_bus_id) {
  std::string s = lower(nvml_bus_id);
  // NVML pads the domain to 8 digits; sysfs writes 4.
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

PciLocation read_pci_location(const std::string& sysfs_root, const std::string& bus_id) {
  const fs::path link = fs::path(sysfs_root) / "bus" / "pci" / "devices" / sysfs_bus_id(bus_id);
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  if (ec) throw Error(link.string() + ": no such PCI device (" + ec.message() + ")");
  return location_from_path(real, sysfs_root);
}

PciPath classify_pci_path(const PciLocation& a, const PciLocation& b) {
  if (a.root != b.root) {
    const bool same_numa = a.numa_node == b.numa_node || a.numa_node < 0 || b.numa_node < 0;
    return same_numa ? PciPath::Node : PciPath::System;
  }
  // The bridges above each device, and how many of them the two share.
  const std::size_t na = a.chain.empty() ? 0 : a.chain.size() - 1;
  const std::size_t nb = b.chain.empty() ? 0 : b.chain.size() - 1;
  std::size_t common = 0;
  while (common < na && common < nb && a.chain[common] == b.chain[common]) ++common;
  if (common == 0) return PciPath::HostBridge;
  // Below the deepest shared bridge (a switch's upstream port), each side passes its own
  // downstream port: one switch. More bridges on either side: a switch below another.
  return std::max(na - common, nb - common) <= 1 ? PciPath::Single : PciPath::Multiple;
}

std::vector<Nic> find_nics(const std::string& sysfs_root) {
  std::vector<Nic> out;
  auto scan = [&](const fs::path& cls, bool skip_virtual) {
    std::error_code ec;
    if (!fs::is_directory(cls, ec)) return;
    for (const auto& e : fs::directory_iterator(cls, ec)) {
      const fs::path dev = e.path() / "device";
      std::error_code ec2;
      const fs::path real = fs::canonical(dev, ec2);
      if (ec2) continue;  // a virtual interface: no device behind it
      try {
        out.push_back({e.path().filename().string(), location_from_path(real, sysfs_root)});
      } catch (const Error&) {
        if (!skip_virtual) throw;
      }
    }
  };
  scan(fs::path(sysfs_root) / "class" / "infiniband", true);
  if (out.empty()) scan(fs::path(sysfs_root) / "class" / "net", true);
  std::sort(out.begin(), out.end(), [](const Nic& x, const Nic& y) { return x.name < y.name; });
  return out;
}

std::vector<std::vector<int>> count_nvlinks(const std::vector<std::string>& gpu_bus_ids,
                                            const std::vector<std::vector<std::string>>& link_remotes) {
  const std::size_t n = gpu_bus_ids.size();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index[sysfs_bus_id(gpu_bus_ids[i])] = i;
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> to_switch(n, 0);
  for (std::size_t i = 0; i < n && i < link_remotes.size(); ++i) {
    for (const auto& remote : link_remotes[i]) {
      auto it = index.find(sysfs_bus_id(remote));
      if (it == index.end())
        ++to_switch[i];
      else if (it->second != i)
        ++direct[i][it->second];
    }
  }
  std::vector<std::vector<int>> out(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) out[i][j] = std::max(direct[i][j], direct[j][i]) + std::min(to_switch[i], to_switch[j]);
  return out;
}

GpuLinkMatrix build_link_matrix(std::vector<GpuLinkInfo> gpus, const std::vector<std::vector<int>>& nvlinks,
                                const std::vector<std::vector<std::string>>& pci_paths,
                                const std::vector<PciLocation>& locations, const std::vector<Nic>& nics) {
  GpuLinkMatrix m;
  const std::size_t n = gpus.size();
  auto known = [&](std::size_t i) { return i < locations.size() && !locations[i].root.empty(); };
  m.path.assign(n, std::vector<std::string>(n, "-"));
  m.nvlinks.assign(n, std::vector<int>(n, 0));
  m.peer_bw_gbps.assign(n, std::vector<double>(n, std::nan("")));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const int links = i < nvlinks.size() && j < nvlinks[i].size() ? nvlinks[i][j] : 0;
      m.nvlinks[i][j] = i == j ? 0 : links;
      if (i == j)
        m.path[i][j] = "X";
      else if (links > 0)
        m.path[i][j] = "NV" + std::to_string(links);
      else if (i < pci_paths.size() && j < pci_paths[i].size() && !pci_paths[i][j].empty())
        m.path[i][j] = pci_paths[i][j];
      else if (known(i) && known(j))
        m.path[i][j] = pci_path_name(classify_pci_path(locations[i], locations[j]));
    }
    if (known(i)) {
      if (gpus[i].numa_node < 0) gpus[i].numa_node = locations[i].numa_node;
      gpus[i].pcie_width = locations[i].link_width;
      gpus[i].pcie_max_width = locations[i].max_link_width;
      bool found = false;
      PciPath best = PciPath::System;
      for (const auto& nic : nics) {
        const PciPath p = classify_pci_path(locations[i], nic.where);
        if (!found || p < best) best = p, gpus[i].nearest_nic = nic.name, found = true;
      }
      if (found) gpus[i].nic_path = pci_path_name(best);
    }
  }
  m.gpus = std::move(gpus);
  return m;
}

std::vector<std::string> GpuLinkMatrix::non_uniform() const {
  std::vector<std::string> out;
  const std::size_t n = gpus.size();
  std::map<std::string, int> count;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) ++count[path[i][j]];
  if (count.size() > 1) {
    std::string common = count.begin()->first;
    for (const auto& [p, c] : count)
      if (c > count[common]) common = p;
    int listed = 0, more = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        if (path[i][j] == common) continue;
        if (listed++ < 8)
          out.push_back("GPU" + std::to_string(i) + "-GPU" + std::to_string(j) + " is " + path[i][j] +
                        " where the other pairs are " + common);
        else
          ++more;
      }
    if (more > 0) out.push_back("and " + std::to_string(more) + " more pairs not " + common);
  }
  std::map<std::string, int> nic_paths;
  for (const auto& g : gpus)
    if (!g.nic_path.empty()) ++nic_paths[g.nic_path];
  if (nic_paths.size() > 1) {
    std::string s = "the nearest NIC is not equally near every GPU:";
    for (std::size_t i = 0; i < n; ++i)
      if (!gpus[i].nic_path.empty())
        s += " GPU" + std::to_string(i) + " " + gpus[i].nearest_nic + " " + gpus[i].nic_path;
    out.push_back(s);
  }
  int widest = 0;
  for (const auto& g : gpus) widest = std::max(widest, g.pcie_width);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = gpus[i];
    if (g.pcie_width <= 0) continue;
    if (g.pcie_max_width > g.pcie_width || g.pcie_width < widest)
      out.push_back("GPU" + std::to_string(i) + "'s PCIe link runs at x" + std::to_string(g.pcie_width) +
                    (g.pcie_max_width > g.pcie_width ? " of the x" + std::to_string(g.pcie_max_width) + " it supports"
                                                     : " where other GPUs run at x" + std::to_string(widest)));
  }
  return out;
}

std::string GpuLinkMatrix::slowest_path() const {
  std::string slowest;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = i + 1; j < gpus.size(); ++j)
      if (slowest.empty() || path_speed(path[i][j]) < path_speed(slowest)) slowest = path[i][j];
  return slowest;
}

// ---- NVML, loaded at run time ---------------------------------------------------------------
namespace {

// The few NVML types used here (nvml.h, stable since NVML 2.285).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

struct Nvml {
  std::unique_ptr<void, int (*)(void*)> lib{nullptr, dlclose};
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*common_ancestor)(nvmlDevice_t, nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*memory_affinity)(nvmlDevice_t, unsigned, unsigned long*, int) = nullptr;

  template <typename F>
  void resolve(F& f, std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* p = dlsym(lib.get(), n)) {
        f = reinterpret_cast<F>(p);
        return;
      }
  }
  std::string why(nvmlReturn_t rc) const {
    return error_string ? error_string(rc) : "NVML error " + std::to_string(rc);
  }
};

// nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50.
std::string topology_level_name(int level) {
  if (level <= 10) return "PIX";
  if (level <= 20) return "PXB";
  if (level <= 30) return "PHB";
  if (level <= 40) return "NODE";
  return "SYS";
}

}  // namespace

GpuLinkMatrix read_gpu_link_matrix(const std::string& sysfs_root, const std::string& library) {
  GpuLinkMatrix empty;
  Nvml nv;
  nv.lib.reset(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!nv.lib) {
    empty.note = "NVML not found (" + library + ")";
    return empty;
  }
  nv.resolve(nv.init, {"nvmlInit_v2", "nvmlInit"});
  nv.resolve(nv.shutdown, {"nvmlShutdown"});
  nv.resolve(nv.error_string, {"nvmlErrorString"});
  nv.resolve(nv.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  nv.resolve(nv.handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  nv.resolve(nv.pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  nv.resolve(nv.name, {"nvmlDeviceGetName"});
  nv.resolve(nv.common_ancestor, {"nvmlDeviceGetTopologyCommonAncestor"});
  nv.resolve(nv.link_state, {"nvmlDeviceGetNvLinkState"});
  nv.resolve(nv.link_remote, {"nvmlDeviceGetNvLinkRemotePciInfo_v2"});
  nv.resolve(nv.memory_affinity, {"nvmlDeviceGetMemoryAffinity"});
  if (!nv.init || !nv.shutdown || !nv.count || !nv.handle || !nv.pci_info) {
    empty.note = "NVML (" + library +
                 ") lacks nvmlInit_v2 / nvmlDeviceGetCount_v2 / nvmlDeviceGetHandleByIndex_v2 / "
                 "nvmlDeviceGetPciInfo_v3: a driver older than this probe reads";
    return empty;
  }
  if (nvmlReturn_t rc = nv.init(); rc != kNvmlSuccess) {
    empty.note = "NVML (" + library + ") did not start: " + nv.why(rc);
    return empty;
  }
  struct Shutdown {
    Nvml& nv;
    ~Shutdown() { nv.shutdown(); }
  } shutdown{nv};

  unsigned n = 0;
  if (nvmlReturn_t rc = nv.count(&n); rc != kNvmlSuccess || n == 0) {
    empty.note = rc != kNvmlSuccess ? "NVML could not count the GPUs: " + nv.why(rc) : "NVML sees no GPU";
    return empty;
  }
  std::vector<nvmlDevice_t> dev(n);
  std::vector<GpuLinkInfo> gpus(n);
  std::vector<PciLocation> where(n);
  std::vector<std::vector<std::string>> remotes(n), pci(n, std::vector<std::string>(n));
  std::string missing;
  for (unsigned i = 0; i < n; ++i) {
    if (nvmlReturn_t rc = nv.handle(i, &dev[i]); rc != kNvmlSuccess) {
      empty.note = "NVML could not open GPU " + std::to_string(i) + ": " + nv.why(rc);
      return empty;
    }
    nvmlPciInfo_t info{};
    if (nvmlReturn_t rc = nv.pci_info(dev[i], &info); rc != kNvmlSuccess) {
      empty.note = "NVML gave no PCI bus id for GPU " + std::to_string(i) + ": " + nv.why(rc);
      return empty;
    }
    gpus[i].bus_id = sysfs_bus_id(info.busId);
    char name[96] = {};
    if (nv.name && nv.name(dev[i], name, sizeof name) == kNvmlSuccess) gpus[i].name = name;
    // The NUMA node nearest the GPU (nvidia-smi's "NUMA Affinity"): the lowest node of its memory
    // affinity set (scope NVML_AFFINITY_SCOPE_NODE = 0).
    unsigned long nodes = 0;
    if (nv.memory_affinity && nv.memory_affinity(dev[i], 1, &nodes, 0) == kNvmlSuccess && nodes != 0)
      gpus[i].numa_node = std::countr_zero(nodes);
    try {
      where[i] = read_pci_location(sysfs_root, gpus[i].bus_id);
    } catch (const Error&) {
      missing += (missing.empty() ? "" : ", ") + gpus[i].bus_id;
    }
    if (nv.link_state && nv.link_remote) {
      for (unsigned l = 0; l < kNvmlMaxLinks; ++l) {
        int active = 0;
        if (nv.link_state(dev[i], l, &active) != kNvmlSuccess || !active) continue;
        nvmlPciInfo_t remote{};
        if (nv.link_remote(dev[i], l, &remote) == kNvmlSuccess) remotes[i].push_back(remote.busId);
      }
    }
  }
  if (nv.common_ancestor)
    for (unsigned i = 0; i < n; ++i)
      for (unsigned j = 0; j < n; ++j) {
        int level = 0;
        if (i != j && nv.common_ancestor(dev[i], dev[j], &level) == kNvmlSuccess)
          pci[i][j] = topology_level_name(level);
      }
  std::vector<std::string> ids;
  for (const auto& g : gpus) ids.push_back(g.bus_id);
  GpuLinkMatrix m = build_link_matrix(gpus, count_nvlinks(ids, remotes), pci, where, find_nics(sysfs_root));
  m.note = "NVML (" + library + "), " + std::to_string(n) + " GPU" + (n == 1 ? "" : "s") +
           (nv.link_state && nv.link_remote ? "" : ", no NVLink queries in this NVML") +
           (missing.empty() ? "" : "; not in sysfs (no NUMA node / nearest NIC): " + missing);
  return m;
}

std::string format_link_matrix(const GpuLinkMatrix& m) {
  std::ostringstream s;
  const std::size_t n = m.gpus.size();
  if (n == 0) return m.note + "\n";
  char buf[64];
  auto cell = [&](const std::string& text, int width) {
    std::snprintf(buf, sizeof buf, "%-*s", width, text.c_str());
    s << buf;
  };
  cell("", 7);
  for (std::size_t j = 0; j < n; ++j) cell("GPU" + std::to_string(j), 7);
  s << "NUMA  nearest NIC\n";
  std::set<std::string> used;
  for (std::size_t i = 0; i < n; ++i) {
    cell("GPU" + std::to_string(i), 7);
    for (std::size_t j = 0; j < n; ++j) {
      cell(m.path[i][j], 7);
      if (i != j) used.insert(m.path[i][j].rfind("NV", 0) == 0 ? "NV#" : m.path[i][j]);
    }
    const auto& g = m.gpus[i];
    cell(g.numa_node >= 0 ? std::to_string(g.numa_node) : "N/A", 6);
    s << (g.nearest_nic.empty() ? "none" : g.nearest_nic + " (" + g.nic_path + ")");
    if (!g.nic_path.empty()) used.insert(g.nic_path);
    s << "   " << g.bus_id << (g.pcie_width > 0 ? " PCIe x" + std::to_string(g.pcie_width) : "")
      << (g.name.empty() ? "" : " " + g.name) << "\n";
  }
  if (n > 1) {
    s << "measured peer bandwidth, GB/s (row -> column; - = not measured):\n";
    cell("", 7);
    for (std::size_t j = 0; j < n; ++j) cell("GPU" + std::to_string(j), 9);
    s << "\n";
    for (std::size_t i = 0; i < n; ++i) {
      cell("GPU" + std::to_string(i), 7);
      for (std::size_t j = 0; j < n; ++j) {
        const double bw = m.peer_bw_gbps[i][j];
        if (std::isfinite(bw)) {
          std::snprintf(buf, sizeof buf, "%-9.1f", bw);
          s << buf;
        } else {
          cell(i == j ? "X" : "-", 9);
        }
      }
      s << "\n";
    }
  }
  static const std::map<std::string, std::string> legend = {{"NV#", "NV# = # bonded NVLink links"},
                                                            {"PIX", "PIX = at most one PCIe switch"},
                                                            {"PXB", "PXB = several PCIe switches, no host bridge"},
                                                            {"PHB", "PHB = a PCIe host bridge (the CPU)"},
                                                            {"NODE", "NODE = between host bridges of one NUMA node"},
                                                            {"SYS", "SYS = across NUMA nodes (QPI/UPI)"}};
  std::string l;
  for (const auto& u : used)
    if (auto it = legend.find(u); it != legend.end()) l += (l.empty() ? "" : "; ") + it->second;
  if (!l.empty()) s << "legend: " << l << "\n";
  return s.str();
}

}  // namespace commsim
