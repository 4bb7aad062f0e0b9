#pragma once
// NCCL's tuning model: ncclTopoTuneModel (graph/tuning.cc:230-574 at v2.28.9-1) fills a latency
// (us) and an algorithm bandwidth (GB/s) for every (function, algorithm, protocol);
// ncclTopoGetAlgoTime (:584-601) turns an entry into a time for nBytes; updateCollCostTable and
// topoGetAlgoInfo (enqueue.cc:1785-1912) apply the per-call gates, take the least time (ties go
// to the lower algorithm, then protocol index) and size the channels. Each release's constants
// and rule changes come from versions.h. Pure functions; nothing is printed.
#include <cstddef>
#include <string>
#include <vector>

#include "model/nccl/ids.h"
#include "model/nccl/system.h"
#include "model/nccl/versions.h"

namespace commsim::nccl {

// comm->latencies / comm->bandwidths and the thread settings, exactly what NCCL's TUNING table
// prints. A bandwidth of 0 means disabled (the entry is never picked).
struct TuningTable {
  float latencies[kNumFunctions][kNumAlgorithms][kNumProtocols] = {};   // us
  float bandwidths[kNumFunctions][kNumAlgorithms][kNumProtocols] = {};  // GB/s, algorithm bw
  int maxThreads[kNumAlgorithms][kNumProtocols] = {};
  long threadThresholds[kNumAlgorithms][kNumProtocols] = {};
  int numAlgorithms = kNumAlgorithms;  // 6 before 2.23: the TUNING table has two blocks
  int collChannels = 0;                // comm->nChannels used by the plateau test and channels
};

// ncclTopoTuneModel for this system and release. System::collChannels = 0 is derived with
// comm_channels().
TuningTable tune_model(const System& system, const Version& version);

// comm->nChannels after ncclTopoPostset (graph/connect.cc:452-491): twice min(ring, tree)
// channels, +50% with CollNet, doubled again on SM90+ multi-node rings with bwIntra > 45 and
// fewer than 16 channels. NCCL_MIN/MAX_CTAS and net-device unpack doubling are not modelled.
int comm_channels(const System& system);

// getNetOverhead (graph/tuning.cc:211-219): the proxy thread's cost of one network operation, us:
// NCCL_NET_OVERHEAD when set, 2 on AMD x86 CPUs, else 1.
float net_overhead_us(const System& system);

// ncclTopoGetAlgoTime: us, or -1 for a disabled entry. Applies treeCorrectionFactor, the ring
// AllReduce "plateau" (x1.4, x1.9 before Ampere, multi-node Simple) and numPipeOps.
float algo_time(const TuningTable& table, const System& system, Function function, Algorithm algorithm,
                Protocol protocol, std::size_t nBytes, int numPipeOps);
// algo_time's two terms: the latency (with the plateau and numPipeOps) and nBytes over the
// (tree-corrected) bandwidth, in us; latency_us = -1 for a disabled entry.
struct AlgoTimeParts {
  float latency_us = 0;
  float bandwidth_us = 0;
};
AlgoTimeParts algo_time_parts(const TuningTable& table, const System& system, Function function, Algorithm algorithm,
                              Protocol protocol, std::size_t nBytes, int numPipeOps);

// updateCollCostTable: the per-call 7x3 cost table in us; -1 marks an ignored or disabled
// entry. Adds the per-call gates (NVLS op/type and <= 32 local ranks for AllGather/
// ReduceScatter, CollNet <= 8 local ranks and its op/type matrix, multi-node NVLS only with
// CollNet, no PAT for ReduceScatter with ncclAvg) and the fp8 ring penalty (x1024, nRanks > 8).
struct CostTable {
  float time_us[kNumAlgorithms][kNumProtocols];
};
CostTable cost_table(const TuningTable& table, const System& system, const Call& call);

// topoGetAlgoInfo: the least-time entry and the channels and warps NCCL then uses.
struct Choice {
  Algorithm algorithm = kRing;
  Protocol protocol = kSimple;
  float time_us = 0;
  int nChannels = 0;  // info->nMaxChannels, the upper bound NCCL spreads the call over
  int nWarps = 0;
};
// Throws commsim::Error when every entry is disabled ("no algorithm/protocol available").
Choice choose(const TuningTable& table, const System& system, const Call& call);

// The table in NCCL's NCCL_DEBUG_SUBSYS=TUNING format (graph/tuning.cc:499-539), one string per
// INFO line, without the "host:pid:tid NCCL INFO " prefix.
std::vector<std::string> format_tuning_table(const TuningTable& table);

}  // namespace commsim::nccl
