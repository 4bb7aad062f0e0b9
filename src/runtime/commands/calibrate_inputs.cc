#include "runtime/commands/calibrate_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "collectives/elements/dtype.h"
#include "collectives/generators.h"
#include "model/error.h"
#include "model/nccl/logged_table.h"
#include "model/placement.h"
#include "model/price.h"
#include "runtime/sweep/sweep.h"

namespace commsim {
namespace {

std::string fnum(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A point the fits may use: measured, status ok, its ranks placed evenly on its nodes.
bool usable(const Point& p) {
  return p.status == "ok" && p.measured() && p.measured_median_us > 0 && p.nodes >= 1 && p.ranks % p.nodes == 0;
}

// Collective measurements usable by the fit: measured hand-written points with status ok.
// Each sample's key is its index into `points`.
std::vector<CollectiveSample> collective_samples(const std::vector<Point>& points) {
  std::vector<CollectiveSample> out;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (!usable(p) || !is_hand_written(p.algorithm)) continue;
    out.push_back({p.collective, p.algorithm, p.nodes, p.ranks / p.nodes, p.bytes, p.measured_median_us * 1e-6, i});
  }
  return out;
}

NcclSample nccl_sample(const Point& p) {
  return {p.collective, p.algorithm, p.protocol, p.nodes, p.ranks / p.nodes, p.bytes, p.measured_median_us * 1e-6};
}

// The forced NCCL runs among `points` (nccl-ring / nccl-tree with LL, LL128 or Simple), measured ok.
std::vector<NcclSample> nccl_forced(const std::vector<Point>& points) {
  std::vector<NcclSample> out;
  for (const Point& p : points)
    if (usable(p) && (p.algorithm == Algorithm::NcclRing || p.algorithm == Algorithm::NcclTree) &&
        p.protocol != Protocol::None)
      out.push_back(nccl_sample(p));
  return out;
}

// The runs of NCCL's own choice (nccl) on two ranks or more, measured ok.
std::vector<NcclSample> nccl_own(const std::vector<Point>& points) {
  std::vector<NcclSample> out;
  for (const Point& p : points)
    if (usable(p) && p.algorithm == Algorithm::Nccl && p.ranks >= 2) out.push_back(nccl_sample(p));
  return out;
}

// Prices the schedule each measured point ran (the chunk of the pipelined algorithms from the
// topology its run was predicted on), as `commsim run` predicts it: the collective fit then fits
// exactly what the runs will be judged by. Schedules are built once; a fit only re-prices them.
class SchedulePricer {
 public:
  SchedulePricer(const CalibrateFiles& files, const std::vector<CollectiveSample>& samples)
      : schedules_(files.points.size()) {
    std::map<std::string, std::optional<Topology>> parsed;
    for (const CollectiveSample& s : samples) {
      const Point& p = files.points[s.key];
      auto [it, added] = parsed.try_emplace(files.run_topology_text[s.key]);
      if (added) {
        try {
          it->second = parse_topology(it->first, "the run's topology");
        } catch (const Error&) {
        }
      }
      const Placement placement = Placement::uniform(s.nodes, s.ranks_per_node);
      const auto dtype = parse_dtype(p.dtype);
      try {
        const Bytes chunk = pipeline_chunk_ran_with(p, it->second ? &*it->second : nullptr);
        schedules_[s.key] = Entry{make_schedule({p.collective, p.algorithm, p.ranks, p.count,
                                                 dtype ? dtype_size(*dtype) : 4u, p.root, &placement, chunk}),
                                  placement, files.run_piece[s.key]};
      } catch (const Error&) {
        // No schedule (an algorithm this build cannot generate for it): the sample is not fitted.
      }
    }
  }
  double operator()(const Topology& topo, const CollectiveSample& s) const {
    const auto& e = schedules_[s.key];
    if (!e) return std::numeric_limits<double>::quiet_NaN();
    if (e->piece && *e->piece != topo.piece()) {  // the run cut transfers into other pieces (--piece-size)
      Topology with_piece = topo;
      with_piece.piece_bytes = e->piece;
      return price_schedule(e->schedule, with_piece, e->placement).time_s;
    }
    return price_schedule(e->schedule, topo, e->placement).time_s;
  }

