#include "collectives/cuda/cuda_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/executor_program.h"
#include "collectives/cuda/ipc.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"

#ifdef COMMSIM_HAVE_NCCL
#include <nccl.h>

#include "collectives/cuda/nccl_comm.h"
#else
namespace commsim::cuda {
// Without NCCL there is no nccl transport; the member stays empty.
class NcclComm {};
}  // namespace commsim::cuda
#endif

namespace commsim::cuda {

using detail::DevOp;
using detail::DevRound;

struct CudaExecutor::Program {
  std::uint32_t elem_size = 0;
  int blocks = 1;
  int groups = 1;  // block groups, one per channel of the schedule (ExecParams::groups)
  std::uint64_t staging_bytes = 0;
  std::vector<DevRound> rounds;
  std::vector<DevOp> ops;
  std::vector<std::uint64_t> send_total, recv_total;  // [nranks]
  DevRound* d_rounds = nullptr;
  DevOp* d_ops = nullptr;
  std::uint64_t* d_totals = nullptr;  // send_total then recv_total

  ~Program() {
    cudaFree(d_rounds);
    cudaFree(d_ops);
    cudaFree(d_totals);
  }
};

namespace {

constexpr std::uint64_t kMinBuffer = 256;
// Bytes of the request each IPC channel should have to itself before another channel pays off.
constexpr std::uint64_t kBytesPerChannel = 256 * 1024;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return (v + to - 1) / to * to;
}


template <typename T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  const std::size_t bytes = std::max<std::size_t>(1, v.size()) * sizeof(T);
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), bytes));
  if (!v.empty()) CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

CudaExecutor::CudaExecutor(MPI_Comm comm, ExecutorOptions options) : options_(options) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
  MPI_Comm node = MPI_COMM_NULL;
  COMMSIM_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  int node_size = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_size(node, &node_size));
  const bool one_node = node_size == nranks_;
  if (one_node && !options_.force_nccl) {
    transport_ = "ipc";
    ipc_ = std::make_unique<IpcMap>(node);
  } else {
    transport_ = "nccl";
  }
  COMMSIM_MPI_CHECK(MPI_Comm_free(&node));

  if (transport_ == "ipc") {
    int mine = detail::executor_max_blocks();
    if (options_.max_channels > 0) mine = std::min(mine, options_.max_channels);
    // Every rank must launch the same number of blocks (acknowledgements count blocks).
    COMMSIM_MPI_CHECK(MPI_Allreduce(&mine, &max_blocks_, 1, MPI_INT, MPI_MIN, comm_));
    const std::size_t flag_bytes = sizeof(std::uint64_t) * detail::kFlagArrays * nranks_;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&flags_), flag_bytes));
    CUDA_CHECK(cudaMemset(flags_, 0, flag_bytes));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_peer_buf_), sizeof(char*) * detail::kBuffers * nranks_));
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_peer_flags_), sizeof(std::uint64_t*) * nranks_));
    CUDA_CHECK(cudaHostAlloc(&error_record_, sizeof(detail::ErrorRecord), cudaHostAllocMapped));
    std::memset(error_record_, 0, sizeof(detail::ErrorRecord));
    CUDA_CHECK(cudaDeviceSynchronize());
  } else {
#ifdef COMMSIM_HAVE_NCCL
    nccl_ = std::make_unique<NcclComm>(comm_, NcclSetting{}, options_.timeout_s);
#else
    throw Error(
        "the cuda backend needs NCCL to run schedules across nodes (or with --force-nccl), and this build "
        "has no NCCL: rebuild with NCCL found (NCCL_HOME) or run on one node");
#endif
  }
  reserve(kMinBuffer, kMinBuffer, kMinBuffer);
}

CudaExecutor::~CudaExecutor() {
  programs_.clear();
  release_buffers();
  if (error_record_) cudaFreeHost(error_record_);
  int fin = 0;
  COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin));
  if (!fin && comm_ != MPI_COMM_NULL) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
}

