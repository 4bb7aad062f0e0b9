// The MPI library's own choice of algorithm (collectives/libraries/mpi_library.h). The expected choices are
// those Open MPI 4.1.4 ran (its coll/base functions traced under a debugger on 4, 8 and 16 ranks,
// float sums); they check that the tables and the size each collective looks them up by are read
// as the library reads them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/libraries/mpi_library.h"
#include "model/price.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

const MpiLibrary kOpenMpi41{"Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022",
                            {"OMPI_MCA_btl=self,vader"}};

// The library's algorithm for `bytes` of collective c on p ranks (nccl-tests element counts, float).
LibraryChoice choose(Collective c, int p, std::uint64_t bytes) {
  ScheduleRequest r;
  r.collective = c;
  r.algorithm = Algorithm::Mpi;
  r.nranks = p;
  r.count = bytes / 4 / static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(p);
  r.elem_size = 4;
  const auto choice = library_choice(kOpenMpi41, r);
  EXPECT_TRUE(choice.has_value());
  return choice ? *choice : LibraryChoice{};
}

// "collective algorithm [chunk]" per phase, as the schedules that stand for them.
std::vector<std::string> phases(const LibraryChoice& choice) {
  std::vector<std::string> out;
  for (const LibraryPhase& ph : choice.phases) {
    std::string s = std::string(to_string(ph.request.collective)) + " " + std::string(to_string(ph.request.algorithm));
    if (ph.request.pipeline_chunk_bytes > 0)
      s += " chunk=" + std::to_string(ph.request.pipeline_chunk_bytes);
    out.push_back(s);
  }
  return out;
}

using V = std::vector<std::string>;
constexpr std::uint64_t KiB = 1024, MiB = 1024 * 1024;

TEST(MpiLibrary, OpenMpi41PicksWhatTheLibraryRan) {
  // Broadcast: binomial, linear, then an unsegmented chain on 4 ranks; a binary tree (priced as
  // binomial) and linear on 8; binomial, then scatter + allgather on 16.
  EXPECT_EQ(phases(choose(Collective::Broadcast, 4, 4 * KiB)), V{"broadcast binomial"});
  EXPECT_EQ(phases(choose(Collective::Broadcast, 4, 64 * KiB)), V{"broadcast direct"});
  EXPECT_EQ(phases(choose(Collective::Broadcast, 4, 1 * MiB)), V{"broadcast ring chunk=1048576"});
  EXPECT_EQ(phases(choose(Collective::Broadcast, 4, 16 * MiB)), V{"broadcast ring chunk=16777216"});
  EXPECT_EQ(phases(choose(Collective::Broadcast, 8, 4 * KiB)), V{"broadcast binomial"});
  EXPECT_FALSE(choose(Collective::Broadcast, 8, 4 * KiB).phases[0].exact);
  for (std::uint64_t n : {64 * KiB, 1 * MiB, 16 * MiB})
    EXPECT_EQ(phases(choose(Collective::Broadcast, 8, n)), V{"broadcast direct"}) << n;
  EXPECT_EQ(phases(choose(Collective::Broadcast, 16, 64 * KiB)), V{"broadcast binomial"});
  EXPECT_EQ(phases(choose(Collective::Broadcast, 16, 1 * MiB)), V{"broadcast recursive-doubling"});

  // Allreduce: recursive doubling for small messages, Rabenseifner above (16 ranks from 4 KiB).
  EXPECT_EQ(phases(choose(Collective::AllReduce, 4, 4 * KiB)), V{"allreduce recursive-doubling"});
  EXPECT_EQ(phases(choose(Collective::AllReduce, 8, 4 * KiB)), V{"allreduce recursive-doubling"});
  EXPECT_EQ(phases(choose(Collective::AllReduce, 16, 4 * KiB)), V{"allreduce rabenseifner"});
  for (int p : {4, 8, 16}) EXPECT_EQ(phases(choose(Collective::AllReduce, p, 16 * MiB)), V{"allreduce rabenseifner"});

  // Reduce-scatter, looked up by one rank's block: recursive halving, and for large blocks a
  // reduce to rank 0 (linear on 4 ranks, binomial on 8 and 16) followed by a scatter.
  EXPECT_EQ(phases(choose(Collective::ReduceScatter, 4, 1 * MiB)), V{"reducescatter recursive-halving"});
  EXPECT_EQ(phases(choose(Collective::ReduceScatter, 4, 16 * MiB)), (V{"reduce direct", "broadcast direct"}));
  EXPECT_EQ(phases(choose(Collective::ReduceScatter, 8, 16 * MiB)), (V{"reduce binomial", "broadcast direct"}));
  EXPECT_EQ(phases(choose(Collective::ReduceScatter, 16, 16 * MiB)), (V{"reduce binomial", "broadcast direct"}));
  EXPECT_EQ(phases(choose(Collective::ReduceScatter, 16, 1 * MiB)), V{"reducescatter recursive-halving"});
  const LibraryChoice rs = choose(Collective::ReduceScatter, 4, 16 * MiB);
  EXPECT_EQ(rs.phases[0].request.count, 4 * MiB);  // the whole buffer reduced
  EXPECT_EQ(rs.phases[1].request.count, 1 * MiB);  // one block to each rank

  // Allgather: recursive doubling on 4 to 16 ranks, whatever the size; Bruck when not a power of two.
  for (int p : {4, 8, 16})
    for (std::uint64_t n : {4 * KiB, 16 * MiB})
      EXPECT_EQ(phases(choose(Collective::AllGather, p, n)), V{"allgather recursive-doubling"}) << p << " " << n;
  EXPECT_EQ(phases(choose(Collective::AllGather, 6, 6 * KiB)), V{"allgather bruck"});
}

