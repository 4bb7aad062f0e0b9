#pragma once
// Which process writes a file: while a results file is written, "<file>.lock" beside it holds the
// writer's host, process id and start time. A second writer (another `run --out`, `--force` or
// `--resume` of the same file, on any node of a shared file system) is refused with a message that
// names the first; nothing of the first job's file is touched. A lock left by a process that no
// longer runs on this host (a job killed by SIGKILL) is taken over; one from another host cannot be
// checked from here, so the message says to remove it once that job has ended.
#include <string>

namespace commsim {

class WriterLock {
 public:
  // Takes the lock of `path` for this process. Throws Error naming the other writer when a live
  // process (or a process on another host) holds it, or when the lock cannot be created.
  static WriterLock acquire(const std::string& path);
  // "" when no other live writer holds the lock of `path`, else a sentence naming it (for messages).
  static std::string other_writer(const std::string& path);
  // The lock file of `path`: path + ".lock".
  static std::string lock_path(const std::string& path);

  WriterLock() = default;
  WriterLock(WriterLock&& o) noexcept;
  WriterLock& operator=(WriterLock&& o) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  // Removes the lock file if this object holds it. Never throws.
  ~WriterLock();
  void release() noexcept;
  bool held() const { return !path_.empty(); }

 private:
  std::string path_;  // of the lock file; empty when not held
};

}  // namespace commsim
