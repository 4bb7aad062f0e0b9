// The constant sets per NCCL release. Each literal table is pasted from src/graph/tuning.cc of
// the tag named above it (NVIDIA/nccl), in NCCL's layout; later releases start from the previous
// one and change only what `git diff` of tuning.cc between the two tags changes.
#include "model/nccl/versions.h"

#include <fmt/format.h>

#include <charconv>

#include "model/error.h"

namespace commsim::nccl {
namespace {

// v2.18.6-1 src/graph/tuning.cc:55-109 (baseLat, hwLat, llMaxBws, perChMax*). Six algorithms,
// three architecture rows; the PAT row (index 6) does not exist yet and stays zero.
TunerConstants constants_2_18() {
  return TunerConstants{
      .baseLatencies = {{6.8, 14.0, 0},
                        {6.6, 14.0, 8.4},  // Tree, Ring
                        {6.8, 14.0, 0},
                        {6.8, 14.0, 0},  // Collnet Direct, Chain
                        {0, 0, 23.0},
                        {0, 0, 23.0}},  // NVLS, NVLS Tree
      .hwLatencies =
          {/* NVLINK */
           {{.6, 1.25, 4}, {.6, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 4.75}, {0, 0, 0}, {0, 0, 0}},
           /* PCI */
           {{1.0, 1.9, 6}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}},
           /* NET */
           {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 10.7}, {0, 0, 14}, {0, 0, 18}, {0, 0, 19}}},
      .llMaxBws = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}},
      .perChMaxRingLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}},
      .perChMaxTreeLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}},
      .perChMaxTreeBws = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}},
      .perChMaxNVLSTreeBws = {},
  };
}

// v2.28.9-1 src/graph/tuning.cc:141-199 (ncclTunerConstantsDefaults) and :134-139.
TunerConstants constants_2_28_9() {
  return TunerConstants{
      .baseLatencies = {{6.8, 14.0, 8.4},
                        {6.6, 14.0, 8.4},  // Tree, Ring
                        {0, 0, 0},
                        {0, 0, 0},  // Collnet Direct, Chain
                        {0, 0, 0},
                        {0, 0, 0},         // NVLS, NVLS Tree
                        {8.0, 8.0, 8.0}},  // PAT
      .hwLatencies =
          {/* NVLINK */
           {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
           /* PCI */
           {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
           /* NET */
           {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}},
      .llMaxBws = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}},
      .perChMaxRingLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}},
      .perChMaxTreeLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
      .perChMaxTreeBws = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}},
      .perChMaxNVLSTreeBws = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}},
  };
}

// v2.18.3-1 to v2.18.6-1 (the same tuning.cc).
Version v2_18_6() {
  Version v;
  v.minor = 18, v.patch = 6, v.firstPatch = 3;
  v.constants = constants_2_18();
  v.numAlgorithms = 6;
  v.numCompCaps = 3;
  v.ringLLFactorSingle = 1.0 / 3.0;  // tuning.cc:178@2.18.6
  v.ringLLFactorMulti = 1.0 / 4.0;
  v.ringLL128LowPpnPenalty = true;
  v.patFactor = 0;
  v.patNeedsSm60 = false;
  v.nvlsBandwidth = NvlsBandwidth::k2_18;
  v.nvlsLatencyFromBase = true;
  v.nvlsAllGather = false;
  v.collNetAllGather = CollNetAllGather::kNone;
  v.collNetDirectArityLatency = 0.5;
  v.legacyRingInterSteps = true;
  v.ppn1UsesTreeNetLatency = false;
  v.mixedCpuUsesAmdRow = false;
  v.perFunctionMasks = false;
  v.ll128Rule = Ll128Rule::k2_18;
  v.ringFallback = RingFallback::kRingNeverDisabledOutsideAllReduce;
  v.algBwConversion = AlgBwConversion::kAll;
  return v;
}

