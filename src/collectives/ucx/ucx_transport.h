#pragma once
// Transport over UCX (UCP tag matching): the hand-written schedules moved by UCX directly, without
// MPI's point-to-point layer, so a run shows the network as UCX delivers it. MPI is used only to
// start: the worker addresses are exchanged with MPI_Allgather/MPI_Allgatherv.
//
// Set up once per transport (one per run): a UCP context, one worker on this rank, an endpoint to
// every rank (itself included), each fully connected (messages both ways, eager and rendezvous,
// then flushed) before the constructor returns, so no timed iteration pays for connection setup.
//
// Matching: the tag of a message is (source rank, sequence number of the message on that ordered
// pair), and a receive asks for exactly that tag. The k-th post_send from a to b therefore pairs
// with the k-th post_recv on b from a, whatever order UCX delivers in (the Transport contract).
// A receive whose message has a different length is an error, not a silent truncation.
//
// Progress: UCX moves data only while the worker is progressed; wait_some/wait_all progress it in
// a loop (busy polling, yielding the CPU at every idle poll when this node runs more ranks than
// it has cores, as Open MPI does when oversubscribed).
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "collectives/host/transport.h"

// UCP handles, declared here so that users of this header need no UCX headers.
struct ucp_context;
struct ucp_worker;
struct ucp_ep;

namespace commsim {

// Where the buffers passed to post_send/post_recv live.
enum class UcxMemory { Host, Cuda };

struct UcxTransportOptions {
  UcxMemory memory = UcxMemory::Host;
};

class UcxTransport final : public Transport {
 public:
  // Collective over `comm` (all its ranks call it together). Reads the UCX_* environment like any
  // UCX program. Throws Error, on every rank alike, when UCX fails to start on any rank (the
  // failing rank's message names the host, the UCP call and ucs_status_string), or when the UCX
  // found at run time cannot handle options.memory (e.g. CUDA memory with a UCX built without
  // CUDA support).
  explicit UcxTransport(MPI_Comm comm, UcxTransportOptions options = {});
  // Closes the endpoints (flushing them) and, after every rank has closed its own, destroys the
  // worker and the context. Collective, unless an exception is propagating: then it tears down
  // this rank's part alone. Never throws.
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string_view name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::uint64_t max_message_bytes() const override;

  std::size_t post_send(int peer, const void* buffer, std::uint64_t bytes) override;
  std::size_t post_recv(int peer, void* buffer, std::uint64_t bytes) override;
  // Throw Error (naming the peer, the direction and ucs_status_string, or the length mismatch) when
  // a request failed. After wait_all has thrown, every request is finished and the transport can
  // be used again.
  bool wait_some(std::vector<std::size_t>& done) override;
  void wait_all() override;

  // What carries this rank's messages, from UCX's own endpoint report: the UCX version and, per
  // distinct set of transports (UCX's lanes), the peers reached with it, e.g.
  // "UCX 1.13.1; cma/memory sysv/memory to rank 1; tcp/eth0 to ranks 2,3".
  std::string description() const;

 private:
  // One posted request; lives in a deque so its address (the callback's user data) is stable.
  struct Slot {
    UcxTransport* owner = nullptr;
    std::size_t index = 0;
    int peer = -1;
    bool recv = false;
    std::uint64_t bytes = 0;
    void* request = nullptr;  // UCP request while in flight; nullptr once complete
    bool done = false;
  };
  friend struct UcxCallbacks;  // the UCP completion callbacks (ucx_transport.cc)
  void complete(Slot& slot, int status, std::uint64_t received_bytes);
  std::size_t post(int peer, void* buffer, std::uint64_t bytes, bool recv);
  void progress();  // one ucp_worker_progress (yielding the CPU when idle and oversubscribed)
  void progress_until(std::size_t least_completed);
  void connect_all();
  void progress_through_barrier();  // MPI_Ibarrier on comm_, progressing the worker until it completes
  void teardown(bool collective) noexcept;
  [[noreturn]] void fail_request() const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  UcxTransportOptions options_;
  std::string host_;
  bool oversubscribed_ = false;

  ucp_context* context_ = nullptr;
  ucp_worker* worker_ = nullptr;
  std::vector<ucp_ep*> endpoints_;                  // by peer rank
  std::vector<std::uint64_t> send_seq_, recv_seq_;  // per peer: messages posted so far

  std::deque<Slot> slots_;              // this round's requests, by index
  std::vector<std::size_t> completed_;  // completed, not yet reported by wait_some
  std::size_t outstanding_ = 0;         // posted, not yet completed
  std::size_t unreported_ = 0;          // posted, not yet handed out by wait_some
  std::string error_;                   // first failed request (empty: none)
};

// The version of the UCX library loaded at run time ("1.13.1").
std::string ucx_runtime_version();

}  // namespace commsim
