// commsim probe: under mpirun, measures latency and bandwidth between ranks on each tier (same node,
// other node; inside a node also of just-written data), host memory copies and reductions, and GPU
// copies when there are GPUs; prints the machine portrait and stores every measurement in HDF5
// (/probe, see HDF5_SCHEMA.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "collectives/dtype.h"
#include "collectives/reduce.h"
#include "model/calibrate/calibrate.h"
#include "model/error.h"
#include "model/placement.h"
#include "runtime/commands/cli.h"
#include "runtime/command.h"
#include "runtime/job/cpu_binding.h"
#include "runtime/job/mpi_env.h"
#include "runtime/probe/nvml_topology.h"
#include "runtime/h5/probe_file.h"
#include "runtime/probe/gpu.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/run_context.h"
#include "runtime/sweep/stats.h"
#include "runtime/probe/storage.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace commsim {

#ifndef COMMSIM_HAVE_MPI
int cmd_probe(int, char**) {
  throw Error("probe needs MPI, and this build has none; install an MPI (e.g. libopenmpi-dev) and rebuild");
}
#else

namespace {

constexpr double kTargetSampleS = 200e-6;  // repeat small operations until one sample takes this long
constexpr int kMaxReps = 10000;

struct Options {
  std::string sizes = "8B:64MiB";
  int iters = 20;
  int warmup = 3;
  std::string out;
  bool force = false;
  bool gpu = true;
  bool table = true;
  std::vector<std::string> storage;  // --storage [KIND:][NAME=]PATH...
  std::string storage_size = "256MiB";
  double storage_time_s = 0.5;
  std::string format = "text";  // of the portrait table: text or markdown
};

// Who does what in one measurement: every rank sends to `to` and receives from `from` (-1: none).
struct Role {
  int to = -1;
  int from = -1;
  bool active() const { return to >= 0 || from >= 0; }
};

struct World {
  int rank = 0, size = 1;
  Placement placement;
  std::vector<std::string> hostnames;
};

// The ranks of each node, in rank order.
std::vector<std::vector<int>> ranks_by_node(const Placement& pl) {
  std::vector<std::vector<int>> out(pl.nnodes);
  for (int r = 0; r < pl.nranks; ++r) out[pl.node_of_rank[r]].push_back(r);
  return out;
}

// One timed operation of the measurement patterns, repeated `reps` times. Returns this rank's
// seconds per operation.
//  RingShiftWritten: the ring shift, except that before every operation each rank writes its whole
//  send buffer (a new byte value each time), outside the timed part: the data a ring collective
//  forwards was just received, combined or copied by its sender, and inside a node such data can
//  move slower than data nobody touched (the lines still sit in the sender core's caches).
//  RingShiftControl: the same, but each rank writes another buffer of the same size, so the two
//  differ only in which buffer was written (the writes also shift the ranks against each other a
//  little, and evict the caches; the control pays that too).
enum class Kind { PingPong, Stream, RingShift, RingShiftWritten, RingShiftControl };

unsigned char g_write_value = 0;  // the byte RingShiftWritten and RingShiftControl write next
std::vector<char> g_control_buffer;  // what RingShiftControl writes

double run_once(Kind kind, const Role& me, bool first_of_pair, char* sbuf, char* rbuf, Bytes bytes, int reps) {
  const int n = static_cast<int>(bytes);
  const bool write_first = (kind == Kind::RingShiftWritten || kind == Kind::RingShiftControl) && me.to >= 0;
  if (kind == Kind::RingShiftControl && g_control_buffer.size() < bytes) g_control_buffer.resize(bytes);
  char* const write_to = kind == Kind::RingShiftControl ? g_control_buffer.data() : sbuf;
  double elapsed = 0;
  double t0 = MPI_Wtime();
  if (me.active()) {
    for (int r = 0; r < reps; ++r) {
      if (write_first) {
        elapsed += MPI_Wtime() - t0;
        std::memset(write_to, ++g_write_value, bytes);
        t0 = MPI_Wtime();
      }
      switch (kind) {
        case Kind::PingPong:
          if (first_of_pair) {
            MPI_Send(sbuf, n, MPI_BYTE, me.to, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, n, MPI_BYTE, me.from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          } else {
            MPI_Recv(rbuf, n, MPI_BYTE, me.from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, n, MPI_BYTE, me.to, 1, MPI_COMM_WORLD);
          }
          break;
        case Kind::Stream: {
          // A window of messages in flight one way, then a zero-byte acknowledgement back.
          constexpr int kWindow = 8;
          MPI_Request req[kWindow];
          if (first_of_pair) {
            for (int w = 0; w < kWindow; ++w) MPI_Isend(sbuf, n, MPI_BYTE, me.to, 2, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(kWindow, req, MPI_STATUSES_IGNORE);
            MPI_Recv(nullptr, 0, MPI_BYTE, me.from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          } else {
            for (int w = 0; w < kWindow; ++w) MPI_Irecv(rbuf, n, MPI_BYTE, me.from, 2, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(kWindow, req, MPI_STATUSES_IGNORE);
            MPI_Send(nullptr, 0, MPI_BYTE, me.to, 3, MPI_COMM_WORLD);
          }
          break;
        }
        case Kind::RingShift:
        case Kind::RingShiftWritten:
        case Kind::RingShiftControl:
          MPI_Sendrecv(sbuf, me.to >= 0 ? n : 0, MPI_BYTE, me.to >= 0 ? me.to : MPI_PROC_NULL, 4, rbuf,
                       me.from >= 0 ? n : 0, MPI_BYTE, me.from >= 0 ? me.from : MPI_PROC_NULL, 4, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE);
          break;
      }
    }
  }
  elapsed += MPI_Wtime() - t0;
  double per_op = elapsed / reps;
  if (kind == Kind::PingPong) per_op /= 2;  // one way
  if (kind == Kind::Stream) per_op /= 8;    // per message of the window
  return per_op;
}

// Times one pattern at one size on every rank; returns the per-operation samples (max over the
// active ranks) on rank 0, and the repetitions used.
std::vector<double> time_pattern(const World& w, Kind kind, const Role& me, bool first_of_pair, char* sbuf,
                                 char* rbuf, Bytes bytes, const Options& o, int& reps_out) {
  // One trial fixes the repetitions, so every rank runs the same number of operations.
  // The least of three trials: the first message between two ranks also sets up their connection.
  double trial = INFINITY;
  for (int i = 0; i < 3; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    trial = std::min(trial, run_once(kind, me, first_of_pair, sbuf, rbuf, bytes, 1));
  }
  double trial_max = 0;
  MPI_Allreduce(&trial, &trial_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int reps = static_cast<int>(std::clamp(std::ceil(kTargetSampleS / std::max(trial_max, 1e-9)), 1.0,
                                         static_cast<double>(kMaxReps)));
  reps_out = reps;
  for (int i = 0; i < o.warmup; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    run_once(kind, me, first_of_pair, sbuf, rbuf, bytes, reps);
  }
  std::vector<double> samples;
  for (int i = 0; i < o.iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = me.active() ? run_once(kind, me, first_of_pair, sbuf, rbuf, bytes, reps) : 0.0;
    double tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (w.rank == 0) samples.push_back(tmax);
  }
  return samples;
}

ProbeMeasurement make_row(const std::string& kind, const std::string& tier, const std::string& memory, Bytes bytes,
                          int ranks, int reps, const std::vector<double>& samples_s) {
  std::vector<double> us;
  for (double s : samples_s) us.push_back(s * 1e6);
  SampleStats st = summarize(us);
  ProbeMeasurement m;
  m.kind = kind;
  m.tier = tier;
  m.memory = memory;
  m.bytes = bytes;
  m.ranks = ranks;
  m.iters = static_cast<int>(samples_s.size());
  m.reps = reps;
  m.min_us = st.min;
  m.median_us = st.median;
  m.mean_us = st.mean;
  m.p95_us = st.p95;
  m.max_us = st.max;
  m.bw_gbps = st.median > 0 ? static_cast<double>(bytes) / (st.median * 1e-6) / 1e9 : 0.0;
  return m;
}

// Local operations on every rank at once (they share the node's memory bandwidth, as in a
// collective): memcpy and the executors' float32 sum.
std::vector<double> time_local(const World& w, bool reduce, std::vector<char>& a, std::vector<char>& b, Bytes bytes,
                               const Options& o, int& reps_out) {
  auto once = [&](int reps) {
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; ++r) {
      if (reduce)
        reduce_into(a.data(), b.data(), bytes / 4, DType::Float32, RedOp::Sum);
      else
        std::memcpy(a.data(), b.data(), bytes);
    }
    return (MPI_Wtime() - t0) / reps;
  };
  MPI_Barrier(MPI_COMM_WORLD);
  double trial = std::min(once(1), once(1)), trial_max = 0;
  MPI_Allreduce(&trial, &trial_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int reps = static_cast<int>(
      std::clamp(std::ceil(kTargetSampleS / std::max(trial_max, 1e-9)), 1.0, static_cast<double>(kMaxReps)));
  reps_out = reps;
  for (int i = 0; i < o.warmup; ++i) once(reps);
  std::vector<double> samples;
  for (int i = 0; i < o.iters; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = once(reps), tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (w.rank == 0) samples.push_back(tmax);
  }
  return samples;
}

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::string read_memory_total() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      unsigned long long kb = 0;
      std::sscanf(line.c_str(), "MemTotal: %llu", &kb);
      return format_bytes(kb * 1024);
    }
  }
  return "unknown";
}

// Network devices of this host: InfiniBand HCAs and interfaces with their link speed.
std::string read_network_devices() {
  namespace fs = std::filesystem;
  std::string out;
  std::error_code ec;
  if (fs::exists("/sys/class/infiniband", ec)) {
    for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec)) {
      out += (out.empty() ? "" : ", ") + e.path().filename().string() + " (InfiniBand/RoCE HCA)";
    }
  }
  if (fs::exists("/sys/class/net", ec)) {
    for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) {
      std::string name = e.path().filename().string();
      if (name == "lo") continue;
      std::ifstream speed(e.path() / "speed");
      long long mbps = -1;
      if (!(speed >> mbps)) mbps = -1;
      out += (out.empty() ? "" : ", ") + name + (mbps > 0 ? " (" + std::to_string(mbps) + " Mb/s)" : "");
    }
  }
  return out.empty() ? "none found" : out;
}

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(len));
  auto nl = s.find_first_of("\n,");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

