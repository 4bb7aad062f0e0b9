// The closed forms against the published formulas (Thakur, Rabenseifner & Gropp 2005, and the
// forms documented in src/model/cost/ for tree, pipelined chains, direct and hierarchical), written out
// here independently; the tier rules across nodes; limits; NCCL's model and its worked example.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim {
namespace {

constexpr double kRel = 1e-12;

// A topology built in code: intra-node tier (a_i, bw_i), network (a_n, nics x nic_bw,
// oversubscription), reduction bandwidth. Local copies are free (the published formulas have no
// copy term; tests/collectives/test_price.cc checks the closed forms' copies against the
// schedules').
Topology make_topo(double a_i, double bw_i, double a_n, double nic_bw, int nics, double reduce_bw,
                   double oversubscription = 1.0) {
  Topology t;
  t.name = "synthetic";
  t.ranks_per_node = 8;
  t.memory_bw_Bps = 1e30;
  t.intra = {"nvswitch", a_i, bw_i};
  t.network.kind = "infiniband";
  t.network.fabric_shape = "fat-tree";
  t.network.nics_per_node = nics;
  t.network.nic_bw_Bps = nic_bw;
  t.network.latency_s = a_n;
  t.network.oversubscription = oversubscription;
  t.reduce_bw_Bps = reduce_bw;
  return t;
}

// NCCL 2.30.7's constants (src/graph/tuning.cc), NVLink hops inside the node.
void set_nccl_nvlink(Topology& t) {
  // [tree, ring] x [LL, LL128, Simple], NCCL's order (kNcclTableTree, kNcclTableRing).
  const double base[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
  const double intra[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
  const double inter[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) {
      t.nccl.base_latency_s[a][p] = base[a][p] * 1e-6;
      t.nccl.intra_hop_latency_s[a][p] = intra[a][p] * 1e-6;
      t.nccl.inter_hop_latency_s[a][p] = inter[a][p] * 1e-6;
    }
  t.nccl.present = true;
}

// One channel: the formulas these tests derive are the one-channel ones (the topology's default
// channel count is tested on its own, ClosedFormChannels).
Cost cost(const Topology& t, Collective c, Algorithm a, int nodes, int per_node, Bytes n, Protocol p = Protocol::None,
          int channels = 1) {
  return closed_form(t, CostQuery{c, a, p, nodes, per_node, n, channels});
}

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, kRel * std::max(std::abs(want), 1e-30)) << what;
}

bool pow2(int p) {
  return (p & (p - 1)) == 0;
}
int flg(int p) {
  return static_cast<int>(std::floor(std::log2(p) + 1e-9));
}
int clg(int p) {
  return static_cast<int>(std::ceil(std::log2(p) - 1e-9));
}
// Height of the double tree for broadcast/reduce (tree.cc): one more for p a power of two > 2.
int tree_h(int p) {
  return clg(p) + (pow2(p) && p > 2 ? 1 : 0);
}
// The double tree's allreduce (model/cost/tree.cc): k + 2H - 1 steps; H fill steps up and H down move a
// chunk (n/k), the k - 1 steady steps move 2n/k and combine n/k. With p = 2 every message is a
// half-chunk: fill n/(2k), steady n/k. `moved` overrides the chunks a steady step moves.
double tree_allreduce_T(int p, double n, double a, double b, double g, int k, double moved = 0) {
  const double H = clg(p), fill = p == 2 ? 0.5 : 1, steady = p == 2 ? 1 : 2, x = n / k;
  if (moved == 0) moved = steady;
  return (k + 2 * H - 1) * a + x * (2 * H * fill + (k - 1) * moved) * b + x * (H * fill + (k - 1) * steady / 2) * g;
}

// One tier, described by its a, b, g: either all ranks on one node (intra tier) or one rank per
// node on a network with one NIC per node whose bandwidth is below the intra-node link (so every
// algorithm sees the same b).
struct Tier {
  const char* name;
  Topology topo;
  bool one_node;  // true: nodes = 1, ranks_per_node = p; false: nodes = p, ranks_per_node = 1
  double a, b, g;
};

std::vector<Tier> tiers() {
  std::vector<Tier> out;
  Topology t = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  out.push_back({"one node (intra tier)", t, true, 2e-6, 1 / 100e9, 1 / 1e12});
  out.push_back({"one rank per node (network tier)", t, false, 5e-6, 1 / 25e9, 1 / 1e12});
  return out;
}

const int kRanks[] = {2, 3, 4, 5, 7, 8, 16, 24, 64};
const Bytes kSizes[] = {8, 1000, (1u << 20) + 3, 64u << 20, 1ull << 30};

// Published (or documented) formula for (collective, algorithm) at p ranks, n bytes, pipeline k.
using Formula = std::function<double(int p, double n, double a, double b, double g, int k)>;

struct Case {
  Collective c;
  Algorithm alg;
  Formula f;
};

std::vector<Case> one_tier_cases() {
  using C = Collective;
  using A = Algorithm;
  auto scatter = [](int p, double n, double a, double b) { return clg(p) * a + n * (p - 1) / p * b; };
  auto ag_rd = [](int p, double n, double a, double b) {
    if (pow2(p)) return std::log2(p) * a + n * (p - 1) / p * b;
    int m = flg(p), r = p - (1 << m);
    double blocks = 1 + (p - 1);
    for (int s = 0; s < m; ++s) blocks += (1 << s) + std::min(1 << s, r);
    return (m + 2) * a + n / p * blocks * b;
  };
  auto rs_rh = [](int p, double n, double a, double b, double g) {
    if (pow2(p)) return std::log2(p) * a + n * (p - 1) / p * (b + g);
    int m = flg(p), p2 = 1 << m, r = p - p2;
    double S = 0;
    for (int s = 0; s < m; ++s) {
      int gs = p2 >> (s + 1);
      S += gs + std::min(gs, r);
    }
    return (m + 2) * a + (n + n / p * S + n / p) * b + (n + n / p * S) * g;
  };
  std::vector<Case> v = {
      {C::AllReduce, A::Ring,
       [](int p, double n, double a, double b, double g, int) {
         return 2.0 * (p - 1) * a + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g;
       }},
      {C::AllReduce, A::RecursiveDoubling,
       [](int p, double n, double a, double b, double g, int) {
         if (pow2(p)) return std::log2(p) * a + n * std::log2(p) * (b + g);
         int m = flg(p);
         return (m + 2) * a + (m + 2) * n * b + (m + 1) * n * g;
       }},
      {C::AllReduce, A::Rabenseifner,
       [](int p, double n, double a, double b, double g, int) {
         if (pow2(p)) return 2 * std::log2(p) * a + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g;
         // Fold-in, the core on the p2 = 2^m ranks (n split p2 ways), fold-out: the schedule. The
         // published form charges the core n(p-1)/p instead of n(p2-1)/p2.
         const double m = flg(p), p2 = std::exp2(m), f = (p2 - 1) / p2;
         return (2 * m + 2) * a + (2 + 2 * f) * n * b + (1 + f) * n * g;
       }},
      {C::AllReduce, A::Tree,
       [](int p, double n, double a, double b, double g, int k) { return tree_allreduce_T(p, n, a, b, g, k); }},
      {C::AllReduce, A::Hierarchical,
       [](int p, double n, double a, double b, double g, int) {
         return 2.0 * (p - 1) * a + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g;
       }},
      {C::AllGather, A::Ring,
       [](int p, double n, double a, double b, double, int) { return (p - 1.0) * a + n * (p - 1) / p * b; }},
      {C::AllGather, A::RecursiveDoubling,
       [ag_rd](int p, double n, double a, double b, double, int) { return ag_rd(p, n, a, b); }},
      {C::AllGather, A::Bruck,
       [](int p, double n, double a, double b, double, int) { return clg(p) * a + n * (p - 1) / p * b; }},
      {C::AllGather, A::Direct,
       [](int p, double n, double a, double b, double, int) { return a + n * (p - 1) / p * b; }},
      {C::AllGather, A::Hierarchical,
       [](int p, double n, double a, double b, double, int) { return (p - 1.0) * a + n * (p - 1) / p * b; }},
      {C::ReduceScatter, A::Ring,
       [](int p, double n, double a, double b, double g, int) { return (p - 1.0) * a + n * (p - 1) / p * (b + g); }},
      {C::ReduceScatter, A::RecursiveHalving,
       [rs_rh](int p, double n, double a, double b, double g, int) { return rs_rh(p, n, a, b, g); }},
      {C::ReduceScatter, A::Pairwise,
       [](int p, double n, double a, double b, double g, int) { return (p - 1.0) * a + n * (p - 1) / p * (b + g); }},
      {C::ReduceScatter, A::Direct,
       [](int p, double n, double a, double b, double g, int) { return a + n * (p - 1) / p * (b + g); }},
      {C::Broadcast, A::Binomial,
       [](int p, double n, double a, double b, double, int) { return clg(p) * (a + n * b); }},
      {C::Broadcast, A::RecursiveDoubling,
       [scatter, ag_rd](int p, double n, double a, double b, double, int) {
         if (pow2(p)) return 2 * std::log2(p) * a + 2 * n * (p - 1) / p * b;
         return scatter(p, n, a, b) + ag_rd(p, n, a, b);
       }},
      {C::Broadcast, A::Ring,
       [](int p, double n, double a, double b, double, int k) { return (p - 1.0 + k - 1) * (a + n / k * b); }},
      {C::Broadcast, A::Tree,
       [](int p, double n, double a, double b, double, int k) { return (tree_h(p) + k - 1.0) * (a + n / k * b); }},
      {C::Reduce, A::Binomial,
       [](int p, double n, double a, double b, double g, int) { return clg(p) * (a + n * b + n * g); }},
      {C::Reduce, A::Rabenseifner,
       [](int p, double n, double a, double b, double g, int) {
         if (pow2(p)) return 2 * std::log2(p) * a + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g;
         // Fold-in, then reduce-scatter and gather among the p2 = 2^m core ranks (the schedule).
         const double m = flg(p), p2 = std::exp2(m), f = (p2 - 1) / p2;
         return (2 * m + 1) * a + (1 + 2 * f) * n * b + (1 + f) * n * g;
       }},
      {C::Reduce, A::Ring,
       [](int p, double n, double a, double b, double g, int k) { return (p - 1.0 + k - 1) * (a + n / k * (b + g)); }},
      {C::Reduce, A::Tree,
       [](int p, double n, double a, double b, double g, int k) {
         return (tree_h(p) + k - 1.0) * (a + n / k * (b + g));
       }},
      {C::SendRecv, A::Direct, [](int, double n, double a, double b, double, int) { return a + n * b; }},
      {C::AllToAll, A::Pairwise,
       [](int p, double n, double a, double b, double, int) { return (p - 1.0) * a + n * b; }},
      {C::AllToAll, A::Bruck,
       [](int p, double n, double a, double b, double, int) {
         if (pow2(p)) return std::log2(p) * a + n / 2 * std::log2(p) * b;
         double blocks = 0;  // blocks sent over all steps: step s sends the indices with bit s set
         for (int s = 0; s < clg(p); ++s)
           for (int j = 0; j < p; ++j) blocks += (j >> s) & 1;
         return clg(p) * a + n / p * blocks * b;
       }},
      {C::AllToAll, A::Direct,
       [](int p, double n, double a, double b, double, int) { return a + n * (p - 1) / p * b; }},
      // MPI's linear broadcast and reduce: the root sends p - 1 copies at once; it receives p - 1
      // contributions one after another, combining each.
      {C::Broadcast, A::Direct, [](int p, double n, double a, double b, double, int) { return a + (p - 1) * n * b; }},
      {C::Reduce, A::Direct,
       [](int p, double n, double a, double b, double g, int) { return (p - 1) * (a + n * b + n * g); }},
  };
  return v;
}

int pipeline_k(const Topology& t, Collective c, Algorithm a, int nodes, int per_node, Bytes n) {
  if (a == Algorithm::Tree) return tree_pipeline_chunks(t, c, nodes, per_node, n);
  if (a == Algorithm::Ring && (c == Collective::Broadcast || c == Collective::Reduce))
    return ring_pipeline_chunks(t, c, nodes, per_node, n);
  return 1;
}

TEST(ClosedForm, EqualsPublishedFormulasOnOneTier) {
  int checked = 0;
  for (const Tier& tier : tiers()) {
    for (const Case& cs : one_tier_cases()) {
      for (int p : kRanks) {
        for (Bytes n : kSizes) {
          int nodes = tier.one_node ? 1 : p, per_node = tier.one_node ? p : 1;
          int k = pipeline_k(tier.topo, cs.c, cs.alg, nodes, per_node, n);
          double want = cs.f(p, static_cast<double>(n), tier.a, tier.b, tier.g, k);
          // One rank on each of three nodes: a node sends at most three half-chunks a step across
          // the network, where the published formula counts four (the closed form counts the
          // tree's edges between nodes, tree_cut).
          if (!tier.one_node && cs.c == Collective::AllReduce && cs.alg == Algorithm::Tree && p == 3)
            want = tree_allreduce_T(p, static_cast<double>(n), tier.a, tier.b, tier.g, k, 1.5);
          Cost got = cost(tier.topo, cs.c, cs.alg, nodes, per_node, n);
          expect_rel(got.time_s, want,
                     std::string(tier.name) + " " + std::string(to_string(cs.c)) + " " +
                         std::string(to_string(cs.alg)) + " p=" + std::to_string(p) + " n=" + std::to_string(n) +
                         " k=" + std::to_string(k));
          expect_rel(got.latency_s + got.bandwidth_s + got.reduction_s + got.copy_s, got.time_s, "parts add up");
          EXPECT_EQ(got.algorithm, cs.alg);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(one_tier_cases().size(), 28u);
  EXPECT_EQ(checked, 2 * 28 * 9 * 5);
}

TEST(ClosedForm, EveryHandWrittenPairIsCovered) {
  // The formula table above covers every (collective, hand-written algorithm) that applies.
  auto cases = one_tier_cases();
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c)) {
      bool found = std::any_of(cases.begin(), cases.end(), [&](const Case& cs) { return cs.c == c && cs.alg == a; });
      // Hierarchical broadcast/reduce have their own one-tier tests below.
      if (a == Algorithm::Hierarchical && (c == Collective::Broadcast || c == Collective::Reduce)) continue;
      EXPECT_TRUE(found) << to_string(c) << " " << to_string(a);
    }
}

TEST(ClosedForm, PartsSplitAlphaBetaGamma) {
  Topology t = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  const int p = 7;
  const double n = 3e6, a = 2e-6, b = 1 / 100e9, g = 1 / 1e12;
  Cost c = cost(t, Collective::AllReduce, Algorithm::Ring, 1, p, static_cast<Bytes>(n));
  expect_rel(c.latency_s, 2.0 * (p - 1) * a, "alpha");
  expect_rel(c.bandwidth_s, 2 * n * (p - 1) / p * b, "beta");
  expect_rel(c.reduction_s, n * (p - 1) / p * g, "gamma");
  Cost ag = cost(t, Collective::AllGather, Algorithm::Ring, 1, p, static_cast<Bytes>(n));
  EXPECT_EQ(ag.reduction_s, 0.0);
}

TEST(ClosedForm, HierarchicalBroadcastAndReduceOnOneTier) {
  Topology t = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  const double a = 2e-6, b = 1 / 100e9, g = 1 / 1e12;
  for (int p : kRanks) {
    for (Bytes nb : kSizes) {
      double n = static_cast<double>(nb);
      // One node: the binomial tree inside the node, ceil(lg p)(a + n b [+ n g]).
      expect_rel(cost(t, Collective::Broadcast, Algorithm::Hierarchical, 1, p, nb).time_s, clg(p) * (a + n * b),
                 "hier bcast p=" + std::to_string(p));
      expect_rel(cost(t, Collective::Reduce, Algorithm::Hierarchical, 1, p, nb).time_s, clg(p) * (a + n * (b + g)),
                 "hier reduce p=" + std::to_string(p));
      // One rank per node: binomial across the nodes, ceil(lg p)(a_n + n / nic_bw [+ n g]).
      expect_rel(cost(t, Collective::Broadcast, Algorithm::Hierarchical, p, 1, nb).time_s,
                 clg(p) * (5e-6 + n / 25e9), "hier bcast one rank per node");
      expect_rel(cost(t, Collective::Reduce, Algorithm::Hierarchical, p, 1, nb).time_s,
                 clg(p) * (5e-6 + n / 25e9 + n * g), "hier reduce one rank per node");
    }
  }
}

TEST(ClosedForm, PipelineChunksMinimiseTheClosedForm) {
  Topology t = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  const double a = 2e-6, b = 1 / 100e9, g = 1 / 1e12;
  for (int p : {2, 3, 8, 24, 64}) {
    for (Bytes nb : {Bytes(100), Bytes(4096), Bytes(40000), Bytes(1) << 20, Bytes(64) << 20}) {
      double n = static_cast<double>(nb);
      int kmax = std::max<int>(1, static_cast<int>(nb / 4096));
      int k = tree_pipeline_chunks(t, Collective::AllReduce, 1, p, nb);
      ASSERT_GE(k, 1);
      ASSERT_LE(k, kmax);
      double best = tree_allreduce_T(p, n, a, b, g, k);
      for (int j = 1; j <= kmax; ++j)
        EXPECT_LE(best, tree_allreduce_T(p, n, a, b, g, j) * (1 + 1e-12))
            << "p=" << p << " n=" << n << " k=" << k << " j=" << j;
      int kr = ring_pipeline_chunks(t, Collective::Broadcast, 1, p, nb);
      ASSERT_GE(kr, 1);
      ASSERT_LE(kr, kmax);
      double chain = (p - 1.0 + kr - 1) * (a + n / kr * b);
      for (int j = 1; j <= kmax; ++j) EXPECT_LE(chain, (p - 1.0 + j - 1) * (a + n / j * b) * (1 + 1e-12));
      // What the runtime passes to the schedule generator.
      CostQuery q{Collective::AllReduce, Algorithm::Tree, Protocol::None, 1, p, nb};
      EXPECT_EQ(pipeline_chunk_bytes(t, q), (nb + k - 1) / k);
      q.algorithm = Algorithm::Ring;
      EXPECT_EQ(pipeline_chunk_bytes(t, q), 0u);  // ring allreduce is not pipelined
    }
  }
  // The reference's rule of thumb: best k ~ sqrt(b n lg p / (2a)); ours is within a small factor.
  int k = tree_pipeline_chunks(t, Collective::AllReduce, 1, 64, 64u << 20);
  double rule = std::sqrt(b * (64u << 20) * 6 / (2 * a));
  EXPECT_GT(k, rule / 4);
  EXPECT_LT(k, rule * 4);
  // Tiny messages are not split.
  EXPECT_EQ(tree_pipeline_chunks(t, Collective::AllReduce, 1, 64, 4000), 1);
  EXPECT_EQ(ring_pipeline_chunks(t, Collective::AllGather, 1, 64, 1 << 30), 1);
}

TEST(ClosedForm, OneRankCostsNothing) {
  Topology t = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c)) EXPECT_EQ(cost(t, c, a, 1, 1, 1 << 20).time_s, 0.0);
}

// ---- across tiers ----------------------------------------------------------------------------

// An H100-like node: 8 ranks, 370.8 GB/s inside, 8 NICs of 47 GB/s.
Topology h100_like() {
  return make_topo(2e-6, 370.8e9, 5e-6, 47e9, 8, 33.5e12);
}

TEST(ClosedFormTiers, RingCrossesEachNodeBoundaryOnce) {
  Topology t = h100_like();
  const int N = 4, G = 8, p = N * G;
  const double n = 1 << 30, a_n = 5e-6, g = 1 / 33.5e12;
  // A hand-written ring sends each message as one flow: one NIC (47 GB/s) per node boundary, the
  // slower of the two tiers in every step.
  const double b = 1 / 47e9;
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, N, G, 1 << 30).time_s,
             2.0 * (p - 1) * a_n + 2 * n * (p - 1) / p * b + n * (p - 1) / p * g, "ring allreduce across nodes");
  // More NICs do not help a single flow.
  Topology thin = make_topo(2e-6, 370.8e9, 5e-6, 47e9, 2, 33.5e12);
  expect_rel(cost(thin, Collective::AllGather, Algorithm::Ring, N, G, 1 << 30).time_s,
             (p - 1.0) * a_n + n * (p - 1) / p / 47e9, "ring allgather, one NIC per flow");
  // Oversubscription divides the node's network bandwidth, which can then be below one NIC's.
  Topology over = make_topo(2e-6, 370.8e9, 5e-6, 94e9, 1, 33.5e12, 2.0);
  expect_rel(cost(over, Collective::AllGather, Algorithm::Ring, N, G, 1 << 30).time_s,
             (p - 1.0) * a_n + n * (p - 1) / p / 47e9, "ring allgather, oversubscribed");
}

