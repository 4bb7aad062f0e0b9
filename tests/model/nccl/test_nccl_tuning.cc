// NCCL's tuning model (src/model/nccl) against NCCL's own numbers. Each expectation cites where
// the number comes from: "NCCL_MODEL.md §x" is src/model/nccl/NCCL_MODEL.md, the reference on NCCL's algorithms and
// tuning model (§2.3 constants, §2.8 graph values, §2.9 the worked DGX H100 table); "file:line" is
// NVIDIA/nccl source at tag v2.28.9-1, "file:line@2.x.y" at tag v2.x.y-1; "#n" an NVIDIA/nccl issue.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "model/error.h"
#include "model/nccl/graphs.h"
#include "model/nccl/tuning.h"
#include "model/nccl/versions.h"

namespace commsim::nccl {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

Machine dgx_h100(int nodes = 1) {
  Machine m;  // 8 x H100 SXM, NVLink4 18 links, 8 x NDR 400G on PCIe Gen5
  m.nNodes = nodes;
  return m;
}

Machine dgx_a100(int nodes = 1) {
  Machine m;  // 8 x A100 SXM, NVLink3 12 links, 8 x HDR 200G on PCIe Gen4
  m.compCap = 80;
  m.nvlinksPerGpu = 12;
  m.pcieGen = 4;
  m.nicGBps = 25.0;
  m.nNodes = nodes;
  return m;
}

Machine gb200_nvl72() {
  Machine m;  // one NVLink domain of 72 Blackwell GPUs, NVLink5 18 links
  m.compCap = 100;
  m.gpusPerNode = 72;
  m.nicsPerNode = 72;
  m.cpuArch = kCpuArm;
  m.cpuVendor = kVendorMixed;
  return m;
}

struct Model {
  System system;
  TuningTable table;
  Model(const Machine& machine, const Version& version = newest_version())
      : system(make_system(machine, version)), table(tune_model(system, version)) {}
  Choice pick(Function f, std::size_t bytes, int numPipeOps = 1) const {
    Call call;
    call.function = f;
    call.nBytes = bytes;
    call.numPipeOps = numPipeOps;
    return choose(table, system, call);
  }
  float lat(Function f, Algorithm a, Protocol p) const { return table.latencies[f][a][p]; }
  float bw(Function f, Algorithm a, Protocol p) const { return table.bandwidths[f][a][p]; }
};

// ---- versions -------------------------------------------------------------------------------

TEST(NcclVersions, ParsesReleaseTagAndShortForms) {
  EXPECT_EQ(find_version("2.28.9").name(), "2.28.9");
  EXPECT_EQ(find_version("2.28.9-1").name(), "2.28.9");
  EXPECT_EQ(find_version("v2.28.9-1").name(), "2.28.9");
  EXPECT_EQ(find_version("2.21").name(), "2.21.5");  // newest ported patch of the release
  EXPECT_EQ(find_version("2.28").name(), "2.28.9");
  EXPECT_EQ(find_version("2.28.5").name(), "2.28.3");  // constants change only at ported tags
  EXPECT_EQ(find_version("2.18.1").name(), "2.18.1");
  EXPECT_EQ(find_version("2.18.4").name(), "2.18.6");  // v2.18.3-1 .. v2.18.6-1 share tuning.cc
  EXPECT_EQ(find_version("2.18.4").tags(), "2.18.3-2.18.6");
  EXPECT_EQ(find_version("2.27.4").name(), "2.27.3");
  EXPECT_EQ(find_version("2.27.5").name(), "2.27.7");
  EXPECT_EQ(newest_version().name(), "2.28.9");
  EXPECT_EQ(known_versions().front().name(), "2.18.1");
}

TEST(NcclVersions, UnknownReleaseListsTheKnownOnes) {
  try {
    find_version("2.17");
    FAIL() << "2.17 is not ported";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("2.18.6"), std::string::npos) << what;
    EXPECT_NE(what.find("2.28.9"), std::string::npos) << what;
  }
  EXPECT_THROW(find_version("two.twenty"), Error);
  EXPECT_THROW(find_version("2"), Error);
  EXPECT_THROW(find_version("2.28.9.1"), Error);
}

