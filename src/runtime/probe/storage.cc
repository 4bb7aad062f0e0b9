#include "runtime/probe/storage.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "model/error.h"

namespace commsim {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kAlign = 4096;        // O_DIRECT buffers, offsets and sizes
constexpr std::size_t kRandomBytes = 4096;  // one random read

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool is_shared_fs(const std::string& type) {
  static const std::set<std::string> shared = {
      "nfs",       "nfs4",   "lustre",   "gpfs",  "beegfs",    "cifs",           "smb3",         "ceph",
      "glusterfs", "wekafs", "orangefs", "pvfs2", "fuse.ceph", "fuse.glusterfs", "fuse.juicefs", "fuse.s3fs"};
  return shared.count(type) > 0;
}

struct AlignedBuffer {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, std::free};
  explicit AlignedBuffer(std::size_t bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, kAlign, std::max(bytes, kAlign)) != 0) throw Error("storage probe: out of memory");
    data.reset(static_cast<char*>(p));
  }
  char* get() const { return data.get(); }
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Removes the file when it goes out of scope, whatever happened.
struct RemoveFile {
  std::string path;
  ~RemoveFile() { ::unlink(path.c_str()); }
};

[[noreturn]] void fail_io(const std::string& what, const std::string& file, int err, const StorageTarget& t) {
  std::string why = std::strerror(err);
  if (err == ENOSPC)
    why = "the disk is full (" + format_bytes(t.free_bytes) +
          " were free when the probe started); free space, or "
          "lower --storage-size";
  else if (err == EROFS)
    why = "the file system is mounted read-only; give a writable path";
  else if (err == EFBIG)
    why = "the file is larger than this process may write (ulimit -f) or the file system holds; lower --storage-size";
  else if (err == EACCES || err == EPERM)
    why = "permission denied; give a directory this user may write";
  throw Error("--storage " + t.path + ": " + what + " " + file + ": " + why);
}

}  // namespace

StorageTarget describe_storage(const std::string& path) {
  StorageTarget t;
  t.path = path;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error("--storage " + path + ": no such directory; give an existing directory on the disk to measure");
  if (!fs::is_directory(path, ec))
    throw Error("--storage " + path + ": not a directory; give the directory the probe may write a file into");
  const std::string real = fs::canonical(path, ec).string();
  std::ifstream in("/proc/self/mountinfo");
  std::size_t best = 0;
  for (std::string line; std::getline(in, line);) {
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    std::istringstream s(line);
    std::string id, parent, dev, root, mount, options, field;
    s >> id >> parent >> dev >> root >> mount >> options;
    while (s >> field && field != "-") {
    }
    std::string type, source;
    s >> type >> source;
    mount = unescape_mount(mount);
    const bool covers =
        real == mount || mount == "/" ||
        (real.size() > mount.size() && real.compare(0, mount.size(), mount) == 0 && real[mount.size()] == '/');
    if (covers && mount.size() >= best) {
      best = mount.size();
      t.mount_point = mount;
      t.fs_type = type;
      t.device = unescape_mount(source);
      t.read_only = options.rfind("ro", 0) == 0 && (options.size() == 2 || options[2] == ',');
    }
  }
  t.shared = is_shared_fs(t.fs_type);
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) == 0) {
    t.free_bytes = static_cast<Bytes>(st.f_bavail) * st.f_frsize;
    t.size_known = st.f_blocks > 0;
    if (st.f_flag & ST_RDONLY) t.read_only = true;
  }
  return t;
}

void check_storage_room(const StorageTarget& t, Bytes file_bytes, int writers) {
  if (t.read_only)
    throw Error("--storage " + t.path + ": the file system (" + t.fs_type + " on " + t.mount_point +
                ") is mounted read-only; give a writable path");
  if (::access(t.path.c_str(), W_OK) != 0)
    throw Error("--storage " + t.path + ": not writable by this user (" + std::strerror(errno) +
                "); give a directory the probe may write into");
  const Bytes need = file_bytes * static_cast<Bytes>(writers);
  if (t.size_known && need > t.free_bytes)
    throw Error("--storage " + t.path + ": the probe writes " + std::to_string(writers) + " file(s) of " +
                format_bytes(file_bytes) + " (" + format_bytes(need) + ") but only " + format_bytes(t.free_bytes) +
                " are free on " + t.mount_point + " (" + t.fs_type + "); free space, or lower --storage-size");
}