// git diff v2.18.1-1 v2.18.3-1: Tree/Simple 28 us per hop; one LL128 per-channel cap for ring and
// tree ({20, 20, 36.7}, no per-node-count column); Hopper tree cap 33.0 for >= 4 nodes; no x0.85
// for TREE patterns; NVLS ratio .75; LL128 only over NVLink (typeIntra <= PATH_NVL).
Version v2_18_1() {
  Version v = v2_18_6();
  v.patch = 1, v.firstPatch = 1;
  TunerConstants& c = v.constants;
  c.hwLatencies[kHwNvlink][kTree][kSimple] = 28;
  c.hwLatencies[kHwPci][kTree][kSimple] = 28;
  c.hwLatencies[kHwNet][kTree][kSimple] = 28;
  const double ll128MaxBwPerCh[3] = {20.0, 20.0, 36.7};
  for (int cc = 0; cc < 3; ++cc)
    for (int n = 0; n < 3; ++n) c.perChMaxRingLL128Bws[cc][n] = c.perChMaxTreeLL128Bws[cc][n] = ll128MaxBwPerCh[cc];
  c.perChMaxTreeBws[kHopper][2] = 33.0;
  v.treePatternPenalty = false;
  v.nvlsRatio = .75;
  v.ll128MaxTypeIntra = kPathNvl;
  return v;
}

// git diff v2.18.6-1 v2.19.4-1 -- src/graph/tuning.cc (v2.19.1-1 to v2.19.4-1 are the same file)
Version v2_19_4() {
  Version v = v2_18_6();
  v.minor = 19, v.patch = 4, v.firstPatch = 1;
  TunerConstants& c = v.constants;
  for (int a : {kCollNetDirect, kCollNetChain, kNvls, kNvlsTree})
    for (double& base : c.baseLatencies[a]) base = 0;
  // Tree Simple 28 us per hop on every link kind; CollNet and NVLS hops re-measured.
  c.hwLatencies[kHwNvlink][kTree][kSimple] = 28;
  c.hwLatencies[kHwPci][kTree][kSimple] = 28;
  c.hwLatencies[kHwNet][kTree][kSimple] = 28;
  for (int hw : {kHwNvlink, kHwPci}) {
    c.hwLatencies[hw][kCollNetDirect][kSimple] = 3.7;
    c.hwLatencies[hw][kCollNetChain][kSimple] = 2.8;
  }
  c.hwLatencies[kHwNet][kCollNetDirect][kSimple] = 31;
  c.hwLatencies[kHwNet][kCollNetChain][kSimple] = 30;
  c.hwLatencies[kHwNvlink][kNvls][kSimple] = 23;
  c.hwLatencies[kHwNvlink][kNvlsTree][kSimple] = 23;
  c.hwLatencies[kHwNet][kNvlsTree][kSimple] = 14;
  v.nvlsBandwidth = NvlsBandwidth::k2_19;
  v.nvlsLatencyFromBase = false;
  v.nvlsAllGather = true;
  v.collNetDirectArityLatency = 0.4;
  v.ringFallback = RingFallback::kRingBackup;
  return v;
}

// CollNetDirect AllGather/ReduceScatter (SHARP).
Version v2_20_5() {
  Version v = v2_19_4();
  v.minor = 20, v.patch = 5, v.firstPatch = 3;
  v.collNetAllGather = CollNetAllGather::k2_20;
  v.algBwConversion = AlgBwConversion::kSkipCollNetDirectAgRs;
  return v;
}

// Ring LL x0.5, Hopper llMaxBws, NVLS NVLink hop 25 us.
Version v2_21_5() {
  Version v = v2_20_5();
  v.minor = 21, v.patch = 5, v.firstPatch = 5;
  v.constants.hwLatencies[kHwNvlink][kNvls][kSimple] = 25;
  v.constants.hwLatencies[kHwNvlink][kNvlsTree][kSimple] = 25;
  const double hopper[3] = {141.0, 45.0, 35.0};
  for (int i = 0; i < 3; ++i) v.constants.llMaxBws[kHopper][i] = hopper[i];
  v.ringLLFactorSingle = v.ringLLFactorMulti = 0.5;
  return v;
}