TEST(NcclVersions, ConstantsThatChangedArePerRelease) {
  // hwLatencies[NET][NVLSTree][Simple]: 14 -> 20.9 (graph/tuning.cc:165@2.28.3 vs @2.28.9)
  EXPECT_DOUBLE_EQ(find_version("2.28.3").constants.hwLatencies[kHwNet][kNvlsTree][kSimple], 14);
  EXPECT_DOUBLE_EQ(find_version("2.28.9").constants.hwLatencies[kHwNet][kNvlsTree][kSimple], 20.9);
  // Hopper llMaxBws row: 87.7 until 2.20, 141.0 from 2.21 (tuning.cc:90@2.21.5)
  EXPECT_DOUBLE_EQ(find_version("2.20").constants.llMaxBws[kHopper][0], 87.7);
  EXPECT_DOUBLE_EQ(find_version("2.21").constants.llMaxBws[kHopper][0], 141.0);
  // Blackwell ring LL128, 2 nodes: 2*36.7 until 2.28.3, 34.6 from 2.28.7 (tuning.cc:179@2.28.7)
  EXPECT_DOUBLE_EQ(find_version("2.28.3").constants.perChMaxRingLL128Bws[kBlackwell][1], 73.4);
  EXPECT_DOUBLE_EQ(find_version("2.28.7").constants.perChMaxRingLL128Bws[kBlackwell][1], 34.6);
  // Tree Simple: base 0 and 28 us per hop up to 2.22, base 8.4 and 4 us from 2.23 (NCCL_MODEL.md §2.3)
  EXPECT_DOUBLE_EQ(find_version("2.22").constants.hwLatencies[kHwNvlink][kTree][kSimple], 28);
  EXPECT_DOUBLE_EQ(find_version("2.23").constants.baseLatencies[kTree][kSimple], 8.4);
  EXPECT_EQ(find_version("2.22").numAlgorithms, 6);
  EXPECT_EQ(find_version("2.23").numAlgorithms, 7);
}

// ---- graphs (NCCL_MODEL.md §2.8) ---------------------------------------------------------------------

TEST(NcclGraphs, DgxH100OneNode) {
  System s = make_system(dgx_h100(), newest_version());
  EXPECT_EQ(s.graphs[kRing].nChannels, 12);  // 6 x 60 duplicated to 12 x 30
  EXPECT_FLOAT_EQ(s.graphs[kRing].bwIntra, 30.0f);
  EXPECT_EQ(s.graphs[kNvls].nChannels, 8);  // "Pattern 5, ... nChannels 8, bw 40/60"
  EXPECT_FLOAT_EQ(s.graphs[kNvls].bwIntra, 40.0f);
  EXPECT_FLOAT_EQ(s.graphs[kNvls].bwInter, 60.0f);
  EXPECT_EQ(comm_channels(s), 24);  // "Channel xx/24" (#1410)
  EXPECT_EQ(s.nvlsChannels, 16);    // NVLS_NCHANNELS_SM90 (transport/nvls.cc:9)
  EXPECT_TRUE(s.nvlsSupport);
}

TEST(NcclGraphs, DgxH100MultiNode) {
  System s = make_system(dgx_h100(4), newest_version());
  EXPECT_EQ(s.graphs[kRing].nChannels, 8);  // no duplication: SM > 80, bw < 50, > 4 channels
  EXPECT_FLOAT_EQ(s.graphs[kRing].bwInter, 48.0f);
  EXPECT_FLOAT_EQ(s.graphs[kNvls].bwIntra, 40.0f);
  EXPECT_FLOAT_EQ(s.graphs[kNvls].bwInter, 48.0f);
  EXPECT_EQ(comm_channels(s), 16);
}

TEST(NcclGraphs, FewerGpusThanNicsGetTheirOwnNicsOnly) {
  Machine m = dgx_h100(2);
  m.gpusInUse = 2;  // 2 of 8 GPUs: 2 NICs, not 8
  System s = make_system(m, newest_version());
  EXPECT_EQ(s.nRanks, 4);
  EXPECT_EQ(s.graphs[kRing].nChannels * s.graphs[kRing].bwInter, 2 * 48.0f);
}

TEST(NcclGraphs, DgxA100AndGb200) {
  System a100 = make_system(dgx_a100(), newest_version());
  EXPECT_EQ(a100.graphs[kRing].nChannels, 12);  // 6 x 40 duplicated to 12 x 20
  EXPECT_FLOAT_EQ(a100.graphs[kRing].bwIntra, 20.0f);
  EXPECT_FALSE(a100.nvlsSupport);  // NVLS needs SM90 (graph/search.cc:1036)
  System a100x4 = make_system(dgx_a100(4), newest_version());
  EXPECT_EQ(a100x4.graphs[kRing].nChannels, 8);  // 8 x 24
  EXPECT_FLOAT_EQ(a100x4.graphs[kRing].bwInter, 24.0f);
  System gb = make_system(gb200_nvl72(), newest_version());
  EXPECT_EQ(gb.graphs[kRing].nChannels, 16);  // 8 x 90 duplicated to 16 x 45
  EXPECT_FLOAT_EQ(gb.graphs[kRing].bwIntra, 45.0f);
  EXPECT_EQ(gb.graphs[kNvls].nChannels, 32);  // NCCL_MAX_NVLS_ARITY
  EXPECT_FLOAT_EQ(gb.graphs[kNvls].bwIntra, 20.0f);
  EXPECT_FLOAT_EQ(gb.graphs[kNvls].bwInter, 40.0f);
  EXPECT_EQ(gb.nvlsChannels, 24);  // NVLS_NCHANNELS_SM100_NVL (transport/nvls.cc:11)
}