void CudaExecutor::release_buffers() noexcept {
  // Close the peers' mappings first; wait until every rank has closed its mappings of ours before
  // freeing them, unless this rank is unwinding from an error (the others may never arrive).
  ipc_.reset();
  int fin = 0;
  COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin));
  if (transport_ == "ipc" && !fin && std::uncaught_exceptions() == 0) COMMSIM_MPI_CHECK_NOTHROW(MPI_Barrier(comm_));
  for (auto& b : buf_) {
    cudaFree(b.ptr);
    b = Buffer{};
  }
  cudaFree(staging_.ptr);
  staging_ = Buffer{};
  cudaFree(flags_);
  cudaFree(d_peer_buf_);
  cudaFree(d_peer_flags_);
  flags_ = nullptr;
  d_peer_buf_ = nullptr;
  d_peer_flags_ = nullptr;
  nccl_.reset();
}

void CudaExecutor::reserve(std::uint64_t input_bytes, std::uint64_t output_bytes, std::uint64_t scratch_bytes) {
  std::uint64_t want[3] = {std::max(input_bytes, kMinBuffer), std::max(output_bytes, kMinBuffer),
                           std::max(scratch_bytes, kMinBuffer)};
  std::uint64_t agreed[3];
  COMMSIM_MPI_CHECK(MPI_Allreduce(want, agreed, 3, MPI_UINT64_T, MPI_MAX, comm_));
  bool changed = false;
  for (int b = 0; b < 3; ++b) {
    if (agreed[b] <= buf_[b].bytes) continue;
    if (buf_[b].ptr) {
      if (ipc_) ipc_->unmap(buf_[b].ptr);
      CUDA_CHECK(cudaFree(buf_[b].ptr));
    }
    const std::uint64_t bytes = round_up(agreed[b], 2u << 20);
    if (cudaMalloc(&buf_[b].ptr, bytes) != cudaSuccess) {
      cudaGetLastError();
      buf_[b] = Buffer{};
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes of GPU memory for the " +
                  to_string(static_cast<BufferId>(b)) + " buffer on " + where() +
                  ": use smaller --sizes or fewer ranks per GPU");
    }
    buf_[b].bytes = bytes;
    changed = true;
  }
  if (changed && ipc_) map_all();
}

void CudaExecutor::map_all() {
  std::vector<char*> peer_buf(static_cast<std::size_t>(detail::kBuffers) * nranks_);
  for (int b = 0; b < detail::kBuffers; ++b) {
    const auto& ptrs = ipc_->map(buf_[b].ptr);
    for (int r = 0; r < nranks_; ++r) peer_buf[r * detail::kBuffers + b] = static_cast<char*>(ptrs[r]);
  }
  const auto& flag_ptrs = ipc_->map(flags_);
  std::vector<std::uint64_t*> peer_flags(nranks_);
  for (int r = 0; r < nranks_; ++r) peer_flags[r] = static_cast<std::uint64_t*>(flag_ptrs[r]);
  CUDA_CHECK(cudaMemcpy(d_peer_buf_, peer_buf.data(), sizeof(char*) * peer_buf.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_peer_flags_, peer_flags.data(), sizeof(std::uint64_t*) * nranks_, cudaMemcpyHostToDevice));
}

