// The host executor and the MPI baselines under mpiexec (2, 3, 4 ranks): every
// hand-written algorithm of every collective, and the library's own collective,
// give exactly the expected result (reduce.h count_wrong) for sizes including 0
// elements and counts not divisible by the rank count, in every dtype and op.
// Every rank runs every test; failures are agreed over ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "collectives/generators.h"
#include "collectives/host/aligned_buffer.h"
#include "collectives/host/host_executor.h"
#include "collectives/host/mpi_baselines.h"
#include "collectives/host/mpi_transport.h"
#include "collectives/elements/reduce.h"
#include "mpi_gtest.h"

namespace commsim {
namespace {

using test::world_rank;
using test::world_size;

long long sum_over_ranks(long long v) {
  long long total = 0;
  MPI_Allreduce(&v, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// Element counts that cover the edge cases for P ranks: nothing, fewer elements
// than ranks, one short of and one past a multiple of P, and a size that
// several messages pieces carry.
std::vector<std::uint64_t> test_counts(int p) {
  const std::uint64_t up = static_cast<std::uint64_t>(p);
  return {0, 1, up - 1 == 0 ? 2 : up - 1, up + 1, 7 * up + 3, 1000, 65536 + 5};
}

// Output bytes are all ones before the run: any element the algorithm does not
// write is wrong.
long long wrong_after(Collective c, const BufferCounts& counts, DType dt, RedOp op, int root,
                      const std::function<void(const void*, void*)>& run) {
  const int rank = world_rank(), p = world_size();
  const std::uint64_t elem = dtype_size(dt);
  AlignedBuffer in(counts.input * elem), out(counts.output * elem);
  fill_input(in.data(), counts.input, dt, c, rank, p);
  if (out.bytes()) std::memset(out.data(), 0xff, out.bytes());
  run(in.data(), out.data());
  return static_cast<long long>(count_wrong(out.data(), counts.output, dt, op, c, rank, p, root));
}

struct Case {
  DType dtype;
  RedOp op;
};

TEST(HostExecutor, EveryAlgorithmEveryCollectiveIsExact) {
  const int p = world_size();
  MpiTransport transport(MPI_COMM_WORLD);
  const std::vector<Case> cases = {{DType::Float32, RedOp::Sum},
                                   {DType::Float64, RedOp::Max},
                                   {DType::Int32, RedOp::Min},
                                   {DType::BFloat16, RedOp::Sum}};
  for (Collective c : kAllCollectives) {
    for (Algorithm a : hand_written_algorithms(c)) {
      for (const Case& k : cases) {
        if (!reduces(c) && k.op != RedOp::Sum) continue;
        for (std::uint64_t count : test_counts(p)) {
          for (int root : {0, p - 1}) {
            if (root != 0 && c != Collective::Broadcast && c != Collective::Reduce) continue;
            ScheduleRequest req{c, a, p, count, dtype_size(k.dtype), root, nullptr, 0};
            Schedule s;
            try {
              s = make_schedule(req);
            } catch (const std::exception& e) {
              ADD_FAILURE() << "make_schedule " << to_string(c) << " " << to_string(a) << ": " << e.what();
              continue;
            }
            // Small pieces: transfers are cut into several messages, reduced as
            // they arrive.
            HostExecutor exec(s, k.dtype, k.op, transport, HostExecutorOptions{64 * dtype_size(k.dtype)});
            const long long wrong = sum_over_ranks(wrong_after(c, {s.input_count, s.output_count}, k.dtype, k.op, root,
                                                               [&](const void* in, void* out) { exec.run(in, out); }));
            EXPECT_EQ(wrong, 0) << to_string(c) << " " << to_string(a) << " " << to_string(k.dtype) << " "
                                << to_string(k.op) << " count " << count << " root " << root << " on " << p << " ranks";
          }
        }
      }
    }
  }
}

TEST(HostExecutor, RepeatedRunsAndUncutMessagesStayExact) {
  const int p = world_size();
  MpiTransport transport(MPI_COMM_WORLD);
  const std::uint64_t count = 100003;
  for (Algorithm a : hand_written_algorithms(Collective::AllReduce)) {
    Schedule s = make_schedule({Collective::AllReduce, a, p, count, 4, 0, nullptr, 0});
    for (std::uint64_t piece : {std::uint64_t{0}, std::uint64_t{4096}}) {
      HostExecutor exec(s, DType::Float32, RedOp::Sum, transport, HostExecutorOptions{piece});
      long long wrong = 0;
      for (int rep = 0; rep < 3; ++rep)
        wrong += wrong_after(Collective::AllReduce, {s.input_count, s.output_count}, DType::Float32, RedOp::Sum, 0,
                             [&](const void* in, void* out) { exec.run(in, out); });
      EXPECT_EQ(sum_over_ranks(wrong), 0) << to_string(a) << " piece " << piece;
    }
  }
}

TEST(MpiBaseline, EveryCollectiveIsExact) {
  const int p = world_size();
  const std::vector<Case> cases = {{DType::Float32, RedOp::Sum},
                                   {DType::Float64, RedOp::Min},
                                   {DType::Int32, RedOp::Max},
                                   {DType::BFloat16, RedOp::Sum},
                                   {DType::BFloat16, RedOp::Max}};
  for (Collective c : kAllCollectives) {
    for (const Case& k : cases) {
      if (!reduces(c) && k.op != RedOp::Sum) continue;
      for (std::uint64_t count : test_counts(p)) {
        for (int root : {0, p - 1}) {
          if (root != 0 && c != Collective::Broadcast && c != Collective::Reduce) continue;
          MpiBaseline base(c, count, k.dtype, k.op, root, MPI_COMM_WORLD);
          const long long wrong = sum_over_ranks(
              wrong_after(c, buffer_counts(c, count, p), k.dtype, k.op, root, [&](const void* in, void* out) {
                base.run(in, out);
                base.finish_root_output(in, out);
              }));
          EXPECT_EQ(wrong, 0) << "mpi " << to_string(c) << " " << to_string(k.dtype) << " " << to_string(k.op)
                              << " count " << count << " root " << root << " on " << p << " ranks";
        }
      }
    }
  }
}

TEST(HostExecutor, RefusesAScheduleForAnotherRankCount) {
  const int p = world_size();
  MpiTransport transport(MPI_COMM_WORLD);
  Schedule s = make_schedule({Collective::AllReduce, Algorithm::Ring, p + 1, 16, 4, 0, nullptr, 0});
  EXPECT_THROW(HostExecutor(s, DType::Float32, RedOp::Sum, transport), std::exception);
  Schedule s4 = make_schedule({Collective::AllReduce, Algorithm::Ring, p, 16, 4, 0, nullptr, 0});
  EXPECT_THROW(HostExecutor(s4, DType::Float64, RedOp::Sum, transport),
               std::exception);  // 8-byte elements
}

}  // namespace
}  // namespace commsim
