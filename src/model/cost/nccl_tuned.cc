// NCCL's own collectives priced by NCCL's ported tuning model (model/nccl/): Algorithm::Nccl is
// NCCL's argmin over every algorithm and protocol, a forced algorithm (nccl-ring, nccl-tree,
// nccl-nvls, ...) the best protocol of its row, as NCCL_ALGO makes NCCL do. SendRecv and AllToAll
// have no tuning model in NCCL (they are grouped ncclSend / ncclRecv): they are priced from how
// NCCL schedules point-to-point operations.
#include <algorithm>
#include <cmath>
#include <string>

#include "model/cost/closed_forms.h"
#include "model/error.h"
#include "model/nccl/from_topology.h"
#include "model/nccl/logged_table.h"
#include "model/nccl/tuning.h"

namespace commsim::closed_forms {
namespace {

nccl::Function nccl_function(Collective c) {
  switch (c) {
    case Collective::AllReduce: return nccl::kAllReduce;
    case Collective::AllGather: return nccl::kAllGather;
    case Collective::ReduceScatter: return nccl::kReduceScatter;
    case Collective::Broadcast: return nccl::kBroadcast;
    default: return nccl::kReduce;
  }
}

// NCCL's algorithm id of a forced commsim algorithm (kNcclForcedAlgorithms is in NCCL's order).
nccl::Algorithm nccl_id(Algorithm a) {
  for (std::size_t i = 0; i < kNcclForcedAlgorithms.size(); ++i)
    if (kNcclForcedAlgorithms[i] == a) return static_cast<nccl::Algorithm>(i);
  throw Error("not a forced NCCL algorithm: " + std::string(to_string(a)));
}

Protocol from_nccl(nccl::Protocol p) {
  return p == nccl::kLL ? Protocol::LL : p == nccl::kLL128 ? Protocol::LL128 : Protocol::Simple;
}
nccl::Protocol to_nccl(Protocol p) {
  return p == Protocol::LL ? nccl::kLL : p == Protocol::LL128 ? nccl::kLL128 : nccl::kSimple;
}

const nccl::Version& version_of(const Topology& t, const CostQuery& q) {
  return q.nccl_version.empty() ? nccl::topology_version(t) : nccl::find_version(q.nccl_version);
}

// Why NCCL's model leaves forced algorithm a out on this system (cost_table's gates,
// enqueue.cc:1785-1830, and the bandwidth 0 of ncclTopoTuneModel).
std::string why_disabled(const nccl::System& s, Collective c, nccl::Algorithm a) {
  const std::string name(nccl::kAlgorithmNames[a]);
  if (a == nccl::kNvls || a == nccl::kNvlsTree) {
    if (!s.nvlsSupport)
      return "NCCL runs " + name +
             " only on NVSwitch nodes with multicast (NVLink SHARP) and compute capability 9.0 or newer";
    if (a == nccl::kNvls && s.nNodes > 1 && !s.collNet.enabled)
      return "NCCL runs NVLS across nodes only with CollNet (SHARP); NVLSTree is its multi-node form";
    if (a == nccl::kNvlsTree && s.nNodes == 1) return "NVLSTree needs more than one node (NVLS is its one-node form)";
    if (c != Collective::AllReduce) return "NCCL runs " + name + " for this collective only up to 32 GPUs per node";
  }
  if (a == nccl::kCollNetDirect || a == nccl::kCollNetChain) {
    if (!s.collNet.enabled) return "CollNet needs in-network reduction (SHARP): the topology's nccl.collnet is off";
    if (s.localRanks() > 8) return "NCCL runs CollNet only with up to 8 GPUs per node";
  }
  if (a == nccl::kPat && s.nNodes != s.nRanks) return "NCCL runs PAT only with one GPU per node";
  return "NCCL's tuning model disables " + name + " on this machine (bandwidth 0 in its TUNING table)";
}

// The NCCL collective (not SendRecv / AllToAll) of q: the entry NCCL picks, or the best protocol
// of the forced algorithm (the requested protocol when one is).
Cost tuned_collective(const Topology& t, const CostQuery& q, Seconds call_s) {
  const nccl::Version& version = version_of(t, q);
  const nccl::System system = nccl::nccl_system(t, q.nodes, q.ranks_per_node, version);
  nccl::TuningTable table = nccl::tune_model(system, version);
  // NCCL's own table from a log of this machine (nccl.tuning_table) replaces the model's entries.
  nccl::apply_tuning_table(table, t.nccl.machine.tuning_table, q.nodes, q.nodes * q.ranks_per_node,
                           t.nccl.machine.bandwidth_scale);
  nccl::Call call;
  call.function = nccl_function(q.collective);
  call.nBytes = static_cast<std::size_t>(q.bytes);
  const nccl::CostTable costs = nccl::cost_table(table, system, call);
  const bool forced = q.algorithm != Algorithm::Nccl;
  const int only = forced ? nccl_id(q.algorithm) : -1;
  int best_a = -1, best_p = -1;
  float best_us = 0;
  for (int a = 0; a < nccl::kNumAlgorithms; ++a) {
    if (forced && a != only) continue;
    for (int p = 0; p < nccl::kNumProtocols; ++p) {
      if (q.protocol != Protocol::None && p != to_nccl(q.protocol)) continue;
      const float us = costs.time_us[a][p];
      // Ties go to the lower algorithm, then protocol index, as in topoGetAlgoInfo.
      if (us >= 0 && (best_a < 0 || us < best_us)) best_a = a, best_p = p, best_us = us;
    }
  }
  if (best_a < 0) {
    std::string what = forced ? why_disabled(system, q.collective, static_cast<nccl::Algorithm>(only))
                              : "NCCL's tuning model has no algorithm for it here";
    if (q.protocol != Protocol::None && forced && costs.time_us[only][nccl::kSimple] >= 0)
      what = "NCCL's tuning model disables this protocol for it here";
    throw Error("cannot price " + std::string(to_string(q.collective)) + " " + std::string(to_string(q.algorithm)) +
                " on topology '" + t.name + "' with " + std::to_string(q.nodes) + " node(s) x " +
                std::to_string(q.ranks_per_node) + " rank(s) (NCCL " + version.name() + "): " + what);
  }
  const auto a = static_cast<nccl::Algorithm>(best_a);
  const auto p = static_cast<nccl::Protocol>(best_p);
  const nccl::AlgoTimeParts parts = nccl::algo_time_parts(table, system, call.function, a, p, call.nBytes, 1);
  Parts x;
  x.lat = parts.latency_us * 1e-6;
  x.bw = parts.bandwidth_us * 1e-6;
  return to_cost(x, kNcclForcedAlgorithms[best_a], from_nccl(p), call_s);
}

// NCCL_P2P_LL_THRESHOLD (enqueue.cc:779): a peer's transfer of up to nChannelsPerPeer x 16 KiB
// goes with LL (enqueue.cc:821), larger ones with Simple.
constexpr double kP2pLLThresholdBytes = 16384;
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (include/device.h:364): p2p operations one channel runs at once.
constexpr int kP2pPerBatch = 8;
// Channels of one network peer (graph/paths.cc:836-840, ncclTopoGetNchannels: 2 per NIC).
constexpr int kP2pChannelsPerNetPeer = 2;

int pow2_up(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// SendRecv (each rank sends n bytes to the next, nccl-tests' sendrecv) and AllToAll (n / p bytes
// to every rank) as NCCL runs them, one group of ncclSend / ncclRecv:
//  - every peer is one round of comm->p2pSchedule (init.cc:790-830); a kernel runs up to
//    maxConcurrent = p2pnChannels / nChannelsPerPeer x NCCL_MAX_DEV_WORK_P2P_PER_BATCH peers at once
//    (enqueue.cc:962-967), p2pnChannels = pow2Up(comm->nChannels) (graph/paths.cc:862-883), and a
//    batch only holds rounds of one epoch of 8 (enqueue.cc:131-138): the peers go in waves of
//    maxConcurrent, each wave paying one hop (the network's when the peers are on other nodes);
//  - the proxy thread posts every network send and receive in turn (proxy.cc), each at NCCL's
//    per-operation network overhead (getNetOverhead, graph/tuning.cc:211-219): 2 (p - G) of them;
//  - plus the ring's base latency of the protocol, as NCCL's model starts every call with it;
//  - the data moves as the direct algorithm's (direct.cc): the peers inside the node over NVLink,
//    the others over the rank's share of the node's NICs, at the same time.
// So the latency grows with the rank count, as measured (Polaris, 2,160 ranks: 10-50 ms).
Cost point_to_point(const Topology& t, const Env& e, const CostQuery& q, Seconds call_s) {
  const nccl::Version& version = version_of(t, q);
  const nccl::System system = nccl::nccl_system(t, q.nodes, q.ranks_per_node, version);
  const double n = static_cast<double>(q.bytes);
  const bool alltoall = q.collective == Collective::AllToAll;
  const double peer_bytes = alltoall ? n / static_cast<double>(e.p) : n;
  const double net_peers = alltoall ? static_cast<double>(e.p - e.G) : (e.N > 1 ? 1.0 : 0.0);
  const double peers = alltoall ? static_cast<double>(e.p - 1) : 1.0;
  const int p2p_channels = pow2_up(std::max(1, nccl::comm_channels(system)));
  const int per_peer = std::min(p2p_channels, e.N > 1 ? kP2pChannelsPerNetPeer : p2p_channels);
  const double concurrent = static_cast<double>(p2p_channels / per_peer * kP2pPerBatch);
  const nccl::Protocol proto = q.protocol != Protocol::None                    ? to_nccl(q.protocol)
                               : peer_bytes <= per_peer * kP2pLLThresholdBytes ? nccl::kLL
                                                                               : nccl::kSimple;
  const nccl::TunerConstants& k = version.constants;
  const double hop_us = k.hwLatencies[e.N > 1 ? nccl::kHwNet : nccl::kHwNvlink][nccl::kRing][proto];
  const double lat_us = k.baseLatencies[nccl::kRing][proto] + std::ceil(peers / concurrent) * hop_us +
                        2 * net_peers * nccl::net_overhead_us(system);
  Parts x;
  x.lat = lat_us * 1e-6;
  x.bw = (alltoall ? direct(e, peer_bytes, false) : direct_sendrecv(e, n)).bw / t.nccl.machine.bandwidth_scale;
  return to_cost(x, q.algorithm == Algorithm::Nccl ? Algorithm::NcclRing : q.algorithm, from_nccl(proto), call_s);
}

}  // namespace

bool uses_ported_nccl_model(const Topology& t, const CostQuery& q) {
  if (q.algorithm == Algorithm::NcclRing || q.algorithm == Algorithm::NcclTree) {
    // Constants fitted by `commsim calibrate` (nccl.bus_bandwidth) keep nccl-ring and nccl-tree on
    // the calibrated two-algorithm model they were fitted to.
    const int a = q.algorithm == Algorithm::NcclTree ? kNcclTableTree : kNcclTableRing;
    for (int p = 0; p < 3; ++p)
      if (t.nccl.bus_bw_Bps[a][p] > 0) return false;
  }
  return is_nccl_algorithm(q.algorithm);
}

Cost nccl_tuned_closed_form(const Topology& t, const Env& e, const CostQuery& q, Seconds call_s) {
  // A call of no elements (nccl-tests prints them where a size is below one element per rank)
  // launches nothing: NCCL returns from the enqueue at once (enqueue.cc, taskAppend: count 0).
  if (q.bytes == 0)
    return to_cost(Parts{}, q.algorithm == Algorithm::Nccl ? Algorithm::NcclRing : q.algorithm,
                   q.protocol == Protocol::None ? Protocol::Simple : q.protocol, 0);
  Cost c = q.collective == Collective::SendRecv || q.collective == Collective::AllToAll
               ? point_to_point(t, e, q, call_s)
               : tuned_collective(t, q, call_s);
  // A fitted offset (nccl.latency_offset) moves every call's latency, never below 0.
  const Seconds offset_s = std::max(t.nccl.machine.latency_offset_s, -c.latency_s);
  c.latency_s += offset_s;
  c.time_s += offset_s;
  // The host launches the next call while the GPUs run this one (nccl-tests times calls back to
  // back): a call takes the longer of NCCL's time and the host's (from_topology.h), the difference
  // counted as latency.
  const Seconds host_s = nccl::host_call_us(t) * 1e-6;
  if (host_s > c.time_s) {
    c.latency_s += host_s - c.time_s;
    c.time_s = host_s;
  }
  return c;
}

}  // namespace commsim::closed_forms
