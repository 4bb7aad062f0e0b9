// ncclTopoTuneModel, ncclTopoGetAlgoTime and the per-call selection, ported from NVIDIA/nccl
// src/graph/tuning.cc and src/enqueue.cc. Line numbers are at tag v2.28.9-1 unless marked; the
// release differences are switches of Version (versions.h). Arithmetic keeps NCCL's types (float
// tables, double constants) so the printed table matches NCCL's to the last digit shown.
#include "model/nccl/tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/error.h"

namespace commsim::nccl {
namespace {

// include/device.h:88-110 and include/comm.h:41-43.
constexpr int kWarpSize = 32;
constexpr int kMaxNThreads = 640;
constexpr int kSimpleMaxNThreads = 512;
constexpr int kLLMaxNThreads = 512;
constexpr int kLL128MaxNThreads = 640;
constexpr float kPciBw = 12.0f;  // graph/topo.h:22
constexpr int kMaxChannels = 64;
constexpr int kMaxNvlsArity = 32;                 // NCCL_MAX_NVLS_ARITY
constexpr int kMaxDirectArity = 7;                // NCCL_MAX_DIRECT_ARITY
constexpr int kMaxDevWorkBatchColls = 1024 / 96;  // 1024 / sizeof(ncclDevWorkColl), device.h:363

int log2i(std::size_t n) {
  int log = -1;
  while (n != 0) n >>= 1, ++log;
  return log;
}

bool is_gather(int coll) {
  return coll == kAllGather || coll == kReduceScatter;
}

// The per-communicator values computed at the top of ncclTopoTuneModel (tuning.cc:246-265).
struct Model {
  const System& sys;
  const Version& v;
  TunerConstants c;
  int compCapIndex;
  double llMaxBw, perChMaxTreeBw, perChMaxRingLL128Bw, perChMaxTreeLL128Bw, perChMaxNVLSTreeBw;
  float ppn;
  int intraHw[kNumAlgorithms], hw[kNumAlgorithms];

  Model(const System& s, const Version& ver) : sys(s), v(ver), c(ver.constants) {
    compCapIndex = std::min<int>(comp_cap_index(s.minCompCap), ver.numCompCaps - 1);
    int nNodes = s.nNodes;
    int index2 = nNodes <= 2 ? nNodes - 1 : 2;
    bool amdRow = s.cpuVendor == kVendorAmd || (ver.mixedCpuUsesAmdRow && s.cpuVendor == kVendorMixed);
    int index1 = nNodes == 1 ? compCapIndex : amdRow ? 1 : 0;
    llMaxBw = c.llMaxBws[index1][index2];
    perChMaxTreeBw = c.perChMaxTreeBws[compCapIndex][index2];
    perChMaxRingLL128Bw = c.perChMaxRingLL128Bws[compCapIndex][index2];
    perChMaxTreeLL128Bw = c.perChMaxTreeLL128Bws[compCapIndex][index2];
    perChMaxNVLSTreeBw = c.perChMaxNVLSTreeBws[compCapIndex][index2];
    // De-penalize Tree/Simple latency on Power systems to favor Tree than Ring.
    if (s.cpuArch == kCpuPower) c.hwLatencies[kHwPci][kTree][kSimple] = c.hwLatencies[kHwPci][kRing][kSimple];
    ppn = s.ppn();
    for (int a = 0; a < kNumAlgorithms; ++a) {
      intraHw[a] = s.graph(a).typeIntra == kPathNvl ? kHwNvlink : kHwPci;  // LINK_NVL == PATH_NVL
      hw[a] = nNodes == 1 ? intraHw[a] : kHwNet;
    }
  }

  // ncclPatEnable (tuning.cc:201-209).
  bool pat_enabled() const {
    if (v.patNeedsSm60 && sys.minCompCap < 60) return false;
    if (sys.patEnable != 2) return sys.patEnable != 0;
    if (sys.nNodes != sys.nRanks) return false;
    return sys.netDeviceHost;
  }

  // getNetOverhead (tuning.cc:211-219), us.
  float net_overhead() const { return net_overhead_us(sys); }

