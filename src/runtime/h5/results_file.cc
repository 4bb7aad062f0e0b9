#include "runtime/h5/results_file.h"

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <system_error>

#include "model/error.h"
#include "runtime/h5/file_lock.h"
#include "runtime/h5/guarded_read.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/resume_check.h"

namespace commsim {
namespace fs = std::filesystem;

namespace {

// One row of /points as it sits in memory, its fields in the order of point_fields.h. Short names
// are fixed-length null-padded strings (h5py reads them as bytes of dtype S<n>); the free-form note
// is a variable-length UTF-8 string.
template <ColumnKind K, std::size_t Length>
struct RowField {
  using type = char[Length];  // a fixed-length name
};
template <>
struct RowField<ColumnKind::Note, 0> {
  using type = char*;
};
template <>
struct RowField<ColumnKind::I32, 0> {
  using type = std::int32_t;
};
template <>
struct RowField<ColumnKind::I64, 0> {
  using type = std::int64_t;
};
template <>
struct RowField<ColumnKind::U64, 0> {
  using type = std::uint64_t;
};
template <>
struct RowField<ColumnKind::F64, 0> {
  using type = double;
};

struct Row {
#define COMMSIM_ROW_MEMBER(name, kind, length, initial, csv, json, missing, unit, since) \
  RowField<ColumnKind::kind, length>::type name;
#define COMMSIM_ROW_FILE_MEMBER(name, kind) RowField<ColumnKind::kind, 0>::type name;
  COMMSIM_POINT_COLUMNS(COMMSIM_ROW_MEMBER, COMMSIM_ROW_FILE_MEMBER)
#undef COMMSIM_ROW_MEMBER
#undef COMMSIM_ROW_FILE_MEMBER
};

struct RowTypes {
  h5::Datatype memory;  // Row, native layout
  h5::Datatype file;    // the same fields packed (no padding) in the file
};

constexpr const char* kChunkField = "pipeline_chunk_bytes";
constexpr const char* kTimingField = "timing";
constexpr const char* kNcclAlgoField = "nccl_algo";

// The HDF5 type of a numeric column.
hid_t native_type(ColumnKind k) {
  switch (k) {
    case ColumnKind::I32: return H5T_NATIVE_INT32;
    case ColumnKind::I64: return H5T_NATIVE_INT64;
    case ColumnKind::U64: return H5T_NATIVE_UINT64;
    default: return H5T_NATIVE_DOUBLE;
  }
}

// The row's types. Files written before commsim recorded the pipeline chunk lack that field, and
// files written before it recorded what NCCL ran lack nccl_algo, nccl_proto and nccl_channels:
// read and extend them without (with_chunk / with_nccl false), the fields left empty.
RowTypes row_types(bool with_chunk = true, bool with_nccl = true, bool with_timing = true) {
  RowTypes t;
  t.memory = h5::Datatype(H5Tcreate(H5T_COMPOUND, sizeof(Row)), "H5Tcreate(points row)");
  hid_t m = t.memory.get();
  std::vector<h5::Datatype> strings;  // kept open until the compound is complete
  h5::Datatype note = h5::vlen_string_type();
  auto insert = [&](const char* name, std::size_t offset, ColumnKind kind, std::size_t length, int since) {
    if ((since == 1 && !with_chunk) || (since == 2 && !with_nccl) || (since == 3 && !with_timing)) return;
    hid_t type = native_type(kind);
    if (kind == ColumnKind::Note) {
      type = note.get();
    } else if (length > 0) {
      strings.push_back(h5::fixed_string_type(length));
      type = strings.back().get();
    }
    h5::check_status(H5Tinsert(m, name, offset, type), std::string("H5Tinsert(") + name + ")");
  };
#define COMMSIM_ROW_INSERT(name, kind, length, initial, csv, json, missing, unit, since) \
  insert(#name, offsetof(Row, name), ColumnKind::kind, length, since);
#define COMMSIM_ROW_FILE_INSERT(name, kind) insert(#name, offsetof(Row, name), ColumnKind::kind, 0, 0);
  COMMSIM_POINT_COLUMNS(COMMSIM_ROW_INSERT, COMMSIM_ROW_FILE_INSERT)
#undef COMMSIM_ROW_INSERT
#undef COMMSIM_ROW_FILE_INSERT
  t.file = h5::Datatype(H5Tcopy(m), "H5Tcopy(points row)");
  h5::check_status(H5Tpack(t.file.get()), "H5Tpack(points row)");
  return t;
}

template <std::size_t N>
void put(char (&dst)[N], std::string_view value, const char* field) {
  if (value.size() > N)
    throw Error(std::string("results file: ") + field + " '" + std::string(value) + "' is longer than the " +
                std::to_string(N) + " characters the points table stores");
  std::memset(dst, 0, N);
  std::memcpy(dst, value.data(), value.size());
}

template <std::size_t N>
std::string get(const char (&src)[N]) {
  std::size_t n = 0;
  while (n < N && src[n] != '\0') ++n;
  return std::string(src, n);
}

constexpr hsize_t kPointsChunkRows = 256;    // ~70 KiB per chunk
constexpr hsize_t kSamplesChunkRows = 4096;  // 32 KiB per chunk

std::string run_group_name(int index) {
  return fmt::format("{:04d}", index);
}

void write_context(hid_t g, const RunContext& c, int index, RunStatus status) {
  h5::set_attribute(g, "index", static_cast<std::int64_t>(index));
  h5::set_attribute(g, "status", to_string(status));
  h5::set_attribute(g, "started", c.started.empty() ? iso8601_utc_now() : c.started);
  h5::set_attribute(g, "finished",
                    !c.finished.empty() ? c.finished : (status == RunStatus::Running ? "" : iso8601_utc_now()));
  h5::set_attribute(g, "command_line", c.command_line);
  h5::set_attribute(g, "commsim_version", c.commsim_version);
  h5::set_attribute(g, "ranks", static_cast<std::int64_t>(c.ranks));
  h5::set_attribute(g, "nodes", static_cast<std::int64_t>(c.nodes));
  h5::set_attribute(g, "backend", c.backend);
  h5::set_attribute(g, "transport", c.transport);
  h5::set_attribute(g, "mpi_version", c.mpi_version);
  h5::set_attribute(g, "nccl_version", c.nccl_version);
  h5::set_attribute(g, "cuda_version", c.cuda_version);
  h5::set_attribute(g, "ucx_version", c.ucx_version);
  h5::set_attribute(g, "slurm_job_id", c.slurm.job_id);
  h5::set_attribute(g, "slurm_array_job_id", c.slurm.array_job_id);
  h5::set_attribute(g, "slurm_array_task_id", c.slurm.array_task_id);
  h5::set_attribute(g, "slurm_node_list", c.slurm.node_list);
  h5::set_attribute(g, "slurm_partition", c.slurm.partition);
  h5::set_attribute(g, "slurm_cluster", c.slurm.cluster);
  h5::set_attribute(g, "topology_name", c.topology_name);
  h5::set_attribute(g, "topology_path", c.topology_path);
  h5::set_attribute(g, "topology_text", c.topology_text);
  if (!c.measure_settings.empty()) h5::set_attribute(g, "measure_settings", c.measure_settings);
  if (c.piece_bytes) h5::set_attribute(g, "piece_bytes", static_cast<std::int64_t>(*c.piece_bytes));
  h5::set_attribute(g, "cpu_binding", c.cpu_binding);
  h5::write_string_list(g, "hostnames", c.hostnames);
  h5::write_string_list(g, "cpus", c.cpus);
  h5::write_string_list(g, "gpu_names", c.gpu_names);
  h5::write_string_list(g, "environment", c.environment);
  if (!c.nccl_tuning_table.empty()) h5::write_string_list(g, "nccl_tuning_table", c.nccl_tuning_table);
}

std::string attr_or_empty(hid_t g, const char* name) {
  return h5::has_attribute(g, name) ? h5::get_string_attribute(g, name) : std::string();
}

RunContext read_context(hid_t g) {
  RunContext c;
  c.index = static_cast<int>(h5::get_int_attribute(g, "index"));
  c.status = h5::get_string_attribute(g, "status");
  c.started = attr_or_empty(g, "started");
  c.finished = attr_or_empty(g, "finished");
  c.command_line = attr_or_empty(g, "command_line");
  c.commsim_version = attr_or_empty(g, "commsim_version");
  c.ranks = static_cast<int>(h5::get_int_attribute(g, "ranks"));
  c.nodes = static_cast<int>(h5::get_int_attribute(g, "nodes"));
  c.backend = attr_or_empty(g, "backend");
  c.transport = attr_or_empty(g, "transport");
  c.mpi_version = attr_or_empty(g, "mpi_version");
  c.nccl_version = attr_or_empty(g, "nccl_version");
  c.cuda_version = attr_or_empty(g, "cuda_version");
  c.ucx_version = attr_or_empty(g, "ucx_version");
  c.slurm.job_id = attr_or_empty(g, "slurm_job_id");
  c.slurm.array_job_id = attr_or_empty(g, "slurm_array_job_id");
  c.slurm.array_task_id = attr_or_empty(g, "slurm_array_task_id");
  c.slurm.node_list = attr_or_empty(g, "slurm_node_list");
  c.slurm.partition = attr_or_empty(g, "slurm_partition");
  c.slurm.cluster = attr_or_empty(g, "slurm_cluster");
  c.topology_name = attr_or_empty(g, "topology_name");
  c.topology_path = attr_or_empty(g, "topology_path");
  c.topology_text = attr_or_empty(g, "topology_text");
  c.measure_settings = attr_or_empty(g, "measure_settings");
  if (h5::has_attribute(g, "piece_bytes"))
    c.piece_bytes = static_cast<std::uint64_t>(h5::get_int_attribute(g, "piece_bytes"));
  c.cpu_binding = attr_or_empty(g, "cpu_binding");
  c.hostnames = h5::read_string_list(g, "hostnames");
  if (h5::exists(g, "cpus")) c.cpus = h5::read_string_list(g, "cpus");  // files before commsim recorded it
  c.gpu_names = h5::read_string_list(g, "gpu_names");
  c.environment = h5::read_string_list(g, "environment");
  if (h5::exists(g, "nccl_tuning_table")) c.nccl_tuning_table = h5::read_string_list(g, "nccl_tuning_table");
  return c;
}

// One column of a point into its row field.
template <ColumnKind K, class Field, class Value>
void store(Field& dst, const Value& v, const char* name) {
  if constexpr (K == ColumnKind::Collective || K == ColumnKind::Algorithm || K == ColumnKind::Protocol)
    put(dst, to_string(v), name);
  else if constexpr (K == ColumnKind::Text)
    put(dst, v, name);
  else if constexpr (K == ColumnKind::CutText)
    put(dst, std::string_view(v).substr(0, sizeof dst), name);  // NCCL's names may grow: cut to fit
  else if constexpr (K == ColumnKind::Note)
    dst = const_cast<char*>(v.c_str());  // only read by H5Dwrite
  else
    dst = v;
}

// One row field back into a point's column; a name this build does not know is an error.
// A name read back into its enum; one this build does not know is an error.
template <std::size_t N, class Parse>
auto parse_name(const char (&src)[N], Parse parse, const char* name, const std::string& path) {
  std::string s = get(src);
  auto x = parse(s);
  if (!x) throw Error(path + ": points row has unknown " + name + " '" + s + "'");
  return *x;
}

// One row field back into a point's column.
template <ColumnKind K, class Field, class Value>
void load(Value& v, const Field& src, const char* name, const std::string& path) {
  if constexpr (K == ColumnKind::Collective)
    v = parse_name(
        src, [](const std::string& s) { return parse_collective(s); }, name, path);
  else if constexpr (K == ColumnKind::Algorithm)
    v = parse_name(
        src, [](const std::string& s) { return parse_algorithm(s); }, name, path);
  else if constexpr (K == ColumnKind::Protocol)
    v = parse_name(
        src, [](const std::string& s) { return parse_protocol(s); }, name, path);
  else if constexpr (K == ColumnKind::Text || K == ColumnKind::CutText)
    v = get(src);
  else if constexpr (K == ColumnKind::Note)
    v = src ? src : "";
  else
    v = src;
}

Row to_row(const Point& p, int run, std::uint64_t samples_offset) {
  Row r{};
#define COMMSIM_TO_ROW(name, kind, length, initial, csv, json, missing, unit, since) \
  store<ColumnKind::kind>(r.name, p.name, #name);
#define COMMSIM_TO_ROW_FILE(name, kind)
  COMMSIM_POINT_COLUMNS(COMMSIM_TO_ROW, COMMSIM_TO_ROW_FILE)
#undef COMMSIM_TO_ROW
#undef COMMSIM_TO_ROW_FILE
  r.run = run;
  r.samples_offset = samples_offset;
  r.samples_count = p.samples_us.size();
  return r;
}

Point from_row(const Row& r, const std::string& path) {
  Point p;
#define COMMSIM_FROM_ROW(name, kind, length, initial, csv, json, missing, unit, since) \
  load<ColumnKind::kind>(p.name, r.name, #name, path);
#define COMMSIM_FROM_ROW_FILE(name, kind)
  COMMSIM_POINT_COLUMNS(COMMSIM_FROM_ROW, COMMSIM_FROM_ROW_FILE)
#undef COMMSIM_FROM_ROW
#undef COMMSIM_FROM_ROW_FILE
  return p;
}

// All rows of /points, notes copied out and HDF5's strings freed.
struct RowsRead {
  std::vector<Row> rows;
  std::vector<std::string> notes;
};
// The row types of an existing /points table: with the pipeline chunk and what NCCL ran when the
// file has them.
RowTypes row_types_of(const h5::Dataset& points) {
  h5::Datatype file_type(H5Dget_type(points.get()), "H5Dget_type(points)");
  return row_types(H5Tget_member_index(file_type.get(), kChunkField) >= 0,
                   H5Tget_member_index(file_type.get(), kNcclAlgoField) >= 0,
                   H5Tget_member_index(file_type.get(), kTimingField) >= 0);
}

RowsRead read_all_rows(const h5::Dataset& points, const RowTypes& types) {
  RowsRead out;
  hsize_t n = h5::rows(points);
  out.rows.resize(n);  // value-initialized: a field the file lacks reads as 0
  if (n == 0) return out;
  h5::read_rows(points, types.memory.get(), out.rows.data(), 0, n);
  out.notes.reserve(n);
  for (const Row& r : out.rows) out.notes.emplace_back(r.note ? r.note : "");
  h5::reclaim(types.memory.get(), out.rows.data(), n);
  for (Row& r : out.rows) r.note = nullptr;
  return out;
}

void check_schema(hid_t file, const std::string& path) {
  if (!h5::has_attribute(file, "schema_version"))
    throw Error(path + " is not a commsim results file (it has no schema_version attribute)");
  std::int64_t v = h5::get_int_attribute(file, "schema_version");
  if (v != kResultsSchemaVersion)
    throw Error(path + " has results schema version " + std::to_string(v) +
                "; this commsim (" COMMSIM_VERSION ") reads and writes schema version " +
                std::to_string(kResultsSchemaVersion) + " only: use the commsim version that wrote it");
  for (const char* name : {"runs", "points", "samples"})
    if (!h5::exists(file, name))
      throw Error(path + " is not a complete commsim results file: /" + std::string(name) + " is missing");
}

void check_readable_hdf5(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (fs::exists(path + ".partial", ec))
      throw Error(path + " does not exist, but " + path +
                  ".partial does (a run that did not finish): read that name or continue it with --resume");
    throw Error(path + " does not exist");
  }
  if (!h5::is_hdf5(path)) throw Error(path + " is not an HDF5 file");
}

}  // namespace

std::string_view to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Running: return "running";
    case RunStatus::Complete: return "complete";
    case RunStatus::Interrupted: return "interrupted";
    case RunStatus::Failed: return "failed";
  }
  return "?";
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  for (RunStatus s : {RunStatus::Running, RunStatus::Complete, RunStatus::Interrupted, RunStatus::Failed})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

PointKey key_of(const Point& p) {
  // Files written before the timing column were timed per iteration: their points are the same
  // points as those a resumed run plans with that timing.
  const std::string timing = p.timing.empty() ? "per-iteration" : p.timing;
  return PointKey{p.collective, p.algorithm, p.backend, p.transport, p.protocol, p.dtype,
                  p.nodes,      p.ranks,     p.bytes,   p.in_place,  timing,     p.redop};
}

std::string to_string(const PointKey& k) {
  return std::string(to_string(k.collective)) + "/" + std::string(to_string(k.algorithm)) + "/" + k.backend + "/" +
         k.transport + "/" + std::string(to_string(k.protocol)) + "/" + k.dtype + "/nodes=" + std::to_string(k.nodes) +
         "/ranks=" + std::to_string(k.ranks) + "/bytes=" + std::to_string(k.bytes) + (k.in_place ? "/in-place" : "") +
         (k.timing.empty() ? "" : "/" + k.timing) + (k.redop.empty() ? "" : "/" + k.redop);
}

struct ResultsFile::Impl {
  WriterLock lock;  // first: released after the file is closed
  std::string path;
  bool created_here = false;  // by create/create_empty (not resume)
  bool finished = false;
  RowTypes types;
  h5::File file;
  h5::Group runs;
  h5::Dataset points;
  h5::Dataset samples;
  h5::Group run_group;
  int run = -1;
  std::set<PointKey> keys;
  hsize_t point_rows = 0;   // rows of /points, including those still pending
  hsize_t sample_rows = 0;  // rows of /samples, including those still pending

