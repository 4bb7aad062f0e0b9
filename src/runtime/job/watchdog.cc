#include "runtime/job/watchdog.h"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <vector>

#include "model/error.h"
#include "runtime/output/run_context.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/host/mpi_check.h"
#endif

namespace commsim {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_stop_signal = sig;
}

}  // namespace

namespace {
sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}
}  // namespace

void block_stop_signals() {
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a write blocked on a full pipe (mpirun stops reading the ranks' output once it
  // is signalled) returns instead of hanging; MPI and HDF5 retry their own interrupted calls.
  sa.sa_flags = 0;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

int stop_signal() {
  return static_cast<int>(g_stop_signal);
}

namespace {
std::mutex& abort_hooks_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::function<void()>>& abort_hooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}
}  // namespace

void run_abort_hooks() noexcept {
  std::lock_guard lock(abort_hooks_mutex());
  for (const auto& hook : abort_hooks()) {
    try {
      hook();
    } catch (...) {
      // A hook must not throw; one that does must not keep the job from ending.
    }
  }
}

void add_abort_hook(std::function<void()> hook) {
  std::lock_guard lock(abort_hooks_mutex());
  abort_hooks().push_back(std::move(hook));
}

#ifdef COMMSIM_HAVE_MPI

namespace {
constexpr int kReportTag = 7;
enum Report : int { kBegin = 0, kEnd = 1 };
using Clock = std::chrono::steady_clock;
}  // namespace

struct Watchdog::Impl {
  double timeout_s = 0;
  TimeoutHandler on_timeout;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool armed = false;
  bool local = false;   // a step of this rank alone (begin_local)
  long generation = 0;  // counts the arms: a wake-up for an earlier one is ignored
  int index = -1;
  std::string label;
  Clock::time_point started;
  std::thread thread;

  // Rank 0: what each rank reported last, and the labels of points by index.
  std::vector<int> began, ended;
  std::map<int, std::string> labels;
  // Other ranks: reports in flight (the buffers must live until their send completes).
  std::deque<std::array<int, 2>> outbox;
  std::deque<MPI_Request> outbox_requests;

  void send_report(int kind, int idx) {
    if (rank == 0) {
      (kind == kBegin ? began : ended)[0] = idx;
      return;
    }
    while (!outbox_requests.empty()) {
      int done = 0;
      COMMSIM_MPI_CHECK(MPI_Test(&outbox_requests.front(), &done, MPI_STATUS_IGNORE));
      if (!done) break;
      outbox_requests.pop_front();
      outbox.pop_front();
    }
    outbox.push_back({kind, idx});
    outbox_requests.emplace_back(MPI_REQUEST_NULL);
    COMMSIM_MPI_CHECK(MPI_Isend(outbox.back().data(), 2, MPI_INT, 0, kReportTag, comm, &outbox_requests.back()));
  }

  // Rank 0, with mu held.
  void drain_locked() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      COMMSIM_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, kReportTag, comm, &flag, &st));
      if (!flag) return;
      std::array<int, 2> msg{};
      COMMSIM_MPI_CHECK(MPI_Recv(msg.data(), 2, MPI_INT, st.MPI_SOURCE, kReportTag, comm, MPI_STATUS_IGNORE));
      auto& v = msg[0] == kBegin ? began : ended;
      v[static_cast<std::size_t>(st.MPI_SOURCE)] = std::max(v[static_cast<std::size_t>(st.MPI_SOURCE)], msg[1]);
    }
  }

  std::string label_of(int idx) const {
    auto it = labels.find(idx);
    return it == labels.end() ? "none" : it->second;
  }

  // Rank 0, with mu held: who is missing from the current point.
  std::string timeout_message() {
    drain_locked();
    std::string not_arrived, not_finished;
    for (int r = 0; r < size; ++r) {
      const auto ur = static_cast<std::size_t>(r);
      if (began[ur] < index) {
        if (!not_arrived.empty()) not_arrived += ", ";
        not_arrived += std::to_string(r) + " (last finished point: " + label_of(ended[ur]) + ")";
      } else if (ended[ur] < index) {
        if (!not_finished.empty()) not_finished += ", ";
        not_finished += std::to_string(r);
      }
    }
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", timeout_s);
    std::string msg = "point " + label + " timed out after " + secs + " s; ranks that did not arrive: ";
    if (!not_arrived.empty()) {
      msg += not_arrived;
    } else {
      // Every rank entered the point: someone is stuck inside it (a message that never matches).
      msg += "none (all entered the point; ranks that did not finish it: " + not_finished + ")";
    }
    return msg;
  }

  void run_thread() {
    std::unique_lock lock(mu);
    for (;;) {
      if (stopping) return;
      if (!armed) {
        cv.wait(lock);
        continue;
      }
      // Rank 0 decides; the others wait longer so that rank 0's message names the culprits.
      const double limit_s = rank == 0 || local ? timeout_s : 2 * timeout_s + 10;
      const auto deadline =
          started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
      const long watched = generation;
      if (cv.wait_until(lock, deadline) != std::cv_status::timeout) continue;
      if (stopping || !armed || generation != watched) continue;
      // Timed out. Keep mu: end_point() blocks until the job is gone.
      std::string msg;
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", limit_s);
      if (local) {
        // This rank alone is stuck (a write to a hung file system): it ends the job itself.
        msg = "rank " + std::to_string(rank) + " (" + local_hostname() + "): " + label + " did not finish within " +
              secs + " s";
      } else if (rank == 0) {
        // This thread must not throw: a failed MPI call while naming the culprits still ends the job.
        try {
          msg = timeout_message();
        } catch (const std::exception& e) {
          msg = "point " + label + " timed out (" + e.what() + ")";
        }
      } else {
        msg = "rank " + std::to_string(rank) + ": point " + label + " did not finish within " + secs +
              " s and rank 0 did not end the job";
      }
      std::fprintf(stderr, "commsim run: %s; aborting the job\n", msg.c_str());
      std::fflush(stderr);
      if (rank == 0 && !local && on_timeout) {
        try {
          on_timeout(msg);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "commsim run: while closing after the timeout: %s\n", e.what());
        }
      }
      run_abort_hooks();
      std::fflush(stdout);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 124);  // does not return
      return;
    }
  }
};