const ProbeMeasurement* find_row(const ProbeData& d, const std::string& kind, const std::string& tier, bool largest) {
  const ProbeMeasurement* best = nullptr;
  for (const auto& r : d.rows) {
    if (r.kind != kind || r.tier != tier) continue;
    if (!best || (largest ? r.bytes > best->bytes : r.bytes < best->bytes)) best = &r;
  }
  return best;
}

// The fastest bandwidth seen for a kind/tier (the plateau of the curve), GB/s.
double peak_bw(const ProbeData& d, const std::string& kind, const std::string& tier) {
  double bw = 0;
  for (const auto& r : d.rows)
    if (r.kind == kind && r.tier == tier) bw = std::max(bw, r.bw_gbps);
  return bw;
}

// The link matrix's measured peer bandwidths: GPU 0 -> 1 is the plateau of the peer rows; every
// further pair of neighbours in CUDA's order (i -> i + 1) is timed at the largest size. CUDA and
// NVML may number the GPUs differently: the PCI bus ids match them up.
void fill_peer_bandwidth(ProbeData& d, const GpuInventory& inv, const std::vector<Bytes>& sizes, const Options& o) {
  auto nvml_index = [&](std::size_t cuda) -> int {
    if (cuda >= inv.bus_ids.size() || inv.bus_ids[cuda].empty()) return -1;
    for (std::size_t k = 0; k < d.gpu_links.gpus.size(); ++k)
      if (d.gpu_links.gpus[k].bus_id == sysfs_bus_id(inv.bus_ids[cuda])) return static_cast<int>(k);
    return -1;
  };
  if (d.gpu_links.empty() || inv.names.size() < 2 || sizes.empty()) return;
  for (std::size_t i = 0; i + 1 < inv.names.size(); ++i) {
    const int a = nvml_index(i), b = nvml_index(i + 1);
    if (a < 0 || b < 0) continue;
    double gbps = 0;
    if (i == 0) {
      gbps = peak_bw(d, "peer", "gpu");
    } else {
      std::vector<double> s = time_gpu_copy("peer", static_cast<int>(i), sizes.back(), o.iters, o.warmup);
      std::sort(s.begin(), s.end());
      if (!s.empty() && s[s.size() / 2] > 0) gbps = static_cast<double>(sizes.back()) / s[s.size() / 2] / 1e9;
    }
    if (gbps > 0) d.gpu_links.peer_bw_gbps[a][b] = gbps;
  }
}

