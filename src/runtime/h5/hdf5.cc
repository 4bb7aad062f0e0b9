#include "runtime/h5/hdf5.h"

#include <algorithm>
#include <mutex>

#include "model/error.h"

namespace commsim::h5 {
namespace {

herr_t collect_frame(unsigned n, const H5E_error2_t* e, void* client) {
  auto* out = static_cast<std::string*>(client);
  char major[128] = "", minor[128] = "";
  H5Eget_msg(e->maj_num, nullptr, major, sizeof major);
  H5Eget_msg(e->min_num, nullptr, minor, sizeof minor);
  *out += "\n  #" + std::to_string(n) + " " + (e->func_name ? e->func_name : "?") +
          "(): " + (e->desc && *e->desc ? e->desc : minor) + " [" + major + ": " + minor + "] (" +
          (e->file_name ? e->file_name : "?") + " line " + std::to_string(e->line) + ")";
  return 0;
}

// No clean-up at exit: after a close failed (a full disk) HDF5's exit handler closes the same file
// again and crashes. Every file is closed by its owner before exit; what a failed close could not
// write is lost either way, and the points flushed before stay readable. Set while the program
// loads, because it only works before the first HDF5 call of any kind (H5T_NATIVE_* included).
[[maybe_unused]] const bool kNoExitCleanup = (H5dont_atexit(), true);

}  // namespace

void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

std::string error_stack() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_frame, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? std::string("\n  (no HDF5 error stack)") : text;
}

namespace {
// The operating system's reason at the bottom of an HDF5 error stack ("No space left on device"),
// or "" when the failure was not a system call's.
std::string system_cause(const std::string& stack) {
  const std::string key = "error message = '";
  const std::size_t at = stack.find(key);
  if (at == std::string::npos) return "";
  const std::size_t end = stack.find('\'', at + key.size());
  return end == std::string::npos ? "" : stack.substr(at + key.size(), end - at - key.size());
}
}  // namespace

void fail(std::string_view what) {
  const std::string stack = error_stack();
  const std::string cause = system_cause(stack);
  throw Error(std::string(what) + (cause.empty() ? "" : ": " + cause) + "; HDF5 error stack:" + stack);
}

namespace {
// Writers lock the file where the file system can and carry on where it cannot (some parallel
// file systems). Readers take no lock, so that a file a running job writes can be read (every
// append is flushed, and the readers validate what they read); which job writes a file is kept
// by its "<file>.lock" (file_lock.h).
PropList file_access(bool writable) {
  PropList fapl(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
#if H5_VERSION_GE(1, 10, 7)
  check_status(H5Pset_file_locking(fapl.get(), writable, true), "H5Pset_file_locking");
#else
  (void)writable;
#endif
  return fapl;
}
}  // namespace

File create_file(const std::string& path) {
  init();
  PropList fapl = file_access(true);
  return File(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "cannot create HDF5 file " + path);
}

File open_file(const std::string& path, bool writable) {
  init();
  if (!writable) {
    // Without a lock first; a file this process itself has open for writing is opened by HDF5 only
    // with the flags it was opened with, so then with the lock.
    PropList unlocked = file_access(false);
    const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, unlocked.get());
    if (id >= 0) return File(id);
    H5Eclear2(H5E_DEFAULT);
  }
  PropList fapl = file_access(true);
  return File(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get()),
              "cannot open HDF5 file " + path);
}

bool is_hdf5(const std::string& path) {
  init();
  htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

void flush(const File& f) {
  check_status(H5Fflush(f.get(), H5F_SCOPE_GLOBAL), "H5Fflush");
}

Group create_group(hid_t loc, const std::string& name) {
  init();
  return Group(H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "cannot create group " + name);
}

Group open_group(hid_t loc, const std::string& name) {
  init();
  return Group(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), "cannot open group " + name);
}

bool exists(hid_t loc, const std::string& name) {
  init();
  return check_bool(H5Lexists(loc, name.c_str(), H5P_DEFAULT), "H5Lexists(" + name + ")");
}

std::vector<std::string> list_group(hid_t loc) {
  init();
  // By index rather than H5Literate: the same calls in HDF5 1.10, 1.12 and 1.14.
  H5G_info_t info;
  check_status(H5Gget_info(loc, &info), "H5Gget_info");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len = H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail("H5Lget_name_by_idx");
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    check(H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT),
          "H5Lget_name_by_idx");
    name.resize(static_cast<std::size_t>(len));
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

Datatype vlen_string_type() {
  init();
  Datatype t(H5Tcopy(H5T_C_S1), "H5Tcopy(string)");
  check_status(H5Tset_size(t.get(), H5T_VARIABLE), "H5Tset_size(variable)");
  check_status(H5Tset_cset(t.get(), H5T_CSET_UTF8), "H5Tset_cset");
  return t;
}