int CudaExecutor::prepare(const Schedule& s) {
  const auto key = std::make_tuple(static_cast<int>(s.collective), static_cast<int>(s.algorithm), s.nranks, s.root,
                                   s.elem_size, s.count, s.channels);
  if (auto it = program_index_.find(key); it != program_index_.end()) return it->second;
  if (s.nranks != nranks_)
    throw Error("schedule " + std::string(to_string(s.algorithm)) + " " + std::string(to_string(s.collective)) +
                " is for " + std::to_string(s.nranks) + " ranks but the run has " + std::to_string(nranks_));
  if (static_cast<int>(s.ranks.size()) != s.nranks)
    throw Error("schedule has programs for " + std::to_string(s.ranks.size()) + " ranks, expected " +
                std::to_string(s.nranks));
  const std::uint64_t es = s.elem_size;
  const std::uint64_t cap[3] = {s.input_count, s.output_count, s.scratch_count};
  const std::string name = std::string(to_string(s.algorithm)) + " " + std::string(to_string(s.collective));
  auto where_op = [&](int rank, std::size_t round, std::size_t op) {
    return name + ": rank " + std::to_string(rank) + " round " + std::to_string(round) + " op " + std::to_string(op);
  };
  auto check_span = [&](const Span& sp, int rank, std::size_t round, std::size_t op) {
    const auto b = static_cast<int>(sp.buffer);
    if (b < 0 || b > 2 || sp.offset > cap[b] || sp.count > cap[b] - sp.offset)
      throw Error(where_op(rank, round, op) + ": span [" + std::to_string(sp.offset) + ", +" +
                  std::to_string(sp.count) + ") outside the " + to_string(sp.buffer) + " buffer of " +
                  std::to_string(cap[b]) + " elements");
  };

  // The sends every peer addresses to this rank, in posting order: the k-th receive from a peer
  // reads the k-th of these.
  std::vector<std::vector<Span>> incoming(nranks_);
  for (int a = 0; a < nranks_; ++a)
    for (std::size_t r = 0; r < s.ranks[a].rounds.size(); ++r)
      for (std::size_t i = 0; i < s.ranks[a].rounds[r].ops.size(); ++i) {
        const Op& op = s.ranks[a].rounds[r].ops[i];
        if (op.kind == OpKind::Send && op.peer == rank_) {
          check_span(op.src, a, r, i);
          incoming[a].push_back(op.src);
        }
      }

  auto prog = std::make_unique<Program>();
  prog->elem_size = s.elem_size;
  prog->send_total.assign(nranks_, 0);
  prog->recv_total.assign(nranks_, 0);
  const auto& mine = s.ranks[rank_];
  for (std::size_t r = 0; r < mine.rounds.size(); ++r) {
    DevRound rd;
    rd.first = static_cast<std::uint32_t>(prog->ops.size());
    std::vector<DevOp> local, sends, recvs;
    std::uint64_t round_staging = 0;
    for (std::size_t i = 0; i < mine.rounds[r].ops.size(); ++i) {
      const Op& op = mine.rounds[r].ops[i];
      DevOp d;
      d.channel = op.channel;
      const bool transfer = op.kind == OpKind::Send || op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce;
      if (transfer && (op.peer < 0 || op.peer >= nranks_ || op.peer == rank_))
        throw Error(where_op(rank_, r, i) + ": peer " + std::to_string(op.peer) + " is not another rank");
      d.peer = op.peer;
      switch (op.kind) {
        case OpKind::Copy:
        case OpKind::Reduce:
          check_span(op.src, rank_, r, i);
          check_span(op.dst, rank_, r, i);
          if (op.src.count != op.dst.count)
            throw Error(where_op(rank_, r, i) + ": source and destination differ in length");
          d.code = op.kind == OpKind::Copy ? detail::kCopy : detail::kReduce;
          d.src_off = op.src.offset * es;
          d.src_buf = static_cast<std::uint8_t>(op.src.buffer);
          d.dst_off = op.dst.offset * es;
          d.dst_buf = static_cast<std::uint8_t>(op.dst.buffer);
          d.count = op.dst.count;
          local.push_back(d);
          break;
        case OpKind::Send:
          check_span(op.src, rank_, r, i);
          d.code = detail::kSend;
          d.src_off = op.src.offset * es;
          d.src_buf = static_cast<std::uint8_t>(op.src.buffer);
          d.count = op.src.count;
          d.seq = ++prog->send_total[op.peer];
          sends.push_back(d);
          break;
        case OpKind::Recv:
        case OpKind::RecvReduce: {
          check_span(op.dst, rank_, r, i);
          const std::uint64_t k = ++prog->recv_total[op.peer];
          if (k > incoming[op.peer].size())
            throw Error(where_op(rank_, r, i) + ": receive number " + std::to_string(k) + " from rank " +
                        std::to_string(op.peer) + " has no matching send");
          const Span& from = incoming[op.peer][k - 1];
          if (from.count != op.dst.count)
            throw Error(where_op(rank_, r, i) + ": receives " + std::to_string(op.dst.count) + " elements but rank " +
                        std::to_string(op.peer) + " sends " + std::to_string(from.count));
          d.code = op.kind == OpKind::Recv ? detail::kRecv : detail::kRecvReduce;
          d.src_off = from.offset * es;
          d.src_buf = static_cast<std::uint8_t>(from.buffer);
          d.dst_off = op.dst.offset * es;
          d.dst_buf = static_cast<std::uint8_t>(op.dst.buffer);
          d.count = op.dst.count;
          d.seq = k;
          if (op.kind == OpKind::RecvReduce) round_staging += round_up(d.count * es, 256);
          recvs.push_back(d);
          break;
        }
      }
    }
    rd.n_local = static_cast<std::uint32_t>(local.size());
    rd.n_send = static_cast<std::uint32_t>(sends.size());
    rd.n_recv = static_cast<std::uint32_t>(recvs.size());
    for (auto* v : {&local, &sends, &recvs}) prog->ops.insert(prog->ops.end(), v->begin(), v->end());
    prog->rounds.push_back(rd);
    prog->staging_bytes = std::max(prog->staging_bytes, round_staging);
  }
  for (int a = 0; a < nranks_; ++a)
    if (prog->recv_total[a] != incoming[a].size())
      throw Error(name + ": rank " + std::to_string(a) + " sends " + std::to_string(incoming[a].size()) +
                  " messages to rank " + std::to_string(rank_) + ", which receives " +
                  std::to_string(prog->recv_total[a]));

  const std::uint64_t request_bytes = s.count * es;
  prog->blocks = static_cast<int>(std::clamp<std::uint64_t>((request_bytes + kBytesPerChannel - 1) / kBytesPerChannel,
                                                            1, static_cast<std::uint64_t>(max_blocks_)));
  // A multi-channel schedule: at least one block per channel where the device has them, each
  // group of blocks serving its own channels' receives.
  prog->blocks = std::max(prog->blocks, std::min(std::max(s.channels, 1), max_blocks_));
  prog->groups = std::clamp(s.channels, 1, prog->blocks);
  prog->d_rounds = upload(prog->rounds);
  prog->d_ops = upload(prog->ops);
  std::vector<std::uint64_t> totals = prog->send_total;
  totals.insert(totals.end(), prog->recv_total.begin(), prog->recv_total.end());
  prog->d_totals = upload(totals);

  reserve(s.input_count * es, s.output_count * es, s.scratch_count * es);
  if (transport_ == "nccl") {
    std::uint64_t want = prog->staging_bytes, agreed = 0;
    COMMSIM_MPI_CHECK(MPI_Allreduce(&want, &agreed, 1, MPI_UINT64_T, MPI_MAX, comm_));
    if (agreed > staging_.bytes) {
      cudaFree(staging_.ptr);
      staging_ = Buffer{};
      CUDA_CHECK(cudaMalloc(&staging_.ptr, agreed));
      staging_.bytes = agreed;
    }
  }
  programs_.push_back(std::move(prog));
  const int handle = static_cast<int>(programs_.size()) - 1;
  program_index_[key] = handle;
  return handle;
}