std::string tier_line(const ProbeData& d, const std::string& tier) {
  const ProbeMeasurement* lat = find_row(d, "pingpong", tier, false);
  if (!lat) return "not measured";
  char buf[400];
  std::snprintf(buf, sizeof buf, "latency %.2f us (%s ping-pong, one way); bandwidth %.2f GB/s per direction (stream), "
                "%.2f GB/s per rank with all ranks exchanging (ring shift)",
                lat->median_us, format_bytes(lat->bytes).c_str(), peak_bw(d, "stream", tier),
                peak_bw(d, "ring-shift", tier));
  std::string s = buf;
  std::vector<TimedSize> pts;
  for (const auto& r : d.rows)
    if (r.kind == "ring-shift" && r.tier == tier && r.median_us > 0) pts.push_back({r.bytes, r.median_us * 1e-6});
  try {
    LineFit f = fit_line(pts, FitWeighting::Relative, tier + " ring shift");
    std::snprintf(buf, sizeof buf, "\n                   fit t = alpha + bytes*beta: alpha %.2f us, 1/beta %.2f GB/s, R^2 %.4f",
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

std::string build_portrait(const World& w, const ProbeData& d, const std::string& mpi_version,
                           const std::string& net_devices, const std::string& memory_total) {
  std::ostringstream s;
  s << "commsim probe: machine portrait\n";
  s << "  hosts            : " << d.nodes << " (";
  auto by_node = ranks_by_node(w.placement);
  for (std::size_t i = 0; i < d.hosts.size(); ++i)
    s << (i ? ", " : "") << d.hosts[i] << ": " << by_node[i].size() << " rank" << (by_node[i].size() == 1 ? "" : "s");
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
    std::snprintf(buf, sizeof buf, "  host link        : host->GPU %.2f GB/s, GPU->host %.2f GB/s (pinned memory, cudaMemcpy)\n",
                  peak_bw(d, "h2d", "host-link"), peak_bw(d, "d2h", "host-link"));
    s << buf;
    std::snprintf(buf, sizeof buf, "  GPU memory       : device-to-device copy %.2f GB/s\n", peak_bw(d, "d2d", "gpu"));
    s << buf;
    if (d.gpu_names.size() > 1) {
      std::snprintf(buf, sizeof buf, "  GPU <-> GPU      : %.2f GB/s (cudaMemcpyPeer, GPU 0 -> GPU 1)\n", peak_bw(d, "peer", "gpu"));
      s << buf;
    } else {
      s << "  GPU <-> GPU      : one GPU visible, not measured\n";
    }
  }
  return s.str();
}

void print_rows(std::ostream& out, const ProbeData& d) {
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

// One --storage argument: [KIND:][NAME=]PATH. KIND (local or shared) says whether every node has
// its own or all share one, where the file system type does not tell (default: nfs, lustre, gpfs,
// beegfs, cifs, ceph, ... are shared); NAME names the tier (default: after its file system).
struct StorageSpec {
  std::string kind;  // "", "local", "shared"
  std::string name;
  std::string path;
  StorageTarget target;
};

std::vector<StorageSpec> parse_storage_specs(const std::vector<std::string>& args) {
  std::vector<StorageSpec> out;
  for (const auto& a : args) {
    StorageSpec s;
    std::string rest = a;
    for (const char* kind : {"local:", "shared:"})
      if (rest.rfind(kind, 0) == 0) {
        s.kind = std::string(kind, std::strlen(kind) - 1);
        rest = rest.substr(std::strlen(kind));
      }
    const auto eq = rest.find('=');
    if (eq != std::string::npos && rest.find('/') > eq) {
      s.name = rest.substr(0, eq);
      s.path = rest.substr(eq + 1);
    } else {
      s.path = rest;
    }
    if (s.path.empty()) throw Error("--storage '" + a + "': give a directory, as [local:|shared:][NAME=]PATH");
    out.push_back(s);
  }
  return out;
}

// The tier's name when --storage gave none: local-<fs> or shared-<fs>, numbered when repeated.
void name_storage_tiers(std::vector<StorageSpec>& specs) {
  std::set<std::string> used;
  for (const auto& s : specs)
    if (!s.name.empty()) used.insert(s.name);
  for (auto& s : specs) {
    if (!s.name.empty()) continue;
    const std::string base = std::string(s.target.shared ? "shared-" : "local-") + s.target.fs_type;
    s.name = base;
    for (int i = 2; used.count(s.name); ++i) s.name = base + "-" + std::to_string(i);
    used.insert(s.name);
  }
}

// Every rank's error message ("" = none); the first one, with its rank and host, or "".
std::string first_error(const World& w, const std::string& mine) {
  const auto all = gather_strings(mine);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return "rank " + std::to_string(r) + " (" + w.hostnames[r] + "): " + all[r];
  return "";
}

// Before any measurement: every path exists on every node, is writable, and has room for the
// all-ranks pass (each rank of a node its own file; on a shared file system every rank's file).
std::string check_storage(const World& w, std::vector<StorageSpec>& specs, Bytes file_bytes) {
  std::string err;
  const int on_node = static_cast<int>(ranks_by_node(w.placement)[w.placement.node_of_rank[w.rank]].size());
  try {
    for (auto& s : specs) {
      s.target = describe_storage(s.path);
      if (!s.kind.empty()) s.target.shared = s.kind == "shared";
      check_storage_room(s.target, file_bytes, s.target.shared ? w.size : on_node);
    }
  } catch (const Error& e) {
    err = e.what();
  }
  err = first_error(w, err);
  if (err.empty()) name_storage_tiers(specs);  // the stored rows take the names rank 0 gives
  return err;
}

// The storage passes: one writer per node (each node's first rank, the nodes at once), then all
// ranks at once. Rows summed per node land in d.storage on rank 0. Returns the first error, "" if none.
std::string probe_storage(const World& w, const std::vector<StorageSpec>& specs, const StorageOptions& so,
                          ProbeData& d) {
  const auto by_node = ranks_by_node(w.placement);
  const bool node_first = by_node[w.placement.node_of_rank[w.rank]].front() == w.rank;
  for (const auto& spec : specs) {
    for (const std::string mode : {"one-per-node", "all-ranks"}) {
      const bool active = mode == "all-ranks" || node_first;
      std::string mine, err;
      MPI_Barrier(MPI_COMM_WORLD);
      if (active) {
        try {
          const std::string tag = w.hostnames[w.rank] + "-rank" + std::to_string(w.rank) + "-pid" + std::to_string(getpid());
          for (const auto& r : measure_storage(spec.target, so, tag)) mine += serialize_storage_row(r) + "\n";
        } catch (const Error& e) {
          err = e.what();
        }
      }
      err = first_error(w, err);
      if (!err.empty()) return err;
      const auto all = gather_strings(mine);
      if (w.rank != 0) continue;
      std::vector<StorageRow> rows;
      for (std::size_t r = 0; r < all.size(); ++r) {
        std::istringstream in(all[r]);
        for (std::string line; std::getline(in, line);) {
          if (line.empty()) continue;
          StorageRow row = parse_storage_row(line);
          row.tier = spec.name;
          row.mode = mode;
          row.host = w.hostnames[r];
          rows.push_back(row);
        }
      }
      for (auto& r : combine_storage_rows(rows)) d.storage.push_back(std::move(r));
      std::fprintf(stderr, "commsim probe: storage %s (%s): %s done\n", spec.name.c_str(), spec.path.c_str(), mode.c_str());
    }
  }
  return "";
}

void print_storage_rows(std::ostream& out, const std::vector<StorageRow>& rows) {
  if (rows.empty()) return;
  char buf[400];
  std::snprintf(buf, sizeof buf, "\n%-14s %-13s %-12s %-8s %3s %7s %10s %9s %10s %10s %9s %9s  %s\n", "storage tier",
                "mode", "host", "op", "QD", "writers", "MiB", "seconds", "MB/s", "IOPS", "mean_us", "p99_us", "how");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%-14s %-13s %-12s %-8s %3d %7d %10.1f %9.6f %10.1f %10.0f %9.1f %9.1f  %s\n",
                  r.tier.c_str(), r.mode.c_str(), r.host.c_str(), r.op.c_str(), r.queue_depth, r.writers,
                  static_cast<double>(r.bytes) / (1 << 20), r.seconds, r.bw_Bps() / 1e6, r.op == "randread" ? r.iops() : 0.0,
                  r.latency_mean_us, r.latency_p99_us,
                  (r.fs_type + " " + r.device + (r.direct ? ", O_DIRECT" : "") + (r.note.empty() ? "" : "; " + r.note)).c_str());
    out << buf;
  }
}

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
    if (const double v = over_nodes("one-per-node", "randread", qd, iops, true); v > best_iops) best_iops = v, best_qd = qd;
  const bool shared = first->shared;
  char buf[700];
  std::snprintf(buf, sizeof buf,
                "%s: %s on %s (%s): write %s, read %s per node (one writer%s); 4 KiB random read %.1f us at QD1, "
                "%.0f IOPS at QD%d; all ranks at once: write %s, read %s %s%s",
                tier.c_str(), first->fs_type.c_str(), first->device.c_str(), first->mount_point.c_str(),
                format_bandwidth(over_nodes("one-per-node", "write", 1, bw, true)).c_str(),
                format_bandwidth(over_nodes("one-per-node", "read", 1, bw, true)).c_str(),
                hosts.size() > 1 ? ", the slowest node" : "", -over_nodes("one-per-node", "randread", 1, slow_latency, true),
                best_iops, best_qd, format_bandwidth(over_nodes("all-ranks", "write", 1, bw, !shared)).c_str(),
                format_bandwidth(over_nodes("all-ranks", "read", 1, bw, !shared)).c_str(),
                shared ? "in all (the nodes summed)" : "per node (the slowest)",
                first->note.empty() ? "" : (" [" + first->note + "]").c_str());
  return buf;
}

