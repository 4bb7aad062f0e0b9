// Every hand-written schedule, run by the reference executor, gives exactly the expected result on
// every rank: every (collective, algorithm) x ranks 1..64 x counts {0, 1, p-1, p, p+1, 3p+2, 300},
// float32 everywhere, other dtypes and min/max on a subset, pipelined algorithms with small chunks,
// hierarchical on 1..8 nodes x 1..8 ranks, the multi-channel ring and tree on 1..64 ranks x 1..16
// channels, multi-channel hierarchical on 1..8 nodes x 1..8 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/phases.h"
#include "collectives/generators.h"
#include "collectives/elements/reduce.h"
#include "collectives/reference_executor.h"
#include "model/cost/double_tree.h"
#include "model/error.h"
#include "model/placement.h"

namespace commsim {
namespace {

std::string describe(const ScheduleRequest& r, DType t, RedOp op) {
  return std::string(to_string(r.collective)) + "/" + std::string(to_string(r.algorithm)) +
         " p=" + std::to_string(r.nranks) + " count=" + std::to_string(r.count) + " root=" + std::to_string(r.root) +
         " " + std::string(to_string(t)) + " " + std::string(to_string(op)) +
         (r.pipeline_chunk_bytes ? " chunk=" + std::to_string(r.pipeline_chunk_bytes) + "B" : "") +
         (r.placement ? " nodes=" + std::to_string(r.placement->nnodes) : "") +
         (r.channels != 1 ? " channels=" + std::to_string(r.channels) : "");
}

// Runs one request; returns "" when every rank's output is right, else what went wrong.
std::string check(const ScheduleRequest& r, DType t, RedOp op) {
  try {
    const Schedule s = make_schedule(r);
    const std::uint64_t p = static_cast<std::uint64_t>(r.nranks), block = r.count / p;
    // Buffer sizes as generators.h defines them (nccl-tests' counts).
    std::uint64_t in = r.count, out = r.count;
    if (r.collective == Collective::AllGather) in = block, out = block * p;
    if (r.collective == Collective::ReduceScatter) in = block * p, out = block;
    if (r.collective == Collective::AllToAll) in = out = block * p;
    if (s.input_count != in || s.output_count != out)
      return "buffer sizes " + std::to_string(s.input_count) + "/" + std::to_string(s.output_count);
    validate_schedule(s);
    std::vector<std::vector<std::uint8_t>> inputs(r.nranks, std::vector<std::uint8_t>(in * dtype_size(t)));
    for (int rank = 0; rank < r.nranks; ++rank) fill_input(inputs[rank].data(), in, t, r.collective, rank, r.nranks);
    const auto outputs = run_reference(s, t, op, inputs);
    for (int rank = 0; rank < r.nranks; ++rank) {
      const std::uint64_t wrong = count_wrong(outputs[rank].data(), out, t, op, r.collective, rank, r.nranks, r.root);
      if (wrong != 0) return "rank " + std::to_string(rank) + " has " + std::to_string(wrong) + " wrong elements";
    }
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();
  }
  return "";
}

std::vector<std::uint64_t> counts_for(int p) {
  const std::uint64_t q = static_cast<std::uint64_t>(p);
  return {0, 1, q - 1, q, q + 1, 3 * q + 2, 300};
}

struct Pair {
  Collective c;
  Algorithm a;
};

std::vector<Pair> flat_pairs() {
  std::vector<Pair> out;
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c))
      if (a != Algorithm::Hierarchical) out.push_back({c, a});
  return out;
}

class EveryAlgorithm : public ::testing::TestWithParam<Pair> {};

// Reports at most a few failures per algorithm, so one bug does not print thousands of lines.
struct Failures {
  int n = 0;
  void add(const std::string& what, const std::string& why) {
    if (why.empty()) return;
    if (++n <= 5) ADD_FAILURE() << what << ": " << why;
  }
};

