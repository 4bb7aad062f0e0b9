#include "runtime/h5/guarded_read.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include "model/error.h"
#include "runtime/h5/hdf5.h"

namespace commsim::h5 {
namespace {

constexpr int kChildThrew = 3;

// True in a checking child. A guarded read inside another (merge checks an input whose reader,
// read_results, guards itself) reads directly: a grandchild would outlive the child killed at its
// deadline, keep the pipe open, and the parent would wait for its end for ever.
bool in_checking_child = false;

// Everything the child had to say (its error message), read until it closes the pipe.
std::string drain(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return text;
  }
}

// What identifies one version of a file: a file rewritten (by a job still writing it, or replaced)
// between the check and the real read differs in one of these.
struct Version {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  timespec modified{};
  bool operator==(const Version& o) const {
    return device == o.device && inode == o.inode && size == o.size && modified.tv_sec == o.modified.tv_sec &&
           modified.tv_nsec == o.modified.tv_nsec;
  }
};

Version version_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

}  // namespace

void read_in_child_first(const std::string& path, const std::function<void()>& read_file) {
  if (in_checking_child) {
    read_file();
    return;
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  const double limit_s = 10.0 + (ec ? 0.0 : static_cast<double>(size) / 1e7);
  const Version checked = version_of(path);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw Error("cannot check " + path + ": pipe: " + std::strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw Error("cannot check " + path + ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    // The child: read, report, and leave without running the parent's exit handlers.
    in_checking_child = true;
    close(pipe_fds[0]);
    // Silent: a crash handler a library installed (UCX's) would print its backtrace for the parent.
    const int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) {
      dup2(null_fd, STDOUT_FILENO);
      dup2(null_fd, STDERR_FILENO);
      close(null_fd);
    }
    int code = 0;
    try {
      read_file();
      // A read can succeed yet leave libhdf5's free lists broken, so that a later write crashes
      // (merge did): collecting them walks every list, here in the copy.
      H5garbage_collect();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      (void)!write(pipe_fds[1], what.data(), what.size());
      code = kChildThrew;
    }
    _exit(code);
  }
  close(pipe_fds[1]);
  // The child's message may exceed a pipe's buffer: read it while waiting.
  std::string message;
  std::thread reader([&] { message = drain(pipe_fds[0]); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reader.join();
  close(pipe_fds[0]);
  if (timed_out)
    throw Error(path + " is damaged: reading it did not finish in " + std::to_string(static_cast<int>(limit_s)) +
                " s (the HDF5 library loops on its structure); it cannot be read");
  if (WIFSIGNALED(status))
    throw Error(path + " is damaged: reading it crashed the HDF5 library (signal " + std::to_string(WTERMSIG(status)) +
                ", " + strsignal(WTERMSIG(status)) + "); it cannot be read");
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildThrew) throw Error(message);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("cannot check " + path + ": the reading process ended with status " + std::to_string(status));
  // The check holds only for the version it read: one written since may be damaged anew.
  if (!(version_of(path) == checked))
    throw Error(path + " changed while it was checked (is a job still writing it?); read it again once it is finished");
}

}  // namespace commsim::h5