// ---- the DGX H100 TUNING table (NCCL_MODEL.md §2.9) -----------------------------------------------------

TEST(NcclTuning, DgxH100OneNodeTable) {
  Model h(dgx_h100());
  struct Entry {
    Function f;
    Algorithm a;
    Protocol p;
    float lat, bw;
  };
  const Entry entries[] = {
      {kBroadcast, kRing, kLL, 7.2f, 141.0f},          {kBroadcast, kRing, kLL128, 15.9f, 331.2f},
      {kBroadcast, kRing, kSimple, 11.8f, 360.0f},     {kReduce, kRing, kSimple, 11.8f, 360.0f},
      {kAllGather, kRing, kLL, 10.8f, 161.1f},         {kAllGather, kRing, kLL128, 27.3f, 378.5f},
      {kAllGather, kRing, kSimple, 32.2f, 411.4f},     {kAllGather, kNvls, kSimple, 25.0f, 208.2f},
      {kReduceScatter, kNvls, kSimple, 25.0f, 208.2f}, {kAllReduce, kTree, kLL, 15.2f, 43.6f},
      {kAllReduce, kTree, kLL128, 31.5f, 128.8f},      {kAllReduce, kTree, kSimple, 64.4f, 165.6f},
      {kAllReduce, kRing, kLL, 15.0f, 80.6f},          {kAllReduce, kRing, kLL128, 40.6f, 189.3f},
      {kAllReduce, kRing, kSimple, 56.0f, 205.7f},     {kAllReduce, kNvls, kSimple, 25.0f, 272.0f},
  };
  for (const Entry& e : entries) {
    SCOPED_TRACE(std::string(kFunctionNames[e.f]) + " " + std::string(kAlgorithmNames[e.a]) + "/" +
                 std::string(kProtocolNames[e.p]));
    // compared as NCCL prints them ("%8.1f/%6.1f"): 208.25 prints as 208.2
    EXPECT_EQ(fmt::format("{:.1f}/{:.1f}", h.lat(e.f, e.a, e.p), h.bw(e.f, e.a, e.p)),
              fmt::format("{:.1f}/{:.1f}", e.lat, e.bw));
  }
  // Disabled on one node: NVLSTree (tuning.cc:466), CollNet without a plugin (:468-471), PAT
  // with 8 GPUs per node (:201-209), LL/LL128 for NVLS (:280).
  EXPECT_EQ(h.bw(kAllReduce, kNvlsTree, kSimple), 0.0f);
  EXPECT_EQ(h.bw(kAllReduce, kCollNetDirect, kSimple), 0.0f);
  EXPECT_EQ(h.bw(kAllGather, kPat, kSimple), 0.0f);
  EXPECT_EQ(h.bw(kAllReduce, kNvls, kLL), 0.0f);
  // NVLS busBw 8 x min(40 x 0.85 x 7/8 x 2, 60) = 476 (NCCL_MODEL.md §2.9)
  EXPECT_NEAR(h.bw(kAllReduce, kNvls, kSimple) * 14 / 8, 476.0, 0.01);
}

