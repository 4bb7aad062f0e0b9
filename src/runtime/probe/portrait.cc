#include "runtime/probe/portrait.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "model/calibrate/calibrate.h"
#include "model/error.h"
#include "model/units.h"

namespace commsim {
namespace {

const ProbeMeasurement* find_row(const ProbeData& d, const std::string& kind, const std::string& tier, bool largest) {
  const ProbeMeasurement* best = nullptr;
  for (const auto& r : d.rows) {
    if (r.kind != kind || r.tier != tier) continue;
    if (!best || (largest ? r.bytes > best->bytes : r.bytes < best->bytes)) best = &r;
  }
  return best;
}

// The link matrix's measured peer bandwidths: GPU 0 -> 1 is the plateau of the peer rows; every

std::string tier_line(const ProbeData& d, const std::string& tier) {
  const ProbeMeasurement* lat = find_row(d, "pingpong", tier, false);
  if (!lat) return "not measured";
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "latency %.2f us (%s ping-pong, one way); bandwidth %.2f GB/s per direction (stream), "
                "%.2f GB/s per rank with all ranks exchanging (ring shift)",
                lat->median_us, format_bytes(lat->bytes).c_str(), peak_bw(d, "stream", tier),
                peak_bw(d, "ring-shift", tier));
  std::string s = buf;
  std::vector<TimedSize> pts;
  for (const auto& r : d.rows)
    if (r.kind == "ring-shift" && r.tier == tier && r.median_us > 0) pts.push_back({r.bytes, r.median_us * 1e-6});
  try {
    LineFit f = fit_line(pts, FitWeighting::Relative, tier + " ring shift");
    std::snprintf(buf, sizeof buf,
                  "\n                   fit t = alpha + bytes*beta: alpha %.2f us, 1/beta %.2f GB/s, R^2 %.4f",
                  f.alpha_s * 1e6, f.bw_Bps() / 1e9, f.r2);
    s += buf;
  } catch (const Error&) {
  }
  return s;
}

// How much longer a ring shift inside a node takes with just-written data, at the measured sizes
// nearest 64 KiB, 1 MiB and 16 MiB (of at least 4 KiB); "" without ring-shift-written rows.
std::string written_line(const ProbeData& d) {
  std::map<Bytes, std::pair<double, double>> both;  // bytes -> (control, written) median us
  for (const auto& r : d.rows) {
    if (r.tier != "intra-node" || r.bytes < kWrittenScaleMinBytes || !(r.median_us > 0)) continue;
    if (r.kind == "ring-shift-control") both[r.bytes].first = r.median_us;
    if (r.kind == "ring-shift-written") both[r.bytes].second = r.median_us;
  }
  std::erase_if(both, [](const auto& e) { return !(e.second.first > 0) || !(e.second.second > 0); });
  if (both.empty()) return "";
  std::set<Bytes> shown;
  for (double target : {65536.0, 1048576.0, 16777216.0}) {
    Bytes best = both.begin()->first;
    for (const auto& [bytes, t] : both)
      if (std::fabs(std::log(bytes / target)) < std::fabs(std::log(best / target))) best = bytes;
    shown.insert(best);
  }
  std::string s = "a ring shift of just-written data takes";
  char buf[80];
  for (Bytes b : shown) {
    std::snprintf(buf, sizeof buf, "%s x%.2f%s at %s", b == *shown.begin() ? "" : ",", both[b].second / both[b].first,
                  b == *shown.begin() ? " the time of untouched data" : "", format_bytes(b).c_str());
    s += buf;
  }
  return s;
}

}  // namespace

double peak_bw(const ProbeData& d, const std::string& kind, const std::string& tier) {
  double bw = 0;
  for (const auto& r : d.rows)
    if (r.kind == kind && r.tier == tier) bw = std::max(bw, r.bw_gbps);
  return bw;
}

