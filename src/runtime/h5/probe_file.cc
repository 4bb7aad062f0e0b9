#include "runtime/h5/probe_file.h"

#include <cmath>
#include <map>
#include <sstream>

#include "model/error.h"
#include "runtime/h5/guarded_read.h"
#include "runtime/h5/hdf5.h"

namespace commsim {
namespace {

template <typename T>
void write_column(hid_t group, const char* name, hid_t file_type, hid_t mem_type, const std::vector<T>& values) {
  h5::Dataset ds = h5::create_table(group, name, file_type, 256);
  if (!values.empty()) h5::append_rows(ds, mem_type, values.data(), values.size());
}

template <typename T>
std::vector<T> read_column(hid_t group, const char* name, hid_t mem_type) {
  h5::Dataset ds = h5::open_dataset(group, name);
  std::vector<T> v(h5::rows(ds));
  if (!v.empty()) h5::read_rows(ds, mem_type, v.data(), 0, v.size());
  return v;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "\n") + x;
  return s;
}
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(line);
  return v;
}

std::string str_attr(hid_t obj, const char* name) {
  return h5::has_attribute(obj, name) ? h5::get_string_attribute(obj, name) : std::string();
}
long long int_attr(hid_t obj, const char* name) {
  return h5::has_attribute(obj, name) ? h5::get_int_attribute(obj, name) : 0;
}

