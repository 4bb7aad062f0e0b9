// Topology files: strict reading of the YAML schema documented in configs/topologies/README.md.
// Every error names the file, the line and the field (as a dotted path, e.g. network.nic_bandwidth)
// so that a person can fix the file without reading this code.
#include "model/topology/topology.h"
#include "model/config_dirs.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "model/error.h"
#include "model/topology/yaml_fields.h"

namespace commsim {
namespace {

using namespace yaml_fields;  // the field readers (yaml_fields.h)

constexpr std::initializer_list<const char*> kIntraFabrics = {"nvswitch", "nvlink-mesh", "pcie-switch", "host-bridge",
                                                              "shared-memory"};
constexpr std::initializer_list<const char*> kNetworkKinds = {"infiniband", "roce",     "efa",
                                                              "slingshot",  "tcpxo",    "ethernet",
                                                              "tcp",        "none"};
constexpr std::initializer_list<const char*> kNetworkShapes = {"fat-tree",  "rail-optimized", "single-switch",
                                                               "dragonfly", "torus",          "none"};


// A list given as text ("8B:256MiB", "1:4", "1,2,4") or as a YAML list of values.
std::vector<Bytes> read_size_list(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  std::vector<Bytes> out;
  if (n.IsSequence()) {
    for (const auto& v : n) out.push_back(read_bytes(ctx, v, field));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  } else {
    out = read_unit(ctx, n, field, [](const std::string& s) { return parse_size_list(s); });
  }
  if (out.empty()) fail(ctx, n.Mark(), field, "must list at least one size");
  return out;
}
std::vector<int> read_int_list(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  std::vector<int> out;
  if (n.IsSequence()) {
    for (const auto& v : n) out.push_back(static_cast<int>(read_int(ctx, v, field, 1, 1 << 24)));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  } else {
    out = read_unit(ctx, n, field, [](const std::string& s) { return parse_int_list(s); });
  }
  if (out.empty()) fail(ctx, n.Mark(), field, "must list at least one value");
  return out;
}

// calibrated: { created, sources, sizes, nodes, ranks } (see CalibrationInfo).
void read_calibrated(const MapReader& c, CalibrationInfo& out) {
  const Ctx& ctx = c.ctx();
  out.present = true;
  if (auto v = c.optional("created")) out.created = scalar(ctx, *v, "calibrated.created");
  if (auto v = c.optional("sources")) {
    if (v->IsSequence()) {
      for (const auto& s : *v) out.sources.push_back(scalar(ctx, s, "calibrated.sources"));
    } else {
      out.sources.push_back(scalar(ctx, *v, "calibrated.sources"));
    }
  }
  out.sizes = read_size_list(ctx, c.require("sizes", "message sizes measured, e.g. \"8B:256MiB\""), "calibrated.sizes");
  out.nodes = read_int_list(ctx, c.require("nodes", "node counts measured, e.g. \"1:4\""), "calibrated.nodes");
  if (auto v = c.optional("ranks")) out.ranks = read_int_list(ctx, *v, "calibrated.ranks");
}

constexpr std::initializer_list<const char*> kTransportNames = {"mpi", "ucx", "nccl", "ipc"};

// One protocol regime of a tier: `limit_key` (bytes, more than 0) and `latency_key` come together,
// `overhead_key` needs them; `messages` names the messages of the regime in the errors. Returns
// whether the regime is set.
bool read_regime(const Ctx& ctx, const MapReader& r, const std::string& path, const char* limit_key,
                 const char* latency_key, const char* overhead_key, const std::string& messages, Bytes& limit,
                 Seconds& latency, std::optional<Seconds>& overhead) {
  auto lim = r.optional(limit_key), lat = r.optional(latency_key);
  if (lim.has_value() != lat.has_value())
    fail(ctx, (lim ? *lim : *lat).Mark(), child_path(path, lim ? latency_key : limit_key),
         std::string(limit_key) + " and " + latency_key + " go together (" + messages + " pay " + latency_key + ")");
  if (lim) {
    limit = read_bytes(ctx, *lim, child_path(path, limit_key));
    if (limit == 0) fail(ctx, lim->Mark(), child_path(path, limit_key), "must be more than 0 bytes (omit it for none)");
    latency = read_time(ctx, *lat, child_path(path, latency_key));
  }
  if (auto v = r.optional(overhead_key)) {
    if (!lim)
      fail(ctx, v->Mark(), child_path(path, overhead_key),
           std::string("needs ") + limit_key + " and " + latency_key + " (it is the overhead of " + messages + ")");
    overhead = read_time(ctx, *v, child_path(path, overhead_key));
  }
  return lim.has_value();
}


// The optional message-protocol fields of a tier (MessageCosts): the rendezvous regime above the
// eager limit, the inline regime up to the inline limit (below the eager limit), and
// message_overhead.
void read_message_costs(const Ctx& ctx, const MapReader& r, const std::string& path, MessageCosts& out) {
  const bool eager = read_regime(ctx, r, path, "eager_limit", "rendezvous_latency", "rendezvous_overhead",
                                 "messages above the eager limit", out.eager_limit_bytes,
                                 out.rendezvous_latency_s, out.rendezvous_overhead_s);
  if (auto v = r.optional("message_overhead"))
    out.message_overhead_s = read_time(ctx, *v, child_path(path, "message_overhead"));
  if (read_regime(ctx, r, path, "inline_limit", "inline_latency", "inline_overhead",
                  "messages up to the inline limit", out.inline_limit_bytes,
                  out.inline_latency_s, out.inline_overhead_s) &&
      eager && out.inline_limit_bytes >= out.eager_limit_bytes)
    fail(ctx, r.optional("inline_limit")->Mark(), child_path(path, "inline_limit"),
         "must be below eager_limit (" + format_bytes(out.eager_limit_bytes) + ")");
  read_in_range(ctx, r, path, "one_way_factor", 0, false, 10,
                "must be more than 0 and at most 10 (a factor on the latency of one-way messages; 1 = none)",
                out.one_way_factor);
  read_in_range(ctx, r, path, "exchange_factor", 0, false, 10,
                "must be more than 0 and at most 10 (a factor on the latency of messages answered in the same "
                "round; 1 = none)",
                out.exchange_factor);
  read_in_range(ctx, r, path, "overhead_receive_share", 0, true, 1,
                "must be from 0 to 1 (the part of each message overhead that the receiving rank pays; 0 = all by "
                "the sender)",
                out.overhead_receive_share);
}

// transports: { ucx: { intra_node: { latency, bandwidth }, network: { latency, nic_bandwidth } }, ... }
// Every value is optional, but each map must set at least one.
void read_transports(const MapReader& section, const Topology& t, std::vector<TransportOverride>& out) {
  const Ctx& ctx = section.ctx();
  for (const char* name : kTransportNames) {
    auto node = section.optional(name);
    if (!node) continue;
    const std::string path = child_path(section.path(), name);
    MapReader tr(ctx, *node, path, {"intra_node", "network"});
    if (!tr.has("intra_node") && !tr.has("network"))
      fail(ctx, tr.mark(), path, "give intra_node and/or network values for this transport");
    TransportOverride o;
    o.transport = name;
    if (auto intra = tr.optional("intra_node")) {
      const std::string ipath = child_path(path, "intra_node");
      MapReader r(ctx, *intra, ipath, {"bandwidth", "latency"});
      if (!r.has("bandwidth") && !r.has("latency")) fail(ctx, r.mark(), ipath, "give bandwidth and/or latency");
      if (auto v = r.optional("bandwidth")) o.intra_bw_Bps = read_bandwidth(ctx, *v, child_path(ipath, "bandwidth"));
      if (auto v = r.optional("latency")) o.intra_latency_s = read_time(ctx, *v, child_path(ipath, "latency"));
    }
    if (auto net = tr.optional("network")) {
      const std::string npath = child_path(path, "network");
      if (!t.network.present())
        fail(ctx, net->Mark(), npath,
             "this topology has no network (network.kind none), so there is nothing to override");
      MapReader r(ctx, *net, npath, {"nic_bandwidth", "latency"});
      if (!r.has("nic_bandwidth") && !r.has("latency")) fail(ctx, r.mark(), npath, "give nic_bandwidth and/or latency");
      if (auto v = r.optional("nic_bandwidth"))
        o.nic_bw_Bps = read_bandwidth(ctx, *v, child_path(npath, "nic_bandwidth"));
      if (auto v = r.optional("latency")) o.network_latency_s = read_time(ctx, *v, child_path(npath, "latency"));
    }
    out.push_back(std::move(o));
  }
}

// storage: a list of { name, kind: local|shared, read_bandwidth, write_bandwidth, latency,
// aggregate_read_bandwidth?, aggregate_write_bandwidth? } (see StorageTier).
void read_storage(const Ctx& ctx, const YAML::Node& list, std::vector<StorageTier>& out) {
  if (!list.IsSequence())
    fail(ctx, list.Mark(), "storage",
         "expected a list of tiers ({ name, kind: local|shared, read_bandwidth, write_bandwidth, latency }), got " +
             node_kind(list));
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "storage[" + std::to_string(i) + "]";
    MapReader e(ctx, list[i], path,
                {"name", "kind", "read_bandwidth", "write_bandwidth", "latency", "aggregate_read_bandwidth",
                 "aggregate_write_bandwidth"});
    StorageTier s;
    s.name = scalar(ctx, e.require("name", "e.g. local-nvme"), path + ".name");
    if (s.name.empty()) fail(ctx, e.mark(), path + ".name", "must not be empty");
    for (const StorageTier& o : out)
      if (o.name == s.name) fail(ctx, e.require("name").Mark(), path + ".name", "'" + s.name + "' is given twice");
    s.shared = read_choice(ctx, e.require("kind", "local (each node its own) or shared (one for all nodes)"),
                           path + ".kind", {"local", "shared"}) == "shared";
    s.read_bw_Bps = read_bandwidth(ctx, e.require("read_bandwidth", "sequential read of one node, e.g. 6 GB/s"),
                                   path + ".read_bandwidth");
    s.write_bw_Bps = read_bandwidth(ctx, e.require("write_bandwidth", "sequential write of one node, e.g. 3 GB/s"),
                                    path + ".write_bandwidth");
    s.latency_s = read_time(ctx, e.require("latency", "one 4 KiB random read, e.g. 80 us"), path + ".latency");
    for (auto [key, member] : {std::pair{"aggregate_read_bandwidth", &StorageTier::aggregate_read_bw_Bps},
                               std::pair{"aggregate_write_bandwidth", &StorageTier::aggregate_write_bw_Bps}}) {
      auto v = e.optional(key);
      if (!v) continue;
      if (!s.shared)
        fail(ctx, v->Mark(), path + "." + key, "applies to kind shared only (a local tier has no cluster-wide cap)");
      s.*member = read_bandwidth(ctx, *v, path + "." + key);
    }
    out.push_back(std::move(s));
  }
}

// A curve of bandwidth factors: a list of { KEY: BYTES, scale: FACTOR } in ascending KEY.
template <typename Point>
void read_curve(const Ctx& ctx, const MapReader& top, const std::string& field, const std::string& key,
                std::vector<Point>& out, Bytes Point::*member) {
  const auto list = top.optional(field.c_str());
  if (!list) return;
  if (!list->IsSequence())
    fail(ctx, list->Mark(), field,
         "expected a list of { " + key + ": BYTES, scale: FACTOR } in ascending " + key + ", got " + node_kind(*list));
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string path = field + "[" + std::to_string(i) + "]";
    MapReader e(ctx, (*list)[i], path, {key.c_str(), "scale"});
    Point point;
    point.*member = read_bytes(ctx, e.require(key.c_str()), path + "." + key);
    const YAML::Node sv = e.require("scale");
    point.scale = read_number(ctx, sv, path + ".scale");
    if (!(point.scale > 0 && point.scale <= 1e3))
      fail(ctx, sv.Mark(), path + ".scale", "must be more than 0 and at most 1000 (a factor on bandwidth)");
    if (point.*member == 0 || (!out.empty() && point.*member <= out.back().*member))
      fail(ctx, e.require(key.c_str()).Mark(), path + "." + key, key + " must be more than 0 bytes and ascending");
    out.push_back(point);
  }
}