TEST_P(EveryAlgorithm, Float32SumOnRanks1To64) {
  const Pair pair = GetParam();
  Failures f;
  for (int p = 1; p <= 64; ++p)
    for (std::uint64_t count : counts_for(p)) {
      ScheduleRequest r{pair.c, pair.a, p, count, 4, (p - 1) * 2 / 3, nullptr, 0};
      f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
    }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

TEST_P(EveryAlgorithm, OtherDTypesOpsAndRoots) {
  const Pair pair = GetParam();
  Failures f;
  for (int p : {1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 33}) {
    for (DType t : {DType::Int32, DType::BFloat16, DType::Float64, DType::Float16})
      for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Max}) {
        if (!reduces(pair.c) && op != RedOp::Sum) continue;
        const std::uint64_t count = 3 * p + 2;
        ScheduleRequest r{pair.c, pair.a, p, count, dtype_size(t), p - 1, nullptr, 0};
        f.add(describe(r, t, op), check(r, t, op));
      }
    if (reduces(pair.c))
      for (RedOp op : {RedOp::Min, RedOp::Max}) {
        ScheduleRequest r{pair.c, pair.a, p, 301, 4, 0, nullptr, 0};
        f.add(describe(r, DType::Float32, op), check(r, DType::Float32, op));
      }
    for (int root = 0; root < p; ++root) {  // every root of the rooted collectives
      if (pair.c != Collective::Broadcast && pair.c != Collective::Reduce) break;
      ScheduleRequest r{pair.c, pair.a, p, static_cast<std::uint64_t>(2 * p + 1), 4, root, nullptr, 0};
      f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
    }
  }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

std::string pair_name(const ::testing::TestParamInfo<Pair>& info) {
  std::string s = std::string(to_string(info.param.c)) + "_" + std::string(to_string(info.param.a));
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Schedules, EveryAlgorithm, ::testing::ValuesIn(flat_pairs()), pair_name);

class PipelinedAlgorithm : public ::testing::TestWithParam<Pair> {};

TEST_P(PipelinedAlgorithm, InSmallChunks) {
  const Pair pair = GetParam();
  Failures f;
  for (int p = 1; p <= 64; ++p)
    for (std::uint64_t chunk_bytes : {4, 12, 100}) {
      // 300 floats in chunks of 1, 3 and 25 elements (per half for the tree).
      ScheduleRequest r{pair.c, pair.a, p, 300, 4, p / 2, nullptr, chunk_bytes};
      f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
    }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelinedAlgorithm,
                         ::testing::Values(Pair{Collective::AllReduce, Algorithm::Tree},
                                           Pair{Collective::Broadcast, Algorithm::Tree},
                                           Pair{Collective::Reduce, Algorithm::Tree},
                                           Pair{Collective::Broadcast, Algorithm::Ring},
                                           Pair{Collective::Reduce, Algorithm::Ring}),
                         pair_name);

// Ring and tree with 1..16 channels on 1..64 ranks (every count up to 16 ranks, 1, 2, 3, 7, 8 and
// 16 beyond), on one node and on nodes of 8 ranks (the last one partly filled), with counts that leave a channel less
// than one element per rank, and a tree chunk of 16 elements.
class MultiChannel : public ::testing::TestWithParam<Pair> {};

TEST_P(MultiChannel, RanksOneTo64ChannelsOneTo16) {
  const Pair pair = GetParam();
  Failures f;
  for (int p = 1; p <= 64; ++p) {
    const int nodes = (p + 7) / 8;
    Placement spread;
    spread.nranks = p;
    spread.nnodes = nodes;
    spread.node_size.assign(nodes, 0);
    for (int r = 0; r < p; ++r) {
      spread.node_of_rank.push_back(r / 8);
      spread.local_rank.push_back(spread.node_size[r / 8]++);
    }
    // Every channel count up to 16 ranks, a spread of them beyond (a run takes time in p^2 C).
    std::vector<int> channel_counts{1, 2, 3, 7, 8, 16};
    if (p <= 16)
      for (int c : {4, 5, 6, 9, 10, 11, 12, 13, 14, 15}) channel_counts.push_back(c);
    for (int channels : channel_counts)
      for (const Placement* pl : std::vector<const Placement*>{nullptr, &spread})
        for (std::uint64_t count : {std::uint64_t{1}, static_cast<std::uint64_t>(2 * p + 3)}) {
          ScheduleRequest r{pair.c, pair.a, p, count, 4, (p - 1) * 2 / 3, pl, 64};
          r.channels = channels;
          f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
        }
  }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, MultiChannel,
    ::testing::Values(Pair{Collective::AllReduce, Algorithm::Ring}, Pair{Collective::AllGather, Algorithm::Ring},
                      Pair{Collective::ReduceScatter, Algorithm::Ring}, Pair{Collective::AllReduce, Algorithm::Tree},
                      Pair{Collective::Broadcast, Algorithm::Tree}, Pair{Collective::Reduce, Algorithm::Tree}),
    pair_name);