// 2.22 changes only the time function (forced channel counts no longer scale it; not modelled).
Version v2_22_3() {
  Version v = v2_21_5();
  v.minor = 22, v.patch = 3, v.firstPatch = 3;
  return v;
}

// PAT; Tree Simple base 8.4 and 4/4/14 us per hop; 2(nNodes-1) inter-node ring steps.
Version v2_23_4() {
  Version v = v2_22_3();
  v.minor = 23, v.patch = 4, v.firstPatch = 4;
  TunerConstants& c = v.constants;
  c.baseLatencies[kTree][kSimple] = 8.4;
  c.hwLatencies[kHwNvlink][kTree][kSimple] = 4.0;
  c.hwLatencies[kHwPci][kTree][kSimple] = 4.0;
  c.hwLatencies[kHwNet][kTree][kSimple] = 14;
  // tuning.cc:278-281@2.23.4 sets PAT's latency to "8 + ..." rather than adding to a base; the
  // PAT row of hwLat is absent (zero). Base 8 with '+=' is the same number.
  for (double& base : c.baseLatencies[kPat]) base = 8.0;
  v.numAlgorithms = 7;
  v.ringLL128LowPpnPenalty = false;
  v.patFactor = 0.85;
  v.legacyRingInterSteps = false;
  v.ppn1UsesTreeNetLatency = true;
  v.algBwConversion = AlgBwConversion::kSkipNonRingAgRs;
  return v;
}

// PAT x0.75, per-function NCCL_ALGO/NCCL_PROTO, "mixed" CPU vendor, no ring backup.
Version v2_24_3() {
  Version v = v2_23_4();
  v.minor = 24, v.patch = 3, v.firstPatch = 3;
  v.patFactor = 0.75;
  v.mixedCpuUsesAmdRow = true;
  v.perFunctionMasks = true;
  v.ringFallback = RingFallback::kNone;
  return v;
}

// Blackwell rows: twice Hopper's (tuning.cc:149-176@2.25.1).
Version v2_25_1() {
  Version v = v2_24_3();
  v.minor = 25, v.patch = 1, v.firstPatch = 1;
  TunerConstants& c = v.constants;
  for (int i = 0; i < 3; ++i) {
    c.llMaxBws[kBlackwell][i] = 2 * c.llMaxBws[kHopper][i];
    c.perChMaxRingLL128Bws[kBlackwell][i] = 2 * c.perChMaxRingLL128Bws[kHopper][i];
    c.perChMaxTreeLL128Bws[kBlackwell][i] = 2 * c.perChMaxTreeLL128Bws[kHopper][i];
    c.perChMaxTreeBws[kBlackwell][i] = 2 * c.perChMaxTreeBws[kHopper][i];
  }
  v.numCompCaps = 4;
  v.ll128Rule = Ll128Rule::k2_25;
  return v;
}

// PAT needs SM60; the x0.85 tree penalty reads maxTreePattern (same input here).
Version v2_26_6() {
  Version v = v2_25_1();
  v.minor = 26, v.patch = 6, v.firstPatch = 2;
  v.patNeedsSm60 = true;
  return v;
}

// NVLS AllGather/ReduceScatter bandwidth, CollNetDirect AG/RS formula, NCCL_LL128_C2C.
Version v2_27_3() {
  Version v = v2_26_6();
  v.minor = 27, v.patch = 3, v.firstPatch = 3;
  v.nvlsBandwidth = NvlsBandwidth::k2_27;
  v.collNetAllGather = CollNetAllGather::k2_27;
  v.ll128Rule = Ll128Rule::k2_27_3;
  return v;
}