// /probe/gpu_links: per GPU columns, and the n x n matrices row-major (path, nvlinks, peer_bw_gbps).
void write_gpu_links(hid_t probe, const GpuLinkMatrix& m) {
  h5::Group g = h5::create_group(probe, "gpu_links");
  h5::set_attribute(g.get(), "note", m.note);
  h5::set_attribute(g.get(), "gpus", static_cast<std::int64_t>(m.gpus.size()));
  std::vector<std::string> name, bus, nic, nic_path, path;
  std::vector<int> numa, width, max_width, links;
  std::vector<double> bw;
  for (const auto& x : m.gpus) {
    name.push_back(x.name);
    bus.push_back(x.bus_id);
    nic.push_back(x.nearest_nic);
    nic_path.push_back(x.nic_path);
    numa.push_back(x.numa_node);
    width.push_back(x.pcie_width);
    max_width.push_back(x.pcie_max_width);
  }
  for (std::size_t i = 0; i < m.gpus.size(); ++i)
    for (std::size_t j = 0; j < m.gpus.size(); ++j) {
      path.push_back(m.path[i][j]);
      links.push_back(m.nvlinks[i][j]);
      bw.push_back(m.peer_bw_gbps[i][j]);
    }
  h5::write_string_list(g.get(), "name", name);
  h5::write_string_list(g.get(), "bus_id", bus);
  h5::write_string_list(g.get(), "nearest_nic", nic);
  h5::write_string_list(g.get(), "nic_path", nic_path);
  write_column(g.get(), "numa_node", H5T_STD_I32LE, H5T_NATIVE_INT, numa);
  write_column(g.get(), "pcie_width", H5T_STD_I32LE, H5T_NATIVE_INT, width);
  write_column(g.get(), "pcie_max_width", H5T_STD_I32LE, H5T_NATIVE_INT, max_width);
  h5::write_string_list(g.get(), "path", path);
  write_column(g.get(), "nvlinks", H5T_STD_I32LE, H5T_NATIVE_INT, links);
  write_column(g.get(), "peer_bw_gbps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, bw);
}

GpuLinkMatrix read_gpu_links(hid_t probe) {
  GpuLinkMatrix m;
  h5::Group g = h5::open_group(probe, "gpu_links");
  m.note = str_attr(g.get(), "note");
  auto name = h5::read_string_list(g.get(), "name");
  auto bus = h5::read_string_list(g.get(), "bus_id");
  auto nic = h5::read_string_list(g.get(), "nearest_nic");
  auto nic_path = h5::read_string_list(g.get(), "nic_path");
  auto numa = read_column<int>(g.get(), "numa_node", H5T_NATIVE_INT);
  auto width = read_column<int>(g.get(), "pcie_width", H5T_NATIVE_INT);
  auto max_width = read_column<int>(g.get(), "pcie_max_width", H5T_NATIVE_INT);
  auto path = h5::read_string_list(g.get(), "path");
  auto links = read_column<int>(g.get(), "nvlinks", H5T_NATIVE_INT);
  auto bw = read_column<double>(g.get(), "peer_bw_gbps", H5T_NATIVE_DOUBLE);
  const std::size_t n = name.size();
  for (auto sz : {bus.size(), nic.size(), nic_path.size(), numa.size(), width.size(), max_width.size()})
    if (sz != n) throw Error("/probe/gpu_links per-GPU columns have different lengths; the file is damaged");
  for (auto sz : {path.size(), links.size(), bw.size()})
    if (sz != n * n) throw Error("/probe/gpu_links matrices are not " + std::to_string(n) + " x " + std::to_string(n));
  for (std::size_t i = 0; i < n; ++i)
    m.gpus.push_back({name[i], bus[i], numa[i], nic[i], nic_path[i], width[i], max_width[i]});
  m.path.assign(n, std::vector<std::string>(n));
  m.nvlinks.assign(n, std::vector<int>(n));
  m.peer_bw_gbps.assign(n, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      m.path[i][j] = path[i * n + j];
      m.nvlinks[i][j] = links[i * n + j];
      m.peer_bw_gbps[i][j] = bw[i * n + j];
    }
  return m;
}

// /probe/storage: one row per node, mode and operation (StorageRow), as columns.
void write_storage(hid_t probe, const std::vector<StorageRow>& rows) {
  h5::Group g = h5::create_group(probe, "storage");
  std::vector<std::string> tier, path, mode, host, op, fs_type, device, mount, note;
  std::vector<int> qd, writers, shared, direct;
  std::vector<unsigned long long> bytes;
  std::vector<long long> ops;
  std::vector<double> seconds, bw, iops, lat_mean, lat_p99;
  for (const auto& r : rows) {
    tier.push_back(r.tier), path.push_back(r.path), mode.push_back(r.mode), host.push_back(r.host);
    op.push_back(r.op), fs_type.push_back(r.fs_type), device.push_back(r.device), mount.push_back(r.mount_point);
    note.push_back(r.note);
    qd.push_back(r.queue_depth), writers.push_back(r.writers), shared.push_back(r.shared), direct.push_back(r.direct);
    bytes.push_back(r.bytes), ops.push_back(r.ops), seconds.push_back(r.seconds), bw.push_back(r.bw_Bps());
    iops.push_back(r.iops()), lat_mean.push_back(r.latency_mean_us), lat_p99.push_back(r.latency_p99_us);
  }
  for (const auto& [name, v] : std::vector<std::pair<const char*, std::vector<std::string>*>>{
           {"tier", &tier}, {"path", &path}, {"mode", &mode}, {"host", &host}, {"op", &op}, {"fs_type", &fs_type},
           {"device", &device}, {"mount_point", &mount}, {"note", &note}})
    h5::write_string_list(g.get(), name, *v);
  write_column(g.get(), "queue_depth", H5T_STD_I32LE, H5T_NATIVE_INT, qd);
  write_column(g.get(), "writers", H5T_STD_I32LE, H5T_NATIVE_INT, writers);
  write_column(g.get(), "shared", H5T_STD_I32LE, H5T_NATIVE_INT, shared);
  write_column(g.get(), "direct", H5T_STD_I32LE, H5T_NATIVE_INT, direct);
  write_column(g.get(), "bytes", H5T_STD_U64LE, H5T_NATIVE_ULLONG, bytes);
  write_column(g.get(), "ops", H5T_STD_I64LE, H5T_NATIVE_LLONG, ops);
  write_column(g.get(), "seconds", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, seconds);
  write_column(g.get(), "bw_Bps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, bw);
  write_column(g.get(), "iops", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, iops);
  write_column(g.get(), "latency_mean_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, lat_mean);
  write_column(g.get(), "latency_p99_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, lat_p99);
}

std::vector<StorageRow> read_storage(hid_t probe) {
  h5::Group g = h5::open_group(probe, "storage");
  std::map<std::string, std::vector<std::string>> str;
  for (const char* name : {"tier", "path", "mode", "host", "op", "fs_type", "device", "mount_point", "note"})
    str[name] = h5::read_string_list(g.get(), name);
  auto qd = read_column<int>(g.get(), "queue_depth", H5T_NATIVE_INT);
  auto writers = read_column<int>(g.get(), "writers", H5T_NATIVE_INT);
  auto shared = read_column<int>(g.get(), "shared", H5T_NATIVE_INT);
  auto direct = read_column<int>(g.get(), "direct", H5T_NATIVE_INT);
  auto bytes = read_column<unsigned long long>(g.get(), "bytes", H5T_NATIVE_ULLONG);
  auto ops = read_column<long long>(g.get(), "ops", H5T_NATIVE_LLONG);
  auto seconds = read_column<double>(g.get(), "seconds", H5T_NATIVE_DOUBLE);
  auto lat_mean = read_column<double>(g.get(), "latency_mean_us", H5T_NATIVE_DOUBLE);
  auto lat_p99 = read_column<double>(g.get(), "latency_p99_us", H5T_NATIVE_DOUBLE);
  const std::size_t n = qd.size();
  for (const auto& [name, v] : str)
    if (v.size() != n) throw Error("/probe/storage columns have different lengths; the file is damaged");
  for (auto sz : {writers.size(), shared.size(), direct.size(), bytes.size(), ops.size(), seconds.size(),
                  lat_mean.size(), lat_p99.size()})
    if (sz != n) throw Error("/probe/storage columns have different lengths; the file is damaged");
  std::vector<StorageRow> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    StorageRow& r = rows[i];
    r.tier = str["tier"][i], r.path = str["path"][i], r.mode = str["mode"][i], r.host = str["host"][i];
    r.op = str["op"][i], r.fs_type = str["fs_type"][i], r.device = str["device"][i];
    r.mount_point = str["mount_point"][i], r.note = str["note"][i];
    r.queue_depth = qd[i], r.writers = writers[i], r.shared = shared[i] != 0, r.direct = direct[i] != 0;
    r.bytes = bytes[i], r.ops = ops[i], r.seconds = seconds[i];
    r.latency_mean_us = lat_mean[i], r.latency_p99_us = lat_p99[i];
  }
  return rows;
}

}  // namespace

void write_probe_group(const std::string& path, const ProbeData& d) {
  try {
    h5::File file = h5::open_file(path, true);
    if (h5::exists(file.get(), "probe")) throw Error("the file already has a /probe group");
    h5::Group group = h5::create_group(file.get(), "probe");
    hid_t g = group.get();
    h5::set_attribute(g, "probe_version", static_cast<std::int64_t>(d.probe_version));
    h5::set_attribute(g, "portrait", d.portrait);
    h5::set_attribute(g, "cpu_model", d.cpu_model);
    h5::set_attribute(g, "cpu_cores", static_cast<std::int64_t>(d.cpu_cores));
    h5::set_attribute(g, "nodes", static_cast<std::int64_t>(d.nodes));
    h5::set_attribute(g, "ranks", static_cast<std::int64_t>(d.ranks));
    h5::set_attribute(g, "ranks_per_node", static_cast<std::int64_t>(d.ranks_per_node));
    h5::set_attribute(g, "hosts", join_lines(d.hosts));
    h5::set_attribute(g, "gpu_names", join_lines(d.gpu_names));
    h5::set_attribute(g, "gpu_topology", d.gpu_topology);
    h5::set_attribute(g, "intra_fabric", d.intra_fabric);
    h5::set_attribute(g, "network", d.network);
    h5::set_attribute(g, "gpu_note", d.gpu_note);

    h5::Group m = h5::create_group(g, "measurements");
    std::vector<std::string> kind, tier, memory;
    std::vector<unsigned long long> bytes;
    std::vector<int> ranks, iters, reps;
    std::vector<double> mn, med, mean, p95, mx, bw;
    for (const auto& r : d.rows) {
      kind.push_back(r.kind);
      tier.push_back(r.tier);
      memory.push_back(r.memory);
      bytes.push_back(r.bytes);
      ranks.push_back(r.ranks);
      iters.push_back(r.iters);
      reps.push_back(r.reps);
      mn.push_back(r.min_us);
      med.push_back(r.median_us);
      mean.push_back(r.mean_us);
      p95.push_back(r.p95_us);
      mx.push_back(r.max_us);
      bw.push_back(r.bw_gbps);
    }
    h5::write_string_list(m.get(), "kind", kind);
    h5::write_string_list(m.get(), "tier", tier);
    h5::write_string_list(m.get(), "memory", memory);
    write_column(m.get(), "bytes", H5T_STD_U64LE, H5T_NATIVE_ULLONG, bytes);
    write_column(m.get(), "ranks", H5T_STD_I32LE, H5T_NATIVE_INT, ranks);
    write_column(m.get(), "iters", H5T_STD_I32LE, H5T_NATIVE_INT, iters);
    write_column(m.get(), "reps", H5T_STD_I32LE, H5T_NATIVE_INT, reps);
    write_column(m.get(), "min_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, mn);
    write_column(m.get(), "median_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, med);
    write_column(m.get(), "mean_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, mean);
    write_column(m.get(), "p95_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, p95);
    write_column(m.get(), "max_us", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, mx);
    write_column(m.get(), "bw_gbps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, bw);
    if (!d.gpu_links.empty() || !d.gpu_links.note.empty()) write_gpu_links(g, d.gpu_links);
    if (!d.storage.empty()) write_storage(g, d.storage);
    h5::flush(file);
  } catch (const Error& e) {
    throw Error(path + ": writing the probe group: " + e.what());
  }
}

bool has_probe_group(const std::string& path) {
  if (!h5::is_hdf5(path)) throw Error(path + ": missing, unreadable, or not an HDF5 file");
  h5::File file = h5::open_file(path, false);
  return h5::exists(file.get(), "probe");
}

namespace {
// Values a measurement row can hold: a damaged file is refused here, not fitted (a row of zeros or
// of 1e300 made calibrate spin for minutes).
void check_row(const ProbeMeasurement& r, std::size_t i) {
  auto bad = [&](const std::string& what) {
    throw Error("/probe/measurements row " + std::to_string(i) + ": " + what + "; the file is damaged");
  };
  if (r.bytes > kMaxBytes) bad("bytes " + std::to_string(r.bytes) + " is more than 8 PiB");
  if (r.ranks < 1 || r.ranks > kMaxRanks) bad("ranks " + std::to_string(r.ranks) + " is out of range");
  if (r.iters < 1 || r.reps < 1) bad("iters and reps must be at least 1");
  for (double us : {r.min_us, r.median_us, r.mean_us, r.p95_us, r.max_us})
    if (!std::isfinite(us) || us < 0 || us > kMaxTime_s * 1e6) bad("a time that is not from 0 to 1e6 s");
  if (!std::isfinite(r.bw_gbps) || r.bw_gbps < 0 || r.bw_gbps > kMaxBandwidth_Bps / 1e9)
    bad("a bandwidth out of range");
}

ProbeData read_probe_group_here(const std::string& path) {
  ProbeData d;
  try {
    h5::File file = h5::open_file(path, false);
    h5::Group group = h5::open_group(file.get(), "probe");
    hid_t g = group.get();
    d.probe_version = static_cast<int>(int_attr(g, "probe_version"));
    if (d.probe_version != 1)
      throw Error("/probe version " + std::to_string(d.probe_version) +
                  " is not the version 1 this commsim reads; probe again with this version");
    d.portrait = str_attr(g, "portrait");
    d.cpu_model = str_attr(g, "cpu_model");
    d.cpu_cores = static_cast<int>(int_attr(g, "cpu_cores"));
    d.nodes = static_cast<int>(int_attr(g, "nodes"));
    d.ranks = static_cast<int>(int_attr(g, "ranks"));
    d.ranks_per_node = static_cast<int>(int_attr(g, "ranks_per_node"));
    d.hosts = split_lines(str_attr(g, "hosts"));
    d.gpu_names = split_lines(str_attr(g, "gpu_names"));
    d.gpu_topology = str_attr(g, "gpu_topology");
    d.intra_fabric = str_attr(g, "intra_fabric");
    d.network = str_attr(g, "network");
    d.gpu_note = str_attr(g, "gpu_note");

    h5::Group m = h5::open_group(g, "measurements");
    auto kind = h5::read_string_list(m.get(), "kind");
    auto tier = h5::read_string_list(m.get(), "tier");
    auto memory = h5::read_string_list(m.get(), "memory");
    auto bytes = read_column<unsigned long long>(m.get(), "bytes", H5T_NATIVE_ULLONG);
    auto ranks = read_column<int>(m.get(), "ranks", H5T_NATIVE_INT);
    auto iters = read_column<int>(m.get(), "iters", H5T_NATIVE_INT);
    auto reps = read_column<int>(m.get(), "reps", H5T_NATIVE_INT);
    auto mn = read_column<double>(m.get(), "min_us", H5T_NATIVE_DOUBLE);
    auto med = read_column<double>(m.get(), "median_us", H5T_NATIVE_DOUBLE);
    auto mean = read_column<double>(m.get(), "mean_us", H5T_NATIVE_DOUBLE);
    auto p95 = read_column<double>(m.get(), "p95_us", H5T_NATIVE_DOUBLE);
    auto mx = read_column<double>(m.get(), "max_us", H5T_NATIVE_DOUBLE);
    auto bw = read_column<double>(m.get(), "bw_gbps", H5T_NATIVE_DOUBLE);
    const std::size_t n = kind.size();
    for (auto sz : {tier.size(), memory.size(), bytes.size(), ranks.size(), iters.size(), reps.size(), mn.size(),
                    med.size(), mean.size(), p95.size(), mx.size(), bw.size()})
      if (sz != n) throw Error("/probe/measurements columns have different lengths; the file is damaged");
    for (std::size_t i = 0; i < n; ++i) {
      d.rows.push_back({kind[i], tier[i], memory[i], bytes[i], ranks[i], iters[i], reps[i], mn[i], med[i], mean[i],
                        p95[i], mx[i], bw[i]});
      check_row(d.rows.back(), i);
    }
    if (h5::exists(g, "gpu_links")) d.gpu_links = read_gpu_links(g);
    if (h5::exists(g, "storage")) d.storage = read_storage(g);
  } catch (const Error& e) {
    throw Error(path + ": reading the probe group: " + e.what());
  }
  return d;
}

}  // namespace

ProbeData read_probe_group(const std::string& path) {
  // Nothing of the file is read here before a forked copy has read all of it (guarded_read.h).
  h5::read_in_child_first(path, [&] {
    if (has_probe_group(path)) (void)read_probe_group_here(path);
  });
  if (!has_probe_group(path))
    throw Error(path + ": not a probe file (no /probe group); make one with `mpirun -np N commsim probe --out FILE.h5`");
  return read_probe_group_here(path);
}

}  // namespace commsim
