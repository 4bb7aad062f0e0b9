#pragma once
// NCCL's own identifiers, in NCCL's order, so that tables copied from NCCL's source
// (src/graph/tuning.cc, include/nccl_common.h, graph/topo.h at tag v2.28.9-1) index the same way
// here. Names are NCCL's strings: ncclAlgoStr / ncclProtoStr / ncclFuncStr (init.cc:49-51) for
// the TUNING table, ncclAlgoToString / ncclProtoToString (collectives.cc:58-69) for per-call lines.
#include <array>
#include <string_view>

namespace commsim::nccl {

// NCCL_ALGO_* (include/plugin/nccl_tuner.h:25-33). PAT exists from 2.23; before that NCCL had 6.
enum Algorithm : int {
  kTree = 0,
  kRing = 1,
  kCollNetDirect = 2,
  kCollNetChain = 3,
  kNvls = 4,
  kNvlsTree = 5,
  kPat = 6,
};
inline constexpr int kNumAlgorithms = 7;

// NCCL_PROTO_* (include/plugin/nccl_tuner.h:35-39).
enum Protocol : int { kLL = 0, kLL128 = 1, kSimple = 2 };
inline constexpr int kNumProtocols = 3;

// ncclFunc_t, the five collectives the tuning model prices (include/nccl_common.h:58-70).
enum Function : int {
  kBroadcast = 0,
  kReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kAllReduce = 4,
};
inline constexpr int kNumFunctions = 5;

// NCCL_HW_* : the first index of hwLatencies.
enum Hardware : int { kHwNvlink = 0, kHwPci = 1, kHwNet = 2 };
inline constexpr int kNumHardware = 3;

// NCCL_*_COMPCAP_IDX: the row of the per-architecture tables.
enum CompCapIndex : int { kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3 };
inline constexpr int kNumCompCaps = 4;

// PATH_* (graph/topo.h:62-98 at v2.28.9): how far apart two devices are, closest first. P2C
// arrived in 2.27; the older values are the same names in the same order.
enum PathType : int {
  kPathLoc = 0,
  kPathNvl = 1,
  kPathNvb = 2,
  kPathC2c = 3,
  kPathPix = 4,
  kPathPxb = 5,
  kPathP2c = 6,
  kPathPxn = 7,
  kPathPhb = 8,
  kPathSys = 9,
  kPathNet = 10,
  kPathDis = 11,
};

// NCCL_TOPO_PATTERN_* (include/graph.h).
enum Pattern : int {
  kPatternBalancedTree = 1,
  kPatternSplitTree = 2,
  kPatternTree = 3,
  kPatternRing = 4,
  kPatternNvls = 5,
  kPatternCollNetDirect = 6,
};

// NCCL_TOPO_CPU_ARCH_* and NCCL_TOPO_CPU_VENDOR_* (include/graph.h).
enum CpuArch : int { kCpuX86 = 1, kCpuPower = 2, kCpuArm = 3, kCpuArchMixed = 4 };
enum CpuVendor : int { kVendorIntel = 1, kVendorAmd = 2, kVendorZhaoxin = 3, kVendorMixed = 4 };

// ncclDataType_t and ncclRedOp_t (nccl.h), for the NVLS and fp8 gates of updateCollCostTable.
enum DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

// ncclAlgoStr, ncclProtoStr, ncclFuncStr (init.cc:49-51): the TUNING table and NCCL_ALGO/PROTO.
inline constexpr std::array<std::string_view, kNumAlgorithms> kAlgorithmNames = {
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
inline constexpr std::array<std::string_view, kNumProtocols> kProtocolNames = {"LL", "LL128", "Simple"};
inline constexpr std::array<std::string_view, kNumFunctions> kFunctionNames = {"Broadcast", "Reduce", "AllGather",
                                                                               "ReduceScatter", "AllReduce"};
// ncclAlgoToString / ncclProtoToString (collectives.cc:58-69): the per-call "Algo X proto Y" line.
inline constexpr std::array<std::string_view, kNumAlgorithms> kAlgorithmLogNames = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
inline constexpr std::array<std::string_view, kNumProtocols> kProtocolLogNames = {"LL", "LL128", "SIMPLE"};

// Compute capability (e.g. 90 for sm_90) to the table row (graph/tuning.cc:249).
constexpr CompCapIndex comp_cap_index(int comp_cap) {
  return comp_cap >= 100 ? kBlackwell : comp_cap >= 90 ? kHopper : comp_cap >= 80 ? kAmpere : kVolta;
}

}  // namespace commsim::nccl