 private:
  struct Entry {
    Schedule schedule;
    Placement placement;
    std::optional<std::uint64_t> piece;  // the host executor's piece in the point's run, when recorded
  };
  std::vector<std::optional<Entry>> schedules_;  // [point]
};

// The probe's storage rows as topology tiers: per node, the slowest node's one-writer sequential
// rates and its 4 KiB random read at queue depth 1; a shared tier also gets the aggregate of all
// ranks at once (summed over the nodes). Tiers of the base with other names are kept.
std::vector<StorageTier> storage_tiers(const std::vector<StorageRow>& rows, const std::vector<StorageTier>& base) {
  std::vector<StorageTier> out;
  std::vector<std::string> order;
  for (const auto& r : rows)
    if (std::find(order.begin(), order.end(), r.tier) == order.end()) order.push_back(r.tier);
  for (const auto& b : base)
    if (std::find(order.begin(), order.end(), b.name) == order.end()) out.push_back(b);
  for (const auto& name : order) {
    StorageTier t;
    t.name = name;
    double read = INFINITY, write = INFINITY, latency = 0, agg_read = 0, agg_write = 0;
    for (const auto& r : rows) {
      if (r.tier != name) continue;
      t.shared = r.shared;
      if (r.mode == "one-per-node" && r.op == "read") read = std::min(read, r.bw_Bps());
      if (r.mode == "one-per-node" && r.op == "write") write = std::min(write, r.bw_Bps());
      if (r.mode == "one-per-node" && r.op == "randread" && r.queue_depth == 1)
        latency = std::max(latency, r.latency_mean_us * 1e-6);
      if (r.mode == "all-ranks" && r.op == "read") agg_read += r.bw_Bps();
      if (r.mode == "all-ranks" && r.op == "write") agg_write += r.bw_Bps();
    }
    if (!std::isfinite(read) || !std::isfinite(write) || !(latency > 0)) continue;
    t.read_bw_Bps = read;
    t.write_bw_Bps = write;
    t.latency_s = latency;
    if (t.shared) t.aggregate_read_bw_Bps = agg_read, t.aggregate_write_bw_Bps = agg_write;
    out.push_back(t);
  }
  return out;
}

// The `storage:` section of the written topology, each probed tier with a comment naming where its
// numbers come from ("" with no tiers).
std::string storage_yaml(const std::vector<StorageTier>& tiers, const std::vector<StorageRow>& rows,
                         const std::string& source, const std::string& date) {
  if (tiers.empty()) return "";
  auto bw = [](double b) { return fnum("%.6g", b / 1e9) + " GB/s"; };
  std::ostringstream y;
  y << "\n# Storage tiers: read/write = sequential, one writer per node (the slowest node); latency = one\n"
    << "# 4 KiB random read at queue depth 1; aggregate = all ranks at once, summed over the nodes.\n"
    << "storage:\n";
  for (const auto& t : tiers) {
    const StorageRow* r = nullptr;
    for (const auto& x : rows)
      if (x.tier == t.name && !r) r = &x;
    if (r)
      y << "  # measured " << date << " by commsim probe --storage (" << source << "): " << r->fs_type << " on "
        << r->device << " (" << r->path << ")" << (r->direct ? ", O_DIRECT" : "")
        << (r->note.empty() ? "" : "; " + r->note) << "\n";
    else
      y << "  # from the base topology\n";
    y << "  - { name: \"" << t.name << "\", kind: " << (t.shared ? "shared" : "local")
      << ", read_bandwidth: " << bw(t.read_bw_Bps) << ", write_bandwidth: " << bw(t.write_bw_Bps)
      << ", latency: " << fnum("%.6g", t.latency_s * 1e6) << " us";
    if (t.shared && t.aggregate_read_bw_Bps > 0) y << ", aggregate_read_bandwidth: " << bw(t.aggregate_read_bw_Bps);
    if (t.shared && t.aggregate_write_bw_Bps > 0) y << ", aggregate_write_bandwidth: " << bw(t.aggregate_write_bw_Bps);
    y << " }\n";
  }
  return y.str();
}

// What the probe's GPU link matrix says about its slowest pair (calibrate() applies it).
LinkMatrixSummary link_summary(const GpuLinkMatrix& m) {
  LinkMatrixSummary s;
  s.gpus = m.gpus.size();
  if (s.gpus < 2) return s;
  s.slowest_path = m.slowest_path();
  s.slowest_pair_bw_Bps = INFINITY;
  for (std::size_t i = 0; i < s.gpus; ++i)
    for (std::size_t j = 0; j < s.gpus; ++j) {
      if (i == j) continue;
      s.most_nvlinks = std::max(s.most_nvlinks, m.nvlinks[i][j]);
      if (m.path[i][j] == s.slowest_path && std::isfinite(m.peer_bw_gbps[i][j]))
        s.slowest_pair_bw_Bps = std::min(s.slowest_pair_bw_Bps, m.peer_bw_gbps[i][j] * 1e9);
    }
  for (std::size_t i = 0; i < s.gpus; ++i)
    for (std::size_t j = i + 1; j < s.gpus; ++j) s.pairs_differ = s.pairs_differ || m.path[i][j] != s.slowest_path;
  return s;
}

// Rank 0's host memory as the probe's portrait states it ("CPU : MODEL, N logical CPUs, 23.5GiB
// memory (rank 0's host)"); 0 when the portrait does not say.
Bytes portrait_memory(const std::string& portrait) {
  const std::string after = "logical CPUs, ", before = " memory (rank 0's host)";
  const std::size_t from = portrait.find(after), to = portrait.find(before);
  if (from == std::string::npos || to == std::string::npos || to < from + after.size()) return 0;
  try {
    return parse_bytes(portrait.substr(from + after.size(), to - from - after.size()));
  } catch (const Error&) {
    return 0;  // "unknown"
  }
}

ProbeInput probe_input(const ProbeData& d) {
  ProbeInput p;
  p.memory_bytes = portrait_memory(d.portrait);
  p.gpus = d.gpu_names.size();
  for (const ProbeMeasurement& r : d.rows) p.rows.push_back({r.kind, r.tier, r.bytes, r.median_us, r.min_us});
  p.cpu_model = d.cpu_model;
  p.cpu_cores = d.cpu_cores;
  p.nodes = d.nodes;
  p.ranks = d.ranks;
  p.ranks_per_node = d.ranks_per_node;
  p.links = link_summary(d.gpu_links);
  return p;
}

}  // namespace

namespace {
// The points of one run file, each with the topology and piece of its run; returns what was read.
ResultsContents append_run_points(CalibrateFiles& f, const std::string& path) {
  ResultsContents c = read_results(path, false);
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    const int r = i < c.run_of_point.size() ? c.run_of_point[i] : -1;
    const bool known = r >= 0 && r < static_cast<int>(c.runs.size());
    f.run_topology_text.push_back(known ? c.runs[r].topology_text : "");
    f.run_piece.push_back(known ? c.runs[r].piece_bytes : std::nullopt);
  }
  f.points.insert(f.points.end(), c.points.begin(), c.points.end());
  return c;
}
}  // namespace