  // Buffered appends (flush_interval_s > 0): rows not yet written, with the notes they point into.
  double flush_interval_s = 0;
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
  std::vector<Row> pending_rows;
  std::deque<std::string> pending_notes;
  std::vector<double> pending_samples;

  // Writes the pending rows and samples, then flushes the file to disk.
  void write_pending() {
    if (!pending_samples.empty())
      h5::append_rows(samples, H5T_NATIVE_DOUBLE, pending_samples.data(), pending_samples.size());
    if (!pending_rows.empty()) h5::append_rows(points, types.memory.get(), pending_rows.data(), pending_rows.size());
    pending_samples.clear();
    pending_rows.clear();
    pending_notes.clear();
    h5::flush(file);
    last_write = std::chrono::steady_clock::now();
  }

  std::string partial() const { return path + ".partial"; }

  void open_tables() {
    runs = h5::open_group(file.get(), "runs");
    points = h5::open_dataset(file.get(), "points");
    samples = h5::open_dataset(file.get(), "samples");
    point_rows = h5::rows(points);
    sample_rows = h5::rows(samples);
  }

  void close_all() noexcept {
    run_group.reset();
    samples.reset();
    points.reset();
    runs.reset();
    file.reset();
  }
};

ResultsFile::ResultsFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResultsFile::ResultsFile(ResultsFile&&) noexcept = default;
ResultsFile& ResultsFile::operator=(ResultsFile&& o) noexcept {
  if (this != &o) {
    ResultsFile dying(std::move(*this));  // closes ours the destructor's way
    impl_ = std::move(o.impl_);
  }
  return *this;
}

ResultsFile::~ResultsFile() {
  if (!impl_ || impl_->finished || !impl_->file.valid()) return;
  try {
    impl_->write_pending();
    if (impl_->run >= 0) set_status(RunStatus::Failed);
  } catch (...) {
    // A destructor never throws; the file keeps its last flushed state.
  }
  impl_->close_all();
  if (impl_->created_here && impl_->point_rows == 0) {
    std::error_code ec;
    fs::remove(impl_->partial(), ec);
  }
}

ResultsFile ResultsFile::create_empty(const std::string& path, bool force, const std::string& command_line) {
  if (path.empty()) throw Error("results file: empty file name");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  std::error_code ec;
  const std::string partial = impl->partial();
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error("cannot create " + path + ": directory " + parent.string() + " does not exist");
  // First the lock: neither --force nor anything below touches a file another job writes.
  impl->lock = WriterLock::acquire(path);
  if (!force) {
    if (fs::exists(path, ec)) throw Error(path + " exists; pass --force to overwrite or --resume to continue it");
    if (fs::exists(partial, ec))
      throw Error(partial + " exists (a run that did not finish); pass --resume " + path +
                  " to continue it or --force to start over");
  }
  // With force the old <path> stays until finish() replaces it: a run that fails early does not
  // destroy the previous results.
  fs::remove(partial, ec);
  if (ec) throw Error("cannot remove " + partial + ": " + ec.message());

  impl->types = row_types();
  try {
    impl->file = h5::create_file(partial);
    impl->created_here = true;
    hid_t f = impl->file.get();
    h5::set_attribute(f, "schema_version", static_cast<std::int64_t>(kResultsSchemaVersion));
    h5::set_attribute(f, "commsim_version", COMMSIM_VERSION);
    h5::set_attribute(f, "created", iso8601_utc_now());
    h5::set_attribute(f, "command_line", command_line);
    impl->runs = h5::create_group(f, "runs");
    impl->points = h5::create_table(f, "points", impl->types.file.get(), kPointsChunkRows);
    impl->samples = h5::create_table(f, "samples", H5T_IEEE_F64LE, kSamplesChunkRows);
    h5::set_attribute(impl->samples.get(), "units", "us");
    h5::flush(impl->file);
  } catch (...) {
    // A failed create (a full disk) leaves nothing that would block the next run.
    impl->close_all();
    fs::remove(partial, ec);
    throw;
  }
  return ResultsFile(std::move(impl));
}

ResultsFile ResultsFile::create(const std::string& path, bool force, const RunContext& ctx) {
  ResultsFile f = create_empty(path, force, ctx.command_line);
  f.begin_run(ctx);
  return f;
}

ResultsFile ResultsFile::resume(const std::string& path, const RunContext& ctx) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const std::string partial = impl->partial();
  impl->lock = WriterLock::acquire(path);
  std::error_code ec;
  bool have_partial = fs::exists(partial, ec);
  bool have_final = fs::exists(path, ec);
  if (!have_partial && !have_final)
    throw Error("cannot resume " + path + ": neither it nor " + partial + " exists; drop --resume to start a new file");
  // When both exist the .partial is newer (a --force run that did not finish): continue it.
  const std::string source = have_partial ? partial : path;
  if (!h5::is_hdf5(source)) throw Error("cannot resume " + source + ": not an HDF5 file");
  check_resumable(source, ctx);
  if (!have_partial) {
    fs::rename(path, partial, ec);
    if (ec) throw Error("cannot rename " + path + " to " + partial + ": " + ec.message());
  }
  impl->file = h5::open_file(partial, true);
  impl->open_tables();
  impl->types = row_types_of(impl->points);  // an older file keeps its layout
  RowsRead existing = read_all_rows(impl->points, impl->types);
  for (const Row& r : existing.rows) impl->keys.insert(key_of(from_row(r, partial)));
  ResultsFile f(std::move(impl));
  f.begin_run(ctx);
  return f;
}

int ResultsFile::begin_run(const RunContext& ctx, RunStatus status) {
  if (!is_open()) throw Error("results file is closed");
  Impl& m = *impl_;
  m.write_pending();
  int index = static_cast<int>(h5::list_group(m.runs.get()).size());
  m.run_group = h5::create_group(m.runs.get(), run_group_name(index));
  write_context(m.run_group.get(), ctx, index, status);
  m.run = index;
  h5::flush(m.file);
  return index;
}

void ResultsFile::append(const Point& p) {
  if (!is_open()) throw Error("results file is closed");
  Impl& m = *impl_;
  if (m.run < 0) throw Error("results file " + m.path + ": append() before begin_run()");
  Row row = to_row(p, m.run, m.sample_rows);  // validates string lengths before anything is written
  if (m.flush_interval_s <= 0) {
    if (!p.samples_us.empty()) h5::append_rows(m.samples, H5T_NATIVE_DOUBLE, p.samples_us.data(), p.samples_us.size());
    h5::append_rows(m.points, m.types.memory.get(), &row, 1);
    h5::flush(m.file);
  } else {
    m.pending_samples.insert(m.pending_samples.end(), p.samples_us.begin(), p.samples_us.end());
    m.pending_notes.push_back(p.note);
    row.note = m.pending_notes.back().data();
    m.pending_rows.push_back(row);
  }
  m.sample_rows += p.samples_us.size();
  ++m.point_rows;
  m.keys.insert(key_of(p));
  if (m.flush_interval_s > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - m.last_write).count() >= m.flush_interval_s)
    m.write_pending();
}

