#pragma once
// NCCL's tuning constants and model rules, one record per NCCL release, 2.18 to 2.28.
//
// The constants are laid out exactly like NCCL's ncclTunerConstants_t (include/plugin/tuner/
// tuner_v5.h:11-85 at v2.28.9-1; before 2.28.3 the same arrays were file-static in
// src/graph/tuning.cc), so a row can be pasted from any tag. What changed between releases that
// is not a constant (a formula, a rule) is a named switch, each documented with the release that
// introduced the change. src/model/nccl/README.md lists the tags read.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "model/nccl/ids.h"

namespace commsim::nccl {

// ncclTunerConstants_v5_t. Latencies in us, bandwidths in GB/s. Caps are indexed
// [compCapIndex][index2] with index2 = 1 node, 2 nodes, >= 3 nodes; llMaxBws rows are the GPU
// generation on one node and the CPU vendor (0 Intel/other, 1 AMD) across nodes.
struct TunerConstants {
  double baseLatencies[kNumAlgorithms][kNumProtocols];
  double hwLatencies[kNumHardware][kNumAlgorithms][kNumProtocols];
  double llMaxBws[kNumCompCaps][3];
  double perChMaxRingLL128Bws[kNumCompCaps][3];
  double perChMaxTreeLL128Bws[kNumCompCaps][3];
  double perChMaxTreeBws[kNumCompCaps][3];
  double perChMaxNVLSTreeBws[kNumCompCaps][3];  // used from 2.28.3 only
};

// How the NVLS / NVLS_TREE bandwidth is computed (graph/tuning.cc, per tag).
enum class NvlsBandwidth {
  k2_18,  // graph bw; NVLS ratio 5/6, NVLSTree ratio .70*nNodes/(2(nNodes-1))
  k2_19,  // NVLS min(bwIntra, bwInter), NVLSTree min(bwIntra, bwInter or bwInter/2); ratio 5/6
  k2_27,  // as 2.19, NVLS AllGather/ReduceScatter min(bwIntra*(ppn-1)/ppn, 0.9*bwInter)
  k2_28,  // nvlsEfficiency, (nCh-1)/nCh, x2 for AllReduce, perChMaxNVLSTreeBws; ratio nRanks/nsteps
};

// How CollNetDirect prices AllGather/ReduceScatter and which gate disables it.
enum class CollNetAllGather {
  kNone,  // 2.18-2.19: CollNetDirect serves AllReduce only
  k2_20,  // ppn*bw, 0.85..0.95 interpolation, disabled when ppn > collNetHeads
  k2_27,  // ppn*min(bwIntra, 0.9*bwInter); NVLS and CollNetDirect share the 1:1 GPU:NIC gate
};

// The default LL128 enable rule (graph/tuning.cc, "pEnable == 2 && p == NCCL_PROTO_LL128").
enum class Ll128Rule {
  k2_18,    // typeInter <= PXB (or <= PXN on SM90); only SM 70, 80, 90
  k2_25,    // as 2.18 plus SM 100 and 120
  k2_27_3,  // as 2.25, SM90+ up to P2C with NCCL_LL128_C2C=1 (else PXN)
  k2_27_5,  // NCCL_LL128_C2C: SM90+ up to PXN, else up to PXB; any SM >= 70
};

// When every algorithm of a collective is disabled, what NCCL falls back to.
enum class RingFallback {
  kRingNeverDisabledOutsideAllReduce,  // 2.18: NCCL_ALGO cannot disable ring for non-AllReduce
  kRingBackup,                         // 2.19-2.23: ring bandwidth restored ("ringbdw")
  kNone,                               // 2.24+: "no algorithm/protocol available"
};

// Which algorithm bandwidths are left as bus bandwidth for AllGather/ReduceScatter.
enum class AlgBwConversion {
  kAll,                    // <= 2.19: every entry converted
  kSkipCollNetDirectAgRs,  // 2.20-2.22
  kSkipNonRingAgRs,        // 2.23+
};

struct Version {
  int major = 2, minor = 0, patch = 0;  // the tag read, e.g. 2.28.9 for v2.28.9-1
  int firstPatch = 0;                   // the oldest tag of the release whose tuning.cc is the same file
  TunerConstants constants{};
  float nvlsEfficiency[kNumCompCaps] = {0, 0, 0, 0};  // 2.28.3+ (graph/tuning.cc:134-139)
  int numAlgorithms = 7;                              // NCCL_NUM_ALGORITHMS: 6 before PAT (2.23)
  int numCompCaps = 4;                                // rows of the cap tables: 3 before Blackwell (2.25)
  double ringLLFactorSingle = 0.5;                    // ring LL busBw factor (2.21+); before: 1/3 ...
  double ringLLFactorMulti = 0.5;                     // ... or 1/4 for multi-node, AllReduce and Reduce
  bool ringLL128LowPpnPenalty = false;                // <= 2.22: x0.7 instead of x0.92 when ppn < 2
  double patFactor = 0.75;                            // PAT busBw factor: 0.85 in 2.23, 0.75 from 2.24
  bool patNeedsSm60 = true;                           // 2.26+
  NvlsBandwidth nvlsBandwidth = NvlsBandwidth::k2_28;
  bool nvlsLatencyFromBase = false;  // 2.18: NVLS latency = base 23 + NET hops, not hwLat
  bool nvlsAllGather = true;         // 2.19+: NVLS priced for AllGather/ReduceScatter
  CollNetAllGather collNetAllGather = CollNetAllGather::k2_27;
  double collNetDirectArityLatency = 0.4;  // us per local rank: 0.5 in 2.18
  bool legacyRingInterSteps = false;       // <= 2.22: 2*nNodes inter-node steps for AllReduce
  bool ppn1UsesTreeNetLatency = true;      // 2.23+
  bool mixedCpuUsesAmdRow = true;          // 2.24+: CPU vendor "mixed" reads the AMD row
  bool perFunctionMasks = true;            // 2.24+: NCCL_ALGO="allreduce:^nvls;..." syntax
  Ll128Rule ll128Rule = Ll128Rule::k2_27_5;
  int ll128MaxTypeIntra = kPathNvb;  // LL128 needs typeIntra <= this: PATH_NVL in 2.18.1
  bool treePatternPenalty = true;    // Tree x0.85 with a TREE pattern (2.18.3+)
  double nvlsRatio = 5.0 / 6.0;      // NVLS busBw -> algBw before 2.28.3; .75 in 2.18.1
  RingFallback ringFallback = RingFallback::kNone;
  AlgBwConversion algBwConversion = AlgBwConversion::kSkipNonRingAgRs;

  std::string name() const;  // "2.28.9"
  std::string tags() const;  // the tags this record stands for: "2.27.5-2.27.7"
};

// Every ported release, oldest first; the last one is the default.
const std::vector<Version>& known_versions();
const Version& newest_version();
// "2.21", "2.28.9", "2.28.9-1", "v2.28.9-1". A release without a patch number is the newest
// ported patch of it; any other patch is the record whose tags cover it, or the newest ported
// tag before it (tuning.cc changes only at tags). Unknown releases throw commsim::Error listing
// the known ones.
const Version& find_version(std::string_view text);

// treeCorrectionFactor[proto][log2(nBytes/64)], 64 B to 256 MiB (graph/tuning.cc:578-582); the
// same in every ported release.
inline constexpr float kTreeCorrectionFactor[kNumProtocols][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

}  // namespace commsim::nccl
