// GPU correctness check of the CUDA backend under MPI, one process per rank:
//   1. CUDA IPC: every rank reads every peer's buffer through IpcMap and compares it with the
//      pattern the peer wrote;
//   2. every hand-written algorithm of every collective through CudaExecutor, at several element
//      counts (odd ones included), checked exactly with count_wrong (reduce.h); each case runs
//      twice so the second run exercises the sequence numbers carried between launches;
//   3. with --nccl: the NCCL baselines of all seven collectives, unforced and with the algorithm
//      and protocol forced, checked the same way;
//   with --channels LIST, step 2 runs only the algorithms that take a channel count (ring
//   allreduce, allgather, reducescatter; tree allreduce, broadcast, reduce; hierarchical allreduce,
//   allgather across nodes), once per channel count of LIST: multi-channel schedules, one block
//   group per channel.
//
//   mpiexec -np 4 cuda_collectives_check --share-gpu          (4 ranks on one GPU)
//   mpiexec -np 4 cuda_collectives_check --share-gpu --channels 2,5,16
//   mpiexec -np 1 cuda_collectives_check --nccl --no-executor  (NCCL needs one GPU per rank)
//
// Prints one line per case and a summary; exits 1 when anything is wrong. Without a GPU it prints
// "SKIPPED (no GPU)" and exits 0.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/cuda/cuda_check.h"
#include "collectives/cuda/cuda_executor.h"
#include "collectives/cuda/ipc.h"
#include "collectives/cuda/kernels.h"
#include "collectives/generators.h"
#include "collectives/elements/reduce.h"
#include "model/error.h"

#ifdef COMMSIM_HAVE_NCCL
#include "collectives/cuda/nccl_baselines.h"
#endif

using namespace commsim;
using namespace commsim::cuda;

namespace {

struct Options {
  bool share_gpu = false;
  bool nccl = false;
  bool executor = true;
  std::vector<std::uint64_t> counts = {1, 7, 1000, 65536 + 3, 1u << 20};
  std::vector<std::uint64_t> channels;  // --channels: the multi-channel cases only, at these counts
  std::string csv;
};

// "a,b,c" as numbers.
std::vector<std::uint64_t> parse_list(const std::string& list) {
  std::vector<std::uint64_t> out;
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(std::strtoull(list.substr(at, comma - at).c_str(), nullptr, 10));
    at = comma + 1;
  }
  return out;
}

int g_rank = 0, g_size = 1;
int g_cases = 0, g_failed = 0;
std::FILE* g_csv = nullptr;

void report(const std::string& what, long long wrong, double seconds, const std::string& extra = "") {
  ++g_cases;
  if (wrong != 0) ++g_failed;
  if (g_rank != 0) return;
  std::printf("%s %s%s%s (%.2f s)\n", wrong == 0 ? "PASS" : "FAIL", what.c_str(),
              wrong == 0 ? "" : (" wrong=" + std::to_string(wrong)).c_str(), extra.c_str(), seconds);
  std::fflush(stdout);
  if (g_csv) std::fprintf(g_csv, "%s,%lld,%.4f,\"%s\"\n", what.c_str(), wrong, seconds, extra.c_str());
}