TEST(ClosedFormTiers, RecursiveDoublingPricesEachStepAtItsTier) {
  Topology t = h100_like();
  const int N = 4, G = 8;
  const double n = 1 << 20, a_i = 2e-6, b_i = 1 / 370.8e9, a_n = 5e-6, g = 1 / 33.5e12;
  // Distances 1, 2, 4 stay inside a node of 8; 8 and 16 cross, all 8 ranks of a node at once,
  // each on its own NIC (8 NICs): 47 GB/s per flow.
  double want = 3 * (a_i + n * b_i + n * g) + 2 * (a_n + n / 47e9 + n * g);
  expect_rel(cost(t, Collective::AllReduce, Algorithm::RecursiveDoubling, N, G, 1 << 20).time_s, want, "rd 4x8");
  // With 2 NICs the 8 flows share 94 GB/s.
  Topology thin = make_topo(2e-6, 370.8e9, 5e-6, 47e9, 2, 33.5e12);
  want = 3 * (a_i + n * b_i + n * g) + 2 * (a_n + n / (2 * 47e9 / 8) + n * g);
  expect_rel(cost(thin, Collective::AllReduce, Algorithm::RecursiveDoubling, N, G, 1 << 20).time_s, want,
             "rd 4x8 thin");
  // Six ranks per node (p = 24, folded onto 16): the fold, distance 1 and the unfold stay inside
  // a node; distances 2 and 4 straddle node boundaries (some messages cross) and 8 crosses, so
  // three steps pay the network latency.
  Cost six = cost(t, Collective::AllReduce, Algorithm::RecursiveDoubling, 4, 6, 1 << 20);
  expect_rel(six.latency_s, 3 * a_i + 3 * a_n, "rd 4x6 latency");
}