Datatype fixed_string_type(std::size_t size) {
  init();
  Datatype t(H5Tcopy(H5T_C_S1), "H5Tcopy(string)");
  check_status(H5Tset_size(t.get(), size), "H5Tset_size");
  check_status(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return t;
}

bool has_attribute(hid_t obj, const std::string& name) {
  init();
  return check_bool(H5Aexists(obj, name.c_str()), "H5Aexists(" + name + ")");
}

namespace {
Attribute fresh_attribute(hid_t obj, const std::string& name, hid_t type) {
  if (has_attribute(obj, name)) check_status(H5Adelete(obj, name.c_str()), "cannot replace attribute " + name);
  Dataspace scalar(H5Screate(H5S_SCALAR), "H5Screate(scalar)");
  return Attribute(H5Acreate2(obj, name.c_str(), type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                   "cannot create attribute " + name);
}
}  // namespace

void set_attribute(hid_t obj, const std::string& name, std::string_view value) {
  Datatype t = vlen_string_type();
  Attribute a = fresh_attribute(obj, name, t.get());
  std::string copy(value);
  const char* p = copy.c_str();
  check_status(H5Awrite(a.get(), t.get(), &p), "cannot write attribute " + name);
}

void set_attribute(hid_t obj, const std::string& name, std::int64_t value) {
  Attribute a = fresh_attribute(obj, name, H5T_STD_I64LE);
  check_status(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), "cannot write attribute " + name);
}

std::string get_string_attribute(hid_t obj, const std::string& name) {
  init();
  Attribute a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "cannot open attribute " + name);
  Datatype ftype(H5Aget_type(a.get()), "H5Aget_type(" + name + ")");
  if (H5Tget_class(ftype.get()) != H5T_STRING) throw Error("attribute " + name + " is not a string");
  if (check_bool(H5Tis_variable_str(ftype.get()), "H5Tis_variable_str")) {
    Datatype t = vlen_string_type();
    char* p = nullptr;
    check_status(H5Aread(a.get(), t.get(), &p), "cannot read attribute " + name);
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  // Fixed-length strings (written by other tools) are accepted too.
  std::size_t size = H5Tget_size(ftype.get());
  std::string buf(size, '\0');
  Datatype t = fixed_string_type(size);
  check_status(H5Aread(a.get(), t.get(), buf.data()), "cannot read attribute " + name);
  buf.resize(std::min(buf.find('\0'), buf.size()));
  return buf;
}

std::int64_t get_int_attribute(hid_t obj, const std::string& name) {
  init();
  Attribute a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "cannot open attribute " + name);
  Datatype ftype(H5Aget_type(a.get()), "H5Aget_type(" + name + ")");
  if (H5Tget_class(ftype.get()) != H5T_INTEGER) throw Error("attribute " + name + " is not an integer");
  std::int64_t v = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_INT64, &v), "cannot read attribute " + name);
  return v;
}

void write_string_list(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  init();
  Datatype t = vlen_string_type();
  hsize_t n = values.size();
  Dataspace space(H5Screate_simple(1, &n, nullptr), "H5Screate_simple");
  Dataset ds(H5Dcreate2(loc, name.c_str(), t.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             "cannot create dataset " + name);
  if (n == 0) return;
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(v.c_str());
  check_status(H5Dwrite(ds.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "cannot write dataset " + name);
}

std::vector<std::string> read_string_list(hid_t loc, const std::string& name) {
  Dataset ds = open_dataset(loc, name);
  hsize_t n = rows(ds);
  std::vector<std::string> out;
  if (n == 0) return out;
  Datatype t = vlen_string_type();
  std::vector<char*> ptrs(n, nullptr);
  check_status(H5Dread(ds.get(), t.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "cannot read dataset " + name);
  out.reserve(n);
  for (char* p : ptrs) out.emplace_back(p ? p : "");
  reclaim(t.get(), ptrs.data(), n);
  return out;
}

Dataset create_table(hid_t loc, const std::string& name, hid_t file_type, hsize_t chunk_rows) {
  init();
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  Dataspace space(H5Screate_simple(1, &zero, &unlimited), "H5Screate_simple(extendable)");
  PropList dcpl(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset create)");
  check_status(H5Pset_chunk(dcpl.get(), 1, &chunk_rows), "H5Pset_chunk");
  return Dataset(H5Dcreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                 "cannot create dataset " + name);
}

Dataset open_dataset(hid_t loc, const std::string& name) {
  init();
  return Dataset(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), "cannot open dataset " + name);
}

hsize_t rows(const Dataset& ds) {
  Dataspace space(H5Dget_space(ds.get()), "H5Dget_space");
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank != 1) throw Error("expected a 1-D dataset, found " + std::to_string(rank) + " dimensions");
  hsize_t n = 0;
  check(H5Sget_simple_extent_dims(space.get(), &n, nullptr), "H5Sget_simple_extent_dims");
  return n;
}

hsize_t append_rows(const Dataset& ds, hid_t mem_type, const void* buf, hsize_t n) {
  hsize_t first = rows(ds);
  if (n == 0) return first;
  hsize_t total = first + n;
  check_status(H5Dset_extent(ds.get(), &total), "H5Dset_extent");
  Dataspace file_space(H5Dget_space(ds.get()), "H5Dget_space");
  check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &n, nullptr),
               "H5Sselect_hyperslab");
  Dataspace mem_space(H5Screate_simple(1, &n, nullptr), "H5Screate_simple");
  check_status(H5Dwrite(ds.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "H5Dwrite");
  return first;
}

void read_rows(const Dataset& ds, hid_t mem_type, void* buf, hsize_t first, hsize_t n) {
  if (n == 0) return;
  Dataspace file_space(H5Dget_space(ds.get()), "H5Dget_space");
  check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &first, nullptr, &n, nullptr),
               "H5Sselect_hyperslab");
  Dataspace mem_space(H5Screate_simple(1, &n, nullptr), "H5Screate_simple");
  check_status(H5Dread(ds.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), "H5Dread");
}

void reclaim(hid_t mem_type, void* buf, hsize_t n) noexcept {
  if (n == 0) return;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  if (space < 0) return;
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim(mem_type, space, H5P_DEFAULT, buf);
#else
  H5Dvlen_reclaim(mem_type, space, H5P_DEFAULT, buf);
#endif
  H5Sclose(space);
}

}  // namespace commsim::h5
