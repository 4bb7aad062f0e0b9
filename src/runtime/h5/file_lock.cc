#include "runtime/h5/file_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "model/error.h"
#include "runtime/output/run_context.h"

namespace commsim {
namespace {

struct Holder {
  std::string host;
  long pid = 0;
  std::string since;
};

// The holder written in a lock file; pid 0 when the file is missing or unreadable.
Holder read_holder(const std::string& lock) {
  Holder h;
  std::ifstream in(lock);
  in >> h.host >> h.pid >> h.since;  // a failed read leaves pid 0
  return h;
}

// Whether the holder may still be writing: a process on another host counts as alive (it cannot
// be checked from here); on this host, whether the process exists.
bool alive(const Holder& h) {
  if (h.pid <= 0) return false;
  if (h.host != local_hostname()) return true;
  if (h.pid == static_cast<long>(getpid())) return true;
  return kill(static_cast<pid_t>(h.pid), 0) == 0 || errno == EPERM;
}

std::string describe(const std::string& path, const Holder& h) {
  std::string text = path + " is being written by another job: process " + std::to_string(h.pid) + " on host " +
                     h.host + (h.since.empty() ? "" : " since " + h.since) +
                     "; wait for it to end or write to another file";
  if (h.host != local_hostname()) text += " (if that job has ended, remove " + WriterLock::lock_path(path) + ")";
  return text;
}

// Creates the lock file holding this process; false when it exists.
bool create(const std::string& lock) {
  const int fd = open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    throw Error("cannot create the lock file " + lock + ": " + std::strerror(errno));
  }
  const std::string text = local_hostname() + " " + std::to_string(getpid()) + " " + iso8601_utc_now() + "\n";
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  close(fd);
  if (!ok) {
    unlink(lock.c_str());
    throw Error("cannot write the lock file " + lock + ": " + std::strerror(saved));
  }
  return true;
}

}  // namespace

std::string WriterLock::lock_path(const std::string& path) {
  return path + ".lock";
}

std::string WriterLock::other_writer(const std::string& path) {
  const Holder h = read_holder(lock_path(path));
  if (h.pid == static_cast<long>(getpid()) && h.host == local_hostname()) return "";
  return alive(h) ? describe(path, h) : "";
}

WriterLock WriterLock::acquire(const std::string& path) {
  const std::string lock = lock_path(path);
  // Twice at most: a stale lock is removed once, then created anew (a writer that takes it over
  // in between wins, and this one is refused).
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (create(lock)) {
      WriterLock l;
      l.path_ = lock;
      return l;
    }
    const Holder h = read_holder(lock);
    if (alive(h) || (h.pid == 0 && attempt > 0)) throw Error(describe(path, h));
    unlink(lock.c_str());  // left by a process that has gone
  }
  throw Error(describe(path, read_holder(lock)));
}

WriterLock::WriterLock(WriterLock&& o) noexcept : path_(std::exchange(o.path_, std::string())) {}
WriterLock& WriterLock::operator=(WriterLock&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::exchange(o.path_, std::string());
  }
  return *this;
}
WriterLock::~WriterLock() {
  release();
}
void WriterLock::release() noexcept {
  if (path_.empty()) return;
  unlink(path_.c_str());
  path_.clear();
}

}  // namespace commsim