CalibrateFiles read_calibrate_files(const std::vector<std::string>& inputs) {
  CalibrateFiles f;
  for (const auto& path : inputs) {
    if (has_probe_group(path)) {
      f.probes.push_back(read_probe_group(path));
      continue;
    }
    const ResultsContents c = append_run_points(f, path);
    f.run_files.push_back(path);
    for (const RunContext& run : c.runs) {
      if (run.nccl_tuning_table.empty()) continue;
      // A run forced with NCCL_ALGO / NCCL_PROTO logged zeros for what the setting left out.
      const bool forced = std::ranges::any_of(run.environment, [](const std::string& e) {
        return e.rfind("NCCL_ALGO=", 0) == 0 || e.rfind("NCCL_PROTO=", 0) == 0;
      });
      NcclTuningTable t = nccl::parse_tuning_table(run.nccl_tuning_table, run.ranks, run.nodes, forced);
      t.source = path + (run.nccl_version.empty() ? "" : ", NCCL " + run.nccl_version);
      const auto same = [&](const NcclTuningTable& k) {
        return k.ranks == t.ranks && k.nodes == t.nodes && k.entries.size() == t.entries.size() &&
               std::ranges::equal(k.entries, t.entries, [](const NcclTuningEntry& a, const NcclTuningEntry& b) {
                 return a.function == b.function && a.algorithm == b.algorithm && a.protocol == b.protocol &&
                        a.latency_us == b.latency_us && a.bandwidth_GBps == b.bandwidth_GBps;
               });
      };
      if (std::ranges::none_of(f.nccl_tuning_tables, same)) f.nccl_tuning_tables.push_back(std::move(t));
    }
  }
  const bool nccl_only = !f.points.empty() && std::ranges::all_of(f.points, [](const Point& p) {
    return is_nccl_algorithm(p.algorithm);
  });
  if (f.probes.empty() && !nccl_only)
    throw Error(
        "none of the inputs is a probe file (with a /probe group); run `mpirun -np N commsim probe --out "
        "portrait.h5` first (without one, calibrate fits NCCL's model alone, to files of NCCL runs only, "
        "such as `commsim import` writes)");
  return f;
}