// Hierarchical allreduce and allgather with 1..16 channels on 1..8 nodes of 1..8 ranks.
TEST(MultiChannel, HierarchicalOnOneToEightNodesOfOneToEightRanks) {
  Failures f;
  for (Collective c : {Collective::AllReduce, Collective::AllGather})
    for (int nodes = 1; nodes <= 8; ++nodes)
      for (int per_node = 1; per_node <= 8; ++per_node) {
        const Placement pl = Placement::uniform(nodes, per_node);
        for (int channels : {1, 2, 3, 5, 8, 16})
          for (std::uint64_t count : {std::uint64_t{1}, static_cast<std::uint64_t>(2 * pl.nranks + 3)}) {
            ScheduleRequest r{c, Algorithm::Hierarchical, pl.nranks, count, 4, 0, &pl, 0};
            r.channels = channels;
            f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
          }
      }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

// Channel c of a ring leaves every node from local rank c - 1 (mod 8): with 8 channels on nodes of
// 8 ranks each GPU sends one channel's traffic across the network, every op carries its channel,
// and the channels split the data evenly.
TEST(MultiChannel, RailAlignedRingsLeaveEachNodeFromADifferentGpu) {
  const Placement pl = Placement::uniform(4, 8);
  ScheduleRequest r{Collective::AllReduce, Algorithm::Ring, 32, 32 * 8 * 100, 4, 0, &pl, 0};
  r.channels = 8;
  const Schedule s = make_schedule(r);
  EXPECT_EQ(s.channels, 8);
  std::vector<std::vector<int>> leaving(8);  // [channel]: local ranks of node 0 sending to node 1
  std::vector<std::uint64_t> sent(8, 0);     // [channel]: elements node 0's ranks send
  for (int rank = 0; rank < 8; ++rank)
    for (const Round& round : s.ranks[rank].rounds)
      for (const Op& op : round.ops) {
        if (op.kind != OpKind::Send) continue;
        ASSERT_LT(op.channel, 8);
        sent[op.channel] += op.src.count;
        if (pl.node_of_rank[op.peer] != 0) {
          if (std::find(leaving[op.channel].begin(), leaving[op.channel].end(), rank) == leaving[op.channel].end())
            leaving[op.channel].push_back(rank);
        }
      }
  for (int c = 0; c < 8; ++c) {
    ASSERT_EQ(leaving[c].size(), 1u) << "channel " << c;
    EXPECT_EQ(leaving[c][0], (c + 7) % 8) << "channel " << c;
    EXPECT_EQ(sent[c], sent[0]) << "channel " << c;
  }
  // One channel is today's ring, unchanged.
  r.channels = 1;
  const Schedule one = make_schedule(r);
  EXPECT_EQ(one.channels, 1);
  EXPECT_EQ(one.ranks[0].rounds.size(), s.ranks[0].rounds.size());
  EXPECT_EQ(one.ranks[0].rounds[0].ops.size() * 8, s.ranks[0].rounds[0].ops.size());
}

TEST(MultiChannel, OtherAlgorithmsAndTinyBuffersGetFewerChannels) {
  ScheduleRequest r{Collective::AllToAll, Algorithm::Bruck, 8, 800, 4, 0, nullptr, 0};
  r.channels = 4;
  EXPECT_EQ(make_schedule(r).channels, 1);
  const Placement two = Placement::uniform(2, 4);
  r = {Collective::Broadcast, Algorithm::Hierarchical, 8, 800, 4, 0, &two, 0};
  r.channels = 4;
  EXPECT_EQ(make_schedule(r).channels, 1);  // binomial trees
  r.collective = Collective::AllReduce;
  EXPECT_EQ(make_schedule(r).channels, 4);
  r = {Collective::AllReduce, Algorithm::Ring, 8, 3, 4, 0, nullptr, 0};
  r.channels = 16;
  EXPECT_EQ(make_schedule(r).channels, 3);
  r.channels = 0;
  EXPECT_THROW(make_schedule(r), Error);
  r.channels = kMaxChannels + 1;
  try {
    make_schedule(r);
    ADD_FAILURE() << "65 channels accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channels must be 1 to 64"), std::string::npos) << e.what();
  }
}

TEST(Hierarchical, OneToEightNodesOfOneToEightRanks) {
  Failures f;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast, Collective::Reduce}) {
    ASSERT_TRUE(applies(c, Algorithm::Hierarchical));
    for (int nodes = 1; nodes <= 8; ++nodes)
      for (int per_node = 1; per_node <= 8; ++per_node) {
        const Placement pl = Placement::uniform(nodes, per_node);
        const int p = nodes * per_node;
        for (std::uint64_t count : counts_for(p)) {
          ScheduleRequest r{c, Algorithm::Hierarchical, p, count, 4, (p - 1) * 2 / 3, &pl, 0};
          f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
        }
        ScheduleRequest r{c, Algorithm::Hierarchical, p, 97, 2, p - 1, &pl, 0};
        f.add(describe(r, DType::BFloat16, RedOp::Max), check(r, DType::BFloat16, RedOp::Max));
      }
  }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