Topology parse_document(const YAML::Node& root, const Ctx& ctx) {
  Topology t;
  MapReader top(ctx, root, "",
                {"name", "description", "gpus_per_node", "ranks_per_node", "device", "intra_node", "host_link",
                 "network", "reduction", "max_nodes", "nccl", "calibrated", "transports", "call_overhead",
                 "working_set_scale", "node_working_set_scale", "local_op_scale", "message_scale", "written_scale",
                 "network_message_scale", "fan_out_scale", "storage"});

  t.name = scalar(ctx, top.require("name"), "name");
  if (t.name.empty()) fail(ctx, top.mark(), "name", "must not be empty");
  if (auto d = top.optional("description")) t.description = scalar(ctx, *d, "description");

  // Exactly one of gpus_per_node (GPU nodes) and ranks_per_node (host-only nodes).
  bool has_gpus = top.has("gpus_per_node"), has_ranks = top.has("ranks_per_node");
  if (has_gpus && has_ranks)
    fail(ctx, top.require("ranks_per_node").Mark(), "ranks_per_node",
         "give either gpus_per_node (GPU nodes) or ranks_per_node (host-only nodes), not both");
  if (!has_gpus && !has_ranks)
    fail(ctx, top.mark(), "gpus_per_node",
         "missing required field (gpus_per_node for GPU nodes, or ranks_per_node for host-only nodes)");
  t.gpu = has_gpus;
  const char* per_node_key = has_gpus ? "gpus_per_node" : "ranks_per_node";
  t.ranks_per_node = static_cast<int>(read_int(ctx, top.require(per_node_key), per_node_key, 1, 1 << 20));

  {
    MapReader dev(ctx, top.require("device"), "device", {"name", "memory", "memory_bandwidth", "peak_tflops"});
    t.device_name = scalar(ctx, dev.require("name"), "device.name");
    read_in_range(ctx, dev, "device", "peak_tflops", 0, false, 1e6,
                  "must be more than 0 (dense BF16 TFLOP/s of one device, e.g. 989 for an H100 SXM)", t.peak_tflops);
    if (auto m = dev.optional("memory")) t.device_memory_bytes = read_bytes(ctx, *m, "device.memory");
    t.memory_bw_Bps = read_bandwidth(ctx, dev.require("memory_bandwidth"), "device.memory_bandwidth");
  }
  {
    MapReader intra(ctx, top.require("intra_node"), "intra_node",
                    {"fabric", "bandwidth", "latency", "node_bandwidth", "eager_limit", "rendezvous_latency",
                     "message_overhead", "rendezvous_overhead", "inline_limit", "inline_latency", "inline_overhead",
                     "one_way_factor", "exchange_factor", "overhead_receive_share", "send_share"});
    t.intra.fabric = read_choice(ctx, intra.require("fabric"), "intra_node.fabric", kIntraFabrics);
    t.intra.bw_Bps = read_bandwidth(ctx, intra.require("bandwidth", "per rank, per direction, e.g. 370.8 GB/s"),
                                    "intra_node.bandwidth");
    t.intra.latency_s = read_time(ctx, intra.require("latency", "per message, e.g. 2 us"), "intra_node.latency");
    if (auto v = intra.optional("node_bandwidth"))
      t.intra.node_bw_Bps = read_bandwidth(ctx, *v, "intra_node.node_bandwidth");
    read_in_range(ctx, intra, "intra_node", "send_share", 0, true, 1,
                  "must be from 0 to 1 (the part of a round's outgoing bytes that count against the sending "
                  "rank's bandwidth; 1 = all)",
                  t.intra.send_share);
    read_message_costs(ctx, intra, "intra_node", t.intra.msg);
  }
  if (t.gpu || top.has("host_link")) {
    MapReader host(ctx, top.require("host_link", "the GPU <-> host link, e.g. { bandwidth: 64 GB/s, latency: 1 us }"),
                   "host_link", {"bandwidth", "latency"});
    t.host_link.fabric = t.gpu ? "pcie" : "host";
    t.host_link.bw_Bps = read_bandwidth(ctx, host.require("bandwidth"), "host_link.bandwidth");
    t.host_link.latency_s = read_time(ctx, host.require("latency"), "host_link.latency");
  }
  if (auto mn = top.optional("max_nodes")) t.max_nodes = static_cast<int>(read_int(ctx, *mn, "max_nodes", 1, 1 << 24));
  {
    YAML::Node net_node = top.require("network", "use { kind: none } for a single-node topology");
    MapReader net(ctx, net_node, "network",
                  {"kind", "fabric", "nics_per_node", "nic_bandwidth", "latency", "oversubscription", "eager_limit",
                   "rendezvous_latency", "message_overhead", "rendezvous_overhead", "inline_limit", "inline_latency",
                   "inline_overhead", "one_way_factor", "exchange_factor", "overhead_receive_share"});
    YAML::Node kind_node = net.require("kind");
    t.network.kind = read_choice(ctx, kind_node, "network.kind", kNetworkKinds);
    if (auto f = net.optional("fabric"))
      t.network.fabric_shape = read_choice(ctx, *f, "network.fabric", kNetworkShapes);
    if (t.network.kind == "none") {
      if (auto nics = net.optional("nics_per_node")) {
        if (read_int(ctx, *nics, "network.nics_per_node", 0, 4096) != 0)
          fail(ctx, nics->Mark(), "network.nics_per_node", "must be 0 when kind is none");
      }
      if (t.max_nodes > 1)
        fail(ctx, kind_node.Mark(), "network.kind",
             "kind none (no network) is only allowed for single-node topologies, but max_nodes is " +
                 std::to_string(t.max_nodes));
      t.max_nodes = 1;
      t.network.nics_per_node = 0;
      if (t.network.fabric_shape.empty()) t.network.fabric_shape = "none";
    } else {
      t.network.nics_per_node =
          static_cast<int>(read_int(ctx, net.require("nics_per_node"), "network.nics_per_node", 1, 4096));
      t.network.nic_bw_Bps = read_bandwidth(
          ctx, net.require("nic_bandwidth", "usable per NIC per direction, e.g. 47 GB/s"), "network.nic_bandwidth");
      t.network.latency_s = read_time(ctx, net.require("latency"), "network.latency");
      if (auto os = net.optional("oversubscription")) {
        t.network.oversubscription = read_number(ctx, *os, "network.oversubscription");
        if (!(t.network.oversubscription >= 1.0 && t.network.oversubscription <= 1e3))
          fail(ctx, os->Mark(), "network.oversubscription",
               "must be from 1 (a non-blocking fabric) to 1000");
      }
      if (t.network.fabric_shape.empty()) t.network.fabric_shape = "fat-tree";
      read_message_costs(ctx, net, "network", t.network.msg);
    }
  }
  if (auto red = top.optional("reduction")) {
    MapReader r(ctx, *red, "reduction", {"bandwidth"});
    t.reduce_bw_Bps = read_bandwidth(ctx, r.require("bandwidth"), "reduction.bandwidth");
  } else {
    // A plain reduction reads two operands and writes one: three passes over memory per byte reduced.
    t.reduce_bw_Bps = t.memory_bw_Bps / 3.0;
  }
  if (auto nccl_node = top.optional("nccl")) read_nccl_section(ctx, *nccl_node, t.nccl);
  if (auto v = top.optional("call_overhead")) t.call_overhead_s = read_time(ctx, *v, "call_overhead");
  read_curve(ctx, top, "working_set_scale", "working_set", t.working_set_scale, &WorkingSetScale::working_set);
  read_curve(ctx, top, "node_working_set_scale", "working_set", t.node_working_set_scale,
             &WorkingSetScale::working_set);
  if (!t.node_working_set_scale.empty() && !(t.intra.node_bw_Bps > 0))
    fail(ctx, top.mark(), "node_working_set_scale", "needs intra_node.node_bandwidth (the rate it scales)");
  read_curve(ctx, top, "local_op_scale", "bytes", t.local_op_scale, &LocalOpScale::bytes);
  read_curve(ctx, top, "message_scale", "bytes", t.message_scale, &MessageScale::bytes);
  read_curve(ctx, top, "written_scale", "bytes", t.written_scale, &MessageScale::bytes);
  read_curve(ctx, top, "network_message_scale", "bytes", t.network_message_scale, &MessageScale::bytes);
  read_curve(ctx, top, "fan_out_scale", "bytes", t.fan_out_scale, &MessageScale::bytes);
  if (!t.network_message_scale.empty() && !t.network.present())
    fail(ctx, top.mark(), "network_message_scale", "needs a network (nics_per_node > 0)");
  if (auto cal = top.optional("calibrated")) {
    MapReader c(ctx, *cal, "calibrated", {"created", "sources", "sizes", "nodes", "ranks"});
    read_calibrated(c, t.calibrated);
  }
  if (auto st = top.optional("storage")) read_storage(ctx, *st, t.storage);
  if (auto tr = top.optional("transports")) {
    MapReader section(ctx, *tr, "transports", kTransportNames);
    read_transports(section, t, t.transports);
  }
  return t;
}

