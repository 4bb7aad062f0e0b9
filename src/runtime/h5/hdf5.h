#pragma once
// RAII over the HDF5 C API, used by the results file only. Every C call goes through check() once:
// a failure becomes a commsim::Error that says what was being done and carries the HDF5 error
// stack as text. Handles close themselves in destructors that never throw.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace commsim::h5 {

// Turns off HDF5's own printing of error stacks (we put them into the Error instead). Idempotent;
// called by every function here before the first HDF5 call.
void init();
// The current HDF5 error stack as lines "H5Dwrite(): can't write data (file H5Dio.c line 291)".
std::string error_stack();
// Throws Error("<what>: <error stack>").
[[noreturn]] void fail(std::string_view what);
// Return value checks: a negative id / status is a failure.
inline hid_t check(hid_t id, std::string_view what) {
  if (id < 0) fail(what);
  return id;
}
inline herr_t check_status(herr_t rc, std::string_view what) {
  if (rc < 0) fail(what);
  return rc;
}
// H5Lexists-style tri-state: >0 true, 0 false, <0 failure.
inline bool check_bool(htri_t rc, std::string_view what) {
  if (rc < 0) fail(what);
  return rc > 0;
}

// An owned HDF5 identifier closed by Close. Move-only.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(hid_t id, std::string_view what) : id_(check(id, what)) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes without reporting (destructors, error paths).
  void reset() noexcept {
    if (id_ >= 0) (void)Close(id_);
    id_ = H5I_INVALID_HID;
  }
  // Closes and reports a failure (a file's close writes its metadata: that can fail).
  void close(std::string_view what) {
    if (id_ < 0) return;
    hid_t id = std::exchange(id_, H5I_INVALID_HID);
    check_status(Close(id), what);
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using PropList = Handle<H5Pclose>;

// Files. create_file truncates; the caller decides whether it may (see ResultsFile).
File create_file(const std::string& path);
File open_file(const std::string& path, bool writable);
// True when `path` is an HDF5 file (false for a missing or non-HDF5 file).
bool is_hdf5(const std::string& path);
void flush(const File& f);

// Groups, links.
Group create_group(hid_t loc, const std::string& name);
Group open_group(hid_t loc, const std::string& name);
bool exists(hid_t loc, const std::string& name);
// Names of the links in a group, sorted by name.
std::vector<std::string> list_group(hid_t loc);

// A variable-length UTF-8 string type (reads as str in h5py).
Datatype vlen_string_type();
// A fixed-length null-padded ASCII string type of `size` bytes.
Datatype fixed_string_type(std::size_t size);

// Attributes: scalar string (variable length, UTF-8), int64, or replaced when they exist.
void set_attribute(hid_t obj, const std::string& name, std::string_view value);
void set_attribute(hid_t obj, const std::string& name, std::int64_t value);
bool has_attribute(hid_t obj, const std::string& name);
std::string get_string_attribute(hid_t obj, const std::string& name);
std::int64_t get_int_attribute(hid_t obj, const std::string& name);

// A 1-D dataset of variable-length UTF-8 strings (h5py: ds.asstr()[:]).
void write_string_list(hid_t loc, const std::string& name, const std::vector<std::string>& values);
std::vector<std::string> read_string_list(hid_t loc, const std::string& name);

// Extendable 1-D datasets of a given element type.
Dataset create_table(hid_t loc, const std::string& name, hid_t file_type, hsize_t chunk_rows);
Dataset open_dataset(hid_t loc, const std::string& name);
hsize_t rows(const Dataset& ds);
// Writes n elements of mem_type from buf at the end of ds (growing it). Returns the first row index.
hsize_t append_rows(const Dataset& ds, hid_t mem_type, const void* buf, hsize_t n);
// Reads rows [first, first + n) into buf (n elements of mem_type).
void read_rows(const Dataset& ds, hid_t mem_type, void* buf, hsize_t first, hsize_t n);
// Frees the variable-length strings HDF5 allocated in a read of n elements of mem_type.
void reclaim(hid_t mem_type, void* buf, hsize_t n) noexcept;

}  // namespace commsim::h5