TEST(ClosedFormTiers, DirectSharesTheNodesNics) {
  // 2 nodes x 4 ranks, NICs slower than the intra link: each rank sends 3 blocks inside and 4 out;
  // the 4 ranks of a node share 2 NICs.
  Topology t = make_topo(1e-6, 100e9, 4e-6, 10e9, 2, 1e12);
  t.ranks_per_node = 4;
  const double n = 8e6, block = n / 8;
  double out = 4e-6 + 4 * block / std::min(2 * 10e9 / 4, 4 * 10e9);
  double in = 1e-6 + 3 * block / 100e9;
  expect_rel(cost(t, Collective::AllToAll, Algorithm::Direct, 2, 4, 8000000).time_s, std::max(in, out), "direct a2a");
  expect_rel(cost(t, Collective::ReduceScatter, Algorithm::Direct, 2, 4, 8000000).time_s,
             std::max(in, out) + 7 * block / 1e12, "direct reduce-scatter");
}

TEST(ClosedFormTiers, HierarchicalAllreduce) {
  Topology t = h100_like();
  const int N = 4, G = 8;
  const double n = 1 << 30, a_i = 2e-6, b_i = 1 / 370.8e9, a_n = 5e-6, g = 1 / 33.5e12;
  const double b_h = 1 / std::min(370.8e9, 8 * 47e9 / G);  // all 8 ranks of a node cross at once
  double want = 2 * (G - 1) * a_i + 2 * n * (G - 1) / G * b_i + n * (G - 1) / G * g + 2 * (N - 1) * a_n +
                2 * (n / G) * (N - 1) / N * b_h + (n / G) * (N - 1) / N * g;
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Hierarchical, N, G, 1 << 30).time_s, want, "hier allreduce");
  // Hierarchical allgather: inter-node ring on n/G, then intra-node ring.
  double want_ag = (N - 1) * a_n + n * (N - 1) / (N * G) * b_h + (G - 1) * a_i + n * (G - 1) / G * b_i;
  expect_rel(cost(t, Collective::AllGather, Algorithm::Hierarchical, N, G, 1 << 30).time_s, want_ag, "hier allgather");
}