  // The `continue`s of the coll/algo/proto loops (tuning.cc:272-290): entries never priced.
  bool priced(int coll, int a, int p) const {
    if (a >= v.numAlgorithms) return false;
    if ((coll == kBroadcast || coll == kReduce) && a != kRing) return false;
    if (is_gather(coll)) {
      bool ok = a == kRing || (a == kNvls && v.nvlsAllGather) ||
                (a == kCollNetDirect && v.collNetAllGather != CollNetAllGather::kNone) || a == kPat;
      if (!ok) return false;
    }
    if (coll == kAllReduce && a == kPat) return false;
    if ((a == kNvls || a == kNvlsTree) && p != kSimple) return false;
    if (is_gather(coll) && a == kPat && (p != kSimple || !pat_enabled())) return false;
    if ((a == kNvls || a == kNvlsTree) && v.nvlsBandwidth == NvlsBandwidth::k2_28 && sys.graph(a).nChannels < 2)
      return false;  // NVLS/NVLStree needs at least 2 channels
    return true;
  }

  float per_channel_bw(int coll, int a) const;
  float bus_bandwidth(int coll, int a, int p) const;
  float algorithm_bandwidth(int coll, int a, int p, int nsteps) const;
  float latency(int coll, int a, int p, int nsteps) const;
};

// The per-channel bandwidth before the refinements, with each release's NVLS rule.
float Model::per_channel_bw(int coll, int a) const {
  const Graph& g = sys.graph(a);
  int nNodes = sys.nNodes;
  bool collnet = a == kCollNetDirect || a == kCollNetChain;
  float bw = nNodes <= 2 || collnet ? g.bwIntra : g.bwInter;
  if (a != kNvls && a != kNvlsTree) return bw;
  switch (v.nvlsBandwidth) {
    case NvlsBandwidth::k2_18: return bw;
    case NvlsBandwidth::k2_19:
    case NvlsBandwidth::k2_27:
      if (a == kNvlsTree) return std::min(g.bwIntra, nNodes <= 2 ? g.bwInter : g.bwInter / 2);
      if (v.nvlsBandwidth == NvlsBandwidth::k2_27 && coll != kAllReduce)
        return std::min(g.bwIntra * (ppn - 1.0f) / ppn, g.bwInter * 0.9f);
      return std::min(g.bwIntra, g.bwInter);
    case NvlsBandwidth::k2_28: {  // tuning.cc:285-299
      float intraBw = g.bwIntra * v.nvlsEfficiency[compCapIndex] * (g.nChannels - 1) / g.nChannels;
      if (coll == kAllReduce) {
        intraBw *= 2.0f;  // AllReduce pipelines two operations.
      } else {
        intraBw *= (ppn - 1) / ppn;
      }
      float interBw = g.bwInter * ((nNodes <= 2 && a == kNvlsTree) ? 2 : 1);
      return std::min({intraBw, interBw,
                       a == kNvlsTree ? static_cast<float>(perChMaxNVLSTreeBw) : std::numeric_limits<float>::max()});
    }
  }
  return bw;
}

// Bus bandwidth with the "various model refinements" (tuning.cc:300-343).
float Model::bus_bandwidth(int coll, int a, int p) const {
  const Graph& g = sys.graph(a);
  int nNodes = sys.nNodes;
  float bw = per_channel_bw(coll, a);
  float busBw = g.nChannels * bw;
  if (a == kRing && p == kLL) {
    bool multi = nNodes > 1 || coll == kAllReduce || coll == kReduce;
    busBw = std::min(llMaxBw, busBw * (multi ? v.ringLLFactorMulti : v.ringLLFactorSingle));
  }
  if (a == kRing && p == kLL128) {
    double factor = v.ringLL128LowPpnPenalty && ppn < 2 ? 0.7 : 0.92;
    busBw = std::min(busBw * factor, g.nChannels * perChMaxRingLL128Bw);
  }
  if (a == kTree && coll == kAllReduce) busBw = std::min(busBw * .92, g.nChannels * perChMaxTreeBw);
  if (a == kTree && p == kLL) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
  if (a == kTree && p == kLL128)
    busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.nChannels * perChMaxTreeLL128Bw);
  if (a == kTree && v.treePatternPenalty && sys.maxTreePattern == kPatternTree) busBw *= .85;
  if (a == kPat) busBw *= v.patFactor;
  if ((a == kCollNetDirect || a == kCollNetChain) && p != kSimple) busBw = 0;  // Not used
  if (a == kCollNetDirect && p == kSimple) {
    if (is_gather(coll) && v.collNetAllGather == CollNetAllGather::k2_20) {
      busBw = ppn * bw;  // tuning.cc:190-205@2.20.5
      bool feature = coll == kAllGather ? sys.collNet.iallgather : sys.collNet.ireducescatter;
      if (nNodes > 1 && (!feature || ppn > sys.collNet.headsNum)) busBw = 0;
      float w = (ppn - 1) / (8 - 1);  // measured at 1 and 8 ppn, interpolated
      busBw *= w * 0.85 + (1 - w) * 0.95;
    } else if (is_gather(coll)) {
      busBw = ppn * std::min(g.bwIntra, g.bwInter * 0.9f);
    } else {
      // Collnet+Direct requires all GPUs to have a local NIC to work at full speed
      float factor = ppn / (1.0 * g.nChannels);  // GPU/NIC ratio
      factor -= (factor - 1) / 2;
      busBw /= factor;
      if (sys.minCompCap >= 90) busBw *= .85;
    }
  }
  // AllGather/ReduceScatter across nodes need 1:1 GPU:NIC and the plugin's collectives (2.27+).
  if (v.collNetAllGather == CollNetAllGather::k2_27 && (a == kNvls || a == kCollNetDirect) && p == kSimple &&
      is_gather(coll) && nNodes > 1) {
    if (coll == kAllGather && !sys.collNet.iallgather) busBw = 0.0f;
    if (coll == kReduceScatter && !sys.collNet.ireducescatter) busBw = 0.0f;
    if (!sys.collNet.enabled || sys.localRanks() > sys.collNet.headsNum) busBw = 0.0f;
  }
  return busBw;
}

// Bus bandwidth to algorithm bandwidth (tuning.cc:345-352), per release.
float Model::algorithm_bandwidth(int coll, int a, int p, int nsteps) const {
  float busBw = bus_bandwidth(coll, a, p);
  bool keep = (v.algBwConversion == AlgBwConversion::kSkipNonRingAgRs && a != kRing && is_gather(coll)) ||
              (v.algBwConversion == AlgBwConversion::kSkipCollNetDirectAgRs && a == kCollNetDirect && is_gather(coll));
  if (keep) return busBw;
  float ratio = 1.0f;
  bool nvls = a == kNvls || a == kNvlsTree;
  if (a == kRing || (nvls && v.nvlsBandwidth == NvlsBandwidth::k2_28)) {
    ratio *= (1.0 * sys.nRanks) / nsteps;
  } else if (a == kNvlsTree && v.nvlsBandwidth == NvlsBandwidth::k2_18) {
    ratio = .70 * sys.nNodes / (2 * (sys.nNodes - 1));  // tuning.cc:198@2.18.6
  } else if (nvls) {
    ratio *= v.nvlsRatio;
  } else {
    ratio *= .5;
  }
  return busBw * ratio;
}

// Latency in us (tuning.cc:353-401).
float Model::latency(int coll, int a, int p, int nsteps) const {
  const Graph& g = sys.graph(a);
  int nNodes = sys.nNodes, nRanks = sys.nRanks;
  float lat = static_cast<float>(c.baseLatencies[a][p]);
  float intraLat = static_cast<float>(c.hwLatencies[intraHw[a]][a][p]);
  // With ppn=1 latencies are fully exposed, use the Tree network latency (2.23+).
  float interLat = static_cast<float>(v.ppn1UsesTreeNetLatency && ppn == 1 ? c.hwLatencies[kHwNet][kTree][p]
                                                                           : c.hwLatencies[kHwNet][a][p]);
  interLat += g.latencyInter;
  if (p == kSimple) interLat += g.latencyInter;  // the flush extra latency
  if (a == kRing) {
    float hop = static_cast<float>(c.hwLatencies[hw[a]][a][p]);
    if (coll == kReduce || coll == kBroadcast) {
      if (g.sameChannels) return lat + hop;
      if (p == kSimple) hop = static_cast<float>(c.hwLatencies[hw[a]][kTree][p]);  // chunk latency
      return lat + nsteps * hop;
    }
    // Inter-node rings still have to launch nsteps * net overhead.
    float netOverhead = 0.0;
    if (nNodes > 1) {
      netOverhead = net_overhead();
      if (p == kSimple) netOverhead *= 3;
    }
    intraLat = std::max(intraLat, netOverhead);
    int nInterSteps = 0;
    if (v.legacyRingInterSteps) {  // tuning.cc:159-161@2.22.3
      nInterSteps = coll == kAllReduce ? (nNodes > 1 ? 2 * nNodes : 0) : is_gather(coll) ? nNodes - 1 : nNodes;
    } else {
      nInterSteps = nNodes == 1 ? 0 : coll == kAllReduce ? 2 * (nNodes - 1) : nNodes - 1;
    }
    return lat + ((nsteps - nInterSteps) * intraLat + nInterSteps * interLat);
  }
  int local = nRanks / nNodes;
  switch (a) {
    case kTree:
      if (coll == kAllReduce) lat += 2 * ((local - 1) * intraLat + log2i(nNodes) * interLat);
      return lat;
    case kCollNetDirect:  // + arity serialization latency
      return lat + (2 * (std::min(1, local - 1) * intraLat + (local - 1) * v.collNetDirectArityLatency) + interLat);
    case kCollNetChain: return lat + (2 * (local - 1) * intraLat + interLat);
    case kNvls:
      if (v.nvlsLatencyFromBase) return lat + (nNodes > 1 ? static_cast<float>(c.hwLatencies[kHwNet][a][p]) : 0);
      return intraLat + (nNodes > 1 ? interLat : 0);  // base latency ignored
    case kNvlsTree:
      if (v.nvlsLatencyFromBase) return lat + 2 * (nNodes - 1) * static_cast<float>(c.hwLatencies[kHwNet][a][p]);
      return lat + (intraLat + 2 * log2i(nNodes) * interLat);
    case kPat:
      if (is_gather(coll)) lat += log2i(nNodes) * (interLat / 3.5) + nRanks * 2.8;
      return lat;
    default: return lat;
  }
}

// The LL128 default rule ("pEnable == 2 && p == NCCL_PROTO_LL128", tuning.cc:478-494).
bool ll128_allowed(const Model& m, int coll, int a) {
  const System& s = m.sys;
  const Graph& g = s.graph(a);
  int cc = s.minCompCap;
  bool cuda118Exception = cc == 90 && s.cudartVersion == 11080 && coll == kAllReduce && a == kRing && s.nRanks == 2;
  bool ok = g.typeIntra <= m.v.ll128MaxTypeIntra && s.minCompCap == s.maxCompCap;
  if (m.v.ll128Rule == Ll128Rule::k2_27_5) {
    ok = ok && (s.ll128C2c && cc >= 90 ? g.typeInter <= kPathPxn : g.typeInter <= kPathPxb);
    return ok && !(cc < 70 || cuda118Exception);
  }
  if (m.v.ll128Rule == Ll128Rule::k2_27_3) {  // tuning.cc:460@2.27.3
    ok = ok && (g.typeInter <= kPathPxb || (cc >= 90 && g.typeInter <= (s.ll128C2c ? kPathP2c : kPathPxn)));
    return ok && !(cc < 70 || cuda118Exception);
  }
  ok = ok && (g.typeInter <= kPathPxb || (cc >= 90 && g.typeInter <= kPathPxn));
  bool blackwell = m.v.ll128Rule == Ll128Rule::k2_25 && (cc == 100 || cc == 120);
  return ok && (cc == 70 || cc == 80 || (cc == 90 && !cuda118Exception) || blackwell);
}

// Protocol/algorithm enables and the NCCL_ALGO / NCCL_PROTO masks (tuning.cc:403-497).
void apply_enables(const Model& m, TuningTable& t) {
  const System& s = m.sys;
  EnableMasks masks = s.masks;
  for (int f = 0; f < kNumFunctions; ++f) {
    for (int a = 0; a < kNumAlgorithms; ++a) {
      bool disable =
          (s.nNodes == 1 && a == kNvlsTree) ||
          (!s.collNet.enabled && (a == kCollNetDirect || a == kCollNetChain || (a == kNvls && s.nNodes > 1))) ||
          (s.nvsCount == 0 && a == kCollNetDirect);
      if (disable) masks.algo[f][a] = 0;
    }
    // Before 2.24: NCCL_ALGO=COLLNET without CollNet falls back to ring and tree.
    if (m.v.ringFallback != RingFallback::kNone && !s.collNet.enabled && !masks.algo[f][kRing] &&
        !masks.algo[f][kTree] && !masks.algo[f][kNvls] && !masks.algo[f][kNvlsTree])
      masks.algo[f][kRing] = masks.algo[f][kTree] = 1;
  }
  float ringBackup[kNumFunctions][kNumProtocols];
  for (int c = 0; c < kNumFunctions; ++c)
    for (int p = 0; p < kNumProtocols; ++p) ringBackup[c][p] = t.bandwidths[c][kRing][p];
  for (int c = 0; c < kNumFunctions; ++c) {
    for (int a = 0; a < kNumAlgorithms; ++a) {
      for (int p = 0; p < kNumProtocols; ++p) {
        int pEnable = masks.proto[c][p];
        if (pEnable == 2 && p == kLL128) pEnable = ll128_allowed(m, c, a) ? 1 : 0;
        if (pEnable == 0) t.bandwidths[c][a][p] = 0;
        if (a == kRing && pEnable == 0 && m.v.minor >= 22) ringBackup[c][p] = 0;
        bool ringKept =
            m.v.ringFallback == RingFallback::kRingNeverDisabledOutsideAllReduce && a == kRing && c != kAllReduce;
        if (!ringKept && masks.algo[c][a] == 0) t.bandwidths[c][a][p] = 0;
      }
    }
    if (m.v.ringFallback != RingFallback::kRingBackup) continue;
    bool available = false;  // 2.19-2.23: at least set ring algo available
    for (int a = 0; a < kNumAlgorithms; ++a)
      for (int p = 0; p < kNumProtocols; ++p) available = available || t.bandwidths[c][a][p] != 0;
    if (!available)
      for (int p = 0; p < kNumProtocols; ++p) t.bandwidths[c][kRing][p] = ringBackup[c][p];
  }
}

void set_threads(const Model& m, TuningTable& t) {
  const Graph& ring = m.sys.graphs[kRing];
  int simpleDefault = ring.bwIntra * ring.nChannels <= kPciBw ? 256 : kSimpleMaxNThreads;
  t.maxThreads[kRing][kSimple] = simpleDefault;
  t.maxThreads[kTree][kSimple] = kSimpleMaxNThreads;
  for (int a : {kCollNetDirect, kCollNetChain, kNvls, kNvlsTree}) t.maxThreads[a][kSimple] = kMaxNThreads;
  t.maxThreads[kRing][kLL] = t.maxThreads[kTree][kLL] = kLLMaxNThreads;
  t.maxThreads[kRing][kLL128] = t.maxThreads[kTree][kLL128] = kLL128MaxNThreads;
  for (int a = 0; a < kNumAlgorithms; ++a) {  // tuning.cc:541-549
    t.threadThresholds[a][kLL] = 8;
    t.threadThresholds[a][kLL128] = 8;
    t.threadThresholds[a][kSimple] = 64;
  }
  t.threadThresholds[kRing][kLL] *= m.sys.nRanks;
  t.threadThresholds[kCollNetDirect][kSimple] = 512;
  t.threadThresholds[kCollNetChain][kSimple] = 512;
}

}  // namespace

