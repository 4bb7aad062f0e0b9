#include "collectives/cuda/nccl_comm.h"

#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "collectives/cuda/cuda_check.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"

namespace commsim::cuda {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<NcclComm*>& registry() {
  static std::set<NcclComm*> s;
  return s;
}

// Sets an environment variable for the lifetime of the object and restores the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (value.empty()) return;
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
    active_ = true;
  }
  ~ScopedEnv() {
    if (!active_) return;
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
  bool active_ = false;
};

}  // namespace

std::string NcclSetting::describe() const {
  std::string s;
  if (!algo.empty()) s += "NCCL_ALGO=" + algo;
  if (!proto.empty()) s += std::string(s.empty() ? "" : " ") + "NCCL_PROTO=" + proto;
  return s;
}

NcclComm::NcclComm(MPI_Comm comm, const NcclSetting& setting, double timeout_s)
    : setting_(setting), timeout_s_(timeout_s) {
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm, &size_));
  ncclUniqueId id;
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  COMMSIM_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
  // NCCL reads NCCL_ALGO / NCCL_PROTO while it initialises the communicator, which in
  // non-blocking mode finishes in the background: keep them set until wait() has returned.
  ScopedEnv algo("NCCL_ALGO", setting.algo);
  ScopedEnv proto("NCCL_PROTO", setting.proto);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    NCCL_CHECK(rc);
  }
  try {
    wait(rc, "ncclCommInitRankConfig");
  } catch (...) {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw;
  }
  std::lock_guard lock(registry_mutex());
  registry().insert(this);
}

NcclComm::~NcclComm() {
  {
    std::lock_guard lock(registry_mutex());
    registry().erase(this);
  }
  if (!comm_ || aborted_) return;
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm_, &async);
  if (async != ncclSuccess && async != ncclInProgress) {
    ncclCommAbort(comm_);
    return;
  }
  // Finalize flushes outstanding work; in non-blocking mode it completes in the background.
  const ncclResult_t rc = ncclCommFinalize(comm_);
  async = rc;
  const auto start = std::chrono::steady_clock::now();
  while (rc == ncclSuccess || rc == ncclInProgress) {
    if (ncclCommGetAsyncError(comm_, &async) != ncclSuccess || async != ncclInProgress) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s_) break;
    std::this_thread::yield();
  }
  if (async == ncclSuccess)
    ncclCommDestroy(comm_);
  else
    ncclCommAbort(comm_);
}

void NcclComm::wait(int result, const char* what) {
  if (result != ncclSuccess && result != ncclInProgress) {
    const std::string last = ncclGetLastError(comm_) ? ncclGetLastError(comm_) : "";
    throw Error(std::string("NCCL ") + what + " failed on " + where() + ": " +
                ncclGetErrorString(static_cast<ncclResult_t>(result)) + (last.empty() ? "" : " (" + last + ")"));
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (aborted_) throw Error(std::string("NCCL ") + what + " on " + where() + ": the communicator was aborted");
    NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const std::string last = ncclGetLastError(comm_) ? ncclGetLastError(comm_) : "";
      abort();
      throw Error(std::string("NCCL ") + what + " failed on " + where() + ": " + ncclGetErrorString(state) +
                  (last.empty() ? "" : " (" + last + ")"));
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s_) {
      abort();
      throw Error(std::string("NCCL ") + what + " on " + where() + " still in progress after " +
                  std::to_string(timeout_s_) + " s; the communicator was aborted (is every rank running?)");
    }
    std::this_thread::yield();
  }
}

void NcclComm::check_async(const char* what) {
  if (aborted_ || !comm_) return;
  ncclResult_t state = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
  if (state != ncclSuccess && state != ncclInProgress) {
    abort();
    throw Error(std::string("NCCL ") + what + " on " + where() + ": asynchronous error " + ncclGetErrorString(state));
  }
}

void NcclComm::abort() noexcept {
  if (!comm_ || aborted_) return;
  aborted_ = true;
  ncclCommAbort(comm_);
}

void abort_all_nccl_comms() noexcept {
  std::lock_guard lock(registry_mutex());
  for (NcclComm* c : registry()) c->abort();
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL_VERSION_CODE = major * 10000 + minor * 100 + patch since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace commsim::cuda