Watchdog::Watchdog(double timeout_s, TimeoutHandler on_timeout) : impl_(std::make_unique<Impl>()) {
  impl_->timeout_s = timeout_s;
  impl_->on_timeout = std::move(on_timeout);
  if (timeout_s <= 0) return;
  int provided = MPI_THREAD_SINGLE;
  COMMSIM_MPI_CHECK(MPI_Query_thread(&provided));
  if (provided < MPI_THREAD_MULTIPLE)
    throw Error(
        "the watchdog (--timeout) needs an MPI library with MPI_THREAD_MULTIPLE; pass --timeout 0 to run without it");
  COMMSIM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(impl_->comm, &impl_->rank));
  COMMSIM_MPI_CHECK(MPI_Comm_size(impl_->comm, &impl_->size));
  impl_->began.assign(static_cast<std::size_t>(impl_->size), -1);
  impl_->ended.assign(static_cast<std::size_t>(impl_->size), -1);
  impl_->thread = std::thread([this] { impl_->run_thread(); });
}

Watchdog::~Watchdog() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

double Watchdog::timeout_s() const {
  return impl_->timeout_s;
}

void Watchdog::begin_point(int index, const std::string& label) {
  if (impl_->comm == MPI_COMM_NULL) return;
  std::lock_guard lock(impl_->mu);
  impl_->index = index;
  impl_->label = label;
  if (impl_->rank == 0) impl_->labels[index] = label;
  impl_->started = Clock::now();
  impl_->local = false;
  ++impl_->generation;
  impl_->armed = true;
  impl_->send_report(kBegin, index);
  impl_->cv.notify_all();
}

void Watchdog::end_point(int index) {
  if (impl_->comm == MPI_COMM_NULL) return;
  std::lock_guard lock(impl_->mu);
  impl_->armed = false;
  impl_->send_report(kEnd, index);
  impl_->cv.notify_all();
}

void Watchdog::begin_local(const std::string& label) {
  if (impl_->comm == MPI_COMM_NULL) return;
  std::lock_guard lock(impl_->mu);
  impl_->label = label;
  impl_->local = true;
  impl_->started = Clock::now();
  ++impl_->generation;
  impl_->armed = true;
  impl_->cv.notify_all();
}

void Watchdog::end_local() {
  if (impl_->comm == MPI_COMM_NULL) return;
  std::lock_guard lock(impl_->mu);
  impl_->armed = false;
  impl_->local = false;
  impl_->cv.notify_all();
}

void Watchdog::drain() {
  if (impl_->comm == MPI_COMM_NULL || impl_->rank != 0) return;
  std::lock_guard lock(impl_->mu);
  impl_->drain_locked();
}

void Watchdog::finish() {
  if (impl_->comm == MPI_COMM_NULL) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (!impl_->outbox_requests.empty()) {
    std::vector<MPI_Request> reqs(impl_->outbox_requests.begin(), impl_->outbox_requests.end());
    COMMSIM_MPI_CHECK(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
    impl_->outbox_requests.clear();
    impl_->outbox.clear();
  }
  COMMSIM_MPI_CHECK(MPI_Barrier(impl_->comm));
  if (impl_->rank == 0) impl_->drain_locked();
  COMMSIM_MPI_CHECK(MPI_Comm_free(&impl_->comm));
}

#else  // no MPI

struct Watchdog::Impl {
  double timeout_s = 0;
};
Watchdog::Watchdog(double, TimeoutHandler) {
  throw Error("this build has no MPI: the watchdog is not available");
}
Watchdog::~Watchdog() = default;
double Watchdog::timeout_s() const {
  return impl_->timeout_s;
}
void Watchdog::begin_point(int, const std::string&) {}
void Watchdog::end_point(int) {}
void Watchdog::begin_local(const std::string&) {}
void Watchdog::end_local() {}
void Watchdog::drain() {}
void Watchdog::finish() {}

#endif

}  // namespace commsim