long long sum_over_ranks(long long v) {
  long long s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return s;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_ipc(MPI_Comm node) {
  const double t0 = now_s();
  IpcMap ipc(node);
  const std::uint64_t n = (4u << 20) + 1;  // floats
  void* mine = nullptr;
  void* scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&mine, n * 4));
  CUDA_CHECK(cudaMalloc(&scratch, n * 4));
  launch_fill_random(mine, n, DType::Float32, 1000 + static_cast<std::uint32_t>(ipc.local_rank()), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  MPI_Barrier(node);
  const auto& ptrs = ipc.map(mine);
  long long wrong = 0;
  std::vector<float> got(n), want(n);
  for (int peer = 0; peer < ipc.local_size(); ++peer) {
    launch_copy(scratch, ptrs[peer], n * 4, nullptr);
    CUDA_CHECK(cudaMemcpy(got.data(), scratch, n * 4, cudaMemcpyDeviceToHost));
    launch_fill_random(scratch, n, DType::Float32, 1000 + static_cast<std::uint32_t>(peer), nullptr);
    CUDA_CHECK(cudaMemcpy(want.data(), scratch, n * 4, cudaMemcpyDeviceToHost));
    for (std::uint64_t i = 0; i < n; ++i) wrong += got[i] != want[i];
  }
  // Mapping the same buffer again must come from the cache.
  const bool cached = &ipc.map(mine) == &ptrs;
  wrong += cached ? 0 : 1;
  MPI_Barrier(node);
  ipc.unmap(mine);
  CUDA_CHECK(cudaFree(mine));
  CUDA_CHECK(cudaFree(scratch));
  report("ipc read of every peer's buffer (" + std::to_string(ipc.local_size()) + " ranks)", sum_over_ranks(wrong),
         now_s() - t0);
}

std::uint64_t run_and_count(CudaExecutor& ex, int handle, const Schedule& s, DType dt, RedOp op, Stream stream) {
  const std::uint64_t es = dtype_size(dt);
  // All-ones bytes are NaN in every float type: an element the schedule fails to write is wrong.
  CUDA_CHECK(cudaMemsetAsync(ex.output(), 0xff, s.output_count * es, stream));
  ex.enqueue(handle, dt, op, stream);
  const cudaError_t rc = cudaStreamSynchronize(stream);
  if (rc != cudaSuccess) {
    const std::string why = ex.device_error();
    throw Error(std::string("executor kernel failed: ") + cudaGetErrorString(rc) + (why.empty() ? "" : ": " + why));
  }
  std::vector<unsigned char> out(s.output_count * es);
  CUDA_CHECK(cudaMemcpy(out.data(), ex.output(), out.size(), cudaMemcpyDeviceToHost));
  return count_wrong(out.data(), s.output_count, dt, op, s.collective, g_rank, g_size, s.root);
}

