#include "collectives/ucx/ucx_transport.h"

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "collectives/elements/cpus.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"

namespace commsim {
namespace {

// Tag = source rank in the high bits, per-pair sequence number in the low bits.
constexpr int kSeqBits = 40;
constexpr std::uint64_t kSeqMask = (std::uint64_t{1} << kSeqBits) - 1;
constexpr int kMaxRanks = 1 << (64 - kSeqBits);
constexpr ucp_tag_t kExactTag = ~ucp_tag_t{0};

ucp_tag_t make_tag(int source, std::uint64_t seq) {
  return (static_cast<ucp_tag_t>(source) << kSeqBits) | (seq & kSeqMask);
}

// Teardown never waits longer than this for UCX to finish closing (a dead peer must not hang us).
constexpr auto kTeardownLimit = std::chrono::seconds(30);

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown host";
  return buf;
}

std::string status_text(ucs_status_t s) {
  return ucs_status_string(s);
}

// A failed UCP call during setup: "ucp_init failed on rank 2 (node1): No such device".
std::string call_failed(const char* call, ucs_status_t s, int rank, const std::string& host) {
  return std::string("UCX ") + call + " failed on rank " + std::to_string(rank) + " (" + host + "): " + status_text(s);
}

std::string memory_type_names(std::uint64_t mask) {
  static const std::pair<ucs_memory_type_t, const char*> kNames[] = {
      {UCS_MEMORY_TYPE_HOST, "host"},
      {UCS_MEMORY_TYPE_CUDA, "cuda"},
      {UCS_MEMORY_TYPE_CUDA_MANAGED, "cuda-managed"},
      {UCS_MEMORY_TYPE_ROCM, "rocm"},
      {UCS_MEMORY_TYPE_ROCM_MANAGED, "rocm-managed"},
  };
  std::string s;
  for (const auto& [type, name] : kNames)
    if (mask & (std::uint64_t{1} << type)) s += (s.empty() ? "" : ", ") + std::string(name);
  return s.empty() ? "none" : s;
}

// The transports UCX prints for one endpoint (ucp_ep_print_info), e.g. {"posix/memory", "tcp/eth0"}.
std::set<std::string> endpoint_transports(ucp_ep_h ep) {
  std::set<std::string> out;
  char* text = nullptr;
  std::size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (!f) return out;
  ucp_ep_print_info(ep, f);
  std::fclose(f);
  // Lane lines read like "#   lane[0]:  3:posix/memory.0 md[3]  ..."; the transport/device
  // pair is the word after the resource index.
  std::istringstream in(std::string(text, len));
  std::free(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto lane = line.find("lane[");
    if (lane == std::string::npos) continue;
    std::istringstream words(line.substr(lane));
    std::string word;
    words >> word;  // lane[N]:
    while (words >> word) {
      const auto colon = word.find(':');
      const auto slash = word.find('/');
      if (colon == std::string::npos || slash == std::string::npos || slash < colon) continue;
      std::string tl = word.substr(colon + 1);
      if (const auto dot = tl.rfind('.'); dot != std::string::npos && dot > tl.find('/')) tl.erase(dot);
      out.insert(tl);
      break;
    }
  }
  return out;
}

}  // namespace

// The UCP completion callbacks: they only record the completion; wait_some/wait_all report it.
struct UcxCallbacks {
  static void send_done(void* request, ucs_status_t status, void* user_data) {
    auto* slot = static_cast<UcxTransport::Slot*>(user_data);
    slot->request = nullptr;
    ucp_request_free(request);
    slot->owner->complete(*slot, status, slot->bytes);
  }
  static void recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
    auto* slot = static_cast<UcxTransport::Slot*>(user_data);
    slot->request = nullptr;
    ucp_request_free(request);
    slot->owner->complete(*slot, status, status == UCS_OK && info ? info->length : slot->bytes);
  }
};