// How the nodes cut the double binary tree (cost.h): counted on the trees, as documented.
TEST(ClosedFormTiers, TreeCutCountsTheEdgesBetweenNodes) {
  for (int N : {2, 3, 4, 8, 16, 64})
    for (int G : {1, 2, 4, 8}) {
      const TreeCut ar = tree_cut(N, G, false), bc = tree_cut(N, G, true);
      const std::string where = "N=" + std::to_string(N) + " G=" + std::to_string(G);
      const int p = N * G;
      EXPECT_EQ(ar.flows, G == 1 ? std::min(N, 4) : std::min(N + 2, 6)) << where;
      EXPECT_EQ(bc.flows, G == 1 ? 2 : 3) << where;
      EXPECT_EQ(ar.levels, clg(N) + (G > 1 ? 1 : 0)) << where;
      EXPECT_EQ(ar.height, clg(p)) << where;
      EXPECT_EQ(bc.height, tree_h(p)) << where;
      EXPECT_LE(bc.levels, bc.height) << where;
    }
  // Ranks per node that are not a power of two cut the in-order trees in more places.
  EXPECT_EQ(tree_cut(4, 3, false).flows, 9);
  EXPECT_EQ(tree_cut(8, 6, false).flows, 12);
}

TEST(ClosedFormTiers, PipelinesAcrossNodes) {
  // Documented in model/cost/pipeline.h: a pipeline of S_i intra-node and S_n network stages in k chunks costs
  // S_i t_i + S_n t_n + (k-1) max(t_i, t_n), t_X = a_X + (n/k)(b_X + g_X), per phase. The tree's
  // levels are counted on it (tree_cut): `levels` cross the network, height - levels do not;
  // allreduce overlaps its reduce and broadcast phases: fill both (n/k per intra stage, g going
  // up), then k - 1 steady steps moving 2n/k inside a node and combining n/k. Across the network
  // every edge between nodes carries a half-chunk (n/(2k)) a step as its own flow, at
  // bw_flow(f) = min(nic_bw, node_bw / f) with f the cut's flows (steady state), at most two while
  // the pipeline fills (one for allreduce on two ranks). The reduce chain has N network stages
  // (N - 1 with G = 1) and the rest intra, one flow each.
  // The second topology has slow intra-node messages but a slower network bandwidth, so which stage
  // is the slowest depends on the chunk size (the kink of the max).
  struct Params {
    Topology t;
    double a_i, b_i, a_n, b_n, g;
  };
  for (const Params& P :
       {Params{h100_like(), 2e-6, 1 / 370.8e9, 5e-6, 1 / 47e9, 1 / 33.5e12},
        Params{make_topo(10e-6, 100e9, 1e-6, 25e9, 2, 1e12), 10e-6, 1 / 100e9, 1e-6, 1 / 25e9, 1 / 1e12}}) {
    Topology t = P.t;
    const double a_i = P.a_i, b_i = P.b_i, a_n = P.a_n, b_n = P.b_n, g = P.g;
    const double node_bw = t.network.nics_per_node / b_n;
    auto b_flow = [&](double f) { return std::max(b_n, f / node_bw); };
    auto phase = [&](double S_i, double S_n, double n, int k, double gg) {
      double x = n / k, ti = a_i + x * (b_i + gg), tn = a_n + x * (b_n + gg);
      double slowest = S_i == 0 ? tn : S_n == 0 ? ti : std::max(ti, tn);
      return S_i * ti + S_n * tn + (k - 1) * slowest;
    };
    for (int N : {2, 4, 16, 24}) {
      for (int G : {1, 3, 8}) {
        t.ranks_per_node = G;  // nodes of G GPUs, each reaching all of its node's NICs
        for (Bytes nb : {Bytes(4096) * 3, Bytes(1) << 20, Bytes(256) << 20}) {
          const double n = static_cast<double>(nb);
          const int kmax = std::max<int>(1, static_cast<int>(nb / 4096));
          const TreeCut ar = tree_cut(N, G, false), bc = tree_cut(N, G, true);
          const double Si = static_cast<double>(ar.height - ar.levels), Sn = static_cast<double>(ar.levels);
          const double Sib = static_cast<double>(bc.height - bc.levels), Snb = static_cast<double>(bc.levels);
          // Per byte of chunk across the network: the steady step's and the fill's flows.
          const double bn_ss = 0.5 * b_flow(ar.flows), bn_fill = 0.5 * b_flow(N * G == 2 ? 1 : std::min(ar.flows, 2.0));
          auto tree_T = [&](int k) {
            const double x = n / k, pl = N * G == 2 ? 0.5 : 1, st = N * G == 2 ? 1 : 2;
            double fill = Si * (2 * a_i + x * pl * (2 * b_i + g)) + Sn * (2 * a_n + x * (2 * bn_fill + pl * g));
            double si = a_i + x * st * (b_i + g / 2), sn = a_n + x * (bn_ss + st * g / 2);
            return fill + (k - 1) * (G == 1 ? sn : std::max(si, sn));
          };
          const double bn_b = 0.5 * b_flow(bc.flows), bn_b_fill = 0.5 * b_flow(std::min(bc.flows, 2.0));
          auto bcast_T = [&](int k) {
            const double x = n / k, ti = a_i + x * b_i, tn = a_n + x * bn_b, tn_fill = a_n + x * bn_b_fill;
            const double slowest = G == 1 ? tn : std::max(ti, tn);
            return Sib * ti + Snb * tn_fill + (k - 1) * slowest;
          };
          int k = tree_pipeline_chunks(t, Collective::AllReduce, N, G, nb);
          std::string where = "N=" + std::to_string(N) + " G=" + std::to_string(G) + " n=" + std::to_string(nb);
          expect_rel(cost(t, Collective::AllReduce, Algorithm::Tree, N, G, nb).time_s, tree_T(k), "tree " + where);
          int kb = tree_pipeline_chunks(t, Collective::Broadcast, N, G, nb);
          expect_rel(cost(t, Collective::Broadcast, Algorithm::Tree, N, G, nb).time_s, bcast_T(kb), "tree bcast " + where);
          // The reduce chain ends at the root: with G > 1 its last hop crosses back to node 0.
          const double cn = G > 1 ? N : N - 1, ci = static_cast<double>(N) * G - 1 - cn;
          int kc = ring_pipeline_chunks(t, Collective::Reduce, N, G, nb);
          expect_rel(cost(t, Collective::Reduce, Algorithm::Ring, N, G, nb).time_s, phase(ci, cn, n, kc, g),
                     "chain reduce " + where);
          for (int j = 1; j <= std::min(kmax, 70000); ++j) {
            ASSERT_LE(tree_T(k), tree_T(j) * (1 + 1e-12)) << where << " k=" << k << " j=" << j;
            ASSERT_LE(bcast_T(kb), bcast_T(j) * (1 + 1e-12)) << where;
            ASSERT_LE(phase(ci, cn, n, kc, g), phase(ci, cn, n, j, g) * (1 + 1e-12)) << where;
          }
        }
      }
    }
  }
}

