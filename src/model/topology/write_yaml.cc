// The topology as YAML text: the writer beside the reader (read_yaml.cc), in the schema of
// configs/topologies/README.md.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/nccl/logged_table.h"
#include "model/topology/topology.h"

namespace commsim {

namespace {

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string bw_text(BytesPerSecond bw) {
  return num(bw / 1e9) + " GB/s";
}
std::string time_text(Seconds t) {
  return num(t * 1e6) + " us";
}

class YamlOut {
 public:
  explicit YamlOut(const std::vector<std::pair<std::string, std::string>>& comments) : comments_(comments) {}
  void line(int indent, const std::string& key, const std::string& value, const std::string& field) {
    out_ << std::string(static_cast<std::size_t>(indent), ' ') << key << ":";
    if (!value.empty()) out_ << " " << value;
    for (const auto& [f, c] : comments_)
      if (f == field && !c.empty()) out_ << "  # " << c;
    out_ << "\n";
  }
  void raw(const std::string& s) { out_ << s; }
  std::string str() const { return out_.str(); }

 private:
  const std::vector<std::pair<std::string, std::string>>& comments_;
  std::ostringstream out_;
};

template <typename T>
std::string flow_list(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The optional per-tier message terms (MessageCosts), only when set.
void message_costs(YamlOut& y, const MessageCosts& m, const std::string& tier) {
  if (m.eager_limit_bytes > 0) {
    y.line(2, "eager_limit", format_bytes(m.eager_limit_bytes), tier + ".eager_limit");
    y.line(2, "rendezvous_latency", time_text(m.rendezvous_latency_s), tier + ".rendezvous_latency");
  }
  if (m.message_overhead_s > 0)
    y.line(2, "message_overhead", time_text(m.message_overhead_s), tier + ".message_overhead");
  if (m.rendezvous_overhead_s && m.eager_limit_bytes > 0)
    y.line(2, "rendezvous_overhead", time_text(*m.rendezvous_overhead_s), tier + ".rendezvous_overhead");
  if (m.inline_limit_bytes > 0) {
    y.line(2, "inline_limit", format_bytes(m.inline_limit_bytes), tier + ".inline_limit");
    y.line(2, "inline_latency", time_text(m.inline_latency_s), tier + ".inline_latency");
    if (m.inline_overhead_s) y.line(2, "inline_overhead", time_text(*m.inline_overhead_s), tier + ".inline_overhead");
  }
  if (m.one_way_factor != 1.0) y.line(2, "one_way_factor", num(m.one_way_factor), tier + ".one_way_factor");
  if (m.exchange_factor != 1.0) y.line(2, "exchange_factor", num(m.exchange_factor), tier + ".exchange_factor");
  if (m.overhead_receive_share != 0)
    y.line(2, "overhead_receive_share", num(m.overhead_receive_share), tier + ".overhead_receive_share");
}

}  // namespace

namespace {

// True when the `nccl:` section states anything of NCCL's machine (NcclMachine) beyond its defaults.
bool nccl_machine_given(const NcclMachine& m) {
  const NcclMachine d;
  return m.version != d.version || m.compute_capability != d.compute_capability ||
         m.nvlinks_per_gpu != d.nvlinks_per_gpu || m.nvlink_bw_Bps != d.nvlink_bw_Bps || m.nvls.has_value() ||
         m.nvlink_domain_gpus != d.nvlink_domain_gpus || m.collnet != d.collnet || m.collnet_heads != d.collnet_heads ||
         m.cpu_arch != d.cpu_arch || m.cpu_vendor != d.cpu_vendor || m.pcie_gen != d.pcie_gen ||
         m.pcie_width != d.pcie_width || m.nic_speed_Bps != d.nic_speed_Bps || m.net_latency_s != d.net_latency_s ||
         m.launch_s != d.launch_s || m.graph_launch_s != d.graph_launch_s || m.gpus_per_thread != d.gpus_per_thread ||
         m.cuda_graphs != d.cuda_graphs || m.bandwidth_scale != d.bandwidth_scale ||
         m.latency_offset_s != d.latency_offset_s || m.ring.given() || m.tree.given() || m.nvls_graph.given() ||
         !m.algo.empty() || !m.proto.empty() || m.tuning_table.given();
}

// The machine fields of `nccl:` that differ from their defaults, as read_nccl.cc reads them.
void write_nccl_machine(YamlOut& y, const NcclMachine& m) {
  const NcclMachine d;
  if (!m.version.empty()) y.line(2, "version", yaml_quote(m.version), "nccl.version");
  if (m.compute_capability != d.compute_capability)
    y.line(2, "compute_capability", fmt::format("{}.{}", m.compute_capability / 10, m.compute_capability % 10),
           "nccl.compute_capability");
  if (m.nvlinks_per_gpu != d.nvlinks_per_gpu) y.line(2, "nvlinks_per_gpu", std::to_string(m.nvlinks_per_gpu), "nccl.nvlinks_per_gpu");
  if (m.nvlink_bw_Bps > 0) y.line(2, "nvlink_bandwidth", bw_text(m.nvlink_bw_Bps), "nccl.nvlink_bandwidth");
  if (m.nvls) y.line(2, "nvls", *m.nvls ? "yes" : "no", "nccl.nvls");
  if (m.nvlink_domain_gpus != d.nvlink_domain_gpus)
    y.line(2, "nvlink_domain", std::to_string(m.nvlink_domain_gpus), "nccl.nvlink_domain");
  if (m.collnet || m.collnet_heads != d.collnet_heads)
    y.line(2, "collnet",
           fmt::format("{{ enabled: {}, heads: {} }}", m.collnet ? "yes" : "no", m.collnet_heads), "nccl.collnet");
  if (m.cpu_arch != d.cpu_arch || m.cpu_vendor != d.cpu_vendor)
    y.line(2, "cpu", "{ arch: " + m.cpu_arch + ", vendor: " + m.cpu_vendor + " }", "nccl.cpu");
  if (m.pcie_gen != d.pcie_gen || m.pcie_width != d.pcie_width)
    y.line(2, "pcie", fmt::format("{{ gen: {}, width: {} }}", m.pcie_gen, m.pcie_width), "nccl.pcie");
  if (m.nic_speed_Bps > 0) y.line(2, "nic_speed", bw_text(m.nic_speed_Bps), "nccl.nic_speed");
  if (m.net_latency_s > 0) y.line(2, "net_latency", time_text(m.net_latency_s), "nccl.net_latency");
  if (m.launch_s >= 0) y.line(2, "launch_overhead", time_text(m.launch_s), "nccl.launch_overhead");
  if (m.graph_launch_s >= 0)
    y.line(2, "graph_launch_overhead", time_text(m.graph_launch_s), "nccl.graph_launch_overhead");
  if (m.gpus_per_thread != d.gpus_per_thread)
    y.line(2, "gpus_per_thread", std::to_string(m.gpus_per_thread), "nccl.gpus_per_thread");
  if (m.cuda_graphs) y.line(2, "cuda_graphs", "yes", "nccl.cuda_graphs");
  if (m.bandwidth_scale != d.bandwidth_scale)
    y.line(2, "bandwidth_scale", num(m.bandwidth_scale), "nccl.bandwidth_scale");
  if (m.latency_offset_s != d.latency_offset_s) {
    std::string offset = time_text(std::abs(m.latency_offset_s));
    if (m.latency_offset_s < 0) offset.insert(offset.begin(), '-');
    y.line(2, "latency_offset", offset, "nccl.latency_offset");
  }
  if (m.ring.given() || m.tree.given() || m.nvls_graph.given()) {
    y.line(2, "graphs", "", "nccl.graphs");
    auto graph = [&](const char* name, const NcclGraphOverride& g) {
      if (!g.given()) return;
      y.line(4, name,
             fmt::format("{{ channels: {}, bw_intra: {}, bw_inter: {} }}", g.channels, bw_text(g.bw_intra_Bps),
                         bw_text(g.bw_inter_Bps)),
             std::string("nccl.graphs.") + name);
    };
    graph("ring", m.ring);
    graph("tree", m.tree);
    graph("nvls", m.nvls_graph);
  }
  if (!m.algo.empty()) y.line(2, "algo", yaml_quote(m.algo), "nccl.algo");
  if (!m.proto.empty()) y.line(2, "proto", yaml_quote(m.proto), "nccl.proto");
  y.raw(nccl::tuning_table_yaml(m.tuning_table));
}

}  // namespace

std::string topology_yaml(const Topology& t, const std::vector<std::string>& header,
                          const std::vector<std::pair<std::string, std::string>>& field_comments,
                          const CalibrationInfo* record, bool with_calibrated_section) {
  YamlOut y(field_comments);
  for (const auto& h : header) y.raw("# " + h + "\n");
  if (record && !with_calibrated_section) {
    y.raw("# calibrated on sizes " + format_bytes(record->sizes.empty() ? 0 : record->sizes.front()) + " .. " +
          format_bytes(record->sizes.empty() ? 0 : record->sizes.back()) + ", nodes " + flow_list(record->nodes) +
          ", ranks " + flow_list(record->ranks) + "\n");
  }
  y.line(0, "name", yaml_quote(t.name), "name");
  if (!t.description.empty()) y.line(0, "description", yaml_quote(t.description), "description");
  y.line(0, t.gpu ? "gpus_per_node" : "ranks_per_node", std::to_string(t.ranks_per_node),
         t.gpu ? "gpus_per_node" : "ranks_per_node");
  if (t.max_nodes > 0) y.line(0, "max_nodes", std::to_string(t.max_nodes), "max_nodes");
  y.line(0, "device", "", "device");
  y.line(2, "name", yaml_quote(t.device_name), "device.name");
  if (t.device_memory_bytes > 0) y.line(2, "memory", format_bytes(t.device_memory_bytes), "device.memory");
  y.line(2, "memory_bandwidth", bw_text(t.memory_bw_Bps), "device.memory_bandwidth");
  y.line(0, "intra_node", "", "intra_node");
  y.line(2, "fabric", t.intra.fabric, "intra_node.fabric");
  y.line(2, "bandwidth", bw_text(t.intra.bw_Bps), "intra_node.bandwidth");
  y.line(2, "latency", time_text(t.intra.latency_s), "intra_node.latency");
  if (t.intra.node_bw_Bps > 0) y.line(2, "node_bandwidth", bw_text(t.intra.node_bw_Bps), "intra_node.node_bandwidth");
  if (t.intra.send_share != 1.0) y.line(2, "send_share", num(t.intra.send_share), "intra_node.send_share");
  message_costs(y, t.intra.msg, "intra_node");
  if (t.gpu || t.host_link.bw_Bps > 0) {
    y.line(0, "host_link", "", "host_link");
    y.line(2, "bandwidth", bw_text(t.host_link.bw_Bps), "host_link.bandwidth");
    y.line(2, "latency", time_text(t.host_link.latency_s), "host_link.latency");
  }
  y.line(0, "network", "", "network");
  y.line(2, "kind", t.network.kind.empty() ? "none" : t.network.kind, "network.kind");
  if (t.network.present()) {
    if (!t.network.fabric_shape.empty()) y.line(2, "fabric", t.network.fabric_shape, "network.fabric");
    y.line(2, "nics_per_node", std::to_string(t.network.nics_per_node), "network.nics_per_node");
    y.line(2, "nic_bandwidth", bw_text(t.network.nic_bw_Bps), "network.nic_bandwidth");
    y.line(2, "latency", time_text(t.network.latency_s), "network.latency");
    if (t.network.oversubscription != 1.0)
      y.line(2, "oversubscription", num(t.network.oversubscription), "network.oversubscription");
    message_costs(y, t.network.msg, "network");
  }
  y.line(0, "reduction", "", "reduction");
  y.line(2, "bandwidth", bw_text(t.reduce_bw_Bps), "reduction.bandwidth");
  if (t.call_overhead_s > 0) y.line(0, "call_overhead", time_text(t.call_overhead_s), "call_overhead");
  // The curves: by working set (working_set_scale, node_working_set_scale) and by bytes
  // (local_op_scale, message_scale, written_scale, network_message_scale, fan_out_scale).
  auto curve = [&y](const std::string& key, const char* x_name, const auto& points, auto x) {
    if (points.empty()) return;
    y.line(0, key, "", key);
    for (const auto& w : points)
      y.raw("  - { " + std::string(x_name) + ": " + format_bytes(w.*x) + ", scale: " + num(w.scale) + " }\n");
  };
  curve("working_set_scale", "working_set", t.working_set_scale, &WorkingSetScale::working_set);
  curve("node_working_set_scale", "working_set", t.node_working_set_scale, &WorkingSetScale::working_set);
  curve("local_op_scale", "bytes", t.local_op_scale, &LocalOpScale::bytes);
  curve("message_scale", "bytes", t.message_scale, &MessageScale::bytes);
  curve("written_scale", "bytes", t.written_scale, &MessageScale::bytes);
  curve("network_message_scale", "bytes", t.network_message_scale, &MessageScale::bytes);
  curve("fan_out_scale", "bytes", t.fan_out_scale, &MessageScale::bytes);
  const bool machine_fields = nccl_machine_given(t.nccl.machine);
  if (t.nccl.present || machine_fields) y.line(0, "nccl", "", "nccl");
  if (t.nccl.present) {
    // One line per algorithm, so that a comment can say where a fitted row comes from
    // (field "nccl.base_latency.ring", "nccl.bus_bandwidth.tree", ...).
    const char* protos[3] = {"LL", "LL128", "Simple"};
    // every: all six entries (the latency tables require them); otherwise only those set (> 0).
    auto table = [&](const char* key, const double(&v)[2][3], auto text, bool every) {
      y.line(2, key, "", std::string("nccl.") + key);
      for (int a : {kNcclTableRing, kNcclTableTree}) {  // ring first, as the presets write them
        const char* name = kNcclTableNames[a];
        std::string row;
        for (int p = 0; p < 3; ++p)
          if (every || v[a][p] > 0) row += std::string(row.empty() ? "" : ", ") + protos[p] + ": " + text(v[a][p]);
        if (!row.empty()) y.line(4, name, "{ " + row + " }", std::string("nccl.") + key + "." + name);
      }
    };
    table("base_latency", t.nccl.base_latency_s, time_text, true);
    table("intra_hop_latency", t.nccl.intra_hop_latency_s, time_text, true);
    table("inter_hop_latency", t.nccl.inter_hop_latency_s, time_text, true);
    y.line(2, "bandwidth_fraction",
           "{ LL: " + num(t.nccl.bw_fraction[0]) + ", LL128: " + num(t.nccl.bw_fraction[1]) +
               ", Simple: " + num(t.nccl.bw_fraction[2]) + " }",
           "nccl.bandwidth_fraction");
    bool any_bw = false;
    for (const auto& row : t.nccl.bus_bw_Bps)
      for (double b : row) any_bw = any_bw || b > 0;
    // Only the fitted entries: a missing one stands for the intra-node bandwidth x bw_fraction.
    if (any_bw) table("bus_bandwidth", t.nccl.bus_bw_Bps, bw_text, false);
  }
  if (machine_fields) write_nccl_machine(y, t.nccl.machine);
  if (record && with_calibrated_section) {
    std::vector<unsigned long long> sizes(record->sizes.begin(), record->sizes.end());
    y.line(0, "calibrated", "", "calibrated");
    y.line(2, "created", yaml_quote(record->created), "calibrated.created");
    std::string src = "[";
    for (std::size_t i = 0; i < record->sources.size(); ++i) src += (i ? ", " : "") + yaml_quote(record->sources[i]);
    y.line(2, "sources", src + "]", "calibrated.sources");
    y.line(2, "sizes", flow_list(sizes), "calibrated.sizes");
    y.line(2, "nodes", flow_list(record->nodes), "calibrated.nodes");
    y.line(2, "ranks", flow_list(record->ranks), "calibrated.ranks");
  }
  return y.str();
}

}  // namespace commsim
