// Hand-written ring allreduce over UCX, the same schedule over MPI point-to-point, and the MPI
// library's MPI_Allreduce, measured in one MPI job with the three interleaved iteration by
// iteration (the order rotating), so their ratios come from one run under the same conditions.
//
//   mpiexec -np N bench_ucx [--sizes 1KiB,1MiB,64MiB] [--iters N] [--piece-size 512KiB]
//
// Each iteration is timed like `commsim run` times it: a barrier, MPI_Wtime around the work on
// every rank, the maximum over ranks; the table shows the median over iterations. float32 sum.
// Every variant is checked for exact results before it is timed. Run by tests/bench/bench_ucx.sh.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/generators.h"
#include "collectives/host/aligned_buffer.h"
#include "collectives/host/host_executor.h"
#include "collectives/host/mpi_transport.h"
#include "collectives/elements/reduce.h"
#include "collectives/ucx/ucx_transport.h"
#include "model/error.h"
#include "model/units.h"
#include "runtime/job/mpi_carrier.h"

namespace commsim {
namespace {

struct Options {
  std::vector<Bytes> sizes{1024, 1 << 20, 64 << 20};
  int iters = 0;                           // 0: by size (more for small messages)
  std::uint64_t piece_bytes = 512 * 1024;  // commsim run's default for the host backend
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw Error("option " + a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--sizes") {
      o.sizes = parse_size_list(v);
    } else if (a == "--iters") {
      o.iters = std::stoi(v);
      if (o.iters < 1) throw Error("--iters must be at least 1");
    } else if (a == "--piece-size") {
      o.piece_bytes = parse_bytes(v);
    } else {
      throw Error("unknown option " + a + " (valid: --sizes, --iters, --piece-size)");
    }
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MpiTransport mpi(MPI_COMM_WORLD);
  UcxTransport ucx(MPI_COMM_WORLD);
  {
    std::vector<char> hosts(static_cast<std::size_t>(p) * MPI_MAX_PROCESSOR_NAME);
    char me[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(me, &len);
    MPI_Gather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> names;
    for (int r = 0; r < p; ++r) names.emplace_back(hosts.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME);
    std::sort(names.begin(), names.end());
    const int nodes = static_cast<int>(std::unique(names.begin(), names.end()) - names.begin());
    const std::string carrier = mpi_carrier(nodes), ucx_text = ucx.description();
    if (rank == 0)
      std::printf("allreduce float32 sum, %d ranks on %d node(s), host memory, pieces of %s\nMPI: %s\nUCX: %s\n", p,
                  nodes, format_bytes(opt.piece_bytes).c_str(), carrier.c_str(), ucx_text.c_str());
  }
  const char* names[3] = {"ring/ucx", "ring/mpi", "MPI_Allreduce"};
  struct Row {
    Bytes bytes;
    double us[3];
  };
  std::vector<Row> rows;
  for (Bytes requested : opt.sizes) {
    const std::uint64_t count = requested / 4;
    const Bytes bytes = count * 4;
    const Schedule s = make_schedule({Collective::AllReduce, Algorithm::Ring, p, count, 4, 0, nullptr, 0});
    HostExecutorOptions eo;
    eo.piece_bytes = opt.piece_bytes;
    HostExecutor over_ucx(s, DType::Float32, RedOp::Sum, ucx, eo), over_mpi(s, DType::Float32, RedOp::Sum, mpi, eo);
    AlignedBuffer in(count * 4), out(count * 4);
    fill_input(in.data(), count, DType::Float32, Collective::AllReduce, rank, p);
    const std::function<void()> variant[3] = {
        [&] { over_ucx.run(in.data(), out.data()); },
        [&] { over_mpi.run(in.data(), out.data()); },
        [&] { MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
    };
    for (int v = 0; v < 3; ++v) {
      if (out.bytes()) std::memset(out.data(), 0xff, out.bytes());
      variant[v]();
      long long wrong = static_cast<long long>(
          count_wrong(out.data(), count, DType::Float32, RedOp::Sum, Collective::AllReduce, rank, p, 0));
      long long total = 0;
      MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      if (total != 0)
        throw Error(std::string(names[v]) + " gave " + std::to_string(total) + " wrong elements at " +
                    format_bytes(bytes));
    }
    const int iters = opt.iters > 0
                          ? opt.iters
                          : static_cast<int>(std::clamp<Bytes>((Bytes{1} << 30) / std::max<Bytes>(bytes, 1), 10, 200));
    const int warmup = std::max(2, iters / 10);
    std::vector<double> local[3], worst[3];
    for (int it = -warmup; it < iters; ++it) {
      for (int k = 0; k < 3; ++k) {
        const int v = (k + (it + warmup)) % 3;  // rotate which variant goes first
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        variant[v]();
        const double t = MPI_Wtime() - t0;
        if (it >= 0) local[v].push_back(t);
      }
    }
    Row row{bytes, {}};
    for (int v = 0; v < 3; ++v) {
      worst[v].resize(local[v].size());
      MPI_Reduce(local[v].data(), worst[v].data(), static_cast<int>(local[v].size()), MPI_DOUBLE, MPI_MAX, 0,
                 MPI_COMM_WORLD);
      row.us[v] = rank == 0 ? median(worst[v]) * 1e6 : 0;
    }
    rows.push_back(row);
  }
  if (rank == 0) {
    std::printf("median of the per-iteration maximum over ranks; ratios are time / time (< 1: the first is faster)\n");
    std::printf("%10s %12s %12s %14s %12s %14s %14s\n", "size", "ring/ucx us", "ring/mpi us", "MPI_Allreduce",
                "ucx/mpi", "ucx/Allreduce", "mpi/Allreduce");
    for (const Row& r : rows)
      std::printf("%10s %12.1f %12.1f %14.1f %12.2f %14.2f %14.2f\n", format_bytes(r.bytes).c_str(), r.us[0], r.us[1],
                  r.us[2], r.us[0] / r.us[1], r.us[0] / r.us[2], r.us[1] / r.us[2]);
  }
  return 0;
}

}  // namespace
}  // namespace commsim

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    rc = commsim::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ucx: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
