#pragma once
// What NCCL's tuning model reads about the machine and the communicator: the fields of
// ncclComm and ncclTopoGraph that ncclTopoTuneModel (graph/tuning.cc), ncclTopoGetAlgoTime and
// updateCollCostTable / topoGetAlgoInfo (enqueue.cc) use, and nothing else.
#include <cstddef>
#include <string_view>

#include "model/nccl/ids.h"

namespace commsim::nccl {

struct Version;

// struct ncclTopoGraph's tuning inputs (include/graph.h:101-119), the values NCCL prints as
// "Pattern %d, crossNic %d, nChannels %d, bw %f/%f, type %s/%s, sameChannels %d".
struct Graph {
  int nChannels = 0;
  float bwIntra = 0;  // GB/s per channel inside a node
  float bwInter = 0;  // GB/s per channel across nodes
  int typeIntra = kPathNvl;
  int typeInter = kPathPix;
  float latencyInter = 0;  // us, the NET node's latency attribute (0 unless set in the XML)
  bool sameChannels = true;
  int pattern = kPatternRing;
};

// NCCL_ALGO / NCCL_PROTO, already parsed: algoEnable / protoEnable of ncclTopoTuneModel, per
// function. 1 on, 0 off; LL128's default 2 means "on where the LL128 rule allows".
struct EnableMasks {
  int proto[kNumFunctions][kNumProtocols];
  int algo[kNumFunctions][kNumAlgorithms];
  EnableMasks();  // NCCL's defaults: every algorithm 1, LL 1, LL128 2, Simple 1
};

// Parses NCCL_ALGO and NCCL_PROTO values ("" = unset) the way the given release does:
// 2.24+ parseList (graph/tuning.cc:35-131) with optional "function:" prefixes separated by ';',
// '^' for "all but", case-insensitive names, and an error for an unknown name or prefix; before
// 2.24, one comma list for every function, '^' allowed, unknown names ignored.
// Throws commsim::Error naming the text.
EnableMasks parse_enable_masks(std::string_view algo, std::string_view proto, const Version& version);

struct CollNet {
  bool enabled = false;     // NCCL_COLLNET_ENABLE=1 and a CollNet plugin that initialised
  bool iallgather = false;  // plugin features for AllGather / ReduceScatter (2.20+)
  bool ireducescatter = false;
  int headsNum = 0;            // collNetHeadsNum: NICs (heads) per node
  bool supportsOpType = true;  // collNetSupportMatrix[op][type] for AllReduce/RS/Reduce
};

struct System {
  int minCompCap = 90;  // e.g. 90 for H100; min/max over all GPUs of the communicator
  int maxCompCap = 90;
  int nRanks = 8;
  int nNodes = 1;  // NVLink domains (an MNNVL rack counts as one node, init.cc:1099-1109)
  CpuArch cpuArch = kCpuX86;
  CpuVendor cpuVendor = kVendorIntel;
  // The graph of each algorithm, by algorithm id. As in NCCL (init.cc:854), NVLS_TREE reads the
  // NVLS graph and PAT the tree graph: graph() maps them, their own entries are not read.
  Graph graphs[kNumAlgorithms];
  int maxTreePattern = kPatternBalancedTree;  // the tree graph's pattern
  int nvsCount = 1;                           // NVSwitches in the topology (0 on PCIe and NVLink-mesh nodes)
  bool nvlsSupport = false;                   // comm->nvlsSupport: multicast driver support and an NVLS graph
  int nvlsChannels = 0;                       // comm->nvlsChannels (transport/nvls.cc:148-199)
  int collChannels = 0;                       // comm->nChannels after ncclTopoPostset; 0 = derive (channels.cc)
  CollNet collNet;
  bool netDeviceHost = true;  // false with net-device offload (e.g. GPUDirect-TCPX "unpack")
  int patEnable = 2;          // NCCL_PAT_ENABLE
  int ll128C2c = 1;           // NCCL_LL128_C2C (2.27.7+)
  int cudartVersion = 12080;  // CUDART_VERSION, for the CUDA 11.8 SM90 LL128 exception
  double netOverheadUs = -1;  // NCCL_NET_OVERHEAD in us; < 0 = by CPU (getNetOverhead)
  EnableMasks masks;

  const Graph& graph(int algorithm) const {
    return graphs[algorithm == kNvlsTree ? kNvls : algorithm == kPat ? kTree : algorithm];
  }
  float ppn() const { return static_cast<float>(nRanks) / nNodes; }
  int localRanks() const { return nRanks / nNodes; }
};

// One collective call as enqueue.cc sees it.
struct Call {
  Function function = kAllReduce;
  std::size_t nBytes = 0;  // NCCL's nBytes: AllGather/ReduceScatter count the whole buffer
  int numPipeOps = 1;      // grouped calls priced together (enqueue.cc:388)
  DataType dataType = kFloat32;
  RedOp op = kSum;
};

// ncclNvlsSupported (include/device.h:544-559) for the call's op and type; AllGather has no op.
bool nvls_supports(const Call& call);

}  // namespace commsim::nccl