std::string format_portrait(const ProbeData& d, const std::vector<int>& ranks_per_host, const std::string& mpi_version,
                            const std::string& net_devices, const std::string& memory_total) {
  std::ostringstream s;
  s << "commsim probe: machine portrait\n";
  s << "  hosts            : " << d.nodes << " (";
  for (std::size_t i = 0; i < d.hosts.size(); ++i) {
    const int n = i < ranks_per_host.size() ? ranks_per_host[i] : 0;
    s << (i ? ", " : "") << d.hosts[i] << ": " << n << " rank" << (n == 1 ? "" : "s");
  }
  s << ")\n";
  s << "  ranks            : " << d.ranks << " (at most " << d.ranks_per_node << " per node)\n";
  s << "  CPU              : " << d.cpu_model << ", " << d.cpu_cores << " logical CPUs, " << memory_total
    << " memory (rank 0's host)\n";
  if (d.gpu_names.empty()) {
    s << "  GPUs             : none (" << d.gpu_note << ")\n";
  } else {
    std::map<std::string, int> count;
    for (const auto& n : d.gpu_names) ++count[n];
    s << "  GPUs             : ";
    bool first = true;
    for (const auto& [name, c] : count) s << (first ? "" : ", ") << c << " x " << name, first = false;
    s << " (rank 0's host)\n";
  }
  if (!d.gpu_topology.empty()) {
    s << "  GPU topology     : nvidia-smi topo -m\n";
    std::istringstream lines(d.gpu_topology);
    for (std::string line; std::getline(lines, line);) s << "      " << line << "\n";
  }
  if (!d.gpu_links.empty()) {
    s << "  GPU link matrix  : " << d.gpu_links.note << " (rank 0's host)\n";
    std::istringstream lines(format_link_matrix(d.gpu_links));
    for (std::string line; std::getline(lines, line);) s << "      " << line << "\n";
    for (const auto& why : d.gpu_links.non_uniform()) s << "      not uniform: " << why << "\n";
  } else if (!d.gpu_links.note.empty()) {
    s << "  GPU link matrix  : " << d.gpu_links.note << "; skipped\n";
  }
  s << "  MPI              : " << mpi_version << "\n";
  s << "  inside a node    : " << d.intra_fabric << "\n";
  s << "                     " << tier_line(d, "intra-node") << "\n";
  if (const std::string written = written_line(d); !written.empty()) s << "                     " << written << "\n";
  s << "  across the network: " << (d.nodes > 1 ? d.network : "not measured (all ranks on one host)") << "\n";
  if (d.nodes > 1) s << "                     " << tier_line(d, "network") << "\n";
  s << "  network devices  : " << net_devices << "\n";
  char buf[400];
  const ProbeMeasurement* big_copy = find_row(d, "memcpy", "local", true);
  const ProbeMeasurement* big_reduce = find_row(d, "reduce", "local", true);
  std::snprintf(buf, sizeof buf,
                "  host memory      : memcpy %.2f GB/s, float32 sum reduction %.2f GB/s per rank at %s (%d ranks at "
                "once); in cache up to %.2f and %.2f GB/s\n",
                big_copy ? big_copy->bw_gbps : 0.0, big_reduce ? big_reduce->bw_gbps : 0.0,
                big_copy ? format_bytes(big_copy->bytes).c_str() : "-", d.ranks, peak_bw(d, "memcpy", "local"),
                peak_bw(d, "reduce", "local"));
  s << buf;
  if (d.gpu_names.empty()) {
    s << "  host link        : no GPU, nothing to measure\n";
  } else {
    std::snprintf(buf, sizeof buf,
                  "  host link        : host->GPU %.2f GB/s, GPU->host %.2f GB/s (pinned memory, cudaMemcpy)\n",
                  peak_bw(d, "h2d", "host-link"), peak_bw(d, "d2h", "host-link"));
    s << buf;
    std::snprintf(buf, sizeof buf, "  GPU memory       : device-to-device copy %.2f GB/s\n", peak_bw(d, "d2d", "gpu"));
    s << buf;
    if (d.gpu_names.size() > 1) {
      std::snprintf(buf, sizeof buf, "  GPU <-> GPU      : %.2f GB/s (cudaMemcpyPeer, GPU 0 -> GPU 1)\n",
                    peak_bw(d, "peer", "gpu"));
      s << buf;
    } else {
      s << "  GPU <-> GPU      : one GPU visible, not measured\n";
    }
  }
  return s.str();
}