std::vector<StorageRow> measure_storage(const StorageTarget& t, const StorageOptions& o, const std::string& tag) {
  if (o.file_bytes < kAlign || o.file_bytes % kAlign != 0)
    throw Error("--storage-size " + format_bytes(o.file_bytes) + ": give a multiple of 4 KiB, at least 4 KiB");
  const Bytes block = std::min<Bytes>(std::max<Bytes>(o.block_bytes / kAlign * kAlign, kAlign), o.file_bytes);
  const std::string file = (fs::path(t.path) / (".commsim-probe-" + tag + ".tmp")).string();
  StorageRow base;
  base.path = t.path;
  base.fs_type = t.fs_type;
  base.device = t.device;
  base.mount_point = t.mount_point;
  base.shared = t.shared;

  // Sequential write: O_DIRECT where the file system takes it.
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0600);
  bool direct = fd >= 0;
  if (fd < 0 && errno == EINVAL) {
    // Some file systems (ramfs) create the file before refusing O_DIRECT; O_EXCL says it is ours.
    ::unlink(file.c_str());
    fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) fail_io("cannot create", file, errno, t);
  RemoveFile remove{file};
  Fd wfd(fd);
  AlignedBuffer buf(block);
  std::mt19937_64 fill(std::hash<std::string>{}(tag));
  for (std::size_t i = 0; i < block / 8; ++i) {
    const std::uint64_t v = fill();
    std::memcpy(buf.get() + 8 * i, &v, 8);  // data no file system compresses away
  }
  auto write_all = [&](int f) {
    for (Bytes done = 0; done < o.file_bytes;) {
      const std::size_t n = std::min<Bytes>(block, o.file_bytes - done);
      const ssize_t w = ::pwrite(f, buf.get(), n, static_cast<off_t>(done));
      if (w < 0) return errno;
      if (w == 0) return ENOSPC;
      done += static_cast<Bytes>(w);
    }
    return ::fdatasync(f) == 0 ? 0 : errno;
  };
  double t0 = now_s();
  int err = write_all(wfd.get());
  if (err == EINVAL && direct) {
    // The open took O_DIRECT but the writes do not (some FUSE and overlay file systems).
    wfd = Fd(::open(file.c_str(), O_WRONLY | O_TRUNC));
    if (wfd.get() < 0) fail_io("cannot reopen", file, errno, t);
    direct = false;
    t0 = now_s();
    err = write_all(wfd.get());
  }
  const double write_s = now_s() - t0;
  if (err != 0) fail_io("writing", file, err, t);
  base.direct = direct;
  if (!direct) base.note = "O_DIRECT unsupported on " + t.fs_type + ": buffered write + fdatasync, buffered reads";
  StorageRow wr = base;
  wr.op = "write";
  wr.bytes = o.file_bytes;
  wr.ops = static_cast<long long>((o.file_bytes + block - 1) / block);
  wr.seconds = write_s;
  // The cached pages go, so that the reads come from the device (no effect on tmpfs: memory).
  if (!direct) ::posix_fadvise(wfd.get(), 0, 0, POSIX_FADV_DONTNEED);
  wfd = Fd();

  // Sequential read.
  Fd rfd(::open(file.c_str(), O_RDONLY | (direct ? O_DIRECT : 0)));
  if (rfd.get() < 0) fail_io("cannot open", file, errno, t);
  StorageRow rd = base;
  rd.op = "read";
  t0 = now_s();
  for (Bytes done = 0; done < o.file_bytes;) {
    const std::size_t n = std::min<Bytes>(block, o.file_bytes - done);
    const ssize_t r = ::pread(rfd.get(), buf.get(), n, static_cast<off_t>(done));
    if (r < 0) fail_io("reading", file, errno, t);
    if (r == 0)
      throw Error("--storage " + t.path + ": " + file + " is shorter than written (" + format_bytes(done) + ")");
    done += static_cast<Bytes>(r);
    ++rd.ops;
  }
  rd.seconds = now_s() - t0;
  rd.bytes = o.file_bytes;
  if (!direct) ::posix_fadvise(rfd.get(), 0, 0, POSIX_FADV_DONTNEED);

  // 4 KiB reads at random aligned offsets, queue_depth threads at once on the same descriptor.
  std::vector<StorageRow> out{wr, rd};
  const std::uint64_t slots = o.file_bytes / kRandomBytes;
  for (int qd : o.queue_depths) {
    if (qd < 1) throw Error("storage probe: queue depth " + std::to_string(qd) + " is not 1 or more");
    std::vector<std::vector<double>> lat(qd);
    std::vector<int> errs(qd, 0);
    std::atomic<long long> budget{o.random_max_ops};
    const double start = now_s(), deadline = start + o.random_time_s;
    std::vector<std::thread> threads;
    for (int k = 0; k < qd; ++k) {
      threads.emplace_back([&, k] {
        AlignedBuffer one(kRandomBytes);
        std::mt19937_64 rng(std::hash<std::string>{}(tag) + 7919 * static_cast<unsigned>(k + 1));
        while (budget.fetch_sub(1) > 0) {
          const off_t off = static_cast<off_t>((rng() % slots) * kRandomBytes);
          const double a = now_s();
          if (::pread(rfd.get(), one.get(), kRandomBytes, off) != static_cast<ssize_t>(kRandomBytes)) {
            errs[k] = errno ? errno : EIO;
            return;
          }
          const double b = now_s();
          lat[k].push_back(b - a);
          if (b >= deadline) return;
        }
      });
    }
    for (auto& th : threads) th.join();
    const double wall = now_s() - start;
    for (int e : errs)
      if (e) fail_io("random reads of", file, e, t);
    std::vector<double> all;
    for (const auto& v : lat) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    StorageRow rr = base;
    rr.op = "randread";
    rr.queue_depth = qd;
    rr.ops = static_cast<long long>(all.size());
    rr.bytes = static_cast<Bytes>(all.size()) * kRandomBytes;
    rr.seconds = wall;
    double sum = 0;
    for (double x : all) sum += x;
    rr.latency_mean_us = all.empty() ? 0 : sum / all.size() * 1e6;
    rr.latency_p99_us = all.empty() ? 0 : all[std::min(all.size() - 1, all.size() * 99 / 100)] * 1e6;
    out.push_back(rr);
  }
  return out;
}