float net_overhead_us(const System& s) {
  if (s.netOverheadUs >= 0) return static_cast<float>(s.netOverheadUs);
  if (s.cpuArch == kCpuX86 && s.cpuVendor == kVendorAmd) return 2.0f;
  return 1.0f;
}

int comm_channels(const System& s) {
  if (s.collChannels > 0) return s.collChannels;
  const Graph& ring = s.graphs[kRing];
  int n = std::min(ring.nChannels, s.graphs[kTree].nChannels);
  n = std::min(kMaxChannels, n * 2);
  const Graph& chain = s.graphs[kCollNetChain];
  if (s.collNet.enabled && chain.bwIntra > chain.bwInter && s.nRanks > s.nNodes) n = std::min(kMaxChannels, n + n / 2);
  if (s.minCompCap >= 90 && s.nNodes > 1 && ring.bwIntra > 45.0 && n < 16) n *= 2;
  return n;
}

TuningTable tune_model(const System& system, const Version& version) {
  if (system.nNodes < 1 || system.nRanks < system.nNodes)
    throw Error(fmt::format("NCCL model: {} ranks on {} nodes", system.nRanks, system.nNodes));
  Model m(system, version);
  TuningTable t;
  t.numAlgorithms = version.numAlgorithms;
  t.collChannels = comm_channels(system);
  set_threads(m, t);
  if (system.nRanks <= 1) return t;
  for (int coll = 0; coll < kNumFunctions; ++coll) {
    int nRanks = system.nRanks;
    int nsteps = coll == kAllReduce ? 2 * (nRanks - 1) : is_gather(coll) ? nRanks - 1 : nRanks;
    for (int a = 0; a < kNumAlgorithms; ++a) {
      for (int p = 0; p < kNumProtocols; ++p) {
        if (!m.priced(coll, a, p)) continue;
        t.bandwidths[coll][a][p] = m.algorithm_bandwidth(coll, a, p, nsteps);
        t.latencies[coll][a][p] = m.latency(coll, a, p, nsteps);
      }
    }
  }
  apply_enables(m, t);
  return t;
}