TEST(NcclTuning, DgxH100OneNodePicks) {
  Model h(dgx_h100());
  // "8B~1MB: uses Algo RING proto LL; 2MB~16GB uses Algo NVLS proto SIMPLE" (nccl-tests#309)
  for (std::size_t bytes = 8; bytes <= MiB; bytes *= 2) {
    Choice c = h.pick(kAllReduce, bytes);
    EXPECT_EQ(c.algorithm, kRing) << bytes;
    EXPECT_EQ(c.protocol, kLL) << bytes;
  }
  for (std::size_t bytes = 2 * MiB; bytes <= 16 * GiB; bytes *= 2) {
    Choice c = h.pick(kAllReduce, bytes);
    EXPECT_EQ(c.algorithm, kNvls) << bytes;
    EXPECT_EQ(c.nChannels, 16) << bytes;  // channel{Lo..Hi}={0..15} (#1906)
  }
  EXPECT_EQ(h.pick(kAllReduce, MiB).nChannels, 24);  // ring LL uses {0..23} (#1906)
  EXPECT_EQ(h.pick(kAllReduce, 8).nChannels, 1);
  // AllGather: Ring/LL to 4 MiB, LL128 8-16 MiB, Simple from 32 MiB (NCCL_MODEL.md §2.9)
  EXPECT_EQ(h.pick(kAllGather, 4 * MiB).protocol, kLL);
  EXPECT_EQ(h.pick(kAllGather, 8 * MiB).protocol, kLL128);
  EXPECT_EQ(h.pick(kAllGather, 16 * MiB).protocol, kLL128);
  EXPECT_EQ(h.pick(kAllGather, 32 * MiB).protocol, kSimple);
  EXPECT_EQ(h.pick(kAllGather, GiB).algorithm, kRing);
  // Grouped calls: ring latency counts every op, NVLS's once per batch of 10, which is how NVLS
  // AllGather is picked in grouped workloads ("AllGather: 579600 Bytes -> Algo NVLS", #1906).
  EXPECT_EQ(h.pick(kAllGather, 579600, 1).algorithm, kRing);
  EXPECT_EQ(h.pick(kAllGather, 579600, 4).algorithm, kNvls);
}

TEST(NcclTuning, TimeFunction) {
  Model h(dgx_h100());
  // time = lat + nBytes / (1000 bw): NVLS 25 us + 2 MiB / 272.0 GB/s (tuning.cc:600)
  float expected = 25.0f + 2 * MiB / (1000 * h.bw(kAllReduce, kNvls, kSimple));
  EXPECT_FLOAT_EQ(algo_time(h.table, h.system, kAllReduce, kNvls, kSimple, 2 * MiB, 1), expected);
  // Tree AllReduce bandwidth times treeCorrectionFactor[Simple][log2(1 MiB / 64) = 14] = .5
  float tree = 64.4f + MiB / (1000 * h.bw(kAllReduce, kTree, kSimple) * 0.5f);
  EXPECT_NEAR(algo_time(h.table, h.system, kAllReduce, kTree, kSimple, MiB, 1), tree, 0.05);
  EXPECT_EQ(algo_time(h.table, h.system, kAllReduce, kNvlsTree, kSimple, MiB, 1), -1.0f);
}

TEST(NcclTuning, DgxA100Picks) {
  Model a(dgx_a100());
  // Ring/LL -> Ring/LL128 from 4 MiB -> Ring/Simple from 32 MiB; busBw 240 (NCCL_MODEL.md §2.9)
  EXPECT_EQ(a.pick(kAllReduce, 2 * MiB).protocol, kLL);
  EXPECT_EQ(a.pick(kAllReduce, 4 * MiB).protocol, kLL128);
  EXPECT_EQ(a.pick(kAllReduce, 16 * MiB).protocol, kLL128);
  EXPECT_EQ(a.pick(kAllReduce, 32 * MiB).protocol, kSimple);
  EXPECT_EQ(a.pick(kAllReduce, GiB).algorithm, kRing);
  EXPECT_NEAR(a.bw(kAllReduce, kRing, kSimple) * 14 / 8, 240.0, 0.01);
  // Ampere llMaxBws[1][0] = 87.7 caps ring LL (tuning.cc:171)
  EXPECT_NEAR(a.bw(kAllReduce, kRing, kLL) * 14 / 8, 87.7, 0.01);
}

TEST(NcclTuning, Gb200Nvl72) {
  Model g(gb200_nvl72());
  // Ring LL latency 6.6 + 142 x 0.6 = 91.8 us; NVLS 25 us wins AllReduce at every size (§2.9)
  EXPECT_NEAR(g.lat(kAllReduce, kRing, kLL), 91.8, 0.05);
  for (std::size_t bytes = 8; bytes <= 16 * GiB; bytes *= 4)
    EXPECT_EQ(g.pick(kAllReduce, bytes).algorithm, kNvls) << bytes;
  // busBw 32 x 20 x 0.74 x 31/32 x 2 = 917.6 (nvlsEfficiency[Blackwell] = 0.74, tuning.cc:138)
  EXPECT_NEAR(g.bw(kAllReduce, kNvls, kSimple) * 142 / 72, 917.6, 0.1);
  // AllGather: NVLS needs <= 32 local ranks (enqueue.cc:1802), so the ring at every size
  for (std::size_t bytes = 8; bytes <= 16 * GiB; bytes *= 4)
    EXPECT_EQ(g.pick(kAllGather, bytes).algorithm, kRing) << bytes;
  EXPECT_EQ(g.pick(kAllReduce, GiB).nChannels, 24);
}