TEST(ClosedFormTiers, MoreNodesNeverMakeAStepCheaper) {
  Topology t = h100_like();
  for (Collective c : kAllCollectives)
    for (Algorithm a : hand_written_algorithms(c))
      for (Bytes n : {Bytes(8), Bytes(1) << 20, Bytes(1) << 30}) {
        double one = cost(t, c, a, 1, 8, n).time_s, two = cost(t, c, a, 2, 8, n).time_s;
        EXPECT_GT(two, one) << to_string(c) << " " << to_string(a) << " n=" << n;
      }
}

// ---- limits -----------------------------------------------------------------------------------

TEST(ClosedFormLimits, RingBusbwTendsToTheBottleneck) {
  const Bytes huge = 1ull << 42;
  // A negligible reduction cost: busbw -> the bottleneck link.
  Topology t = make_topo(2e-6, 370.8e9, 5e-6, 47e9, 4, 1e18);
  for (int N : {1, 4, 32}) {
    double bottleneck = N == 1 ? 370.8e9 : 47e9;  // across nodes: one flow, one NIC
    int p = N * 8;
    double busbw = static_cast<double>(huge) / cost(t, Collective::AllReduce, Algorithm::Ring, N, 8, huge).time_s *
                   busbw_factor(Collective::AllReduce, p);
    EXPECT_NEAR(busbw / bottleneck, 1.0, 1e-4) << "nodes " << N;
    double ag = static_cast<double>(huge) / cost(t, Collective::AllGather, Algorithm::Ring, N, 8, huge).time_s *
                busbw_factor(Collective::AllGather, p);
    EXPECT_NEAR(ag / bottleneck, 1.0, 1e-4) << "nodes " << N;
  }
  // With a reduction cost, the ring allreduce busbw tends to 1 / (b + g/2).
  Topology r = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 200e9);
  double busbw = static_cast<double>(huge) / cost(r, Collective::AllReduce, Algorithm::Ring, 1, 8, huge).time_s *
                 busbw_factor(Collective::AllReduce, 8);
  EXPECT_NEAR(busbw, 1 / (1 / 100e9 + 0.5 / 200e9), 1e-4 * busbw);
}

// ---- channels -----------------------------------------------------------------------------------

// NCCL's channel count on a GPU topology across nodes, two per NIC; one on one node and on host
// topologies; algorithms without channels get one; out-of-range counts are an error.
TEST(ClosedFormChannels, DefaultIsTwoPerNicAcrossNodes) {
  Topology t = h100_like();
  EXPECT_EQ(default_channels(t, 4), 16);
  EXPECT_EQ(default_channels(t, 1), 1);
  Topology two = make_topo(2e-6, 370.8e9, 5e-6, 47e9, 2, 33.5e12);
  EXPECT_EQ(default_channels(two, 16), 4);
  Topology host = t;
  host.gpu = false;
  EXPECT_EQ(default_channels(host, 4), 1);
  EXPECT_EQ(channels_for(t, CostQuery{Collective::AllReduce, Algorithm::Ring, Protocol::None, 4, 8, 1 << 20}), 16);
  EXPECT_EQ(channels_for(t, CostQuery{Collective::AllReduce, Algorithm::Ring, Protocol::None, 4, 8, 1 << 20, 3}), 3);
  EXPECT_EQ(channels_for(t, CostQuery{Collective::AllReduce, Algorithm::Rabenseifner, Protocol::None, 4, 8, 1 << 20}),
            1);
  EXPECT_EQ(channels_for(t, CostQuery{Collective::Broadcast, Algorithm::Ring, Protocol::None, 4, 8, 1 << 20, 8}), 1);
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 4, 8, 1 << 20, Protocol::None, 65), Error);
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 4, 8, 1 << 20, Protocol::None, -1), Error);
  // The default is what a query without a channel count prices.
  EXPECT_EQ(closed_form(t, CostQuery{Collective::AllReduce, Algorithm::Ring, Protocol::None, 4, 8, 1 << 30}).time_s,
            cost(t, Collective::AllReduce, Algorithm::Ring, 4, 8, 1 << 30, Protocol::None, 16).time_s);
}