std::string ucx_runtime_version() {
  return ucp_get_version_string();
}

UcxTransport::UcxTransport(MPI_Comm comm, UcxTransportOptions options) : options_(options), host_(host_name()) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &size_));

  // Ranks on this node versus the CPUs this process may run on.
  {
    MPI_Comm node = MPI_COMM_NULL;
    int local = 1;
    COMMSIM_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
    COMMSIM_MPI_CHECK(MPI_Comm_size(node, &local));
    COMMSIM_MPI_CHECK(MPI_Comm_free(&node));
    oversubscribed_ = local > usable_cores();
  }

  // Setup steps that can fail on one rank are agreed on, so no rank waits in a collective for a
  // rank that gave up: the first failing rank's message is thrown on every rank.
  auto agree = [this](const std::string& mine) {
    const int me = mine.empty() ? size_ : rank_;
    int first = size_;
    COMMSIM_MPI_CHECK(MPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, comm_));
    if (first == size_) return;
    int len = rank_ == first ? static_cast<int>(mine.size()) : 0;
    COMMSIM_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT, first, comm_));
    std::string text = rank_ == first ? mine : std::string(static_cast<std::size_t>(len), ' ');
    COMMSIM_MPI_CHECK(MPI_Bcast(text.data(), len, MPI_CHAR, first, comm_));
    teardown(false);
    throw Error(text);
  };

  std::string problem;
  ucp_address_t* address = nullptr;
  std::size_t address_len = 0;
  if (size_ > kMaxRanks) problem = "the UCX transport supports at most " + std::to_string(kMaxRanks) + " ranks";
  if (problem.empty()) {
    ucp_config_t* config = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
    if (s != UCS_OK) {
      problem = call_failed("ucp_config_read", s, rank_, host_) + " (check the UCX_* environment variables)";
    } else {
      ucp_params_t params{};
      params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
      params.features = UCP_FEATURE_TAG;
      params.estimated_num_eps = static_cast<std::size_t>(size_);
      params.name = "commsim";
      s = ucp_init(&params, config, &context_);
      ucp_config_release(config);
      if (s != UCS_OK) {
        context_ = nullptr;
        problem = call_failed("ucp_init", s, rank_, host_) +
                  " (no usable UCX transport: check UCX_TLS and UCX_NET_DEVICES; `ucx_info -d` lists what this "
                  "UCX finds)";
      }
    }
  }
  if (problem.empty()) {
    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    const ucs_status_t s = ucp_context_query(context_, &attr);
    if (s != UCS_OK) {
      problem = call_failed("ucp_context_query", s, rank_, host_);
    } else if (options_.memory == UcxMemory::Cuda &&
               !(attr.memory_types & (std::uint64_t{1} << UCS_MEMORY_TYPE_CUDA))) {
      problem = "UCX " + ucx_runtime_version() + " on " + host_ +
                " does not support CUDA memory (UCX_MEMTYPE: the memory types it handles are " +
                memory_type_names(attr.memory_types) +
                "; it needs a UCX built with CUDA, whose cuda_copy and cuda_ipc transports `ucx_info -d` lists, and "
                "UCX_TLS, when set, must allow them)";
    }
  }
  if (problem.empty()) {
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucs_status_t s = ucp_worker_create(context_, &wp, &worker_);
    if (s != UCS_OK) {
      worker_ = nullptr;
      problem = call_failed("ucp_worker_create", s, rank_, host_);
    } else if ((s = ucp_worker_get_address(worker_, &address, &address_len)) != UCS_OK) {
      address = nullptr;
      problem = call_failed("ucp_worker_get_address", s, rank_, host_);
    }
  }
  agree(problem);

  // Exchange worker addresses: sizes first, then the addresses themselves.
  const int my_len = static_cast<int>(address_len);
  std::vector<int> lens(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  COMMSIM_MPI_CHECK(MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_));
  long long total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lens[static_cast<std::size_t>(r)];
  }
  if (total > std::numeric_limits<int>::max()) problem = "UCX worker addresses too large to exchange";
  std::vector<char> all(static_cast<std::size_t>(problem.empty() ? total : 0));
  if (problem.empty())
    COMMSIM_MPI_CHECK(
        MPI_Allgatherv(address, my_len, MPI_BYTE, all.data(), lens.data(), offsets.data(), MPI_BYTE, comm_));
  ucp_worker_release_address(worker_, address);
  agree(problem);

  endpoints_.assign(static_cast<std::size_t>(size_), nullptr);
  for (int r = 0; r < size_ && problem.empty(); ++r) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address = reinterpret_cast<const ucp_address_t*>(all.data() + offsets[static_cast<std::size_t>(r)]);
    const ucs_status_t s = ucp_ep_create(worker_, &ep, &endpoints_[static_cast<std::size_t>(r)]);
    if (s != UCS_OK) {
      endpoints_[static_cast<std::size_t>(r)] = nullptr;
      problem = call_failed("ucp_ep_create", s, rank_, host_) + " (endpoint to rank " + std::to_string(r) + ")";
    }
  }
  agree(problem);
  send_seq_.assign(static_cast<std::size_t>(size_), 0);
  recv_seq_.assign(static_cast<std::size_t>(size_), 0);

  try {
    connect_all();
  } catch (const Error& e) {
    problem = e.what();
  }
  agree(problem);
}