int CudaExecutor::channels(int handle) const {
  return programs_.at(handle)->blocks;
}

void CudaExecutor::enqueue(int handle, DType dtype, RedOp op, Stream stream) {
  const Program& prog = *programs_.at(handle);
  if (dtype_size(dtype) != prog.elem_size)
    throw Error("schedule prepared for " + std::to_string(prog.elem_size) + "-byte elements, run with " +
                std::string(to_string(dtype)));
  char* base[3] = {static_cast<char*>(buf_[0].ptr), static_cast<char*>(buf_[1].ptr), static_cast<char*>(buf_[2].ptr)};
  if (transport_ == "ipc") {
    detail::ExecParams p;
    p.rounds = prog.d_rounds;
    p.ops = prog.d_ops;
    p.send_total = prog.d_totals;
    p.recv_total = prog.d_totals + nranks_;
    p.nrounds = static_cast<std::uint32_t>(prog.rounds.size());
    p.nranks = nranks_;
    p.me = rank_;
    for (int b = 0; b < 3; ++b) p.buf[b] = base[b];
    p.peer_buf = d_peer_buf_;
    p.flags = flags_;
    p.peer_flags = d_peer_flags_;
    p.timeout_ns = static_cast<std::uint64_t>(options_.timeout_s * 1e9);
    void* dev_error = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&dev_error, error_record_, 0));
    p.error = static_cast<detail::ErrorRecord*>(dev_error);
    p.groups = prog.groups;
    detail::launch_executor(p, dtype, op, prog.blocks, stream);
    return;
  }
