// The `nccl:` section of a topology file: NCCL's protocol constants for the closed forms (the
// latency tables, bandwidth fractions, fitted bus bandwidths) and the machine fields that NCCL's
// own tuning model reads (NcclMachine). configs/topologies/README.md documents every field.
#include <charconv>
#include <string>

#include "model/nccl/logged_table.h"
#include "model/nccl/system.h"
#include "model/nccl/versions.h"
#include "model/topology/yaml_fields.h"
#include "model/units.h"

namespace commsim::yaml_fields {
namespace {

// ring/tree x LL/LL128/Simple latencies, e.g. nccl.base_latency.
void read_nccl_table(const MapReader& parent, const char* key, double (&out)[2][3]) {
  const Ctx& ctx = parent.ctx();
  std::string path = child_path(parent.path(), key);
  MapReader table(ctx, parent.require(key), path, {"ring", "tree"});
  const char* const* algos = kNcclTableNames;
  for (int a = 0; a < 2; ++a) {
    std::string apath = child_path(path, algos[a]);
    MapReader protos(ctx, table.require(algos[a]), apath, {"LL", "LL128", "Simple"});
    const char* names[3] = {"LL", "LL128", "Simple"};
    for (int p = 0; p < 3; ++p) out[a][p] = read_time(ctx, protos.require(names[p]), child_path(apath, names[p]));
  }
}

// nccl.bus_bandwidth: ring/tree x LL/LL128/Simple bandwidths, every one optional (0: from the tiers).
void read_nccl_bandwidths(const MapReader& parent, const YAML::Node& node, BytesPerSecond (&out)[2][3]) {
  const Ctx& ctx = parent.ctx();
  const std::string path = child_path(parent.path(), "bus_bandwidth");
  MapReader table(ctx, node, path, {"ring", "tree"});
  const char* const* algos = kNcclTableNames;
  const char* names[3] = {"LL", "LL128", "Simple"};
  for (int a = 0; a < 2; ++a) {
    auto row = table.optional(algos[a]);
    if (!row) continue;
    const std::string apath = child_path(path, algos[a]);
    MapReader protos(ctx, *row, apath, {"LL", "LL128", "Simple"});
    for (int p = 0; p < 3; ++p)
      if (auto v = protos.optional(names[p])) out[a][p] = read_bandwidth(ctx, *v, child_path(apath, names[p]));
  }
}
// nccl.compute_capability: "9.0" -> 90, "10.3" -> 103.
int read_compute_capability(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(ctx, n, field);
  const auto dot = s.find('.');
  int major = 0, minor = 0;
  const char* end = s.data() + s.size();
  bool ok = dot != std::string::npos && dot + 2 == s.size();
  if (ok) {
    auto [p1, e1] = std::from_chars(s.data(), s.data() + dot, major);
    auto [p2, e2] = std::from_chars(s.data() + dot + 1, end, minor);
    ok = e1 == std::errc() && p1 == s.data() + dot && e2 == std::errc() && p2 == end;
  }
  if (!ok || major < 3 || major > 20)
    fail(ctx, n.Mark(), field, "'" + s + "' is not a compute capability (MAJOR.MINOR, e.g. 9.0 for H100)");
  return major * 10 + minor;
}

// nccl.graphs.{ring,tree,nvls}: { channels, bw_intra, bw_inter } (bw_inter defaults to bw_intra).
void read_graph(const MapReader& graphs, const char* key, NcclGraphOverride& out) {
  auto node = graphs.optional(key);
  if (!node) return;
  const Ctx& ctx = graphs.ctx();
  const std::string path = child_path(graphs.path(), key);
  MapReader g(ctx, *node, path, {"channels", "bw_intra", "bw_inter"});
  out.channels =
      static_cast<int>(read_int(ctx, g.require("channels", "nChannels of the GRAPH line"), path + ".channels", 1, 64));
  out.bw_intra_Bps = read_bandwidth(ctx, g.require("bw_intra", "per channel, e.g. 30 GB/s"), path + ".bw_intra");
  out.bw_inter_Bps = out.bw_intra_Bps;
  if (auto v = g.optional("bw_inter")) out.bw_inter_Bps = read_bandwidth(ctx, *v, path + ".bw_inter");
}

// The fields of NcclMachine. Version, NCCL_ALGO and NCCL_PROTO are checked here, so that a wrong
// release or algorithm name is reported with its line.
void read_nccl_machine(const MapReader& nccl, NcclMachine& m) {
  const Ctx& ctx = nccl.ctx();
  const nccl::Version* version = &nccl::newest_version();
  if (auto v = nccl.optional("version")) {
    m.version = scalar(ctx, *v, "nccl.version");
    try {
      version = &nccl::find_version(m.version);
    } catch (const Error& e) {
      fail(ctx, v->Mark(), "nccl.version", e.what());
    }
  }
  if (auto v = nccl.optional("compute_capability"))
    m.compute_capability = read_compute_capability(ctx, *v, "nccl.compute_capability");
  if (auto v = nccl.optional("nvlinks_per_gpu"))
    m.nvlinks_per_gpu = static_cast<int>(read_int(ctx, *v, "nccl.nvlinks_per_gpu", 0, 64));
  if (auto v = nccl.optional("nvlink_bandwidth")) m.nvlink_bw_Bps = read_bandwidth(ctx, *v, "nccl.nvlink_bandwidth");
  if (auto v = nccl.optional("nvls")) m.nvls = read_bool(ctx, *v, "nccl.nvls");
  if (auto v = nccl.optional("nvlink_domain"))
    m.nvlink_domain_gpus = static_cast<int>(read_int(ctx, *v, "nccl.nvlink_domain", 1, 1 << 20));
  if (auto v = nccl.optional("collnet")) {
    MapReader c(ctx, *v, "nccl.collnet", {"enabled", "heads"});
    m.collnet = read_bool(ctx, c.require("enabled"), "nccl.collnet.enabled");
    if (auto h = c.optional("heads"))
      m.collnet_heads = static_cast<int>(read_int(ctx, *h, "nccl.collnet.heads", 1, 64));
  }
  if (auto v = nccl.optional("cpu")) {
    MapReader c(ctx, *v, "nccl.cpu", {"arch", "vendor"});
    if (auto a = c.optional("arch")) m.cpu_arch = read_choice(ctx, *a, "nccl.cpu.arch", {"x86", "arm", "power"});
    if (auto x = c.optional("vendor"))
      m.cpu_vendor = read_choice(ctx, *x, "nccl.cpu.vendor", {"intel", "amd", "zhaoxin", "other"});
  }
  if (auto v = nccl.optional("pcie")) {
    MapReader p(ctx, *v, "nccl.pcie", {"gen", "width"});
    if (auto g = p.optional("gen")) m.pcie_gen = static_cast<int>(read_int(ctx, *g, "nccl.pcie.gen", 1, 5));
    if (auto w = p.optional("width")) {
      m.pcie_width = static_cast<int>(read_int(ctx, *w, "nccl.pcie.width", 1, 32));
      if (m.pcie_width & (m.pcie_width - 1))
        fail(ctx, w->Mark(), "nccl.pcie.width", "must be 1, 2, 4, 8, 16 or 32 lanes");
    }
  }
  if (auto v = nccl.optional("nic_speed")) m.nic_speed_Bps = read_bandwidth(ctx, *v, "nccl.nic_speed");
  if (auto v = nccl.optional("net_latency")) m.net_latency_s = read_time(ctx, *v, "nccl.net_latency");
  if (auto v = nccl.optional("launch_overhead")) m.launch_s = read_time(ctx, *v, "nccl.launch_overhead");
  if (auto v = nccl.optional("graph_launch_overhead"))
    m.graph_launch_s = read_time(ctx, *v, "nccl.graph_launch_overhead");
  if (auto v = nccl.optional("gpus_per_thread"))
    m.gpus_per_thread = static_cast<int>(read_int(ctx, *v, "nccl.gpus_per_thread", 1, 1024));
  if (auto v = nccl.optional("cuda_graphs")) m.cuda_graphs = read_bool(ctx, *v, "nccl.cuda_graphs");
  if (auto v = nccl.optional("bandwidth_scale")) {
    m.bandwidth_scale = read_number(ctx, *v, "nccl.bandwidth_scale");
    if (!(m.bandwidth_scale > 0 && m.bandwidth_scale <= 1))
      fail(ctx, v->Mark(), "nccl.bandwidth_scale", "must be in (0, 1] (a share of NCCL's per-channel bandwidth)");
  }
  if (auto v = nccl.optional("latency_offset")) {
    // Signed: "-2.5 us" lowers NCCL's latencies.
    const std::string text = scalar(ctx, *v, "nccl.latency_offset");
    const bool negative = !text.empty() && text[0] == '-';
    try {
      m.latency_offset_s = (negative ? -1 : 1) * parse_time(negative ? text.substr(1) : text);
    } catch (const Error& e) {
      fail(ctx, v->Mark(), "nccl.latency_offset", e.what());
    }
  }
  if (auto v = nccl.optional("graphs")) {
    MapReader g(ctx, *v, "nccl.graphs", {"ring", "tree", "nvls"});
    read_graph(g, "ring", m.ring);
    read_graph(g, "tree", m.tree);
    read_graph(g, "nvls", m.nvls_graph);
  }
  if (auto v = nccl.optional("algo")) {
    m.algo = scalar(ctx, *v, "nccl.algo");
    try {
      nccl::parse_enable_masks(m.algo, "", *version);
    } catch (const Error& e) {
      fail(ctx, v->Mark(), "nccl.algo", e.what());
    }
  }
  if (auto v = nccl.optional("proto")) {
    m.proto = scalar(ctx, *v, "nccl.proto");
    try {
      nccl::parse_enable_masks("", m.proto, *version);
    } catch (const Error& e) {
      fail(ctx, v->Mark(), "nccl.proto", e.what());
    }
  }
}

// nccl.tuning_table: NCCL's TUNING table from a log (model/nccl/logged_table.h), one map per
// function, one flow map per algorithm: { LL: 7.2 us / 141 GB/s, LL128: off, ... }.
void read_tuning_table(const Ctx& ctx, const YAML::Node& node, NcclTuningTable& out) {
  const std::string path = "nccl.tuning_table";
  MapReader t(ctx, node, path,
              {"ranks", "nodes", "source", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"});
  out.ranks =
      static_cast<int>(read_int(ctx, t.require("ranks", "the ranks NCCL tuned for"), path + ".ranks", 1, 1 << 24));
  out.nodes =
      static_cast<int>(read_int(ctx, t.require("nodes", "the nodes NCCL tuned for"), path + ".nodes", 1, 1 << 24));
  if (auto s = t.optional("source")) out.source = scalar(ctx, *s, path + ".source");
  for (int f = 0; f < nccl::kNumFunctions; ++f) {
    const std::string fname(nccl::kFunctionNames[f]);
    auto fnode = t.optional(fname.c_str());
    if (!fnode) continue;
    const std::string fpath = child_path(path, fname);
    MapReader algos(ctx, *fnode, fpath, {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"});
    for (int a = 0; a < nccl::kNumAlgorithms; ++a) {
      const std::string aname(nccl::kAlgorithmNames[a]);
      auto anode = algos.optional(aname.c_str());
      if (!anode) continue;
      const std::string apath = child_path(fpath, aname);
      MapReader protos(ctx, *anode, apath, {"LL", "LL128", "Simple"});
      for (int p = 0; p < nccl::kNumProtocols; ++p) {
        const std::string pname(nccl::kProtocolNames[p]);
        auto v = protos.optional(pname.c_str());
        if (!v) continue;
        NcclTuningEntry e{f, a, p, 0, 0};
        const std::string field = child_path(apath, pname);
        try {
          nccl::parse_tuning_entry(scalar(ctx, *v, field), e.latency_us, e.bandwidth_GBps);
        } catch (const Error& err) {
          fail(ctx, v->Mark(), field, err.what());
        }
        out.entries.push_back(e);
      }
    }
  }
  if (out.entries.empty()) fail(ctx, node.Mark(), path, "no entry: give at least one function's algorithms");
}

}  // namespace

void read_nccl_section(const Ctx& ctx, const YAML::Node& node, NcclConstants& out) {
  MapReader nccl(ctx, node, "nccl",
                 {"base_latency",
                  "intra_hop_latency",
                  "inter_hop_latency",
                  "bandwidth_fraction",
                  "bus_bandwidth",
                  "version",
                  "compute_capability",
                  "nvlinks_per_gpu",
                  "nvlink_bandwidth",
                  "nvls",
                  "nvlink_domain",
                  "collnet",
                  "cpu",
                  "pcie",
                  "nic_speed",
                  "net_latency",
                  "launch_overhead",
                  "graph_launch_overhead",
                  "gpus_per_thread",
                  "cuda_graphs",
                  "bandwidth_scale",
                  "latency_offset",
                  "graphs",
                  "algo",
                  "proto",
                  "tuning_table"});
  // The latency tables come together; without them the section states only what NCCL's tuning
  // model reads, and the closed forms treat the topology as one without NCCL constants.
  const bool tables = nccl.has("base_latency") || nccl.has("intra_hop_latency") || nccl.has("inter_hop_latency");
  if (tables) {
    read_nccl_table(nccl, "base_latency", out.base_latency_s);
    read_nccl_table(nccl, "intra_hop_latency", out.intra_hop_latency_s);
    read_nccl_table(nccl, "inter_hop_latency", out.inter_hop_latency_s);
  }
  if (auto frac = nccl.optional("bandwidth_fraction")) {
    MapReader f(ctx, *frac, "nccl.bandwidth_fraction", {"LL", "LL128", "Simple"});
    const char* names[3] = {"LL", "LL128", "Simple"};
    for (int p = 0; p < 3; ++p) {
      if (auto v = f.optional(names[p])) {
        std::string field = std::string("nccl.bandwidth_fraction.") + names[p];
        double x = read_number(ctx, *v, field);
        if (!(x > 0 && x <= 1)) fail(ctx, v->Mark(), field, "must be in (0, 1] (a fraction of Simple's bandwidth)");
        out.bw_fraction[p] = x;
      }
    }
  }
  if (auto bw = nccl.optional("bus_bandwidth")) read_nccl_bandwidths(nccl, *bw, out.bus_bw_Bps);
  read_nccl_machine(nccl, out.machine);
  if (auto v = nccl.optional("tuning_table")) read_tuning_table(ctx, *v, out.machine.tuning_table);
  out.present = tables;
}

}  // namespace commsim::yaml_fields