void check_executor(const Options& o, const Placement& placement) {
  ExecutorOptions eo;
  eo.timeout_s = 30;  // fail fast: a case takes well under a second
  CudaExecutor ex(MPI_COMM_WORLD, eo);
  if (g_rank == 0) std::printf("executor transport: %s\n", ex.transport().c_str());
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Variant {
    DType dt;
    RedOp op;
  };
  for (Collective c : kAllCollectives) {
    for (Algorithm a : hand_written_algorithms(c)) {
      if (a == Algorithm::Hierarchical && placement.nnodes < 2) continue;
      if (!o.channels.empty() && !takes_channels(c, a)) continue;
      const std::vector<std::uint64_t> channel_counts = o.channels.empty() ? std::vector<std::uint64_t>{1} : o.channels;
      std::vector<Variant> variants = {{DType::Float32, RedOp::Sum}};
      if (c == Collective::AllReduce && a == Algorithm::Ring)
        variants = {{DType::Float32, RedOp::Sum},
                    {DType::Float64, RedOp::Sum},
                    {DType::Int32, RedOp::Max},
                    {DType::BFloat16, RedOp::Sum},
                    {DType::Float16, RedOp::Min}};
      for (const Variant& v : variants) {
        for (std::size_t at = 0; at < o.counts.size() * channel_counts.size(); ++at) {
          const std::uint64_t count = o.counts[at / channel_counts.size()];
          const std::uint64_t channels = channel_counts[at % channel_counts.size()];
          const std::uint32_t es = dtype_size(v.dt);
          const int root = (c == Collective::Broadcast || c == Collective::Reduce) ? 1 % g_size : 0;
          const std::string what = std::string(to_string(c)) + " " + std::string(to_string(a)) + " " +
                                   std::string(to_string(v.dt)) + " " + std::string(to_string(v.op)) +
                                   " count=" + std::to_string(count) +
                                   (o.channels.empty() ? "" : " schedule-channels=" + std::to_string(channels));
          const double t0 = now_s();
          long long wrong = 0;
          std::string extra;
          std::string error;
          try {
            ScheduleRequest req;
            req.collective = c;
            req.algorithm = a;
            req.nranks = g_size;
            req.count = count;
            req.elem_size = es;
            req.root = root;
            req.placement = &placement;
            req.channels = static_cast<int>(channels);
            const Schedule s = make_schedule(req);
            const int h = ex.prepare(s);
            extra = " channels=" + std::to_string(ex.channels(h));
            if (!o.channels.empty()) extra += " (" + std::to_string(s.channels) + " in the schedule)";
            std::vector<unsigned char> in(s.input_count * es);
            fill_input(in.data(), s.input_count, v.dt, c, g_rank, g_size);
            CUDA_CHECK(cudaMemcpy(ex.input(), in.data(), in.size(), cudaMemcpyHostToDevice));
            for (int run = 0; run < 2; ++run)
              wrong += static_cast<long long>(run_and_count(ex, h, s, v.dt, v.op, stream));
          } catch (const std::exception& e) {
            error = e.what();
            wrong = -1;
          }
          if (!error.empty()) {
            std::fprintf(stderr, "rank %d: %s: %s\n", g_rank, what.c_str(), error.c_str());
            // A schedule the generators refuse for this count is reported, the others continue; a
            // CUDA failure leaves the context unusable, so stop.
            if (error.find("CUDA") != std::string::npos || error.find("executor kernel") != std::string::npos) {
              report(what, -1, now_s() - t0, " error");
              MPI_Abort(MPI_COMM_WORLD, 1);
            }
          }
          long long any_error = sum_over_ranks(wrong < 0 ? 1 : 0);
          long long total = any_error ? -1 : sum_over_ranks(wrong);
          report(what, total, now_s() - t0, extra);
        }
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

#ifdef COMMSIM_HAVE_NCCL
void check_nccl(const Options& o) {
  NcclBaselines nccl(MPI_COMM_WORLD, 120);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::uint64_t count = o.counts.empty() ? 1000003 : o.counts.back() + 3;
  const DType dt = DType::Float32;
  const RedOp op = RedOp::Sum;
  const Protocol protocols[] = {Protocol::None, Protocol::LL, Protocol::LL128, Protocol::Simple};
  for (Collective c : kAllCollectives) {
    for (Algorithm a : {Algorithm::Nccl, Algorithm::NcclRing, Algorithm::NcclTree}) {
      if (!applies(c, a)) continue;
      for (Protocol p : protocols) {
        NcclRequest r{c, a, p, dt, op, count, 0};
        const auto [in_n, out_n] = buffer_counts(c, count, g_size);
        const std::string forced = NcclBaselines::setting_for(r).describe();
        std::string what = std::string(to_string(c)) + " " + std::string(to_string(a));
        if (p != Protocol::None) {
          what += '/';
          what += to_string(p);
        }
        what += " count=";
        what += std::to_string(count);
        const double t0 = now_s();
        void *in = nullptr, *out = nullptr;
        CUDA_CHECK(cudaMalloc(&in, std::max<std::uint64_t>(1, in_n) * 4));
        CUDA_CHECK(cudaMalloc(&out, std::max<std::uint64_t>(1, out_n) * 4));
        std::vector<unsigned char> h(std::max(in_n, out_n) * 4);
        fill_input(h.data(), in_n, dt, c, g_rank, g_size);
        CUDA_CHECK(cudaMemcpy(in, h.data(), in_n * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(out, 0xff, out_n * 4));
        nccl.mark();
        nccl.enqueue(r, in, out, stream);
        CUDA_CHECK(cudaStreamSynchronize(stream));
        CUDA_CHECK(cudaMemcpy(h.data(), out, out_n * 4, cudaMemcpyDeviceToHost));
        const long long wrong = static_cast<long long>(count_wrong(h.data(), out_n, dt, op, c, g_rank, g_size, 0));
        std::string extra = forced.empty() ? "" : " [" + forced + "]";
        if (const NcclChoice ran = nccl.picked(c); !ran.empty())
          extra += " NCCL ran " + ran.algorithm + "/" + ran.protocol + " on " + std::to_string(ran.channels) + " channels";
        report(what, sum_over_ranks(wrong), now_s() - t0, extra);
        CUDA_CHECK(cudaFree(in));
        CUDA_CHECK(cudaFree(out));
      }
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--share-gpu") {
      o.share_gpu = true;
    } else if (a == "--nccl") {
      o.nccl = true;
    } else if (a == "--no-executor") {
      o.executor = false;
    } else if (a == "--csv" && i + 1 < argc) {
      o.csv = argv[++i];
    } else if (a == "--counts" && i + 1 < argc) {
      o.counts = parse_list(argv[++i]);
    } else if (a == "--channels" && i + 1 < argc) {
      o.channels = parse_list(argv[++i]);
      for (std::uint64_t n : o.channels)
        if (n < 1 || n > static_cast<std::uint64_t>(kMaxChannels)) {
          if (g_rank == 0) std::fprintf(stderr, "--channels: give channel counts of 1 to %d\n", kMaxChannels);
          MPI_Finalize();
          return 2;
        }
    } else {
      if (g_rank == 0)
        std::fprintf(stderr,
                     "usage: cuda_collectives_check [--share-gpu] [--nccl] [--no-executor] [--counts a,b] "
                     "[--channels a,b] [--csv FILE]\n");
      MPI_Finalize();
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (g_rank == 0) std::printf("SKIPPED (no GPU)\n");
    MPI_Finalize();
    return 0;
  }
  int rc = 0;
  try {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    int local = 0, local_n = 1;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_n);
    if (local_n > ndev && !o.share_gpu)
      throw Error(std::to_string(local_n) + " ranks on " + where() + " but " + std::to_string(ndev) +
                  " GPUs: pass --share-gpu to run several ranks on one GPU");
    CUDA_CHECK(cudaSetDevice(local % ndev));
    std::vector<char> host(256, 0), all(256 * static_cast<std::size_t>(g_size));
    gethostname(host.data(), 255);
    MPI_Allgather(host.data(), 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> hostnames;
    for (int r = 0; r < g_size; ++r) hostnames.emplace_back(all.data() + 256 * r);
    const Placement placement = Placement::from_hostnames(hostnames);
    if (!o.csv.empty() && g_rank == 0) {
      g_csv = std::fopen(o.csv.c_str(), "w");
      if (g_csv) std::fprintf(g_csv, "case,wrong,seconds,note\n");
    }
    if (g_rank == 0)
      std::printf("cuda_collectives_check: %d ranks, %d nodes, %d GPUs visible on rank 0\n", g_size, placement.nnodes,
                  ndev);
    if (local_n > 1) check_ipc(node);
    if (o.executor) check_executor(o, placement);
#ifdef COMMSIM_HAVE_NCCL
    if (o.nccl && local_n > ndev && g_rank == 0)
      std::printf("NCCL baselines: not checked, NCCL refuses two ranks on one GPU (run them with one rank per GPU)\n");
    if (o.nccl && local_n <= ndev) check_nccl(o);
#else
    if (o.nccl && g_rank == 0) std::printf("NCCL baselines: absent from this build\n");
#endif
    MPI_Comm_free(&node);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_collectives_check: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (g_rank == 0) {
    std::printf("cuda_collectives_check: %d cases, %d failed\n", g_cases, g_failed);
    if (g_csv) std::fclose(g_csv);
  }
  rc = g_failed ? 1 : 0;
  MPI_Finalize();
  return rc;
}