TEST(NcclTuning, MultiNodeDgxH100) {
  Model two(dgx_h100(2));
  // 2 nodes: Tree/LL -> Tree/LL128 (256 KiB) -> NVLSTree (4 MiB) (NCCL_MODEL.md §2.9)
  EXPECT_EQ(two.pick(kAllReduce, 128 * KiB).algorithm, kTree);
  EXPECT_EQ(two.pick(kAllReduce, 128 * KiB).protocol, kLL);
  EXPECT_EQ(two.pick(kAllReduce, 256 * KiB).protocol, kLL128);
  EXPECT_EQ(two.pick(kAllReduce, 2 * MiB).algorithm, kTree);
  EXPECT_EQ(two.pick(kAllReduce, 4 * MiB).algorithm, kNvlsTree);
  // NVLSTree busBw 8 x min(59.5, 96, 57.7) = 461.6
  EXPECT_NEAR(two.bw(kAllReduce, kNvlsTree, kSimple) * 30 / 16, 461.6, 0.1);
  // NVLS across nodes needs CollNet (tuning.cc:468-471)
  EXPECT_EQ(two.bw(kAllReduce, kNvls, kSimple), 0.0f);
  Model four(dgx_h100(4));
  // 4 nodes: Ring/Simple takes over from NVLSTree at >= 1 GiB (NCCL_MODEL.md §2.9)
  EXPECT_EQ(four.pick(kAllReduce, 512 * MiB).algorithm, kNvlsTree);
  EXPECT_EQ(four.pick(kAllReduce, GiB).algorithm, kRing);
  // Ring LL across >= 4 nodes is capped at llMaxBws[0][2] = 20.4 busBw on Intel, [1][2] = 19.0
  // on AMD (tuning.cc:170-171)
  EXPECT_NEAR(four.bw(kAllReduce, kRing, kLL) * 62 / 32, 20.4, 0.01);
  Machine amd = dgx_h100(4);
  amd.cpuVendor = kVendorAmd;
  Model fourAmd(amd);
  EXPECT_NEAR(fourAmd.bw(kAllReduce, kRing, kLL) * 62 / 32, 19.0, 0.01);
  // netOverhead 2 us on AMD: ring LL intra-node hops become max(0.6, 2.0) (tuning.cc:211-219)
  EXPECT_GT(fourAmd.lat(kAllReduce, kRing, kLL), four.lat(kAllReduce, kRing, kLL));
  Model sixteen(dgx_h100(16));
  EXPECT_EQ(sixteen.pick(kAllReduce, 4 * GiB).algorithm, kNvlsTree);
  EXPECT_EQ(sixteen.pick(kAllReduce, 8 * GiB).algorithm, kRing);
}

TEST(NcclTuning, PatOnlyWithOneGpuPerNode) {
  Machine m = dgx_h100(16);
  m.gpusInUse = 1;
  Model pat(m);
  // PAT: nNodes == nRanks (tuning.cc:206); latency 8 + log2(16) x 14/3.5 + 16 x 2.8 = 68.8 us
  EXPECT_NEAR(pat.lat(kAllGather, kPat, kSimple), 68.8, 0.05);
  EXPECT_GT(pat.bw(kAllGather, kPat, kSimple), 0.0f);
  EXPECT_EQ(pat.pick(kAllGather, 64 * KiB).algorithm, kPat);
  EXPECT_EQ(pat.pick(kReduceScatter, 64 * KiB).algorithm, kPat);
  EXPECT_EQ(pat.bw(kAllReduce, kPat, kSimple), 0.0f);  // AllGather/ReduceScatter only
  // ReduceScatter with ncclAvg cannot use PAT (enqueue.cc:1805-1806)
  Call avg;
  avg.function = kReduceScatter;
  avg.nBytes = 64 * KiB;
  avg.op = kAvg;
  EXPECT_NE(choose(pat.table, pat.system, avg).algorithm, kPat);
  // NCCL_PAT_ENABLE=0
  System off = pat.system;
  off.patEnable = 0;
  EXPECT_EQ(tune_model(off, newest_version()).bandwidths[kAllGather][kPat][kSimple], 0.0f);
  // 2.23 used x0.85 where 2.24+ use x0.75 (tuning.cc:193@2.23.4, :256@2.24.3)
  Model pat223(m, find_version("2.23"));
  EXPECT_NEAR(pat223.bw(kAllGather, kPat, kSimple) / pat.bw(kAllGather, kPat, kSimple), 0.85 / 0.75, 1e-5);
  // no PAT before 2.23
  Model pat222(m, find_version("2.22"));
  EXPECT_EQ(pat222.bw(kAllGather, kPat, kSimple), 0.0f);
}