AlgoTimeParts algo_time_parts(const TuningTable& t, const System& s, Function coll, Algorithm a, Protocol p,
                              std::size_t nBytes, int numPipeOps) {
  float bw = t.bandwidths[coll][a][p];
  float lat = t.latencies[coll][a][p];
  if (bw == 0) return {-1.0f, 0.0f};
  int logSize = log2i(nBytes >> 6);
  if (a == kTree && coll == kAllReduce && logSize >= 0 && logSize < 23) bw *= kTreeCorrectionFactor[p][logSize];
  if (a == kRing && p == kSimple && s.nNodes > 1 && coll == kAllReduce &&
      nBytes / static_cast<std::size_t>(t.collChannels * s.nRanks) >= 64) {
    lat *= s.minCompCap < 80 ? 1.9 : 1.4;  // Plateau effect of ring
  }
  // Tree pipelining saves latency in aggregation cases
  int latCount = a == kRing ? numPipeOps : (numPipeOps + kMaxDevWorkBatchColls - 1) / kMaxDevWorkBatchColls;
  return {lat * latCount, nBytes / (1000 * bw)};
}

float algo_time(const TuningTable& t, const System& s, Function coll, Algorithm a, Protocol p, std::size_t nBytes,
                int numPipeOps) {
  const AlgoTimeParts parts = algo_time_parts(t, s, coll, a, p, nBytes, numPipeOps);
  return parts.latency_us < 0 ? -1.0f : parts.latency_us + parts.bandwidth_us;
}

