// The `cuda` backend: buffers on the GPU, hand-written schedules through the CUDA executor (IPC
// kernels inside a node, NCCL point-to-point across nodes), NCCL's collectives as algorithms
// nccl / nccl-ring / nccl-tree, CUDA events around every iteration, optional CUDA graphs.
#include "runtime/sweep/backend.h"

#ifdef COMMSIM_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/cuda_executor.h"
#include "collectives/elements/reduce.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"
#include "runtime/job/watchdog.h"

#ifdef COMMSIM_HAVE_NCCL
#include "collectives/cuda/nccl_baselines.h"
#include "collectives/generators.h"
#endif

namespace commsim {
namespace {

// --graph captures points up to this size: above it launch overhead is noise.
constexpr std::uint64_t kGraphMaxBytes = 16ull << 20;
// A kernel waiting longer than this for a peer stops with an error instead of hanging the GPU.
constexpr double kKernelTimeout_s = 120;

// The same error on every rank, or none: each rank passes its own message ("" when fine).
void agree_or_throw(const std::string& mine) {
  int bad = mine.empty() ? 0 : 1, any = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (any) throw Error(mine.empty() ? "the cuda backend failed to start on another rank (see its message)" : mine);
}

[[maybe_unused]] double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendContext& ctx) : ctx_(ctx) {
    std::string problem;
    int ndev = 0;
    const cudaError_t rc = cudaGetDeviceCount(&ndev);
    if (rc != cudaSuccess || ndev == 0) {
      problem = "no CUDA GPU visible on " + cuda::where() +
                (rc != cudaSuccess ? std::string(" (") + cudaGetErrorString(rc) + ")" : std::string());
    } else if (ctx.local_ranks > ndev && !ctx.share_gpu) {
      problem = std::to_string(ctx.local_ranks) + " ranks on the node of " + cuda::where() + " but only " +
                std::to_string(ndev) + " GPUs visible: start at most one rank per GPU, or pass --share-gpu " +
                "(hand-written kernels only, for testing)";
    }
    if (problem.empty()) {
      device_ = ctx.local_rank % ndev;
      ranks_per_gpu_ = (ctx.local_ranks + ndev - 1) / ndev;
      if (cudaSetDevice(device_) != cudaSuccess)
        problem = "cannot use GPU " + std::to_string(device_) + " on " + cuda::where();
    }
    agree_or_throw(problem);

    cuda::ExecutorOptions opt;
    opt.timeout_s = kKernelTimeout_s;
    if (ctx.transport == "nccl") {
      opt.force_nccl = true;
    } else if (!ctx.transport.empty() && ctx.transport != "mpi" && ctx.transport != "ipc" && ctx.transport != "auto") {
      throw Error("transport '" + ctx.transport + "' is not available for the cuda backend (ipc inside a node, nccl)");
    }
#ifdef COMMSIM_HAVE_NCCL
    // Before any NCCL communicator exists, so NCCL's tuning log can still be switched on.
    baselines_ = std::make_unique<cuda::NcclBaselines>(MPI_COMM_WORLD, kKernelTimeout_s);
#endif
    executor_ = std::make_unique<cuda::CudaExecutor>(MPI_COMM_WORLD, opt);
    if (ctx.transport == "ipc" && executor_->transport() != "ipc")
      throw Error("transport ipc needs every rank on one node; this run spans several (use nccl)");
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
#ifdef COMMSIM_HAVE_NCCL
    // The watchdog aborts NCCL communicators before it aborts the job (a hung NCCL kernel would
    // otherwise outlive the process on the GPU).
    static const bool hooked = [] {
      add_abort_hook([] { cuda::abort_all_nccl_comms(); });
      return true;
    }();
    (void)hooked;
#endif
  }