TEST(NcclTuning, VersionDifferences) {
  Model v219(dgx_h100(), find_version("2.19"));
  Model v228(dgx_h100());
  // Tree Simple AllReduce: 2 x 7 x 28 = 392 us in 2.19 (base 0), 8.4 + 2 x 7 x 4 = 64.4 in 2.28
  EXPECT_NEAR(v219.lat(kAllReduce, kTree, kSimple), 392.0, 0.05);
  EXPECT_NEAR(v228.lat(kAllReduce, kTree, kSimple), 64.4, 0.05);
  // Ring LL: x1/4 and the Ampere cap 87.7 in 2.19 (tuning.cc:180@2.19.4), x0.5 and 141 in 2.21+
  EXPECT_NEAR(v219.bw(kAllReduce, kRing, kLL) * 14 / 8, 87.7, 0.01);
  EXPECT_NEAR(v219.bw(kAllGather, kRing, kLL) * 7 / 8, 87.7, 0.01);
  EXPECT_NEAR(v228.bw(kAllReduce, kRing, kLL) * 14 / 8, 141.0, 0.01);
  // NVLS in 2.19: min(40, 60) x 8 x 5/6 = 266.7 and 23 us per NVLink hop
  EXPECT_NEAR(v219.bw(kAllReduce, kNvls, kSimple), 266.7, 0.05);
  EXPECT_NEAR(v219.lat(kAllReduce, kNvls, kSimple), 23.0, 0.01);
  // NVLSTree 2 nodes: 25 + 2 x 14 = 53 us in 2.28.3, 25 + 2 x 20.9 = 66.8 in 2.28.9
  EXPECT_NEAR(Model(dgx_h100(2), find_version("2.28.3")).lat(kAllReduce, kNvlsTree, kSimple), 53.0, 0.05);
  EXPECT_NEAR(Model(dgx_h100(2)).lat(kAllReduce, kNvlsTree, kSimple), 66.8, 0.05);
  // Ring AllReduce inter-node steps: 2 nNodes up to 2.22, 2 (nNodes - 1) from 2.23. 2 nodes,
  // ring LL: 6.6 + (30 - 4) x 1.0 + 4 x 2.7 = 43.4 vs 6.6 + (30 - 2) x 1.0 + 2 x 2.7 = 40.0
  EXPECT_NEAR(Model(dgx_h100(2), find_version("2.22")).lat(kAllReduce, kRing, kLL), 43.4, 0.05);
  EXPECT_NEAR(Model(dgx_h100(2)).lat(kAllReduce, kRing, kLL), 40.0, 0.05);
}

TEST(NcclTuning, PatchReleasesThatChangedTheModel) {
  // 2.18.1 -> 2.18.3: Tree/Simple 28 -> 4 us per NVLink hop with base 0: 2 x 7 x 28 = 392 vs
  // 2 x 7 x 4 = 56 us; NVLS ratio .75 -> 5/6 on a graph bw of 8 x 40 (tuning.cc:187@2.18.1)
  Model v2181(dgx_h100(), find_version("2.18.1"));
  Model v2186(dgx_h100(), find_version("2.18.6"));
  EXPECT_NEAR(v2181.lat(kAllReduce, kTree, kSimple), 392.0, 0.05);
  EXPECT_NEAR(v2186.lat(kAllReduce, kTree, kSimple), 56.0, 0.05);
  EXPECT_NEAR(v2181.bw(kAllReduce, kNvls, kSimple), 240.0, 0.05);
  EXPECT_NEAR(v2186.bw(kAllReduce, kNvls, kSimple), 266.7, 0.05);
  EXPECT_NEAR(v2186.lat(kAllReduce, kNvls, kSimple), 23.0, 0.01);  // base 23, no NVLink hop
  // 2.27.3 -> 2.27.5: with NCCL_LL128_C2C=1, SM90 LL128 reaches PATH_P2C then PATH_PXN
  // (tuning.cc:460@2.27.3, :459-467@2.27.7)
  System s = make_system(dgx_h100(2), find_version("2.27.3"));
  for (Graph& g : s.graphs) g.typeInter = kPathPxn;
  EXPECT_EQ(tune_model(s, find_version("2.27.3")).bandwidths[kAllReduce][kRing][kLL128], 0.0f);
  EXPECT_GT(tune_model(s, find_version("2.27.7")).bandwidths[kAllReduce][kRing][kLL128], 0.0f);
  // before 2.27 LL128 needed SM 70/80/90 exactly (and 100/120 from 2.25): off on SM86
  Machine sm86 = dgx_a100();
  sm86.compCap = 86;
  EXPECT_EQ(Model(sm86, find_version("2.26")).bw(kAllReduce, kRing, kLL128), 0.0f);
  EXPECT_GT(Model(sm86, find_version("2.27")).bw(kAllReduce, kRing, kLL128), 0.0f);
}

