// The UCX transport as a library, under mpiexec (2, 3, 4 ranks): messages of one ordered pair match
// in posting order whatever their sizes (eager and rendezvous mixed, zero bytes, to itself), every
// request is reported once, a length mismatch is an error, setup failures are the same clear error
// on every rank, and the host executor runs schedules over it with exact results.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "collectives/generators.h"
#include "collectives/host/aligned_buffer.h"
#include "collectives/host/host_executor.h"
#include "collectives/elements/reduce.h"
#include "collectives/ucx/ucx_transport.h"
#include "model/error.h"
#include "../mpi/mpi_gtest.h"

namespace commsim {
namespace {

using test::world_rank;
using test::world_size;

// The byte at `i` of message `k` from `src` to `dst`: differs between messages, pairs and offsets.
unsigned char pattern(int src, int dst, int k, std::size_t i) {
  return static_cast<unsigned char>(src * 131 + dst * 31 + k * 7 + i * 13 + (i >> 8));
}

// Sizes of the messages of one pair, in posting order: zero bytes, small (eager) and large
// (rendezvous) interleaved, so a transport that matched by size or arrival would mix them up.
std::vector<std::size_t> message_sizes() {
  return {0, 1, 300000, 8, 0, 65536, 3, 1 << 20, 17, 4096, 250000, 1};
}

// Every rank sends every message to every rank (itself included); `recv_first` decides whether
// the receives are posted before the sends (expected messages) or after (unexpected ones).
void exchange_and_check(UcxTransport& t, bool recv_first) {
  const int me = t.rank(), p = t.size();
  const auto sizes = message_sizes();
  std::vector<std::vector<unsigned char>> out, in;
  for (int peer = 0; peer < p; ++peer)
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      std::vector<unsigned char> m(sizes[k]);
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = pattern(me, peer, static_cast<int>(k), i);
      out.push_back(std::move(m));
      in.emplace_back(sizes[k], 0);
    }
  auto post_recvs = [&] {
    // Peers in reverse order, so posting order across pairs does not match sending order.
    for (int peer = p - 1; peer >= 0; --peer)
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        auto& buf = in[static_cast<std::size_t>(peer) * sizes.size() + k];
        t.post_recv(peer, buf.data(), buf.size());
      }
  };
  auto post_sends = [&] {
    for (int peer = 0; peer < p; ++peer)
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        const auto& buf = out[static_cast<std::size_t>(peer) * sizes.size() + k];
        t.post_send(peer, buf.data(), buf.size());
      }
  };
  if (recv_first) {
    post_recvs();
    post_sends();
  } else {
    post_sends();
    MPI_Barrier(MPI_COMM_WORLD);  // the small messages are there before their receives
    post_recvs();
  }
  t.wait_all();
  int bad = 0;
  for (int peer = 0; peer < p; ++peer)
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const auto& buf = in[static_cast<std::size_t>(peer) * sizes.size() + k];
      for (std::size_t i = 0; i < buf.size(); ++i)
        if (buf[i] != pattern(peer, me, static_cast<int>(k), i)) {
          ++bad;
          break;
        }
    }
  EXPECT_EQ(bad, 0) << "messages received out of order or corrupted on rank " << me;
}

TEST(UcxTransport, MessagesOfAPairMatchInPostingOrder) {
  UcxTransport t(MPI_COMM_WORLD);
  EXPECT_EQ(t.name(), "ucx");
  EXPECT_EQ(t.rank(), world_rank());
  EXPECT_EQ(t.size(), world_size());
  for (int round = 0; round < 3; ++round) {
    exchange_and_check(t, /*recv_first=*/true);
    exchange_and_check(t, /*recv_first=*/false);
  }
}

TEST(UcxTransport, WaitSomeReportsEveryRequestOnce) {
  UcxTransport t(MPI_COMM_WORLD);
  const int me = t.rank(), p = t.size();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<std::vector<char>> bufs;
  std::size_t posted = 0;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{64}, std::size_t{1} << 20}) {
    bufs.emplace_back(bytes, 'r');
    EXPECT_EQ(t.post_recv(left, bufs.back().data(), bytes), posted++);
  }
  for (std::size_t bytes : {std::size_t{0}, std::size_t{64}, std::size_t{1} << 20}) {
    bufs.emplace_back(bytes, 's');
    EXPECT_EQ(t.post_send(right, bufs.back().data(), bytes), posted++);
  }
  std::vector<std::size_t> done;
  while (t.wait_some(done)) {
  }
  std::multiset<std::size_t> seen(done.begin(), done.end());
  EXPECT_EQ(seen.size(), posted);
  for (std::size_t i = 0; i < posted; ++i) EXPECT_EQ(seen.count(i), 1u) << "request " << i;
  EXPECT_FALSE(t.wait_some(done));
  t.wait_all();
  // Indices start again from 0 after wait_all.
  char a = 1, b = 0;
  EXPECT_EQ(t.post_recv(left, &b, 1), 0u);
  EXPECT_EQ(t.post_send(right, &a, 1), 1u);
  t.wait_all();
  EXPECT_EQ(b, 1);
}