  ~CudaBackend() override {
    release();
    if (stream_) cudaStreamDestroy(stream_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }

  std::string_view name() const override {
    return "cuda";
  }
  std::string_view transport() const override {
    return executor_->transport();
  }

  std::string unsupported(const PointSetup& s) const override {
    if (s.in_place) return "in-place runs are not implemented on the cuda backend";
    if (is_hand_written(s.algorithm)) return {};
    if (s.algorithm == Algorithm::Mpi) return "mpi runs on the host backend (--backend host)";
#ifndef COMMSIM_HAVE_NCCL
    return "this build has no NCCL";
#else
    if (ranks_per_gpu_ > 1) return "NCCL refuses two ranks on one GPU (--share-gpu runs hand-written kernels only)";
    if (s.algorithm == Algorithm::NcclTree && s.collective != Collective::AllReduce)
      return "NCCL has a Tree algorithm for allreduce only";
    return forced_nccl_unavailable(s.algorithm);
#endif
  }

  std::uint64_t bytes_needed(const PointSetup& s) const override {
    const std::uint64_t es = dtype_size(s.dtype);
    if (s.schedule) {
      const Schedule& sc = *s.schedule;
      // The nccl transport also stages RecvReduce data, at most one Output's worth.
      const std::uint64_t staging = executor_->transport() == "nccl" ? sc.output_count : 0;
      return (sc.input_count + sc.output_count + sc.scratch_count + staging) * es;
    }
    const auto [in, out] = buffer_counts(s);
    return (in + out) * es;
  }

  std::uint64_t bytes_available() const override {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
    // What this process already holds is reused by the next point.
    const std::uint64_t held = executor_->input_bytes() + executor_->output_bytes();
    return (free_b + held) / static_cast<std::uint64_t>(std::max(ranks_per_gpu_, 1));
  }

  void prepare(const PointSetup& s) override {
    release();
    setup_ = s;
    const std::uint64_t es = dtype_size(s.dtype);
    if (s.schedule) {
      handle_ = executor_->prepare(*s.schedule);
      in_count_ = s.schedule->input_count;
      out_count_ = s.schedule->output_count;
    } else {
      std::tie(in_count_, out_count_) = buffer_counts(s);
      executor_->reserve(in_count_ * es, out_count_ * es, 0);
#ifdef COMMSIM_HAVE_NCCL
      request_ = cuda::NcclRequest{s.collective, s.algorithm, s.protocol, s.dtype, s.op, s.count, s.root};
      baselines_->mark();
      choice_.reset();
#endif
    }
    std::vector<unsigned char> host(in_count_ * es);
    fill_input(host.data(), in_count_, s.dtype, s.collective, ctx_.rank, ctx_.nranks);
    if (!host.empty()) CUDA_CHECK(cudaMemcpy(executor_->input(), host.data(), host.size(), cudaMemcpyHostToDevice));
    times_s_.clear();
    if (ctx_.graph && s.count * es <= kGraphMaxBytes) {
      // One plain run first: it creates NCCL communicators and loads modules outside the capture.
      launch();
      sync("the run before graph capture");
      CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      enqueue();
      CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
      CUDA_CHECK(cudaGraphInstantiate(&graph_exec_, graph_, 0));
    }
  }

  // nccl-tests' timed loop: every iteration enqueued, then one wait; the host's clock around both.
  double run_back_to_back(int n, bool blocking) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      launch();
      if (blocking) sync("an iteration");
    }
    sync("the timed iterations");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  double run_once() override {
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    launch();
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    sync("an iteration");
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    times_s_.push_back(ms * 1e-3);
    return ms * 1e-3;
  }

  std::uint64_t check() override {
    const std::uint64_t es = dtype_size(setup_.dtype);
    // All-ones bytes are NaN in every float type: an element the algorithm fails to write is wrong.
    CUDA_CHECK(cudaMemsetAsync(executor_->output(), 0xff, out_count_ * es, stream_));
    launch();
    sync("the checked iteration");
    std::vector<unsigned char> out(out_count_ * es);
    if (!out.empty()) CUDA_CHECK(cudaMemcpy(out.data(), executor_->output(), out.size(), cudaMemcpyDeviceToHost));
    if (setup_.inject_error_rank == ctx_.rank && out_count_ > 0) out[(out_count_ / 2) * es] ^= 1;
    return count_wrong(out.data(), out_count_, setup_.dtype, setup_.op, setup_.collective, ctx_.rank, ctx_.nranks,
                       setup_.root);
  }

  void release() override {
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    if (graph_) cudaGraphDestroy(graph_);
    graph_exec_ = nullptr;
    graph_ = nullptr;
    handle_ = -1;
    in_count_ = out_count_ = 0;
  }

  std::string note() const override {
    std::string n;
    if (setup_.schedule && handle_ >= 0) {
      n = executor_->transport() == "ipc" ? "ipc kernel, " + std::to_string(executor_->channels(handle_)) + " channels"
                                          : "nccl p2p transfers, our reduce kernel";
    }
#ifdef COMMSIM_HAVE_NCCL
    else {
      const cuda::NcclSetting forced = cuda::NcclBaselines::setting_for(request_);
      const NcclChoice& ran = choice();
      if (forced.forced()) {
        n = "forced " + forced.describe();
        forced_median_s_[key()][forced.describe()] = median(times_s_);
        if (!ran.empty()) n += "; NCCL ran " + describe(ran);
      } else if (!ran.empty()) {
        n = "NCCL picked " + describe(ran) + " (from NCCL's TUNING log)";
      } else if (ctx_.nranks == 1) {
        n = "NCCL with one rank copies locally (no algorithm to pick)";
      } else if (setup_.collective == Collective::SendRecv || setup_.collective == Collective::AllToAll) {
        n = "NCCL point-to-point (no algorithm to pick)";
      } else {
        std::vector<std::pair<std::string, double>> forced_runs;
        if (auto it = forced_median_s_.find(key()); it != forced_median_s_.end())
          forced_runs.assign(it->second.begin(), it->second.end());
        n = cuda::closest_forced(median(times_s_), forced_runs);
        if (n.empty()) n = "NCCL's choice not logged (NCCL_DEBUG set by the user?) and no forced run to match";
      }
    }
#endif
    if (graph_exec_) n += n.empty() ? "cuda graph" : "; cuda graph";
    return n;
  }