void print_probe_rows(std::ostream& out, const ProbeData& d) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "\n%-18s %-10s %-7s %12s %6s %6s %12s %12s %10s\n", "kind", "tier", "memory", "bytes",
                "ranks", "reps", "median_us", "p95_us", "GB/s");
  out << buf;
  for (const auto& r : d.rows) {
    std::snprintf(buf, sizeof buf, "%-18s %-10s %-7s %12llu %6d %6d %12.3f %12.3f %10.3f\n", r.kind.c_str(),
                  r.tier.c_str(), r.memory.c_str(), static_cast<unsigned long long>(r.bytes), r.ranks, r.reps,
                  r.median_us, r.p95_us, r.bw_gbps);
    out << buf;
  }
}

void print_storage_rows(std::ostream& out, const std::vector<StorageRow>& rows) {
  if (rows.empty()) return;
  char buf[400];
  std::snprintf(buf, sizeof buf, "\n%-14s %-13s %-12s %-8s %3s %7s %10s %9s %10s %10s %9s %9s  %s\n", "storage tier",
                "mode", "host", "op", "QD", "writers", "MiB", "seconds", "MB/s", "IOPS", "mean_us", "p99_us", "how");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(
        buf, sizeof buf, "%-14s %-13s %-12s %-8s %3d %7d %10.1f %9.6f %10.1f %10.0f %9.1f %9.1f  %s\n", r.tier.c_str(),
        r.mode.c_str(), r.host.c_str(), r.op.c_str(), r.queue_depth, r.writers,
        static_cast<double>(r.bytes) / (1 << 20), r.seconds, r.bw_Bps() / 1e6, r.op == "randread" ? r.iops() : 0.0,
        r.latency_mean_us, r.latency_p99_us,
        (r.fs_type + " " + r.device + (r.direct ? ", O_DIRECT" : "") + (r.note.empty() ? "" : "; " + r.note)).c_str());
    out << buf;
  }
}

namespace {

// One tier's line of the portrait table: the slowest node's one-writer rates, QD1 latency and best
// IOPS, and what all ranks got at once (per node for a local tier, summed over the nodes for a shared
// one).
std::string storage_summary(const std::vector<StorageRow>& rows, const std::string& tier) {
  const StorageRow* first = nullptr;
  std::set<std::string> hosts;
  std::set<int> depths;
  for (const auto& r : rows) {
    if (r.tier != tier) continue;
    if (!first) first = &r;
    hosts.insert(r.host);
    if (r.op == "randread") depths.insert(r.queue_depth);
  }
  if (!first) return "";
  // Over the nodes' rows of one mode, op and queue depth: the slowest node's value, or the sum.
  auto over_nodes = [&](const std::string& mode, const std::string& op, int qd, double (*value)(const StorageRow&),
                        bool slowest) {
    double v = slowest ? INFINITY : 0.0;
    for (const auto& r : rows)
      if (r.tier == tier && r.mode == mode && r.op == op && r.queue_depth == qd)
        v = slowest ? std::min(v, value(r)) : v + value(r);
    return std::isfinite(v) ? v : 0.0;
  };
  auto bw = [](const StorageRow& r) { return r.bw_Bps(); };
  auto iops = [](const StorageRow& r) { return r.iops(); };
  auto slow_latency = [](const StorageRow& r) { return -r.latency_mean_us; };  // the slowest: the largest
  int best_qd = 1;
  double best_iops = 0;
  for (int qd : depths)
    if (const double v = over_nodes("one-per-node", "randread", qd, iops, true); v > best_iops)
      best_iops = v, best_qd = qd;
  const bool shared = first->shared;
  char buf[700];
  std::snprintf(buf, sizeof buf,
                "%s: %s on %s (%s): write %s, read %s per node (one writer%s); 4 KiB random read %.1f us at QD1, "
                "%.0f IOPS at QD%d; all ranks at once: write %s, read %s %s%s",
                tier.c_str(), first->fs_type.c_str(), first->device.c_str(), first->mount_point.c_str(),
                format_bandwidth(over_nodes("one-per-node", "write", 1, bw, true)).c_str(),
                format_bandwidth(over_nodes("one-per-node", "read", 1, bw, true)).c_str(),
                hosts.size() > 1 ? ", the slowest node" : "",
                -over_nodes("one-per-node", "randread", 1, slow_latency, true), best_iops, best_qd,
                format_bandwidth(over_nodes("all-ranks", "write", 1, bw, !shared)).c_str(),
                format_bandwidth(over_nodes("all-ranks", "read", 1, bw, !shared)).c_str(),
                shared ? "in all (the nodes summed)" : "per node (the slowest)",
                first->note.empty() ? "" : (" [" + first->note + "]").c_str());
  return buf;
}

}  // namespace