std::vector<NcclSample> nccl_samples(const CalibrateFiles& files) {
  std::vector<NcclSample> out;
  for (const Point& p : files.points)
    if (usable(p) && is_nccl_algorithm(p.algorithm)) out.push_back(nccl_sample(p));
  return out;
}

std::string nccl_run_topology_text(const CalibrateFiles& files) {
  for (std::size_t i = 0; i < files.points.size(); ++i)
    if (is_nccl_algorithm(files.points[i].algorithm) && !files.run_topology_text[i].empty())
      return files.run_topology_text[i];
  return {};
}

void add_holdout_files(CalibrateFiles& files, const std::vector<std::string>& holdout) {
  files.holdout_from = std::min(files.holdout_from, files.points.size());
  for (const auto& path : holdout) {
    if (has_probe_group(path))
      throw Error("--holdout " + path + " is a probe file; give a run file (commsim run --out) of the same sweep");
    append_run_points(files, path);
    files.holdout_files.push_back(path);
  }
}

CalibrationInput calibration_input(const CalibrateFiles& files, const Topology& base, const std::string& sources,
                                   const std::string& date) {
  CalibrationInput in;
  for (const ProbeData& p : files.probes) in.probes.push_back(probe_input(p));
  in.base = base;
  // Every point's sample (its key indexes files.points), then the holdout runs' set apart.
  const std::vector<CollectiveSample> all = collective_samples(files.points);
  for (const CollectiveSample& s : all) (s.key >= files.holdout_from ? in.holdout : in.collectives).push_back(s);
  in.holdout_file_names = files.holdout_files;
  const auto pricer = std::make_shared<const SchedulePricer>(files, all);
  in.predict = [pricer](const Topology& t, const CollectiveSample& s) { return (*pricer)(t, s); };
  in.run_files = files.run_files.size();
  in.run_file_names = files.run_files;
  const std::vector<Point> fitted(
      files.points.begin(),
      files.points.begin() + static_cast<std::ptrdiff_t>(std::min(files.holdout_from, files.points.size())));
  in.any_nccl = std::ranges::any_of(fitted, [](const Point& p) { return is_nccl_algorithm(p.algorithm); });
  in.nccl_forced = nccl_forced(fitted);
  in.nccl_own = nccl_own(fitted);
  std::vector<StorageRow> rows;
  for (const auto& p : files.probes) rows.insert(rows.end(), p.storage.begin(), p.storage.end());
  in.storage = storage_tiers(rows, base.storage);
  in.storage_yaml = storage_yaml(in.storage, rows, sources, date);
  return in;
}

}  // namespace commsim