void ResultsFile::set_flush_interval(double seconds) {
  if (!is_open()) throw Error("results file is closed");
  impl_->flush_interval_s = seconds;
  if (seconds <= 0) impl_->write_pending();
}

int ResultsFile::add_run(const RunContext& ctx, const std::vector<Point>& points, RunStatus status) {
  int index = begin_run(ctx, status);
  for (const Point& p : points) append(p);
  return index;
}

void ResultsFile::set_status(RunStatus status) {
  if (!is_open()) throw Error("results file is closed");
  Impl& m = *impl_;
  m.write_pending();
  if (m.run < 0) return;
  h5::set_attribute(m.run_group.get(), "status", to_string(status));
  h5::set_attribute(m.run_group.get(), "finished", status == RunStatus::Running ? "" : iso8601_utc_now());
  h5::flush(m.file);
}

void ResultsFile::finish(RunStatus status) {
  set_status(status);
  finish_as_is();
}

void ResultsFile::finish_as_is() {
  if (!is_open()) throw Error("results file is closed");
  Impl& m = *impl_;
  m.write_pending();
  m.run_group.reset();
  m.samples.reset();
  m.points.reset();
  m.runs.reset();
  m.finished = true;  // from here on the destructor leaves the file alone
  m.file.close("closing " + m.partial());
  std::error_code ec;
  fs::rename(m.partial(), m.path, ec);
  m.lock.release();
  if (ec) throw Error("cannot rename " + m.partial() + " to " + m.path + ": " + ec.message());
}