UcxTransport::~UcxTransport() {
  // An exception on its way out may be this rank's alone: the other ranks would never join a
  // collective teardown (main() aborts the job on such errors).
  teardown(std::uncaught_exceptions() == 0);
}

// UCX itself takes messages of any size; pieces of 1 GiB keep the executor's cutting uniform.
std::uint64_t UcxTransport::max_message_bytes() const {
  return std::uint64_t{1} << 30;
}

// Endpoints are wired up lazily and asynchronously: the first message starts UCX's handshake,
// which finishes only while both workers are progressed. Between timed iterations the ranks wait
// in MPI, not progressing UCX, so a handshake left unfinished here would stretch over hundreds of
// iterations. And UCX touches its shared-memory receive queues and buffers for the first time as
// messages use them (without this warm-up, a 1 KiB allreduce between two ranks took 3x longer
// over its first 50 iterations). Hence, with every peer: a burst of small (eager) messages that
// cycles through those queues, a large (rendezvous) one that sets up the lanes for bulk data;
// then a flush of every endpoint, then progress until every rank has got that far.
void UcxTransport::connect_all() {
  constexpr std::uint64_t kLarge = 256 * 1024;               // above UCX's rendezvous threshold for shm and tcp
  constexpr std::uint64_t kSmall = 2048, kSmallCount = 128;  // twice UCX's default shm FIFO depth
  std::vector<char> out(kLarge, 0), in(std::max(kLarge, kSmall * kSmallCount), 0);
  for (int d = 0; d < size_; ++d) {  // one peer at a time: fixed buffers whatever the rank count
    const int from = (rank_ - d + size_) % size_, to = (rank_ + d) % size_;
    for (std::uint64_t i = 0; i < kSmallCount; ++i) post_recv(from, in.data() + i * kSmall, kSmall);
    for (std::uint64_t i = 0; i < kSmallCount; ++i) post_send(to, out.data(), kSmall);
    post_recv(from, in.data(), kLarge);
    post_send(to, out.data(), kLarge);
    wait_all();
  }
  char dummy = 0;
  for (int r = 0; r < size_; ++r) post_recv(r, &dummy, 0);
  for (int r = 0; r < size_; ++r) post_send(r, &dummy, 0);
  wait_all();

  std::vector<ucs_status_ptr_t> flushing;
  for (ucp_ep_h ep : endpoints_) {
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_ep_flush_nbx(ep, &param);
    if (UCS_PTR_IS_ERR(req)) throw Error(call_failed("ucp_ep_flush_nbx", UCS_PTR_STATUS(req), rank_, host_));
    if (req) flushing.push_back(req);
  }
  for (ucs_status_ptr_t req : flushing) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS) progress();
    const ucs_status_t s = ucp_request_check_status(req);
    ucp_request_free(req);
    if (s != UCS_OK) throw Error(call_failed("ucp_ep_flush_nbx", s, rank_, host_));
  }
  progress_through_barrier();
}

