#include "runtime/probe_file.h"

#include <sstream>

#include "model/error.h"
#include "runtime/hdf5.h"

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

ProbeData read_probe_group(const std::string& path) {
  if (!has_probe_group(path))
    throw Error(path + ": not a probe file (no /probe group); make one with `mpirun -np N commsim probe --out FILE.h5`");
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
    for (std::size_t i = 0; i < n; ++i)
      d.rows.push_back({kind[i], tier[i], memory[i], bytes[i], ranks[i], iters[i], reps[i], mn[i], med[i], mean[i],
                        p95[i], mx[i], bw[i]});
  } catch (const Error& e) {
    throw Error(path + ": reading the probe group: " + e.what());
  }
  return d;
}

}  // namespace commsim