const std::set<PointKey>& ResultsFile::existing_keys() const {
  static const std::set<PointKey> none;
  return impl_ ? impl_->keys : none;
}
bool ResultsFile::contains(const PointKey& k) const {
  return impl_ && impl_->keys.count(k) > 0;
}
int ResultsFile::current_run() const {
  return impl_ ? impl_->run : -1;
}
std::size_t ResultsFile::points_in_file() const {
  return impl_ ? impl_->point_rows : 0;
}
const std::string& ResultsFile::path() const {
  static const std::string none;
  return impl_ ? impl_->path : none;
}
std::string ResultsFile::partial_path() const {
  return path() + ".partial";
}
bool ResultsFile::is_open() const {
  return impl_ && !impl_->finished && impl_->file.valid();
}

namespace {
ResultsContents read_results_here(const std::string& path, bool with_samples) {
  h5::File file = h5::open_file(path, false);
  hid_t f = file.get();
  check_schema(f, path);
  ResultsContents out;
  out.schema_version = static_cast<int>(h5::get_int_attribute(f, "schema_version"));
  out.commsim_version = attr_or_empty(f, "commsim_version");
  out.created = attr_or_empty(f, "created");
  out.command_line = attr_or_empty(f, "command_line");

  h5::Group runs = h5::open_group(f, "runs");
  for (const std::string& name : h5::list_group(runs.get())) {
    h5::Group g = h5::open_group(runs.get(), name);
    RunContext c = read_context(g.get());
    if (c.index != static_cast<int>(out.runs.size()))
      throw Error(path + ": run group /runs/" + name + " is out of sequence (index " + std::to_string(c.index) + ")");
    out.runs.push_back(std::move(c));
  }

  h5::Dataset points = h5::open_dataset(f, "points");
  const RowTypes types = row_types_of(points);
  RowsRead rows = read_all_rows(points, types);
  std::vector<double> samples;
  if (with_samples) {
    h5::Dataset ds = h5::open_dataset(f, "samples");
    samples.resize(h5::rows(ds));
    h5::read_rows(ds, H5T_NATIVE_DOUBLE, samples.data(), 0, samples.size());
  }
  out.points.reserve(rows.rows.size());
  out.run_of_point.reserve(rows.rows.size());
  for (std::size_t i = 0; i < rows.rows.size(); ++i) {
    const Row& r = rows.rows[i];
    Point p = from_row(r, path);
    p.note = rows.notes[i];
    if (r.run < 0 || r.run >= static_cast<int>(out.runs.size()))
      throw Error(path + ": points row " + std::to_string(i) + " names run " + std::to_string(r.run) +
                  ", which does not exist");
    if (with_samples && r.samples_count > 0) {
      if (r.samples_offset + r.samples_count > samples.size())
        throw Error(path + ": points row " + std::to_string(i) + " refers to samples beyond the end of /samples");
      p.samples_us.assign(samples.begin() + static_cast<std::ptrdiff_t>(r.samples_offset),
                          samples.begin() + static_cast<std::ptrdiff_t>(r.samples_offset + r.samples_count));
    }
    out.points.push_back(std::move(p));
    out.run_of_point.push_back(r.run);
  }
  return out;
}

}  // namespace

ResultsContents read_results(const std::string& path, bool with_samples) {
  // Nothing of the file is read here before a forked copy has read all of it (guarded_read.h).
  h5::read_in_child_first(path, [&] {
    check_readable_hdf5(path);
    (void)read_results_here(path, with_samples);
  });
  check_readable_hdf5(path);
  return read_results_here(path, with_samples);
}

std::vector<Point> read_points(const std::string& path) {
  return read_results(path).points;
}

}  // namespace commsim
