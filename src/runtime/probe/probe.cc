#include "runtime/probe/probe.h"

#include <cstring>
#include <set>

#include "model/error.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "collectives/host/mpi_check.h"
#include "model/placement.h"
#include "runtime/probe/gpu.h"
#include "runtime/probe/nvml_topology.h"
#include "runtime/probe/patterns.h"
#include "runtime/probe/portrait.h"
#include "runtime/probe/tiers.h"
#include "runtime/sweep/stats.h"
#endif

namespace commsim {

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

#ifdef COMMSIM_HAVE_MPI
namespace {

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

ProbeMeasurement make_row(const std::string& kind, const std::string& tier, const std::string& memory, Bytes bytes,
                          int ranks, const PatternSamples& samples) {
  std::vector<double> us;
  for (double s : samples.per_op_s) us.push_back(s * 1e6);
  SampleStats st = summarize(us);
  ProbeMeasurement m;
  m.kind = kind;
  m.tier = tier;
  m.memory = memory;
  m.bytes = bytes;
  m.ranks = ranks;
  m.iters = static_cast<int>(samples.per_op_s.size());
  m.reps = samples.reps;
  m.min_us = st.min;
  m.median_us = st.median;
  m.mean_us = st.mean;
  m.p95_us = st.p95;
  m.max_us = st.max;
  m.bw_gbps = st.median > 0 ? static_cast<double>(bytes) / (st.median * 1e-6) / 1e9 : 0.0;
  return m;
}

// The storage passes: one writer per node (each node's first rank, the nodes at once), then all
// ranks at once. Rows summed per node land in d.storage on rank 0. Returns the first error, "" if none.
std::string probe_storage(const MpiSession& mpi, const Placement& placement, const std::vector<StorageSpec>& specs,
                          const StorageOptions& so, ProbeData& d, const ProbeProgress& progress) {
  const int rank = mpi.rank();
  const auto& hostnames = mpi.hostnames();
  const bool node_first = ranks_by_node(placement)[placement.node_of_rank[rank]].front() == rank;
  for (const auto& spec : specs) {
    for (const std::string mode : {"one-per-node", "all-ranks"}) {
      const bool active = mode == "all-ranks" || node_first;
      std::string mine, err;
      COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      if (active) {
        try {
          const std::string tag = hostnames[rank] + "-rank" + std::to_string(rank) + "-pid" + std::to_string(getpid());
          for (const auto& r : measure_storage(spec.target, so, tag)) mine += serialize_storage_row(r) + "\n";
        } catch (const Error& e) {
          err = e.what();
        }
      }
      err = mpi.first_error(err);
      if (!err.empty()) return err;
      const auto all = gather_strings(mine);
      if (rank != 0) continue;
      std::vector<StorageRow> rows;
      for (std::size_t r = 0; r < all.size(); ++r) {
        std::istringstream in(all[r]);
        for (std::string line; std::getline(in, line);) {
          if (line.empty()) continue;
          StorageRow row = parse_storage_row(line);
          row.tier = spec.name;
          row.mode = mode;
          row.host = hostnames[r];
          rows.push_back(row);
        }
      }
      for (auto& r : combine_storage_rows(rows)) d.storage.push_back(std::move(r));
      progress("storage " + spec.name + " (" + spec.path + "): " + mode + " done");
    }
  }
  return "";
}

// The link matrix's measured peer bandwidths: GPU 0 -> 1 is the plateau of the peer rows; every
// further pair of neighbours in CUDA's order (i -> i + 1) is timed at the largest size. CUDA and
// NVML may number the GPUs differently: the PCI bus ids match them up.
void fill_peer_bandwidth(ProbeData& d, const GpuInventory& inv, const ProbeSettings& o) {
  const std::vector<Bytes>& sizes = o.sizes;
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

// Ping-pong, stream and ring shift on each tier; inside a node also the written shift and its
// control. Rows land in d.rows on rank 0.
void measure_tiers(PatternState& state, const std::vector<ProbeTier>& tiers, const ProbeSettings& o, ProbeData& d,
                   const ProbeProgress& progress) {
  const bool keep = state.rank == 0;
  for (const ProbeTier& t : tiers) {
    const Role pair = pair_role(t, state.rank);
    const bool first = state.rank == t.a;
    for (Bytes bytes : o.sizes) {
      auto s = time_pattern(state, Pattern::PingPong, pair, first, bytes);
      if (keep) d.rows.push_back(make_row("pingpong", t.name, "host", bytes, 2, s));
      s = time_pattern(state, Pattern::Stream, pair, first, bytes);
      if (keep) d.rows.push_back(make_row("stream", t.name, "host", bytes, 2, s));
      s = time_pattern(state, Pattern::RingShift, t.ring, false, bytes);
      if (keep) d.rows.push_back(make_row("ring-shift", t.name, "host", bytes, t.ring_ranks, s));
      if (t.name == "intra-node") {
        // The control and the written shift one after the other, so both see the machine in the
        // same state.
        s = time_pattern(state, Pattern::RingShiftControl, t.ring, false, bytes);
        if (keep) d.rows.push_back(make_row("ring-shift-control", t.name, "host", bytes, t.ring_ranks, s));
        s = time_pattern(state, Pattern::RingShiftWritten, t.ring, false, bytes);
        if (keep) d.rows.push_back(make_row("ring-shift-written", t.name, "host", bytes, t.ring_ranks, s));
      }
    }
    if (keep) progress(t.name + " tier done");
  }
}

// memcpy and the float32 sum on every rank at once.
void measure_local(PatternState& state, const ProbeSettings& o, int ranks, ProbeData& d) {
  for (LocalOp op : {LocalOp::Memcpy, LocalOp::Reduce}) {
    for (Bytes bytes : o.sizes) {
      if (op == LocalOp::Reduce && bytes < 4) continue;
      const auto s = time_local(state, op, bytes);
      if (state.rank == 0)
        d.rows.push_back(make_row(op == LocalOp::Reduce ? "reduce" : "memcpy", "local", "host", bytes, ranks, s));
    }
  }
}

// Rank 0 alone: the GPU inventory, topology, link matrix and copies.
void measure_gpus(const ProbeSettings& o, ProbeData& d) {
  GpuInventory inv = o.gpu ? probe_gpu_inventory() : GpuInventory{{}, "skipped (--no-gpu)", {}};
  d.gpu_names = inv.names;
  d.gpu_note = inv.note;
  if (o.gpu) d.gpu_topology = nvidia_smi_topology();
  if (o.gpu) d.gpu_links = read_gpu_link_matrix();
  if (inv.names.empty()) return;
  std::vector<std::pair<std::string, std::string>> kinds = {{"d2d", "gpu"}, {"h2d", "host-link"}, {"d2h", "host-link"}};
  if (inv.names.size() > 1) kinds.push_back({"peer", "gpu"});
  for (const auto& [kind, tier] : kinds) {
    for (Bytes bytes : o.sizes) {
      PatternSamples s{time_gpu_copy(kind, 0, bytes, o.iters, o.warmup), bytes < (1u << 20) ? 20 : 1};
      d.rows.push_back(make_row(kind, tier, kind == "d2d" || kind == "peer" ? "device" : "pinned", bytes, 1, s));
    }
  }
  fill_peer_bandwidth(d, inv, o);
}

}  // namespace

std::string check_storage(const MpiSession& mpi, std::vector<StorageSpec>& specs, Bytes file_bytes) {
  const Placement placement = Placement::from_hostnames(mpi.hostnames());
  std::string err;
  const int on_node = static_cast<int>(ranks_by_node(placement)[placement.node_of_rank[mpi.rank()]].size());
  try {
    for (auto& s : specs) {
      s.target = describe_storage(s.path);
      if (!s.kind.empty()) s.target.shared = s.kind == "shared";
      check_storage_room(s.target, file_bytes, s.target.shared ? mpi.size() : on_node);
    }
  } catch (const Error& e) {
    err = e.what();
  }
  err = mpi.first_error(err);
  if (err.empty()) name_storage_tiers(specs);  // the stored rows take the names rank 0 gives
  return err;
}

ProbeOutcome probe_machine(const MpiSession& mpi, const ProbeSettings& o, const ProbeProgress& progress) {
  const int rank = mpi.rank();
  const Placement placement = Placement::from_hostnames(mpi.hostnames());
  const auto by_node = ranks_by_node(placement);
  ProbeOutcome out;
  ProbeData& d = out.data;
  d.nodes = placement.nnodes;
  d.ranks = mpi.size();
  d.ranks_per_node = placement.max_ranks_per_node();
  for (const auto& node : by_node) {
    d.hosts.push_back(mpi.hostnames()[node.front()]);
    out.ranks_per_host.push_back(static_cast<int>(node.size()));
  }
  out.host = read_host_facts();
  d.cpu_model = out.host.cpu_model;
  d.cpu_cores = out.host.cpu_cores;
  d.intra_fabric = "shared memory (MPI between processes of one host)";
  d.network = d.nodes > 1 ? "MPI between hosts (the transport MPI chose; see network devices)" : "";

  const std::vector<ProbeTier> tiers = plan_probe_tiers(placement, rank);
  if (rank == 0 && tiers.empty())
    progress("only one rank per node: no pair of ranks to measure (run with -np 2 or more)");

  PatternState state;
  state.comm = MPI_COMM_WORLD;
  state.rank = rank;
  state.iters = o.iters;
  state.warmup = o.warmup;
  const Bytes max_bytes = o.sizes.empty() ? 0 : o.sizes.back();
  state.send.assign(std::max<Bytes>(max_bytes, 1), 1);
  state.recv.assign(std::max<Bytes>(max_bytes, 1), 0);
  measure_tiers(state, tiers, o, d, progress);
  measure_local(state, o, mpi.size(), d);

  // GPUs: rank 0 alone, while the others wait (the copies would otherwise share the device).
  if (rank == 0) measure_gpus(o, d);
  COMMSIM_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

  if (!o.storage.empty()) out.error = probe_storage(mpi, placement, o.storage, o.storage_options, d, progress);
  return out;
}

#endif  // COMMSIM_HAVE_MPI

}  // namespace commsim