CostTable cost_table(const TuningTable& t, const System& s, const Call& call) {
  CostTable table;
  for (auto& row : table.time_us)
    for (float& entry : row) entry = -1.0f;  // NCCL_ALGO_PROTO_IGNORE
  if (s.nRanks == 1) {
    table.time_us[kRing][kSimple] = 0.0f;
    return table;
  }
  bool reducing = call.function == kAllReduce || call.function == kReduce || call.function == kReduceScatter;
  bool collNetSupport = s.collNet.enabled && (!reducing || s.collNet.supportsOpType);
  bool nvlsSupport = s.nvlsSupport && nvls_supports(call);
  int localRanks = s.localRanks();
  for (int a = 0; a < t.numAlgorithms; ++a) {
    if ((a == kCollNetDirect || a == kCollNetChain) && (!collNetSupport || localRanks > kMaxDirectArity + 1)) continue;
    if ((a == kNvls || a == kNvlsTree) && (!nvlsSupport || (call.function != kAllReduce && localRanks > kMaxNvlsArity)))
      continue;
    if (a == kNvls && !collNetSupport && s.nNodes > 1) continue;
    if (a == kPat && call.function == kReduceScatter && call.op == kAvg) continue;  // no scaling yet
    for (int p = 0; p < kNumProtocols; ++p) {
      float time = algo_time(t, s, call.function, Algorithm(a), Protocol(p), call.nBytes, call.numPipeOps);
      // Relegate fp8 reduction trees deep enough to lose precision (enqueue.cc:1809-1815).
      bool fp8 = call.dataType == kFloat8e4m3 || call.dataType == kFloat8e5m2;
      if (fp8 && a == kRing && s.nRanks > 8) time *= 1024.0f;
      table.time_us[a][p] = time;
    }
  }
  return table;
}