  NcclRan nccl_ran() const override {
#ifdef COMMSIM_HAVE_NCCL
    if (!setup_.schedule) {
      const NcclChoice& ran = choice();
      return {ran.algorithm, ran.protocol, ran.channels};
    }
#endif
    return {};
  }

 private:
#ifdef COMMSIM_HAVE_NCCL
  // What NCCL's TUNING log says it ran for the point last run, read once per point.
  const NcclChoice& choice() const {
    if (!choice_) choice_ = baselines_->picked(setup_.collective);
    return *choice_;
  }
  static std::string describe(const NcclChoice& c) {
    std::string s = c.algorithm + "/" + c.protocol;
    if (c.channels > 0) s += " on " + std::to_string(c.channels) + " channel" + (c.channels == 1 ? "" : "s");
    if (c.other > 0)
      s += " (" + std::to_string(c.other) + " of " + std::to_string(c.calls + c.other) + " calls otherwise)";
    return s;
  }
#endif

  // Why NCCL cannot run a forced algorithm here, as far as the settings of this process tell; "" when
  // it may (NCCL itself fails a collective it has no algorithm for).
  std::string forced_nccl_unavailable(Algorithm a) const {
    auto env_is = [](const char* name, const char* value) {
      const char* v = std::getenv(name);
      return v != nullptr && std::string_view(v) == value;
    };
    if ((a == Algorithm::NcclNvls || a == Algorithm::NcclNvlsTree) && env_is("NCCL_NVLS_ENABLE", "0"))
      return "NVLink SHARP is switched off (NCCL_NVLS_ENABLE=0)";
    if ((a == Algorithm::NcclCollnetDirect || a == Algorithm::NcclCollnetChain) && !env_is("NCCL_COLLNET_ENABLE", "1"))
      return "CollNet needs NCCL_COLLNET_ENABLE=1 and a SHARP network plugin";
    if (a == Algorithm::NcclPat && ctx_.local_ranks > 1) return "NCCL runs PAT with one GPU per node only";
    return {};
  }

  std::pair<std::uint64_t, std::uint64_t> buffer_counts(const PointSetup& s) const {
    const BufferCounts bc = commsim::buffer_counts(s.collective, s.count, ctx_.nranks);
    return {bc.input, bc.output};
  }

  std::tuple<int, std::uint64_t, int> key() const {
    return {static_cast<int>(setup_.collective), setup_.count, static_cast<int>(setup_.dtype)};
  }

  void enqueue() {
    if (setup_.schedule) {
      executor_->enqueue(handle_, setup_.dtype, setup_.op, stream_);
      return;
    }
#ifdef COMMSIM_HAVE_NCCL
    baselines_->enqueue(request_, executor_->input(), executor_->output(), stream_);
#endif
  }

  void launch() {
    if (graph_exec_)
      CUDA_CHECK(cudaGraphLaunch(graph_exec_, stream_));
    else
      enqueue();
  }

  void sync(const char* what) {
    const cudaError_t rc = cudaStreamSynchronize(stream_);
    if (rc == cudaSuccess) return;
    const std::string why = executor_->device_error();
    throw Error(std::string("GPU failure in ") + what + " on " + cuda::where() + ": " + cudaGetErrorString(rc) +
                (why.empty() ? "" : " (" + why + ")"));
  }

  BackendContext ctx_;
  int device_ = 0;
  int ranks_per_gpu_ = 1;
  std::unique_ptr<cuda::CudaExecutor> executor_;
#ifdef COMMSIM_HAVE_NCCL
  std::unique_ptr<cuda::NcclBaselines> baselines_;
  cuda::NcclRequest request_;
  // Median local times of forced NCCL runs by (collective, count, dtype): the fallback that names
  // NCCL's choice by the forced run it matches.
  mutable std::map<std::tuple<int, std::uint64_t, int>, std::map<std::string, double>> forced_median_s_;
  mutable std::optional<NcclChoice> choice_;
#endif
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  PointSetup setup_;
  int handle_ = -1;
  std::uint64_t in_count_ = 0, out_count_ = 0;
  std::vector<double> times_s_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendContext& ctx) {
  return std::make_unique<CudaBackend>(ctx);
}

}  // namespace commsim

#endif  // COMMSIM_HAVE_CUDA