// Documented in model/cost/ring.cc: C channels leave each node from C different GPUs, so a step moves m / C per
// channel across the network in C flows (bw_flow(C)) while the busiest GPU moves (C - floor(C/G)) m/C
// inside the node.
TEST(ClosedFormChannels, RingStepsShareTheNicsAndTheGpusLinks) {
  Topology t = h100_like();
  const int N = 4, G = 8, p = N * G;
  const double n = 1 << 30, a_n = 5e-6, a_i = 2e-6, g = 1 / 33.5e12, m = n / p;  // a step's bytes per rank
  // 8 channels: one per NIC, every NIC at 47 GB/s, slower than the 7/8 m each GPU moves on NVLink.
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, N, G, 1 << 30, Protocol::None, 8).time_s,
             2.0 * (p - 1) * (a_n + m / 8 / 47e9) + n * (p - 1) / p * g, "8 channels");
  // 2 channels: two NICs.
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, N, G, 1 << 30, Protocol::None, 2).time_s,
             2.0 * (p - 1) * (a_n + m / 2 / 47e9) + n * (p - 1) / p * g, "2 channels");
  // 16 channels share the 8 NICs: no faster than 8.
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, N, G, 1 << 30, Protocol::None, 16).time_s,
             2.0 * (p - 1) * (a_n + m / 8 / 47e9) + n * (p - 1) / p * g, "16 channels");
  // NICs faster than NVLink's share: the busiest GPU's 7/8 of m inside the node sets the step.
  Topology fast = make_topo(2e-6, 370.8e9, 5e-6, 200e9, 8, 33.5e12);
  const double in = a_i + 7.0 / 8 * m / 370.8e9, out = a_n + m / 8 / 200e9;
  expect_rel(cost(fast, Collective::AllReduce, Algorithm::Ring, N, G, 1 << 30, Protocol::None, 8).time_s,
             2.0 * (p - 1) * std::max(in, out) + n * (p - 1) / p * g, "8 channels, fast NICs");
  // Allgather: (p - 1) steps of n/p.
  expect_rel(cost(t, Collective::AllGather, Algorithm::Ring, N, G, 1 << 30, Protocol::None, 8).time_s,
             (p - 1.0) * (a_n + n / p / 8 / 47e9), "allgather, 8 channels");
  // On one node every channel's ring is the same ring: the same bandwidth as one channel.
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, 1, G, 1 << 30, Protocol::None, 8).time_s,
             cost(t, Collective::AllReduce, Algorithm::Ring, 1, G, 1 << 30).time_s, "one node");
  // Large sizes: busbw tends to the node's NICs (8 x 47 = 376 GB/s), against one NIC's 47 GB/s
  // for one channel.
  const Bytes huge = 1ull << 42;
  Topology free_reduce = make_topo(2e-6, 370.8e9, 5e-6, 47e9, 8, 1e18);
  for (int C : {1, 2, 4, 8, 16}) {
    const double busbw =
        static_cast<double>(huge) /
        cost(free_reduce, Collective::AllReduce, Algorithm::Ring, 16, 8, huge, Protocol::None, C).time_s *
        busbw_factor(Collective::AllReduce, 128);
    EXPECT_NEAR(busbw / (std::min(C, 8) * 47e9), 1.0, 1e-3) << C << " channels";
  }
}

// Hierarchical allreduce already runs one column ring per local GPU across the nodes; channels
// help where the node has more NICs than GPUs in use (4 of 8 here): two channels use all 8.
TEST(ClosedFormChannels, HierarchicalUsesTheNicsItsColumnsLeaveIdle) {
  Topology t = h100_like();
  const Bytes n = Bytes{1} << 34;
  auto hier = [&](int G, int C) {
    return cost(t, Collective::AllReduce, Algorithm::Hierarchical, 4, G, n, Protocol::None, C).time_s;
  };
  // Four GPUs of an eight-GPU node reach only the four NICs next to them, which the four columns
  // already use: channels do not help.
  EXPECT_NEAR(hier(4, 16), hier(4, 1), 0.01 * hier(4, 1));
  // A four-GPU node with eight NICs: the columns leave four idle, two channels use them.
  t.ranks_per_node = 4;
  EXPECT_LT(hier(4, 2), 0.75 * hier(4, 1));
  EXPECT_NEAR(hier(4, 16), hier(4, 2), 0.01 * hier(4, 2));
  t.ranks_per_node = 8;
  // Eight GPUs: the eight columns use every NIC with one channel.
  EXPECT_NEAR(hier(8, 16), hier(8, 1), 0.01 * hier(8, 1));
}

// The tree's channels: each a pipeline on n/C bytes whose steps carry C times its flows out of a
// node. More channels spread the tree's flows over more NICs: faster across nodes, never slower
// than one channel by more than its latency, and no change on one rank.
TEST(ClosedFormChannels, TreeSpreadsOverTheNics) {
  Topology t = h100_like();
  const Bytes n = 1ull << 30;
  const double one = cost(t, Collective::AllReduce, Algorithm::Tree, 16, 8, n).time_s;
  const double eight = cost(t, Collective::AllReduce, Algorithm::Tree, 16, 8, n, Protocol::None, 8).time_s;
  EXPECT_LT(eight, 0.9 * one);
  // Channels beyond what the node's bandwidth can serve do not help.
  const double many = cost(t, Collective::AllReduce, Algorithm::Tree, 16, 8, n, Protocol::None, 64).time_s;
  EXPECT_GT(many, 0.95 * eight);
  // The pipeline chunk is one channel's: its part of the bytes in k chunks.
  const CostQuery q{Collective::AllReduce, Algorithm::Tree, Protocol::None, 16, 8, n, 8};
  const int k = tree_pipeline_chunks(t, Collective::AllReduce, 16, 8, n, 8);
  EXPECT_EQ(pipeline_chunk_bytes(t, q), (n / 8 + k - 1) / k);
}

TEST(ClosedFormLimits, TinyMessagesAtManyRanksTreeBeatsRing) {
  Topology one = make_topo(2e-6, 100e9, 5e-6, 25e9, 1, 1e12);
  Topology h = h100_like();
  for (Bytes n : {Bytes(8), Bytes(1024)}) {
    EXPECT_LT(cost(one, Collective::AllReduce, Algorithm::Tree, 1, 64, n).time_s,
              cost(one, Collective::AllReduce, Algorithm::Ring, 1, 64, n).time_s);
    EXPECT_LT(cost(h, Collective::AllReduce, Algorithm::Tree, 64, 8, n).time_s,
              cost(h, Collective::AllReduce, Algorithm::Ring, 64, 8, n).time_s);
    EXPECT_LT(cost(h, Collective::Broadcast, Algorithm::Tree, 64, 8, n).time_s,
              cost(h, Collective::Broadcast, Algorithm::Ring, 64, 8, n).time_s);
    // Latency dominates: the time is within 1% of the alpha terms.
    Cost ring = cost(h, Collective::AllReduce, Algorithm::Ring, 64, 8, n);
    EXPECT_GT(ring.latency_s, 0.99 * ring.time_s);
  }
  // On 2 ranks the ring is at least as good (tree's depth is 1, but it moves n/k twice per step).
  EXPECT_LE(cost(one, Collective::AllReduce, Algorithm::Ring, 1, 2, 8).time_s,
            cost(one, Collective::AllReduce, Algorithm::Tree, 1, 2, 8).time_s);
}