void UcxTransport::progress_through_barrier() {
  // Also called from teardown, which must not throw: a failure is reported and ends the wait.
  MPI_Request barrier = MPI_REQUEST_NULL;
  if (!COMMSIM_MPI_CHECK_NOTHROW(MPI_Ibarrier(comm_, &barrier))) return;
  int done = 0;
  while (!done) {
    ucp_worker_progress(worker_);
    if (!COMMSIM_MPI_CHECK_NOTHROW(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE))) return;
  }
}

std::size_t UcxTransport::post_send(int peer, const void* buffer, std::uint64_t bytes) {
  return post(peer, const_cast<void*>(buffer), bytes, false);
}

std::size_t UcxTransport::post_recv(int peer, void* buffer, std::uint64_t bytes) {
  return post(peer, buffer, bytes, true);
}

std::size_t UcxTransport::post(int peer, void* buffer, std::uint64_t bytes, bool recv) {
  if (peer < 0 || peer >= size_)
    throw Error("UCX transport: peer " + std::to_string(peer) + " out of range (0.." + std::to_string(size_ - 1) + ")");
  const std::size_t index = slots_.size();
  Slot& slot = slots_.emplace_back();
  slot.owner = this;
  slot.index = index;
  slot.peer = peer;
  slot.recv = recv;
  slot.bytes = bytes;

  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.user_data = &slot;
  param.memory_type = options_.memory == UcxMemory::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t req = nullptr;
  if (recv) {
    // A receive always completes through its callback, the one place UCX reports the length that
    // arrived (the recv_info of an immediate completion is not filled by every UCX version).
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv = &UcxCallbacks::recv_done;
    const std::uint64_t seq = recv_seq_[static_cast<std::size_t>(peer)]++;
    req = ucp_tag_recv_nbx(worker_, buffer, bytes, make_tag(peer, seq), kExactTag, &param);
  } else {
    param.cb.send = &UcxCallbacks::send_done;
    const std::uint64_t seq = send_seq_[static_cast<std::size_t>(peer)]++;
    req = ucp_tag_send_nbx(endpoints_[static_cast<std::size_t>(peer)], buffer, bytes, make_tag(rank_, seq), &param);
  }
  ++outstanding_;
  ++unreported_;
  if (req == nullptr) {  // a send completed at once; the callback is not called
    complete(slot, UCS_OK, bytes);
  } else if (UCS_PTR_IS_ERR(req)) {
    complete(slot, UCS_PTR_STATUS(req), 0);
    fail_request();
  } else if (!slot.done) {  // the callback may already have run (and freed the request)
    slot.request = req;
  }
  return index;
}

void UcxTransport::complete(Slot& slot, int status, std::uint64_t received_bytes) {
  --outstanding_;
  slot.done = true;
  completed_.push_back(slot.index);
  const bool failed = status != UCS_OK, short_or_long = slot.recv && received_bytes != slot.bytes;
  if (!error_.empty() || (!failed && !short_or_long)) return;  // the fast path builds no strings
  const std::string what = std::string(slot.recv ? "receive from" : "send to") + " rank " + std::to_string(slot.peer) +
                           " of " + std::to_string(slot.bytes) + " bytes";
  if (failed) {
    error_ = "UCX " + what + " failed on rank " + std::to_string(rank_) + " (" + host_ +
             "): " + status_text(static_cast<ucs_status_t>(status));
  } else {
    error_ = "UCX " + what + " on rank " + std::to_string(rank_) + " (" + host_ + ") got " +
             std::to_string(received_bytes) + " bytes: the two ranks disagree on the schedule";
  }
}