TEST(MpiLibrary, DescribesTheChoice) {
  const std::string d = choose(Collective::ReduceScatter, 4, 16 * MiB).describe();
  EXPECT_NE(d.find("Open MPI 4.1 coll/tuned"), std::string::npos) << d;
  EXPECT_NE(d.find("reduce linear"), std::string::npos) << d;
  EXPECT_NE(d.find("then broadcast linear scatter"), std::string::npos) << d;
  const std::string chain = choose(Collective::Broadcast, 4, 16 * MiB).describe();
  EXPECT_NE(chain.find("chain, one segment (as ring, 1 chunk)"), std::string::npos) << chain;
}

TEST(MpiLibrary, UnknownWhenAnotherLibraryOrACollectiveSettingDecides) {
  ScheduleRequest r;
  r.collective = Collective::AllReduce;
  r.nranks = 4;
  r.count = 1024;
  EXPECT_EQ(why_choice_unknown(kOpenMpi41), "");
  const MpiLibrary mpich{"MPICH Version:\t4.1.2\nMPICH Release date:\tWed Jun  7 15:22:45 CDT 2023\n", {}};
  EXPECT_FALSE(library_choice(mpich, r));
  EXPECT_EQ(why_choice_unknown(mpich), "the choice of MPICH Version:\t4.1.2 is not known");
  const MpiLibrary openmpi5{"Open MPI v5.0.3, package: Open MPI", {}};
  EXPECT_FALSE(library_choice(openmpi5, r));
  MpiLibrary dynamic = kOpenMpi41;
  dynamic.environment.push_back("OMPI_MCA_coll_tuned_use_dynamic_rules=1");
  EXPECT_FALSE(library_choice(dynamic, r));
  EXPECT_EQ(why_choice_unknown(dynamic), "OMPI_MCA_coll_tuned_use_dynamic_rules is set");
  EXPECT_FALSE(library_choice(MpiLibrary{}, r));
  r.nranks = 1;
  EXPECT_FALSE(library_choice(kOpenMpi41, r));
}

// One node of host ranks: 2 us and 10 GB/s a message, 20 GB/s of reduction, copies at `memory_bw`.
Topology one_node(double memory_bw_Bps) {
  Topology t;
  t.name = "one node";
  t.gpu = false;
  t.ranks_per_node = 64;
  t.memory_bw_Bps = memory_bw_Bps;
  t.intra = {"shared-memory", 2e-6, 10e9};
  t.reduce_bw_Bps = 20e9;
  return t;
}