TEST(Hierarchical, RanksSpreadRoundRobinOverNodes) {
  // Rank r on node r % nodes: nodes are not blocks of consecutive ranks.
  Failures f;
  for (int nodes : {2, 3, 4})
    for (int per_node : {2, 3, 5}) {
      std::vector<std::string> hosts;
      for (int r = 0; r < nodes * per_node; ++r) hosts.push_back("node" + std::to_string(r % nodes));
      const Placement pl = Placement::from_hostnames(hosts);
      for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast, Collective::Reduce})
        for (std::uint64_t count : counts_for(pl.nranks)) {
          ScheduleRequest r{c, Algorithm::Hierarchical, pl.nranks, count, 4, 1, &pl, 0};
          f.add(describe(r, DType::Float32, RedOp::Sum), check(r, DType::Float32, RedOp::Sum));
          // The flat algorithms order their ring by the placement too.
          for (Algorithm a : {Algorithm::Ring}) {
            ScheduleRequest flat{c, a, pl.nranks, count, 4, 1, &pl, 0};
            f.add(describe(flat, DType::Float32, RedOp::Sum), check(flat, DType::Float32, RedOp::Sum));
          }
        }
    }
  EXPECT_EQ(f.n, 0) << "failing cases";
}

TEST(Hierarchical, UnevenPlacementIsAnErrorNamingIt) {
  const Placement pl = Placement::from_hostnames({"a", "a", "a", "b", "b"});
  ScheduleRequest r{Collective::AllReduce, Algorithm::Hierarchical, 5, 100, 4, 0, &pl, 0};
  try {
    make_schedule(r);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("placement"), std::string::npos) << what;
    EXPECT_NE(what.find("3, 2"), std::string::npos) << what;
  }
}

TEST(Registry, CoversExactlyTheApplicablePairs) {
  for (Collective c : kAllCollectives)
    for (Algorithm a : kAllAlgorithms) {
      ScheduleRequest r{c, a, 4, 64, 4, 0, nullptr, 0};
      if (is_hand_written(a) && applies(c, a))
        EXPECT_NO_THROW(make_schedule(r)) << to_string(c) << "/" << to_string(a);
      else
        EXPECT_THROW(make_schedule(r), Error) << to_string(c) << "/" << to_string(a);
    }
}

TEST(Registry, RejectsBadRequests) {
  const Placement three = Placement::uniform(1, 3);
  EXPECT_THROW(make_schedule({Collective::AllReduce, Algorithm::Ring, 0, 10, 4, 0, nullptr, 0}), Error);
  EXPECT_THROW(make_schedule({Collective::Broadcast, Algorithm::Binomial, 4, 10, 4, 4, nullptr, 0}), Error);
  EXPECT_THROW(make_schedule({Collective::Broadcast, Algorithm::Binomial, 4, 10, 4, -1, nullptr, 0}), Error);
  EXPECT_THROW(make_schedule({Collective::AllReduce, Algorithm::Ring, 4, 10, 0, 0, nullptr, 0}), Error);
  EXPECT_THROW(make_schedule({Collective::AllReduce, Algorithm::Ring, 4, 10, 4, 0, &three, 0}), Error);
}

TEST(Registry, OneRankIsALocalCopy) {
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c)) {
      const Schedule s = make_schedule({c, a, 1, 10, 4, 0, nullptr, 0});
      ASSERT_EQ(s.ranks.size(), 1u);
      ASSERT_EQ(s.ranks[0].rounds.size(), 1u) << to_string(c) << "/" << to_string(a);
      ASSERT_EQ(s.ranks[0].rounds[0].ops.size(), 1u);
      EXPECT_EQ(s.ranks[0].rounds[0].ops[0].kind, OpKind::Copy);
      EXPECT_EQ(s.ranks[0].rounds[0].ops[0].dst.count, 10u);
    }
}

// The source of rank `rank`'s sends in its round `round`.
std::vector<Span> send_sources(const Schedule& s, int rank, std::size_t round) {
  std::vector<Span> out;
  for (const Op& op : s.ranks[rank].rounds.at(round).ops)
    if (op.kind == OpKind::Send) out.push_back(op.src);
  return out;
}