// ---- NCCL's two-algorithm model: our ring and tree with a protocol ---------------------------------
// (nccl-ring and nccl-tree follow it only once `commsim calibrate` fitted nccl.bus_bandwidth;
// otherwise NCCL's own collectives follow the ported model, tests/model/cost/test_nccl_tuned.cc.)

TEST(NcclModel, WorkedExampleOneNvlinkNode) {
  // references: one 8-GPU NVLink node, allreduce latency ring LL 15.0 us, ring Simple 56 us,
  // tree LL 15.2 us (NCCL src/graph/tuning.cc constants).
  Topology t = h100_like();
  set_nccl_nvlink(t);
  auto lat = [&](Algorithm a, Protocol p) {
    Cost c = cost(t, Collective::AllReduce, a, 1, 8, 0, p);
    EXPECT_EQ(c.protocol, p);
    return c.time_s;
  };
  EXPECT_NEAR(lat(Algorithm::Ring, Protocol::LL), 15.0e-6, 1e-12);
  EXPECT_NEAR(lat(Algorithm::Ring, Protocol::Simple), 56.0e-6, 1e-12);
  EXPECT_NEAR(lat(Algorithm::Tree, Protocol::LL), 15.2e-6, 1e-12);
  // nccl-ring with fitted constants is the same model.
  t.nccl.bus_bw_Bps[kNcclTableRing][2] = 370.8e9;
  EXPECT_NEAR(lat(Algorithm::NcclRing, Protocol::LL), 15.0e-6, 1e-12);
}

TEST(NcclModel, BandwidthTermsAndChoice) {
  Topology t = h100_like();
  set_nccl_nvlink(t);
  const Bytes n = 1ull << 30;
  const int N = 4, G = 8, p = N * G;
  const double busbw = std::min(370.8e9, 8 * 47e9);
  // Ring Simple allreduce: latency base + (steps - interSteps) intra + interSteps inter,
  // steps = 2(p-1), interSteps = 2(N-1); algbw = busbw p / (2(p-1)).
  Cost ring = cost(t, Collective::AllReduce, Algorithm::Ring, N, G, n, Protocol::Simple);
  double lat = 8.4e-6 + (2.0 * (p - 1) - 2 * (N - 1)) * 3.4e-6 + 2.0 * (N - 1) * 14e-6;
  expect_rel(ring.latency_s, lat, "nccl ring latency");
  expect_rel(ring.bandwidth_s, static_cast<double>(n) / (busbw * p / (2.0 * (p - 1))), "nccl ring bandwidth");
  // LL moves half as fast.
  Cost ll = cost(t, Collective::AllReduce, Algorithm::Ring, N, G, n, Protocol::LL);
  expect_rel(ll.bandwidth_s, 2 * ring.bandwidth_s, "LL bandwidth");
  // Tree: base + 2((G-1) intra + log2(N) inter), algbw = 0.92 busbw / 2 (NCCL's tuning.cc), times
  // NCCL's correction for sizes of 64 B to 256 MiB (1 GiB: none; 64 MiB = 2^20 x 64 B: Simple 0.8).
  Cost tree = cost(t, Collective::AllReduce, Algorithm::Tree, N, G, n, Protocol::Simple);
  expect_rel(tree.latency_s, 8.4e-6 + 2 * (7 * 4.0e-6 + 2 * 14e-6), "nccl tree latency");
  expect_rel(tree.bandwidth_s, static_cast<double>(n) / (0.92 * busbw / 2), "nccl tree bandwidth");
  const Bytes mid = Bytes{64} << 20;
  Cost tree_mid = cost(t, Collective::AllReduce, Algorithm::Tree, N, G, mid, Protocol::Simple);
  expect_rel(tree_mid.bandwidth_s, static_cast<double>(mid) / (0.8 * 0.92 * busbw / 2), "nccl tree correction");
  Cost tree_mid_ll = cost(t, Collective::AllReduce, Algorithm::Tree, N, G, mid, Protocol::LL);
  expect_rel(tree_mid_ll.bandwidth_s, static_cast<double>(mid) / (1.0 * 0.92 * busbw * 0.5 / 2), "nccl tree LL");
  // Allgather ring: algbw = busbw p / (p-1), so busbw (nccl-tests) = the ring's.
  Cost ag = cost(t, Collective::AllGather, Algorithm::Ring, N, G, n, Protocol::Simple);
  expect_rel(static_cast<double>(n) / ag.bandwidth_s * busbw_factor(Collective::AllGather, p), busbw, "ag busbw");
  // Broadcast: algbw = busbw.
  Cost bc = cost(t, Collective::Broadcast, Algorithm::Ring, N, G, n, Protocol::Simple);
  expect_rel(static_cast<double>(n) / bc.bandwidth_s, busbw, "bcast algbw");
}

TEST(NcclModel, NcclPicksTheLeastOfItsForcedAlgorithms) {
  // Algorithm::Nccl is NCCL's argmin (enqueue.cc topoGetAlgoInfo) over the algorithms NCCL_ALGO
  // can force, each at its best protocol: the pick prices the same as forcing it.
  Topology t = h100_like();
  set_nccl_nvlink(t);
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast})
    for (Bytes size : {Bytes(8), Bytes(64) << 10, Bytes(1) << 30}) {
      Cost best = cost(t, c, Algorithm::Nccl, 16, 8, size);
      double tmin = 1e300;
      for (Algorithm a : kNcclForcedAlgorithms)
        for (Protocol pr : kNcclProtocols) {
          if (!applies(c, a)) continue;
          try {
            tmin = std::min(tmin, cost(t, c, a, 16, 8, size, pr).time_s);
          } catch (const Error&) {
            // NCCL cannot run it here (NVLS across nodes without CollNet, PAT, CollNet).
          }
        }
      EXPECT_DOUBLE_EQ(best.time_s, tmin);
      EXPECT_TRUE(is_nccl_algorithm(best.algorithm) && best.algorithm != Algorithm::Nccl);
      EXPECT_NE(best.protocol, Protocol::None);
      EXPECT_DOUBLE_EQ(cost(t, c, best.algorithm, 16, 8, size, best.protocol).time_s, best.time_s);
    }
  EXPECT_EQ(cost(t, Collective::AllReduce, Algorithm::NcclRing, 1, 8, 8).protocol, Protocol::LL);
  EXPECT_EQ(cost(t, Collective::AllReduce, Algorithm::NcclRing, 1, 8, 1ull << 30).protocol, Protocol::Simple);
  // Broadcast has NCCL's ring only (graph/tuning.cc prices no other algorithm for it).
  EXPECT_EQ(cost(t, Collective::Broadcast, Algorithm::Nccl, 16, 8, 8).algorithm, Algorithm::NcclRing);
  // Point-to-point collectives are priced too.
  EXPECT_GT(cost(t, Collective::SendRecv, Algorithm::Nccl, 2, 8, 1 << 20).time_s, 0);
  EXPECT_GT(cost(t, Collective::AllToAll, Algorithm::NcclRing, 2, 8, 1 << 20, Protocol::LL).time_s, 0);
}

