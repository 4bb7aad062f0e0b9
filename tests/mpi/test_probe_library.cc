// The probe's building blocks under mpiexec: the MPI check, the session joined to a running MPI,
// and the measurement loops (every rank takes part; rank 0 gets the samples).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "collectives/host/mpi_check.h"
#include "model/error.h"
#include "mpi_gtest.h"
#include "runtime/job/mpi_session.h"
#include "runtime/probe/patterns.h"
#include "runtime/probe/tiers.h"

namespace commsim {
namespace {

TEST(MpiCheck, AFailingCallThrowsNamingTheCallRankFileAndLine) {
  MpiSession mpi(MpiThreads::Single);  // sets MPI_ERRORS_RETURN on MPI_COMM_WORLD
  char byte = 0;
  try {
    COMMSIM_MPI_CHECK(MPI_Send(&byte, 1, MPI_BYTE, mpi.size() + 7, 0, MPI_COMM_WORLD));
    FAIL() << "a send to a rank that does not exist succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("MPI_Send(&byte, 1, MPI_BYTE, mpi.size() + 7, 0, MPI_COMM_WORLD) failed on rank " +
                       std::to_string(mpi.rank()) + " ("),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("test_probe_library.cc:"), std::string::npos) << msg;
  }
}

TEST(MpiSession, JoinsARunningMpiAndAgreesOnTheFirstError) {
  MpiSession mpi(MpiThreads::Single);
  EXPECT_EQ(mpi.rank(), test::world_rank());
  EXPECT_EQ(mpi.size(), test::world_size());
  ASSERT_EQ(static_cast<int>(mpi.hostnames().size()), mpi.size());
  EXPECT_EQ(mpi.first_error(""), "");
  const std::string first = mpi.agree([&] {
    if (mpi.rank() >= 1) throw Error("boom on " + std::to_string(mpi.rank()));
  });
  EXPECT_EQ(first, "rank 1 (" + mpi.hostnames()[1] + "): boom on 1");
  EXPECT_FALSE(MpiSession::library_version().empty());
}

PatternState small_state(int rank) {
  PatternState s;
  s.comm = MPI_COMM_WORLD;
  s.rank = rank;
  s.iters = 3;
  s.warmup = 1;
  s.send.assign(4096, 1);
  s.recv.assign(4096, 0);
  return s;
}

TEST(ProbePatterns, EveryPatternGivesRankZeroOneSamplePerIteration) {
  MpiSession mpi(MpiThreads::Single);
  const Placement placement = Placement::from_hostnames(std::vector<std::string>(mpi.size(), "one-host"));
  const std::vector<ProbeTier> tiers = plan_probe_tiers(placement, mpi.rank());
  ASSERT_EQ(tiers.size(), 1u);
  PatternState s = small_state(mpi.rank());
  const Role pair = pair_role(tiers[0], mpi.rank());
  for (Pattern p :
       {Pattern::PingPong, Pattern::Stream, Pattern::RingShift, Pattern::RingShiftControl, Pattern::RingShiftWritten}) {
    const bool ring = p != Pattern::PingPong && p != Pattern::Stream;
    const PatternSamples out = time_pattern(s, p, ring ? tiers[0].ring : pair, mpi.rank() == tiers[0].a, 4096);
    EXPECT_GE(out.reps, 1);
    EXPECT_LE(out.reps, kMaxReps);
    if (mpi.rank() == 0) {
      ASSERT_EQ(out.per_op_s.size(), 3u);
      for (double t : out.per_op_s) EXPECT_GT(t, 0.0);
    } else {
      EXPECT_TRUE(out.per_op_s.empty());
    }
  }
  // The written shift delivered what its sender wrote last (every rank wrote the same values).
  EXPECT_EQ(s.recv[0], static_cast<char>(s.write_value));
  EXPECT_EQ(s.recv[4095], static_cast<char>(s.write_value));
  for (LocalOp op : {LocalOp::Memcpy, LocalOp::Reduce}) {
    const PatternSamples out = time_local(s, op, 4096);
    EXPECT_EQ(out.per_op_s.size(), mpi.rank() == 0 ? 3u : 0u);
  }
}

}  // namespace
}  // namespace commsim