PortraitTable portrait_table(const ProbeData& d, const std::string& net_devices) {
  std::vector<std::pair<std::string, std::string>> t;
  char buf[400];
  if (d.gpu_names.empty()) {
    t.push_back({"GPUs", "none (" + d.gpu_note + ")"});
  } else {
    std::map<std::string, int> count;
    for (const auto& n : d.gpu_names) ++count[n];
    std::string g;
    for (const auto& [name, c] : count) g += (g.empty() ? "" : ", ") + std::to_string(c) + " x " + name;
    t.push_back(
        {"GPUs", g + " per node (rank 0's host), " + std::to_string(d.nodes) + " node" + (d.nodes == 1 ? "" : "s")});
  }
  std::string inter;
  const std::size_t ng = d.gpu_links.gpus.size();
  if (ng > 1) {
    std::map<std::string, int> kinds;
    for (std::size_t i = 0; i < ng; ++i)
      for (std::size_t j = i + 1; j < ng; ++j) ++kinds[d.gpu_links.path[i][j]];
    if (kinds.size() == 1) {
      inter = kinds.begin()->first + " between every GPU pair";
    } else {
      inter = "not uniform:";
      for (const auto& [k, c] : kinds) inter += " " + std::to_string(c) + " pair" + (c == 1 ? "" : "s") + " " + k;
    }
  } else if (ng == 1) {
    inter = "one GPU (no GPU pair)";
  } else {
    inter = d.intra_fabric;
  }
  if (ng > 0 && !d.gpu_links.gpus[0].nearest_nic.empty())
    inter += "; nearest NIC of GPU0 " + d.gpu_links.gpus[0].nearest_nic + " (" + d.gpu_links.gpus[0].nic_path + ")";
  inter += "; network: " + (d.nodes > 1 ? d.network + " (" + net_devices + ")" : net_devices);
  t.push_back({"interconnect", inter});
  std::string intra;
  if (d.gpu_names.size() > 1) {
    std::snprintf(buf, sizeof buf, "GPU -> GPU %.1f GB/s (cudaMemcpyPeer); ", peak_bw(d, "peer", "gpu"));
    intra = buf;
  }
  if (find_row(d, "ring-shift", "intra-node", true)) {
    intra += "host ranks " + format_bandwidth(peak_bw(d, "ring-shift", "intra-node") * 1e9) +
             " per rank (MPI ring shift, all ranks at once), " +
             format_bandwidth(peak_bw(d, "stream", "intra-node") * 1e9) + " one pair";
  } else if (intra.empty()) {
    intra = "not measured (one rank per node)";
  }
  t.push_back({"intra-node bandwidth", intra});
  if (find_row(d, "ring-shift", "network", true)) {
    t.push_back({"network bandwidth", format_bandwidth(peak_bw(d, "ring-shift", "network") * 1e9) +
                                          " per rank (MPI ring shift, all ranks at once), " +
                                          format_bandwidth(peak_bw(d, "stream", "network") * 1e9) + " one pair"});
  } else {
    t.push_back({"network bandwidth", "not measured (all ranks on one host)"});
  }
  std::set<std::string> local, shared;
  for (const auto& r : d.storage) (r.shared ? shared : local).insert(r.tier);
  auto tiers = [&](const std::set<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : "; ") + storage_summary(d.storage, n);
    return s.empty() ? std::string("not probed (give --storage PATH)") : s;
  };
  t.push_back({"local disk", tiers(local)});
  t.push_back({"shared storage", tiers(shared)});
  return t;
}

void print_portrait_table(std::ostream& out, const PortraitTable& t, const std::string& format) {
  if (format == "markdown") {
    out << "\n| part | this machine |\n|---|---|\n";
    for (const auto& [k, v] : t) {
      std::string cell = v;
      for (std::size_t p = 0; (p = cell.find('|', p)) != std::string::npos; p += 2) cell.replace(p, 1, "\\|");
      out << "| " << k << " | " << cell << " |\n";
    }
    return;
  }
  out << "\nportrait:\n";
  for (const auto& [k, v] : t) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "  %-21s: ", k.c_str());
    out << buf << v << "\n";
  }
}

}  // namespace commsim