std::vector<StorageRow> combine_storage_rows(const std::vector<StorageRow>& rows) {
  std::vector<StorageRow> out;
  std::map<std::tuple<std::string, std::string, std::string, std::string, int>, std::size_t> at;
  for (const auto& r : rows) {
    auto key = std::make_tuple(r.tier, r.mode, r.host, r.op, r.queue_depth);
    auto it = at.find(key);
    if (it == at.end()) {
      at[key] = out.size();
      out.push_back(r);
      continue;
    }
    StorageRow& c = out[it->second];
    const long long ops = c.ops + r.ops;
    if (ops > 0) c.latency_mean_us = (c.latency_mean_us * c.ops + r.latency_mean_us * r.ops) / ops;
    c.latency_p99_us = std::max(c.latency_p99_us, r.latency_p99_us);
    c.ops = ops;
    c.bytes += r.bytes;
    c.seconds = std::max(c.seconds, r.seconds);
    c.writers += r.writers;
    c.direct = c.direct && r.direct;
    if (c.note.empty()) c.note = r.note;
  }
  return out;
}

std::string serialize_storage_row(const StorageRow& r) {
  std::ostringstream s;
  s.precision(17);
  auto field = [&](const std::string& x) {
    for (char c : x)
      if (c == '\t' || c == '\n') throw Error("storage row field with a tab or newline: " + x);
    s << x << '\t';
  };
  field(r.tier), field(r.path), field(r.mode), field(r.host), field(r.op);
  s << r.queue_depth << '\t' << r.writers << '\t' << r.bytes << '\t' << r.ops << '\t' << r.seconds << '\t'
    << r.latency_mean_us << '\t' << r.latency_p99_us << '\t';
  field(r.fs_type), field(r.device), field(r.mount_point);
  s << r.shared << '\t' << r.direct << '\t' << r.note;
  return s.str();
}

StorageRow parse_storage_row(const std::string& line) {
  std::vector<std::string> f;
  std::size_t from = 0;
  for (std::size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1)
    f.push_back(line.substr(from, tab - from));
  f.push_back(line.substr(from));
  if (f.size() != 18) throw Error("storage row with " + std::to_string(f.size()) + " fields, not 18: " + line);
  StorageRow r;
  try {
    r.tier = f[0], r.path = f[1], r.mode = f[2], r.host = f[3], r.op = f[4];
    r.queue_depth = std::stoi(f[5]);
    r.writers = std::stoi(f[6]);
    r.bytes = std::stoull(f[7]);
    r.ops = std::stoll(f[8]);
    r.seconds = std::stod(f[9]);
    r.latency_mean_us = std::stod(f[10]);
    r.latency_p99_us = std::stod(f[11]);
    r.fs_type = f[12], r.device = f[13], r.mount_point = f[14];
    r.shared = f[15] == "1";
    r.direct = f[16] == "1";
    r.note = f[17];
  } catch (const std::exception&) {
    throw Error("storage row with a bad number: " + line);
  }
  return r;
}

}  // namespace commsim