TEST(MpiLibrary, PricesThePhasesOneAfterAnother) {
  Topology t = one_node(1e30);  // copies free
  t.local_op_scale = {{64 * 1024, 1.0}, {1 << 20, 0.6}, {16 << 20, 0.3}};
  const Placement pl = Placement::uniform(1, 4);
  const LibraryChoice rs = choose(Collective::ReduceScatter, 4, 16 * MiB);
  ASSERT_EQ(rs.phases.size(), 2u);
  Topology whole = t;
  whole.piece_bytes = 0;
  double sum = 0;
  for (const LibraryPhase& ph : rs.phases) sum += price_schedule(make_schedule(ph.request), whole, pl).time_s;
  EXPECT_DOUBLE_EQ(price_library_choice(rs, t, pl), sum);
  // The library combines whole messages, not the pieces of commsim's host executor: its ring
  // allreduce of 64 MiB (16 MiB a step) is priced as a hand-written ring run with --piece-size 0.
  ASSERT_GT(t.piece(), 0u);
  const LibraryChoice ar = choose(Collective::AllReduce, 4, 64 * MiB);
  ASSERT_EQ(ar.phases.size(), 1u);
  const Schedule ring = make_schedule(ar.phases[0].request);
  EXPECT_DOUBLE_EQ(price_library_choice(ar, t, pl), price_schedule(ring, whole, pl).time_s);
  EXPECT_GT(price_library_choice(ar, t, pl), 1.05 * price_schedule(ring, t, pl).time_s);
  // One MPI call: its overhead once, not once a phase.
  Topology with_call = t;
  with_call.call_overhead_s = 2e-6;
  EXPECT_NEAR(price_library_choice(rs, with_call, pl), sum + 2e-6, 1e-12);
  // The linear reduce then scatter is much slower than the recursive halving the model would pick:
  // (p-1) n (b + g) for the reduce alone against n (p-1)/p (b + g).
  ScheduleRequest rh = rs.phases[0].request;
  rh.collective = Collective::ReduceScatter;
  rh.algorithm = Algorithm::RecursiveHalving;
  EXPECT_GT(sum, 3.0 * price_schedule(make_schedule(rh), whole, pl).time_s);
  // The unsegmented chain: three whole-message hops, three times one hop.
  const LibraryChoice chain = choose(Collective::Broadcast, 4, 16 * MiB);
  ScheduleRequest hop = chain.phases[0].request;
  hop.nranks = 2;
  const Placement two = Placement::uniform(1, 2);
  EXPECT_NEAR(price_library_choice(chain, t, pl), 3 * price_schedule(make_schedule(hop), t, two).time_s,
              1e-9 * price_library_choice(chain, t, pl));
}

// MPI_Bcast sends the root's own buffer: the library's broadcast has no copy of the root's Input to
// its Output, which a hand-written broadcast's schedule makes (and pays for when copies are slow).
TEST(MpiLibrary, BroadcastWorksInPlace) {
  const Topology t = one_node(1e9);  // copies slower than messages
  const Placement pl = Placement::uniform(1, 4);
  const LibraryChoice chain = choose(Collective::Broadcast, 4, 16 * MiB);
  ASSERT_EQ(chain.phases.size(), 1u);
  EXPECT_TRUE(chain.phases[0].in_place);
  const Schedule s = library_schedule(chain.phases[0]);
  for (const Round& round : s.ranks[0].rounds)
    for (const Op& op : round.ops) EXPECT_NE(op.kind, OpKind::Copy);
  const double hop = 2e-6 + 16.0 * MiB / 10e9;
  EXPECT_NEAR(price_library_choice(chain, t, pl), 3 * hop, 1e-9);
  EXPECT_GT(price_schedule(make_schedule(chain.phases[0].request), t, pl).time_s, 3 * hop + 1e-3);
  // The scatter that follows a reduce-scatter's reduce copies the root's own block: not in place.
  const LibraryChoice rs = choose(Collective::ReduceScatter, 4, 16 * MiB);
  EXPECT_FALSE(rs.phases[1].in_place);
}

}  // namespace
}  // namespace commsim