TEST(UcxTransport, LengthMismatchIsAnErrorNamingThePeer) {
  UcxTransport t(MPI_COMM_WORLD);
  const int me = t.rank(), p = t.size();
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  std::vector<char> out(64, 'x'), in(128, 0);
  t.post_recv(left, in.data(), in.size());  // 128 expected, 64 arrive
  t.post_send(right, out.data(), out.size());
  try {
    t.wait_all();
    ADD_FAILURE() << "a 64-byte message into a 128-byte receive was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("receive from rank " + std::to_string(left)), std::string::npos) << msg;
    EXPECT_NE(msg.find("got 64 bytes"), std::string::npos) << msg;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(UcxTransport, DescriptionNamesVersionAndPeers) {
  UcxTransport t(MPI_COMM_WORLD);
  const std::string d = t.description();
  EXPECT_EQ(d.rfind("UCX " + ucx_runtime_version(), 0), 0u) << d;
  if (t.size() > 1) {
    EXPECT_NE(d.find(" to rank"), std::string::npos) << d;
  }
}

// Every hand-written allreduce over UCX gives the exact result (the executor cuts large transfers
// into pieces, so several messages per pair and round are in flight).
TEST(UcxTransport, HostExecutorAllreduceIsExact) {
  UcxTransport t(MPI_COMM_WORLD);
  const int me = t.rank(), p = t.size();
  for (Algorithm a : hand_written_algorithms(Collective::AllReduce)) {
    for (std::uint64_t count : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{300001}}) {
      const Schedule s = make_schedule({Collective::AllReduce, a, p, count, 4, 0, nullptr, 0});
      HostExecutorOptions opt;
      opt.piece_bytes = 64 * 1024;
      HostExecutor ex(s, DType::Float32, RedOp::Sum, t, opt);
      AlignedBuffer in(s.input_count * 4), out(s.output_count * 4);
      fill_input(in.data(), s.input_count, DType::Float32, Collective::AllReduce, me, p);
      if (out.bytes()) std::memset(out.data(), 0xff, out.bytes());
      ex.run(in.data(), out.data());
      EXPECT_EQ(count_wrong(out.data(), s.output_count, DType::Float32, RedOp::Sum, Collective::AllReduce, me, p, 0),
                0u)
          << to_string(a) << " count " << count;
    }
  }
}

// Setup failures: the same message on every rank, so no rank waits for another that gave up.
TEST(UcxTransport, BadUcxTlsIsAClearErrorOnEveryRank) {
  const char* old = std::getenv("UCX_TLS");
  const std::string saved = old ? old : "";
  setenv("UCX_TLS", "bogus", 1);
  std::string msg;
  try {
    UcxTransport t(MPI_COMM_WORLD);
  } catch (const Error& e) {
    msg = e.what();
  }
  if (old)
    setenv("UCX_TLS", saved.c_str(), 1);
  else
    unsetenv("UCX_TLS");
  EXPECT_NE(msg.find("UCX"), std::string::npos) << "no error with UCX_TLS=bogus: '" << msg << "'";
  EXPECT_NE(msg.find("failed on rank"), std::string::npos) << msg;
  // Every rank holds the same text.
  int len = static_cast<int>(msg.size()), min_len = 0, max_len = 0;
  MPI_Allreduce(&len, &min_len, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&len, &max_len, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(min_len, max_len);
  // And UCX still starts afterwards with the environment restored.
  UcxTransport again(MPI_COMM_WORLD);
  EXPECT_EQ(again.size(), world_size());
}

TEST(UcxTransport, CudaMemoryNeedsAUcxWithCuda) {
  UcxTransportOptions opt;
  opt.memory = UcxMemory::Cuda;
  std::string msg;
  try {
    UcxTransport t(MPI_COMM_WORLD, opt);
  } catch (const Error& e) {
    msg = e.what();
  }
  if (msg.empty()) GTEST_SKIP() << "this UCX supports CUDA memory";
  EXPECT_NE(msg.find("does not support CUDA memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("UCX_MEMTYPE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("host"), std::string::npos) << msg;  // the memory types it does support
}

}  // namespace
}  // namespace commsim