#ifdef COMMSIM_HAVE_NCCL
  const std::uint64_t es = prog.elem_size;
  char* staging = static_cast<char*>(staging_.ptr);
  for (const DevRound& rd : prog.rounds) {
    const DevOp* ops = prog.ops.data() + rd.first;
    for (std::uint32_t i = 0; i < rd.n_local; ++i) {
      const DevOp& o = ops[i];
      if (o.code == detail::kCopy)
        launch_copy(base[o.dst_buf] + o.dst_off, base[o.src_buf] + o.src_off, o.count * es, stream);
      else
        launch_reduce(base[o.dst_buf] + o.dst_off, base[o.src_buf] + o.src_off, o.count, dtype, op, stream);
    }
    if (rd.n_send + rd.n_recv == 0) continue;
    NCCL_CHECK(ncclGroupStart());
    for (std::uint32_t i = rd.n_local; i < rd.n_local + rd.n_send; ++i) {
      const DevOp& o = ops[i];
      NCCL_CHECK(ncclSend(base[o.src_buf] + o.src_off, o.count * es, ncclUint8, o.peer, nccl_->get(), stream));
    }
    std::uint64_t at = 0;
    for (std::uint32_t i = rd.n_local + rd.n_send; i < rd.n_local + rd.n_send + rd.n_recv; ++i) {
      const DevOp& o = ops[i];
      char* into = o.code == detail::kRecv ? base[o.dst_buf] + o.dst_off : staging + at;
      if (o.code == detail::kRecvReduce) at += round_up(o.count * es, 256);
      NCCL_CHECK(ncclRecv(into, o.count * es, ncclUint8, o.peer, nccl_->get(), stream));
    }
    nccl_->wait(ncclGroupEnd(), "ncclGroupEnd (schedule transfers)");
    at = 0;
    for (std::uint32_t i = rd.n_local + rd.n_send; i < rd.n_local + rd.n_send + rd.n_recv; ++i) {
      const DevOp& o = ops[i];
      if (o.code != detail::kRecvReduce) continue;
      launch_reduce(base[o.dst_buf] + o.dst_off, staging + at, o.count, dtype, op, stream);
      at += round_up(o.count * es, 256);
    }
  }
#else
  (void)op;
  (void)stream;
  throw Error("the nccl transport is absent from this build");
#endif
}

std::string CudaExecutor::device_error() const {
  if (!error_record_) return "";
  const auto* e = static_cast<const volatile detail::ErrorRecord*>(error_record_);
  if (e->code == 0) return "";
  const std::string what = e->code == 1 ? "for data from rank " : "for rank ";
  const std::string tail = e->code == 1 ? "" : " to acknowledge this rank's data";
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", static_cast<double>(e->waited_ns) * 1e-9);
  return "rank " + std::to_string(rank_) + " waited " + waited + " s in round " + std::to_string(e->round) + " " +
         what + std::to_string(e->peer) + tail + " (is every rank running the same schedule?)";
}

void CudaExecutor::abort() noexcept {
#ifdef COMMSIM_HAVE_NCCL
  if (nccl_) nccl_->abort();
#endif
}

}  // namespace commsim::cuda