Choice choose(const TuningTable& t, const System& s, const Call& call) {
  CostTable table = cost_table(t, s, call);
  Choice choice;
  float minTime = 3600000000.0f;
  int algorithm = -1, protocol = -1;
  for (int a = 0; a < kNumAlgorithms; ++a) {
    for (int p = 0; p < kNumProtocols; ++p) {
      float time = table.time_us[a][p];
      if (time >= 0.0f && time < minTime) algorithm = a, protocol = p, minTime = time;
    }
  }
  if (algorithm < 0)
    throw Error(
        fmt::format("NCCL model: no algorithm/protocol available for function {}", kFunctionNames[call.function]));
  choice.algorithm = Algorithm(algorithm);
  choice.protocol = Protocol(protocol);
  choice.time_us = minTime;
  // Channels and threads after the choice (enqueue.cc:1868-1911).
  std::size_t nBytes = call.nBytes;
  long nc = t.collChannels;
  long nt = t.maxThreads[algorithm][protocol];
  long threshold = t.threadThresholds[algorithm][protocol];
  if (algorithm == kCollNetDirect) {
    long heads = std::max(1, s.collNet.headsNum);
    bool flag = true;
    for (long ncSwitch = 16; ncSwitch >= 1 && flag; ncSwitch /= 2) {
      while ((flag = nBytes < static_cast<std::size_t>(nc * nt * heads * threshold)) && nc > ncSwitch) {
        if (nc == ncSwitch + ncSwitch / 2) threshold /= 2;
        nc--;
      }
    }
  } else if (algorithm == kNvls || algorithm == kNvlsTree) {
    nc = s.nNodes > 1 && algorithm == kNvls ? std::min(s.nvlsChannels, t.collChannels) : s.nvlsChannels;
  } else {
    while (nBytes < static_cast<std::size_t>(nc * nt * threshold) && nc >= 2) nc--;
  }
  if (algorithm != kNvls && algorithm != kNvlsTree && algorithm != kCollNetDirect) {
    while (nBytes < static_cast<std::size_t>(nc * nt * threshold) && nt % 128 == 0) nt /= 2;
  }
  if (protocol == kSimple) {
    if (algorithm == kRing) nt += kWarpSize;      // Extra warp for sync
    if (algorithm == kTree) nt += 4 * kWarpSize;  // split thread model
  }
  nt = nt / kWarpSize < 3 ? 3 * kWarpSize : nt;
  if (algorithm == kTree || algorithm == kPat) nt = kMaxNThreads;
  choice.nChannels = static_cast<int>(nc);
  choice.nWarps = static_cast<int>(nt / kWarpSize);
  return choice;
}