TEST(ScheduleBuilder, DataCopiedFromInputIsSentFromInput) {
  // Ring allgather, 4 ranks of 3 elements: each rank copies its Input into its block of Output in
  // round 0 and sends that block at once: from Input. Later rounds forward received blocks.
  const Schedule ring = make_schedule({Collective::AllGather, Algorithm::Ring, 4, 12, 4, 0, nullptr, 0});
  for (int r = 0; r < 4; ++r) {
    const auto first = send_sources(ring, r, 0);
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].buffer, BufferId::Input) << "rank " << r;
    EXPECT_EQ(first[0].offset, 0u);
    EXPECT_EQ(first[0].count, 3u);
    EXPECT_EQ(send_sources(ring, r, 1).at(0).buffer, BufferId::Output) << "rank " << r;
  }
  // Hierarchical broadcast on one node: the root copies Input to Output in one round and sends it
  // in the next: from Input.
  const Schedule hb = make_schedule({Collective::Broadcast, Algorithm::Hierarchical, 2, 8, 4, 0, nullptr, 0});
  bool root_sent = false;
  for (std::size_t round = 0; round < hb.ranks[0].rounds.size(); ++round)
    for (const Span& src : send_sources(hb, 0, round)) {
      EXPECT_EQ(src.buffer, BufferId::Input);
      root_sent = true;
    }
  EXPECT_TRUE(root_sent);
  // Binomial reduce, 4 ranks: rank 2 copies its Input into Output, combines rank 3's data into it,
  // then sends the partial sum: that is no copy of Input any more and stays in Output.
  const Schedule red = make_schedule({Collective::Reduce, Algorithm::Binomial, 4, 8, 4, 0, nullptr, 0});
  const auto partial = send_sources(red, 2, red.ranks[2].rounds.size() - 1);
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0].buffer, BufferId::Output);
}

// Height of every v in a tree given by parents (leaves 0); checks every v reaches `root`.
std::vector<int> heights(const std::vector<int>& parent, int root) {
  const int p = static_cast<int>(parent.size());
  std::vector<int> h(p, 0);
  for (int v = 0; v < p; ++v) {
    int x = v, up = 0;
    while (parent[x] >= 0 && up <= p) {  // up > p would mean a cycle; the root check then fails
      x = parent[x];
      ++up;
      h[x] = std::max(h[x], up);
    }
    EXPECT_EQ(x, root) << "rank " << v << " does not reach the root";
  }
  return h;
}

int floor_lg(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}
int ceil_lg(int p) {
  return p <= 1 ? 0 : floor_lg(p - 1) + 1;
}

TEST(Tree, TwoBinaryTreesWithComplementaryLeaves) {
  for (bool rooted : {false, true})
    for (int p = 2; p <= 300; ++p) {
      const bool pow2 = (p & (p - 1)) == 0;
      // Roots and heights as tree.cc documents them.
      const int root[2] = {0, rooted ? 0 : (1 << floor_lg(p)) - 1};
      const int height[2] = {ceil_lg(p), rooted ? ceil_lg(p) + (pow2 && p > 2 ? 1 : 0) : floor_lg(p)};
      std::vector<int> kids[2];
      for (int t = 0; t < 2; ++t) {
        const std::string where = "p=" + std::to_string(p) + " tree " + std::to_string(t) + (rooted ? " rooted" : "");
        const std::vector<int> parent = double_tree_parents(p, rooted)[t];
        ASSERT_EQ(static_cast<int>(parent.size()), p);
        kids[t].assign(p, 0);
        for (int v = 0; v < p; ++v) {
          if (v == root[t]) {
            EXPECT_EQ(parent[v], -1) << where;
            continue;
          }
          ASSERT_GE(parent[v], 0) << where << " v=" << v;
          ASSERT_LT(parent[v], p) << where;
          ++kids[t][parent[v]];
        }
        for (int v = 0; v < p; ++v) EXPECT_LE(kids[t][v], 2) << where << " v=" << v;
        if (rooted || t == 0) {
          EXPECT_EQ(kids[t][root[t]], 1) << where << ": the root has one child";
        }
        EXPECT_EQ(heights(parent, root[t])[root[t]], height[t]) << where;
      }
      // Every rank is a leaf in exactly one tree; with both trees rooted at 0, every rank but 0.
      for (int v = rooted ? 1 : 0; v < p; ++v) {
        if (rooted && p < 3) break;
        EXPECT_EQ((kids[0][v] == 0) + (kids[1][v] == 0), 1)
            << "p=" << p << (rooted ? " rooted" : "") << ": rank " << v << " must be a leaf in exactly one tree";
      }
    }
}

}  // namespace
}  // namespace commsim