void UcxTransport::fail_request() const {
  throw Error(error_);
}

void UcxTransport::progress() {
  // Nothing happened and this node runs more ranks than it has cores: give the core away, so the
  // peer sharing it can make the progress we wait for. Never otherwise: on a busy machine a
  // yielding rank queues behind unrelated processes (a rendezvous then takes milliseconds).
  if (ucp_worker_progress(worker_) == 0 && oversubscribed_) sched_yield();
}

void UcxTransport::progress_until(std::size_t least_completed) {
  while (completed_.size() < least_completed && outstanding_ > 0) progress();
}

bool UcxTransport::wait_some(std::vector<std::size_t>& done) {
  if (unreported_ == 0) return false;
  progress_until(1);
  if (!error_.empty()) fail_request();
  done.insert(done.end(), completed_.begin(), completed_.end());
  unreported_ -= completed_.size();
  completed_.clear();
  return true;
}

void UcxTransport::wait_all() {
  while (outstanding_ > 0) progress();
  slots_.clear();
  completed_.clear();
  unreported_ = 0;
  // Every request is finished and both ends counted it: the transport can go on after the error.
  if (!error_.empty()) throw Error(std::exchange(error_, std::string()));
}

std::string UcxTransport::description() const {
  // Peers grouped by the set of transports their endpoint uses.
  std::map<std::string, std::vector<int>> by_transports;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || !endpoints_[static_cast<std::size_t>(r)]) continue;
    std::string tls;
    for (const std::string& t : endpoint_transports(endpoints_[static_cast<std::size_t>(r)]))
      tls += tls.empty() ? t : " " + t;
    by_transports[tls.empty() ? "?" : tls].push_back(r);
  }
  std::string s = "UCX " + ucx_runtime_version();
  for (const auto& [tls, peers] : by_transports) {
    s += "; " + tls + " to rank";
    if (peers.size() > 1) s += "s";
    for (std::size_t i = 0; i < peers.size(); ++i) {
      s += i ? ',' : ' ';
      s += std::to_string(peers[i]);
    }
  }
  return s;
}

void UcxTransport::teardown(bool collective) noexcept {
  int finalized = 1;
  COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&finalized));
  if (finalized) collective = false;
  const auto deadline = std::chrono::steady_clock::now() + kTeardownLimit;
  auto in_time = [&] { return std::chrono::steady_clock::now() < deadline; };

  if (worker_) {
    // Requests still in flight (after an error): cancel them and let their callbacks run.
    for (Slot& slot : slots_)
      if (slot.request) ucp_request_cancel(worker_, slot.request);
    while (outstanding_ > 0 && in_time()) ucp_worker_progress(worker_);

    std::vector<ucs_status_ptr_t> closing;
    for (ucp_ep_h& ep : endpoints_) {
      if (!ep) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = collective ? 0 : UCP_EP_CLOSE_FLAG_FORCE;  // 0: flush, then close
      ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
      if (UCS_PTR_IS_PTR(req)) closing.push_back(req);
      ep = nullptr;
    }
    for (ucs_status_ptr_t req : closing) {
      while (ucp_request_check_status(req) == UCS_INPROGRESS && in_time()) ucp_worker_progress(worker_);
      if (ucp_request_check_status(req) != UCS_INPROGRESS) ucp_request_free(req);
    }
    // A peer's flush may need this worker's progress: keep progressing until every rank is done.
    if (collective) progress_through_barrier();
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  slots_.clear();
  if (context_) {
    ucp_cleanup(context_);
    context_ = nullptr;
  }
  if (comm_ != MPI_COMM_NULL && !finalized) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
  comm_ = MPI_COMM_NULL;
}

}  // namespace commsim