// NCCL's own estimates, logged by NCCL 2.22 on 3 nodes x 8 H100 with 16 collective channels
// (#1453: "Failed to find ncclTunerPlugin_v3" and the "%ld Bytes -> Algo %d proto %d time %f" line
// of 2.20-2.22): "4 Bytes -> Algo 0 proto 0 time 25.200462" and "8589934592 Bytes -> Algo 1
// proto 2 time 86069.968750". The latencies follow from the constants alone; the two graph
// inputs the log does not show are inferred: a ring busBw of 192 GB/s (8 x 24) and a tree that
// fell back to the TREE pattern (the x0.85 on top of the 20.4 GB/s LL cap).
TEST(NcclTuning, ReproducesEstimatesLoggedByNccl222) {
  const Version& v = find_version("2.22");
  System s;
  s.nRanks = 24;
  s.nNodes = 3;
  s.collChannels = 16;
  Graph ring;
  ring.nChannels = 8;
  ring.bwIntra = ring.bwInter = 24.0f;
  Graph tree = ring;
  tree.pattern = kPatternTree;
  s.graphs[kRing] = ring;
  s.graphs[kTree] = tree;
  s.maxTreePattern = kPatternTree;
  TuningTable t = tune_model(s, v);
  // Tree/LL: 6.8 + 2 x (7 x 0.6 + log2(3) x 5.0) = 25.2 us, bw 20.4 x 0.85 x 0.5
  Call small;
  small.nBytes = 4;
  Choice c = choose(t, s, small);
  EXPECT_EQ(c.algorithm, kTree);
  EXPECT_EQ(c.protocol, kLL);
  EXPECT_NEAR(c.time_us, 25.200462, 2e-5);
  // Ring/Simple: (8.4 + 40 x 3.4 + 6 x 14) x 1.4 plateau, with 2 nNodes inter-node steps (2.22)
  EXPECT_NEAR(algo_time(t, s, kAllReduce, kRing, kSimple, 8589934592ull, 1), 86069.968750, 0.05);
  // from 2.23 the same ring has 2 (nNodes - 1) inter-node steps and a lower estimate
  EXPECT_LT(algo_time(tune_model(s, find_version("2.23")), s, kAllReduce, kRing, kSimple, 8589934592ull, 1),
            86069.968750 - 20);
}

// ---- enable rules and the NCCL_ALGO / NCCL_PROTO parser ---------------------------------------

TEST(NcclMasks, PerFunctionSyntax) {
  const Version& v = newest_version();
  EnableMasks m = parse_enable_masks("allreduce:^NVLS;allgather:ring", "", v);
  EXPECT_EQ(m.algo[kAllReduce][kNvls], 0);
  EXPECT_EQ(m.algo[kAllReduce][kRing], 1);
  EXPECT_EQ(m.algo[kAllReduce][kTree], 1);
  EXPECT_EQ(m.algo[kAllGather][kRing], 1);
  EXPECT_EQ(m.algo[kAllGather][kNvls], 0);
  EXPECT_EQ(m.algo[kBroadcast][kNvls], 1);  // untouched
  // "Enable LL and Simple for all functions, but everything except LL for allreduce"
  // (tuning.cc:48-50)
  EnableMasks p = parse_enable_masks("", "LL,Simple;allreduce:^LL", v);
  EXPECT_EQ(p.proto[kBroadcast][kLL128], 0);
  EXPECT_EQ(p.proto[kBroadcast][kLL], 1);
  EXPECT_EQ(p.proto[kAllReduce][kLL], 0);
  EXPECT_EQ(p.proto[kAllReduce][kLL128], 1);
  EXPECT_EQ(EnableMasks().proto[kAllReduce][kLL128], 2);  // LL128 defaults to "auto"
  EXPECT_EQ(parse_enable_masks("NVLSTree,collnetdirect", "", v).algo[kReduce][kCollNetDirect], 1);
  EXPECT_THROW(parse_enable_masks("allreduce:bogus", "", v), Error);
  EXPECT_THROW(parse_enable_masks("ring;allreduce", "", v), Error);  // only the first may lack a prefix
  EXPECT_THROW(parse_enable_masks("sendrecv:ring", "", v), Error);
}