TEST(NcclModel, Errors) {
  Topology t = h100_like();  // no nccl constants yet
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::NcclRing, 1, 8, 8), Error);
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 1, 8, 8, Protocol::LL), Error);
  EXPECT_FALSE(has_closed_form(t, Collective::AllReduce, Algorithm::Nccl, Protocol::None));
  set_nccl_nvlink(t);
  EXPECT_TRUE(has_closed_form(t, Collective::AllReduce, Algorithm::Nccl, Protocol::None));
  // Protocols apply to ring/tree/NCCL only; NCCL's tree to allreduce only.
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Rabenseifner, 1, 8, 8, Protocol::LL), Error);
  EXPECT_THROW(cost(t, Collective::Broadcast, Algorithm::Tree, 1, 8, 8, Protocol::Simple), Error);
  EXPECT_THROW(cost(t, Collective::Broadcast, Algorithm::NcclTree, 1, 8, 8), Error);
  EXPECT_FALSE(has_closed_form(t, Collective::AllReduce, Algorithm::Bruck, Protocol::LL128));
}

TEST(ClosedForm, BadQueriesThrow) {
  Topology t = h100_like();
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Bruck, 1, 8, 8), Error);  // does not apply
  EXPECT_THROW(cost(t, Collective::SendRecv, Algorithm::Ring, 1, 8, 8), Error);
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Mpi, 1, 8, 8), Error);  // no model
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 0, 8, 8), Error);
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 1, 0, 8), Error);
  t.max_nodes = 4;
  EXPECT_NO_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 4, 8, 8));
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 5, 8, 8), Error);
  t.max_nodes = 0;
  t.network.nics_per_node = 0;
  t.network.kind = "none";
  EXPECT_THROW(cost(t, Collective::AllReduce, Algorithm::Ring, 2, 8, 8), Error);  // no network
  try {
    cost(t, Collective::AllReduce, Algorithm::Bruck, 1, 8, 8);
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bruck"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allreduce"), std::string::npos) << msg;
  }
}

// ---- optional message-library terms ----------------------------------------------------------

TEST(ClosedFormTerms, NodeBandwidthSharesTheNode) {
  Topology t = make_topo(0.7e-6, 13.2e9, 5e-6, 25e9, 1, 20e9);
  const Bytes n = Bytes{64} << 20;
  const double p = 8;
  const Cost plain = cost(t, Collective::AllReduce, Algorithm::Ring, 1, 8, n);
  t.intra.node_bw_Bps = 33e9;  // eight ranks at once: 4.125 GB/s each
  const Cost shared = cost(t, Collective::AllReduce, Algorithm::Ring, 1, 8, n);
  expect_rel(shared.bandwidth_s, 2 * n * (p - 1) / p / (33e9 / 8), "ring at the node's share");
  expect_rel(shared.bandwidth_s / plain.bandwidth_s, 13.2 / 4.125, "slower by the share");
  EXPECT_EQ(shared.latency_s, plain.latency_s);
  EXPECT_EQ(shared.reduction_s, plain.reduction_s);
  // Two ranks alone do not reach the node's limit.
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, 1, 2, n).time_s,
             cost(make_topo(0.7e-6, 13.2e9, 5e-6, 25e9, 1, 20e9), Collective::AllReduce, Algorithm::Ring, 1, 2, n).time_s,
             "two ranks unaffected");
}

TEST(ClosedFormTerms, RendezvousAboveTheEagerLimit) {
  Topology t = make_topo(0.72e-6, 10e9, 5e-6, 25e9, 1, 20e9);
  t.intra.msg.eager_limit_bytes = 8192;
  t.intra.msg.rendezvous_latency_s = 3.34e-6;
  auto sr = [&](Bytes n) { return cost(t, Collective::SendRecv, Algorithm::Direct, 1, 2, n).time_s; };
  expect_rel(sr(8192), 0.72e-6 + 8192 / 10e9, "eager at the limit");
  expect_rel(sr(8193), 3.34e-6 + 8193 / 10e9, "rendezvous above");
  // Ring allreduce of 8 ranks: messages n/8; 32 KiB -> 4 KiB messages (eager), 128 KiB -> 16 KiB.
  const double p = 8;
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, 1, 8, 32768).latency_s, 2 * (p - 1) * 0.72e-6, "eager");
  expect_rel(cost(t, Collective::AllReduce, Algorithm::Ring, 1, 8, 131072).latency_s, 2 * (p - 1) * 3.34e-6,
             "rendezvous");
}

TEST(ClosedFormTerms, MessageOverheadOfDirect) {
  Topology t = make_topo(0.7e-6, 10e9, 5e-6, 25e9, 1, 20e9);
  const Bytes n = 8 * 1024;
  const double before = cost(t, Collective::AllGather, Algorithm::Direct, 1, 8, n).time_s;
  t.intra.msg.message_overhead_s = 0.4e-6;
  // Each rank posts 7 messages: the last leaves 6 overheads after the first.
  expect_rel(cost(t, Collective::AllGather, Algorithm::Direct, 1, 8, n).time_s - before, 6 * 0.4e-6, "direct + 6 o");
  expect_rel(cost(t, Collective::AllToAll, Algorithm::Direct, 1, 8, n).time_s -
                 cost(make_topo(0.7e-6, 10e9, 5e-6, 25e9, 1, 20e9), Collective::AllToAll, Algorithm::Direct, 1, 8, n).time_s,
             6 * 0.4e-6, "alltoall direct + 6 o");
  // Above the eager limit the rendezvous overhead applies instead (8 KiB / 8 = 1 KiB per message).
  t.intra.msg.eager_limit_bytes = 512;
  t.intra.msg.rendezvous_latency_s = 0.7e-6;
  const double with_o = cost(t, Collective::AllGather, Algorithm::Direct, 1, 8, n).time_s;
  t.intra.msg.rendezvous_overhead_s = 1.5e-6;
  expect_rel(cost(t, Collective::AllGather, Algorithm::Direct, 1, 8, n).time_s - with_o, 6 * (1.5e-6 - 0.4e-6),
             "direct + 6 rendezvous overheads");
  t.intra.msg.eager_limit_bytes = 0;
  t.intra.msg.rendezvous_overhead_s.reset();
  // One message per round: unchanged.
  expect_rel(cost(t, Collective::AllGather, Algorithm::Ring, 1, 8, n).time_s,
             cost(make_topo(0.7e-6, 10e9, 5e-6, 25e9, 1, 20e9), Collective::AllGather, Algorithm::Ring, 1, 8, n).time_s,
             "ring unchanged");
}

}  // namespace
}  // namespace commsim