// git diff v2.27.3-1 v2.27.5-1: only the LL128 path rule (v2.27.5-1 to v2.27.7-1 are the same).
Version v2_27_7() {
  Version v = v2_27_3();
  v.patch = 7, v.firstPatch = 5;
  v.ll128Rule = Ll128Rule::k2_27_5;
  return v;
}

// ncclTunerConstants, nvlsEfficiency, the NVLS/NVLSTree formula (git diff v2.27.7-1 v2.28.3-1).
Version v2_28_3() {
  Version v = v2_27_7();
  v.minor = 28, v.patch = 3, v.firstPatch = 3;
  v.constants = constants_2_28_9();
  v.constants.hwLatencies[kHwNet][kNvlsTree][kSimple] = 14;           // 20.9 from 2.28.9
  v.constants.perChMaxRingLL128Bws[kBlackwell][1] = 2 * 36.7;         // 34.6 from 2.28.7
  v.constants.perChMaxNVLSTreeBws[kBlackwell][2] = 43.1;              // 43.8 from 2.28.9
  const float efficiency[kNumCompCaps] = {0.0f, 0.0f, 0.85f, 0.74f};  // tuning.cc:134-139
  for (int i = 0; i < kNumCompCaps; ++i) v.nvlsEfficiency[i] = efficiency[i];
  v.nvlsBandwidth = NvlsBandwidth::k2_28;
  return v;
}

Version v2_28_7() {
  Version v = v2_28_3();
  v.patch = 7, v.firstPatch = 7;
  v.constants.perChMaxRingLL128Bws[kBlackwell][1] = 34.6;
  return v;
}

Version v2_28_9() {
  Version v = v2_28_7();
  v.patch = 9, v.firstPatch = 9;
  v.constants = constants_2_28_9();
  return v;
}

int parse_int(std::string_view text, std::string_view whole) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw Error(fmt::format("NCCL version '{}': '{}' is not a number", whole, text));
  return value;
}

std::string known_list() {
  std::string list;
  for (const Version& v : known_versions()) list += (list.empty() ? "" : ", ") + v.tags();
  return list;
}

}  // namespace

std::string Version::name() const {
  return fmt::format("{}.{}.{}", major, minor, patch);
}

std::string Version::tags() const {
  if (firstPatch == patch) return name();
  return fmt::format("{}.{}.{}-{}", major, minor, firstPatch, name());
}

const std::vector<Version>& known_versions() {
  static const std::vector<Version> versions = {v2_18_1(), v2_18_6(), v2_19_4(), v2_20_5(), v2_21_5(),
                                                v2_22_3(), v2_23_4(), v2_24_3(), v2_25_1(), v2_26_6(),
                                                v2_27_3(), v2_27_7(), v2_28_3(), v2_28_7(), v2_28_9()};
  return versions;
}

const Version& newest_version() {
  return known_versions().back();
}

const Version& find_version(std::string_view text) {
  std::string_view s = text;
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  if (auto dash = s.find('-'); dash != std::string_view::npos) s = s.substr(0, dash);
  int parts[3] = {0, 0, -1};
  int count = 0;
  while (!s.empty() || count == 0) {
    if (count == 3) throw Error(fmt::format("NCCL version '{}': expected 2.MINOR[.PATCH]", text));
    auto dot = s.find('.');
    parts[count++] = parse_int(s.substr(0, dot), text);
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  if (count < 2) throw Error(fmt::format("NCCL version '{}': expected 2.MINOR[.PATCH]", text));
  const Version* found = nullptr;
  for (const Version& v : known_versions()) {
    if (v.major != parts[0] || v.minor != parts[1]) continue;
    if (parts[2] < 0 || v.firstPatch <= parts[2] || found == nullptr) found = &v;
  }
  if (found == nullptr) throw Error(fmt::format("NCCL version '{}' is not modelled; known: {}", text, known_list()));
  return *found;
}

}  // namespace commsim::nccl