TEST(NcclMasks, OldSyntaxBefore224) {
  const Version& v = find_version("2.23");
  EnableMasks m = parse_enable_masks("^nvls,bogus", "", v);  // unknown names ignored
  EXPECT_EQ(m.algo[kAllReduce][kNvls], 0);
  EXPECT_EQ(m.algo[kAllReduce][kRing], 1);
  EXPECT_EQ(parse_enable_masks("ring", "", v).algo[kAllGather][kTree], 0);
}

TEST(NcclMasks, AppliedToTheTable) {
  System s = make_system(dgx_h100(), newest_version());
  s.masks = parse_enable_masks("^NVLS", "", newest_version());
  TuningTable t = tune_model(s, newest_version());
  Call call;
  call.nBytes = GiB;
  EXPECT_EQ(choose(t, s, call).algorithm, kRing);  // NVLS off: ring LL -> LL128 -> Simple
  EXPECT_EQ(choose(t, s, call).protocol, kSimple);
  s.masks = parse_enable_masks("allreduce:collnetdirect", "", newest_version());
  t = tune_model(s, newest_version());
  EXPECT_THROW(choose(t, s, call), Error);  // "no algorithm/protocol available"
}

TEST(NcclTuning, Ll128Rule) {
  // LL128 needs typeIntra <= NVB (tuning.cc:491): off on a PCIe-only node
  Machine pcie;
  pcie.compCap = 89;
  pcie.nvswitch = false;
  pcie.nvlinksPerGpu = 0;
  pcie.pcieGen = 4;
  Model p(pcie);
  EXPECT_EQ(p.bw(kAllReduce, kRing, kLL128), 0.0f);
  EXPECT_GT(p.bw(kAllReduce, kRing, kSimple), 0.0f);
  // and mixed compute capabilities (:492)
  System mixed = make_system(dgx_h100(), newest_version());
  mixed.minCompCap = 80;
  EXPECT_EQ(tune_model(mixed, newest_version()).bandwidths[kAllReduce][kRing][kLL128], 0.0f);
}

TEST(NcclTuning, PerCallGates) {
  Model h(dgx_h100());
  Call call;
  call.nBytes = GiB;
  call.dataType = kFloat8e4m3;  // no NVLS for fp8 (include/device.h:544-559)
  EXPECT_EQ(choose(h.table, h.system, call).algorithm, kRing);
  call.dataType = kFloat32;
  call.op = kProd;
  EXPECT_EQ(choose(h.table, h.system, call).algorithm, kRing);
  call.op = kAvg;  // PreMulSum on the device
  EXPECT_EQ(choose(h.table, h.system, call).algorithm, kRing);
  call.op = kMax;  // min/max only on integer and half types
  call.dataType = kBfloat16;
  EXPECT_EQ(choose(h.table, h.system, call).algorithm, kNvls);
  // fp8 rings deeper than 8 ranks cost x1024 (enqueue.cc:1809-1815)
  Model two(dgx_h100(2));
  Call fp8;
  fp8.nBytes = MiB;
  fp8.dataType = kFloat8e5m2;
  CostTable t = cost_table(two.table, two.system, fp8);
  float plain = algo_time(two.table, two.system, kAllReduce, kRing, kLL, MiB, 1);
  EXPECT_FLOAT_EQ(t.time_us[kRing][kLL], plain * 1024.0f);
}

TEST(NcclTuning, TuningLogFormat) {
  Model h(dgx_h100());
  auto lines = format_tuning_table(h.table);
  ASSERT_EQ(lines.size(), 24u);  // DIVUP(7, 3) blocks of 8 lines (tuning.cc:499-539)
  EXPECT_EQ(lines[0],
            "  Algorithm   |                            Tree                  |"
            "                            Ring                  |                   CollNetDirect"
            "                  |");
  const std::string allreduce =
      "    AllReduce |    15.2/  43.6 |    31.5/ 128.8 |    64.4/ 165.6 |    15.0/  80.6 |"
      "    40.6/ 189.3 |";
  EXPECT_EQ(lines[7].substr(0, allreduce.size()), allreduce);
  const std::string threads = " Max NThreads |            512 |            640 |";
  EXPECT_EQ(lines[2].substr(0, threads.size()), threads);
  Model old(dgx_h100(), find_version("2.22"));
  EXPECT_EQ(format_tuning_table(old.table).size(), 16u);  // 6 algorithms: two blocks
}

}  // namespace
}  // namespace commsim::nccl