// The portrait as the table a planner starts from: GPUs, interconnect, intra-node bandwidth,
// network bandwidth, local disk, shared storage.
std::vector<std::pair<std::string, std::string>> portrait_table(const ProbeData& d, const std::string& net_devices) {
  std::vector<std::pair<std::string, std::string>> t;
  char buf[400];
  if (d.gpu_names.empty()) {
    t.push_back({"GPUs", "none (" + d.gpu_note + ")"});
  } else {
    std::map<std::string, int> count;
    for (const auto& n : d.gpu_names) ++count[n];
    std::string g;
    for (const auto& [name, c] : count) g += (g.empty() ? "" : ", ") + std::to_string(c) + " x " + name;
    t.push_back({"GPUs", g + " per node (rank 0's host), " + std::to_string(d.nodes) + " node" + (d.nodes == 1 ? "" : "s")});
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
             " per rank (MPI ring shift, all ranks at once), " + format_bandwidth(peak_bw(d, "stream", "intra-node") * 1e9) +
             " one pair";
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

void print_portrait_table(std::ostream& out, const std::vector<std::pair<std::string, std::string>>& t,
                          const std::string& format) {
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

int probe_main(int argc, char** argv, const Options& o, const std::vector<Bytes>& sizes) {
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  w.hostnames = gather_strings(local_hostname());
  w.placement = Placement::from_hostnames(w.hostnames);
  auto by_node = ranks_by_node(w.placement);

  RunContext ctx = RunContext::collect_local(argc, argv);
  ctx.hostnames = w.hostnames;
  const BindingSummary binding = gather_binding(w.hostnames, ctx.cpus);
  ctx.cpu_binding = binding.text;
  ctx.ranks = w.size;
  ctx.nodes = w.placement.nnodes;
  ctx.backend = "host";
  ctx.transport = "mpi";
  ctx.mpi_version = mpi_library_version();

  // Storage paths are checked on every node before anything is measured or written.
  std::vector<StorageSpec> storage = parse_storage_specs(o.storage);
  StorageOptions storage_opts;
  storage_opts.file_bytes = parse_bytes(o.storage_size);
  storage_opts.random_time_s = o.storage_time_s;
  if (!storage.empty()) {
    const std::string err = check_storage(w, storage, storage_opts.file_bytes);
    if (!err.empty()) {
      if (w.rank == 0) std::fprintf(stderr, "commsim probe: error: %s\n", err.c_str());
      return 1;
    }
  }

  // Open the output first: an existing file is an error before minutes of measuring.
  std::unique_ptr<ResultsFile> file;
  int open_ok = 1;
  std::string open_error;
  if (w.rank == 0 && !o.out.empty()) {
    try {
      file = std::make_unique<ResultsFile>(ResultsFile::create(o.out, o.force, ctx));
    } catch (const Error& e) {
      open_ok = 0;
      open_error = e.what();
    }
  }
  MPI_Bcast(&open_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!open_ok) {
    if (w.rank == 0) std::fprintf(stderr, "commsim probe: error: %s\n", open_error.c_str());
    return 1;
  }

  ProbeData d;
  d.nodes = w.placement.nnodes;
  d.ranks = w.size;
  d.ranks_per_node = w.placement.max_ranks_per_node();
  for (const auto& node : by_node) d.hosts.push_back(w.hostnames[node.front()]);
  d.cpu_model = read_cpu_model();
  d.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  d.intra_fabric = "shared memory (MPI between processes of one host)";
  d.network = d.nodes > 1 ? "MPI between hosts (the transport MPI chose; see network devices)" : "";

  Bytes max_bytes = sizes.empty() ? 0 : sizes.back();
  std::vector<char> sbuf(std::max<Bytes>(max_bytes, 1), 1), rbuf(std::max<Bytes>(max_bytes, 1), 0);

  // Tiers. Intra-node: the first node with two ranks; its first two ranks form the pair, and the
  // ring shift runs on every node over its own ranks. Network: rank 0 and the first rank of the
  // next node form the pair; the ring shift sends from each rank to the rank of the same local
  // index on the next node.
  struct Tier {
    std::string name;
    int a = -1, b = -1;  // the pair
    Role ring;           // this rank's role in the ring shift
    int ring_ranks = 0;
  };
  std::vector<Tier> tiers;
  {
    Tier intra;
    intra.name = "intra-node";
    for (const auto& node : by_node)
      if (node.size() >= 2 && intra.a < 0) intra.a = node[0], intra.b = node[1];
    for (const auto& node : by_node) {
      if (node.size() < 2) continue;
      intra.ring_ranks += static_cast<int>(node.size());
      for (std::size_t i = 0; i < node.size(); ++i)
        if (node[i] == w.rank) intra.ring = {node[(i + 1) % node.size()], node[(i + node.size() - 1) % node.size()]};
    }
    if (intra.a >= 0) tiers.push_back(intra);
    if (by_node.size() >= 2) {
      Tier net;
      net.name = "network";
      net.a = by_node[0][0];
      net.b = by_node[1][0];
      const int nn = static_cast<int>(by_node.size());
      int common = d.ranks_per_node;
      for (const auto& node : by_node) common = std::min<int>(common, static_cast<int>(node.size()));
      for (int n = 0; n < nn; ++n) {
        for (int i = 0; i < common; ++i) {
          if (by_node[n][i] != w.rank) continue;
          net.ring = {by_node[(n + 1) % nn][i], by_node[(n + nn - 1) % nn][i]};
        }
      }
      net.ring_ranks = common * nn;
      if (nn == 2) net.ring_ranks = common * 2;  // next and previous node are the same node
      tiers.push_back(net);
    }
  }
  if (w.rank == 0) {
    std::fprintf(stderr, "commsim probe: %d ranks on %d node%s, %zu sizes, %d iterations each\n", w.size, d.nodes,
                 d.nodes == 1 ? "" : "s", sizes.size(), o.iters);
    std::fprintf(stderr, "commsim probe: cpus: %s\n", ctx.cpu_binding.c_str());
    if (!binding.oversubscribed.empty())
      std::fprintf(stderr, "commsim probe: note: %s\n", binding.oversubscribed.c_str());
    if (tiers.empty())
      std::fprintf(stderr, "commsim probe: only one rank per node: no pair of ranks to measure (run with -np 2 or more)\n");
  }

  for (const Tier& t : tiers) {
    Role pair;
    bool first = w.rank == t.a;
    if (w.rank == t.a) pair = {t.b, t.b};
    if (w.rank == t.b) pair = {t.a, t.a};
    for (Bytes bytes : sizes) {
      int reps = 1;
      auto s = time_pattern(w, Kind::PingPong, pair, first, sbuf.data(), rbuf.data(), bytes, o, reps);
      if (w.rank == 0) d.rows.push_back(make_row("pingpong", t.name, "host", bytes, 2, reps, s));
      s = time_pattern(w, Kind::Stream, pair, first, sbuf.data(), rbuf.data(), bytes, o, reps);
      if (w.rank == 0) d.rows.push_back(make_row("stream", t.name, "host", bytes, 2, reps, s));
      s = time_pattern(w, Kind::RingShift, t.ring, false, sbuf.data(), rbuf.data(), bytes, o, reps);
      if (w.rank == 0) d.rows.push_back(make_row("ring-shift", t.name, "host", bytes, t.ring_ranks, reps, s));
      if (t.name == "intra-node") {
        // The control and the written shift one after the other, so both see the machine in the
        // same state.
        s = time_pattern(w, Kind::RingShiftControl, t.ring, false, sbuf.data(), rbuf.data(), bytes, o, reps);
        if (w.rank == 0)
          d.rows.push_back(make_row("ring-shift-control", t.name, "host", bytes, t.ring_ranks, reps, s));
        s = time_pattern(w, Kind::RingShiftWritten, t.ring, false, sbuf.data(), rbuf.data(), bytes, o, reps);
        if (w.rank == 0)
          d.rows.push_back(make_row("ring-shift-written", t.name, "host", bytes, t.ring_ranks, reps, s));
      }
    }
    if (w.rank == 0) std::fprintf(stderr, "commsim probe: %s tier done\n", t.name.c_str());
  }

  for (bool reduce : {false, true}) {
    for (Bytes bytes : sizes) {
      if (reduce && bytes < 4) continue;
      int reps = 1;
      auto s = time_local(w, reduce, rbuf, sbuf, bytes, o, reps);
      if (w.rank == 0) d.rows.push_back(make_row(reduce ? "reduce" : "memcpy", "local", "host", bytes, w.size, reps, s));
    }
  }

  // GPUs: rank 0 alone, while the others wait (the copies would otherwise share the device).
  if (w.rank == 0) {
    GpuInventory inv = o.gpu ? probe_gpu_inventory() : GpuInventory{{}, "skipped (--no-gpu)", {}};
    d.gpu_names = inv.names;
    d.gpu_note = inv.note;
    if (o.gpu) d.gpu_topology = nvidia_smi_topology();
    if (o.gpu) d.gpu_links = read_gpu_link_matrix();
    if (!inv.names.empty()) {
      ctx.gpu_names = inv.names;
      std::vector<std::pair<std::string, std::string>> kinds = {{"d2d", "gpu"}, {"h2d", "host-link"}, {"d2h", "host-link"}};
      if (inv.names.size() > 1) kinds.push_back({"peer", "gpu"});
      for (const auto& [kind, tier] : kinds) {
        for (Bytes bytes : sizes) {
          auto s = time_gpu_copy(kind, 0, bytes, o.iters, o.warmup);
          d.rows.push_back(make_row(kind, tier, kind == "d2d" || kind == "peer" ? "device" : "pinned", bytes, 1,
                                    bytes < (1u << 20) ? 20 : 1, s));
        }
      }
      fill_peer_bandwidth(d, inv, sizes, o);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  if (!storage.empty()) {
    const std::string err = probe_storage(w, storage, storage_opts, d);
    if (!err.empty()) {
      if (w.rank == 0) {
        std::fprintf(stderr, "commsim probe: error: %s\n", err.c_str());
        if (file) {
          file.reset();  // closed as failed, under <out>.partial: nothing of a failed probe is kept
          std::filesystem::remove(o.out + ".partial");
        }
      }
      return 1;
    }
  }

  if (w.rank == 0) {
    const std::string net_devices = read_network_devices();
    d.portrait = build_portrait(w, d, ctx.mpi_version, net_devices, read_memory_total());
    std::cout << d.portrait;
    if (o.table) print_rows(std::cout, d);
    print_storage_rows(std::cout, d.storage);
    std::ostringstream table;
    print_portrait_table(table, portrait_table(d, net_devices), o.format);
    std::cout << table.str();
    d.portrait += table.str();  // stored with the portrait
    std::cout.flush();
    if (file) {
      file->finish(RunStatus::Complete);
      write_probe_group(o.out, d);
      std::fprintf(stderr, "commsim probe: wrote %s\n", o.out.c_str());
    }
  }
  return 0;
}

}  // namespace

int cmd_probe(int argc, char** argv) {
  Options o;
  CommandLine cli("probe",
                  "Measure the machine under mpirun/srun: latency and bandwidth between ranks of one node and of "
                  "different nodes (ping-pong, streaming, and a ring shift with every rank at once, inside a node "
                  "also of data each rank has just written), host memory copies and reductions, GPU copies when "
                  "GPUs are present, the GPU link matrix (NVLink / PCIe path of every GPU pair, NUMA node and "
                  "nearest NIC of each GPU, read through NVML), and with --storage the disks and file systems. "
                  "Prints the machine portrait and stores every measurement in HDF5 (/probe) for "
                  "`commsim calibrate`.",
                  "mpirun -np 16 commsim probe --out portrait.h5\n"
                  "mpirun -np 8 commsim probe --storage nvme=/scratch lustre=/lustre/$USER --storage-size 1GiB "
                  "--format markdown --out portrait.h5\n"
                  "mpirun -np 2 commsim probe --sizes 8B:1MiB:x4 --iters 5 --out quick.h5");
  cli.options().add_options()                                                                            //
      ("sizes", po::value(&o.sizes)->default_value(o.sizes), "message sizes: range 8B:64MiB[:xF] or list")  //
      ("iters", po::value(&o.iters)->default_value(o.iters), "timed samples per size")                    //
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "untimed samples per size")               //
      ("out", po::value(&o.out), "HDF5 file to write (the portrait and every measurement)")              //
      ("force", po::bool_switch(&o.force), "overwrite an existing --out file")                           //
      ("no-gpu", "do not probe GPUs even when present")                                                   //
      ("no-table", "print only the portrait, not every measurement")                                     //
      ("storage", po::value(&o.storage)->multitoken()->value_name("[KIND:][NAME=]PATH..."),
       "directories whose storage to measure (each rank writes its own file there): sequential write "
       "with O_DIRECT, sequential read, 4 KiB random reads at queue depths 1, 4, 16 and 32; first one "
       "writer per node, then all ranks at once. NAME names the tier (default local-<fs> or "
       "shared-<fs>); KIND, local or shared, overrides what the file system type says (nfs, lustre, "
       "gpfs, beegfs, cifs, ceph, ... count as shared). The files are removed afterwards")  //
      ("storage-size", po::value(&o.storage_size)->default_value(o.storage_size),
       "the file each writer writes and reads under --storage (a multiple of 4 KiB); every rank of a node "
       "needs that much free space at once")  //
      ("storage-time", po::value(&o.storage_time_s)->default_value(o.storage_time_s)->value_name("S"),
       "seconds of random reads per queue depth under --storage")  //
      ("format", po::value(&o.format)->default_value(o.format),
       "the closing portrait table: text, or markdown (ready to paste)");
  if (!cli.parse(argc, argv)) return 0;
  o.gpu = !cli.given("no-gpu");
  o.table = !cli.given("no-table");
  if (o.iters < 1) throw Error("--iters must be at least 1 (got " + std::to_string(o.iters) + ")");
  if (o.warmup < 0) throw Error("--warmup must be 0 or more (got " + std::to_string(o.warmup) + ")");
  if (o.format != "text" && o.format != "markdown") throw Error("--format '" + o.format + "': use text or markdown");
  if (!(o.storage_time_s > 0)) throw Error("--storage-time must be above 0 s (got " + std::to_string(o.storage_time_s) + ")");
  if (const Bytes b = parse_bytes(o.storage_size); b < 4096 || b % 4096 != 0)
    throw Error("--storage-size " + o.storage_size + ": give a multiple of 4 KiB, at least 4KiB (e.g. 64MiB)");
  std::vector<Bytes> sizes = parse_sizes(o.sizes);
  if (!sizes.empty() && sizes.back() > (Bytes{1} << 31) - 1)
    throw Error("--sizes: the largest probe message is 2 GiB - 1 (MPI counts are int); got " + format_bytes(sizes.back()));

  bool we_init = false;
  if (!mpi_active()) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
    we_init = true;
  }
  int rc = probe_main(argc, argv, o, sizes);
  if (we_init) MPI_Finalize();
  return rc;
}

#endif

}  // namespace commsim