std::vector<std::string> format_tuning_table(const TuningTable& t) {
  std::vector<std::string> lines;
  int blocks = (t.numAlgorithms + 2) / 3;
  for (int block = 0; block < blocks; ++block) {
    std::string line = "  Algorithm   |";
    for (int ba = 0; ba < 3; ++ba) {
      int a = block * 3 + ba;
      if (a >= t.numAlgorithms) continue;
      line += fmt::format(" {:>14}   {:>14}   {:>14} |", "", kAlgorithmNames[a], "");
    }
    lines.push_back(line);
    line = "  Protocol    |";
    for (int ba = 0; ba < 3; ++ba)  // NCCL prints all three columns even in a short block
      for (int p = 0; p < kNumProtocols; ++p) line += fmt::format(" {:>14} |", kProtocolNames[p]);
    lines.push_back(line);
    line = " Max NThreads |";
    for (int ba = 0; ba < 3; ++ba) {
      int a = block * 3 + ba;
      if (a >= t.numAlgorithms) continue;
      for (int p = 0; p < kNumProtocols; ++p) line += fmt::format(" {:>14} |", t.maxThreads[a][p]);
    }
    lines.push_back(line);
    for (int c = 0; c < kNumFunctions; ++c) {
      line = fmt::format("{:>13} |", kFunctionNames[c]);
      for (int ba = 0; ba < 3; ++ba) {
        int a = block * 3 + ba;
        if (a >= t.numAlgorithms) continue;
        for (int p = 0; p < kNumProtocols; ++p)
          line += fmt::format("{:8.1f}/{:6.1f} |", t.latencies[c][a][p], t.bandwidths[c][a][p]);
      }
      lines.push_back(line);
    }
  }
  return lines;
}

}  // namespace commsim::nccl