std::string read_file_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a folder, not a topology file (give a .yaml file or a preset name)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open topology file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path + ": cannot read topology file");
  return ss.str();
}

bool is_blank_yaml(const std::string& text) {
  // Only whitespace and comments.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto pos = line.find_first_not_of(" \t\r");
    if (pos == std::string::npos) continue;
    if (line[pos] == '#') continue;
    if (line.compare(pos, 3, "---") == 0 && line.find_first_not_of(" \t\r", pos + 3) == std::string::npos) continue;
    return false;
  }
  return true;
}

}  // namespace

Topology parse_topology(const std::string& yaml_text, const std::string& origin) {
  Ctx ctx{origin.empty() ? std::string("<topology>") : origin};
  if (is_blank_yaml(yaml_text))
    throw Error(ctx.origin + ":1: (top level): the topology file is empty (see configs/topologies/README.md)");
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    fail(ctx, e.mark, "(yaml)", "not valid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    fail(ctx, e.mark, "(yaml)", "not valid YAML: " + e.msg);
  }
  Topology t;
  try {
    t = parse_document(root, ctx);
  } catch (const YAML::Exception& e) {
    // Anything yaml-cpp itself rejects while walking the document (should be rare).
    fail(ctx, e.mark, "(yaml)", e.msg);
  }
  t.text = yaml_text;
  return t;
}

