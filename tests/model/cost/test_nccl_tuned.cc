// NCCL's own collectives priced by the ported tuning model (src/model/cost/nccl_tuned.cc) on the
// presets, against NCCL's choices and published nccl-tests figures; the point-to-point pricing of
// sendrecv and alltoall; the NICs of a partly used node.
#include <gtest/gtest.h>

#include <string>

#include "model/cost/cost.h"
#include "model/error.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;
constexpr Bytes kGiB = Bytes{1} << 30;

Topology preset(const char* name) {
  return load_topology(resolve_topology_path(name));
}

Cost priced(const Topology& t, Collective c, Algorithm a, int nodes, int per_node, Bytes bytes,
            Protocol p = Protocol::None, std::string version = "") {
  CostQuery q{c, a, p, nodes, per_node, bytes};
  q.nccl_version = std::move(version);
  return closed_form(t, q);
}

double busbw_GBps(Collective c, const Cost& cost, int ranks, Bytes bytes) {
  return static_cast<double>(bytes) / cost.time_s * busbw_factor(c, ranks) / 1e9;
}

TEST(NcclTuned, DgxH100OneNodePicksRingLLThenNvls) {
  // NCCL 2.28 on one DGX H100 picks Ring/LL for small allreduces and NVLS from a few MiB (NVLS has
  // a 25 us NVLink latency and the highest bandwidth; graph/tuning.cc at v2.28.9-1).
  const Topology t = preset("dgx-h100");
  const Cost small = priced(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, 1 * kMiB);
  EXPECT_EQ(small.algorithm, Algorithm::NcclRing);
  EXPECT_EQ(small.protocol, Protocol::LL);
  const Cost mid = priced(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, 4 * kMiB);
  EXPECT_EQ(mid.algorithm, Algorithm::NcclNvls);
  EXPECT_EQ(mid.protocol, Protocol::Simple);
  EXPECT_NEAR(mid.time_s, mid.latency_s + mid.bandwidth_s, 1e-12);
}

TEST(NcclTuned, DgxH100OneNodeNvlsBusbwNear480) {
  // DGX H100, 8 GPUs, NVLS allreduce: about 480 GB/s busbw at large sizes (NVIDIA/nccl-tests issue
  // #212); NCCL's model gives 476.
  const Topology t = preset("dgx-h100");
  const Cost c = priced(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, 4 * kGiB);
  EXPECT_EQ(c.algorithm, Algorithm::NcclNvls);
  EXPECT_NEAR(busbw_GBps(Collective::AllReduce, c, 8, 4 * kGiB), 480, 10);
}

TEST(NcclTuned, ForcedAlgorithmsPriceTheirOwnRow) {
  const Topology t = preset("dgx-h100");
  const Cost ring = priced(t, Collective::AllReduce, Algorithm::NcclRing, 1, 8, 4 * kGiB);
  EXPECT_EQ(ring.algorithm, Algorithm::NcclRing);
  EXPECT_LT(busbw_GBps(Collective::AllReduce, ring, 8, 4 * kGiB), 400);
  const Cost ll = priced(t, Collective::AllReduce, Algorithm::NcclRing, 1, 8, 4 * kGiB, Protocol::LL);
  EXPECT_EQ(ll.protocol, Protocol::LL);
  EXPECT_GT(ll.time_s, ring.time_s);
  // Across nodes NCCL runs NVLSTree (NVLS inside the node, a tree across) where NVLS needs CollNet.
  const Cost nvlstree = priced(t, Collective::AllReduce, Algorithm::NcclNvlsTree, 4, 8, kGiB);
  EXPECT_EQ(nvlstree.algorithm, Algorithm::NcclNvlsTree);
  EXPECT_GT(nvlstree.time_s, 0);
}

TEST(NcclTuned, RefusesWhatNcclCannotRun) {
  // NVLS needs NVSwitch multicast on compute capability 9.0+ (transport/nvls.cc): not on an A100.
  const Topology a100 = preset("dgx-a100");
  try {
    priced(a100, Collective::AllReduce, Algorithm::NcclNvls, 1, 8, kGiB);
    FAIL() << "nccl-nvls priced on a DGX A100";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NVLS"), std::string::npos) << e.what();
  }
  const Topology h100 = preset("dgx-h100");
  // PAT runs with one GPU per node only (graph/tuning.cc: nNodes == nRanks).
  EXPECT_THROW(priced(h100, Collective::AllGather, Algorithm::NcclPat, 2, 8, kGiB), Error);
  EXPECT_NO_THROW(priced(h100, Collective::AllGather, Algorithm::NcclPat, 4, 1, kGiB));
  // CollNet needs SHARP (nccl.collnet), off on the preset.
  EXPECT_THROW(priced(h100, Collective::AllReduce, Algorithm::NcclCollnetDirect, 2, 8, kGiB), Error);
  // A release older than PAT (2.23) cannot run it.
  EXPECT_THROW(priced(h100, Collective::AllGather, Algorithm::NcclPat, 4, 1, kGiB, Protocol::None, "2.21"), Error);
}

TEST(NcclTuned, ReleaseIsChosenPerQuery) {
  // NVLS for one-node AllGather arrived in 2.19: with 2.18 NCCL's pick is a ring.
  const Topology t = preset("dgx-h100");
  EXPECT_EQ(priced(t, Collective::AllGather, Algorithm::Nccl, 1, 8, kGiB, Protocol::None, "2.18").algorithm,
            Algorithm::NcclRing);
  EXPECT_THROW(priced(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, kGiB, Protocol::None, "1.0"), Error);
}

TEST(NcclTuned, PolarisAllToAllGrowsWithRanks) {
  // Polaris, 540 nodes x 4 A100 (2,160 ranks), NCCL 2.21: alltoall takes 22-50 ms from 8 KiB to
  // 64 MiB and 4.7 ms with 0 bytes (tests/data/nccl-tests/polaris_a100_540n_nccl221_setup5.csv).
  // NCCL sends to every peer in waves and its proxy posts every network operation: milliseconds.
  const Topology t = preset("polaris");
  const Cost big = priced(t, Collective::AllToAll, Algorithm::Nccl, 540, 4, 8640);
  EXPECT_GT(big.time_s, 1e-3);
  EXPECT_LT(big.time_s, 50e-3);
  const Cost small = priced(t, Collective::AllToAll, Algorithm::Nccl, 64, 4, 8640);
  EXPECT_LT(small.time_s, big.time_s / 4);
  const Cost two = priced(t, Collective::AllToAll, Algorithm::Nccl, 2, 4, 8640);
  EXPECT_LT(two.time_s, small.time_s);
}

TEST(NcclTuned, OneGpuPerNodeIsNicBound) {
  // 10 DGX H100 nodes, 1 GPU each: 48.9 GB/s allreduce busbw at large sizes, one NDR NIC
  // (tests/data/nccl-tests/rjun_h100_10n_g1.csv). The GPU reaches only the NIC next to it.
  const Topology t = preset("dgx-h100");
  for (Algorithm a : {Algorithm::Nccl, Algorithm::Ring}) {
    const Cost c = priced(t, Collective::AllReduce, a, 10, 1, kGiB);
    const double bw = busbw_GBps(Collective::AllReduce, c, 10, kGiB);
    EXPECT_GT(bw, 35) << to_string(a);
    EXPECT_LT(bw, 55) << to_string(a);
  }
}

}  // namespace
}  // namespace commsim