Topology load_topology(const std::string& path) {
  Topology t = parse_topology(read_file_text(path), path);
  t.source_path = path;
  return t;
}

Topology with_transport(const Topology& topology, std::string_view transport) {
  Topology t = topology;
  for (const TransportOverride& o : topology.transports) {
    if (o.transport != transport) continue;
    if (o.intra_latency_s) t.intra.latency_s = *o.intra_latency_s;
    if (o.intra_bw_Bps) t.intra.bw_Bps = *o.intra_bw_Bps;
    if (o.network_latency_s) t.network.latency_s = *o.network_latency_s;
    if (o.nic_bw_Bps) t.network.nic_bw_Bps = *o.nic_bw_Bps;
  }
  return t;
}

std::string resolve_topology_path(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (name_or_path.empty()) throw Error("no topology given (a preset name like dgx-h100, or a path to a .yaml file)");
  if (fs::exists(name_or_path, ec)) return name_or_path;
  bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                         (name_or_path.size() > 5 && name_or_path.ends_with(".yaml")) ||
                         (name_or_path.size() > 4 && name_or_path.ends_with(".yml"));
  if (looks_like_path) throw Error(name_or_path + ": no such topology file");
  if (fs::path found = find_config("topologies", name_or_path); !found.empty()) return found.string();
  const std::vector<fs::path> dirs = config_dirs("topologies");
  std::set<std::string> presets;
  std::string searched;
  for (const fs::path& d : dirs) {
    if (!searched.empty()) searched += ", ";
    searched += d.string();
    for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().extension() == ".yaml") presets.insert(it->path().stem().string());
  }
  std::string list;
  for (const std::string& p : presets) list += (list.empty() ? "" : ", ") + p;
  throw Error("unknown topology '" + name_or_path + "': not a file, and not a preset in " + searched +
              (list.empty() ? std::string(" (no presets found; set COMMSIM_CONFIG_DIR to a folder holding topologies/)") : "; presets: " + list));
}

}  // namespace commsim
