// NCCL's two-algorithm model of its ring and tree (closed_forms.h: nccl_closed_form), as NCCL's
// src/graph/tuning.cc prices them, with the topology's nccl: constants: the protocols of our own
// ring and tree, and nccl-ring / nccl-tree once `commsim calibrate` has fitted those constants
// (nccl.bus_bandwidth). NCCL's own collectives otherwise follow the ported model (nccl_tuned.cc).
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {
namespace {

// NCCL's model (src/graph/tuning.cc):
// time = latency + n / algbw. Ring: latency = base + (steps - interSteps) intraHop + interSteps
// interHop with steps = 2(p-1), interSteps = 2(nodes-1) for allreduce; p-1, nodes-1 for allgather,
// reducescatter, broadcast and reduce (the hops of the chain). busbw = the ring's bottleneck
// bandwidth (intra, or min(intra, node network) across nodes) times bw_fraction[protocol], where
// a fitted nccl.bus_bandwidth of the (algorithm, protocol) stands for intra x bw_fraction;
// algbw = busbw * p / steps' with steps' = 2(p-1) for allreduce, p-1 for allgather/reducescatter
// and p for broadcast/reduce (NCCL counts nRanks steps there, so algbw = busbw).
// Tree (allreduce only): latency = base + 2((p/nodes - 1) intraHop + log2i(nodes) interHop),
// algbw = busbw / 2. sendrecv and alltoall run as NCCL point-to-point: latency = base(ring) + one
// hop (network when nodes > 1), bandwidth of the direct algorithm (direct.cc) divided by bw_fraction.
constexpr int kRing = kNcclTableRing, kTree = kNcclTableTree;

int proto_index(Protocol p) {
  return p == Protocol::LL ? 0 : p == Protocol::LL128 ? 1 : 2;
}

// NCCL's correction of its tree allreduce bandwidth by size, per protocol (LL, LL128, Simple), for
// the powers of two from 64 B to 256 MiB (src/graph/tuning.cc of NCCL 2.28, treeCorrectionFactor:
// "Trees are not perfectly sticking to the model for medium sizes"); 1 outside that range.
constexpr double kNcclTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

double nccl_tree_correction(int proto, Bytes bytes) {
  const Bytes units = bytes >> 6;
  if (units == 0) return 1.0;
  const int lg = floor_lg(static_cast<int>(std::min<Bytes>(units, Bytes{1} << 30)));
  return lg < 23 ? kNcclTreeCorrection[proto][lg] : 1.0;
}

Parts nccl_parts(const Topology& t, const Env& e, Collective c, int algo, Protocol proto, Bytes bytes) {
  const NcclConstants& k = t.nccl;
  const int pr = proto_index(proto);
  const double n = static_cast<double>(bytes), p = static_cast<double>(e.p), N = static_cast<double>(e.N);
  const double frac = k.bw_fraction[pr];
  const int bw_algo = algo == kTree && c == Collective::AllReduce ? kTree : kRing;
  const bool fitted = k.bus_bw_Bps[bw_algo][pr] > 0;
  const double intra_busbw = fitted ? k.bus_bw_Bps[bw_algo][pr] : e.intra_bw * frac;
  // NCCL's tree allreduce gets 0.92 of the channels' rate (tuning.cc); a fitted value holds it.
  const double tree_share = bw_algo == kTree && !fitted ? 0.92 : 1.0;
  const double busbw = (e.N == 1 ? intra_busbw : std::min(intra_busbw, e.node_bw * frac)) * tree_share;
  if (c == Collective::SendRecv || c == Collective::AllToAll) {
    Parts d = c == Collective::SendRecv ? direct_sendrecv(e, n) : direct(e, n / p, false);
    double hop = e.N > 1 ? k.inter_hop_latency_s[kRing][pr] : k.intra_hop_latency_s[kRing][pr];
    return {k.base_latency_s[kRing][pr] + hop, d.bw / frac, 0};
  }
  if (algo == kTree) {
    double lat = k.base_latency_s[kTree][pr] + 2 * ((static_cast<double>(e.G) - 1) * k.intra_hop_latency_s[kTree][pr] +
                                                    floor_lg(e.N) * k.inter_hop_latency_s[kTree][pr]);
    return {lat, n / (busbw / 2 * nccl_tree_correction(pr, bytes)), 0};
  }
  double steps, inter_steps, ratio;
  if (c == Collective::AllReduce) {
    steps = 2 * (p - 1);
    inter_steps = 2 * (N - 1);
    ratio = p / (2 * (p - 1));
  } else if (c == Collective::AllGather || c == Collective::ReduceScatter) {
    steps = p - 1;
    inter_steps = N - 1;
    ratio = p / (p - 1);
  } else {
    steps = p - 1;
    inter_steps = N - 1;
    ratio = 1;
  }
  double lat = k.base_latency_s[kRing][pr] + (steps - inter_steps) * k.intra_hop_latency_s[kRing][pr] +
               inter_steps * k.inter_hop_latency_s[kRing][pr];
  return {lat, n / (busbw * ratio), 0};
}

}  // namespace

// The requested protocol, or the fastest of LL / LL128 / Simple.
Cost nccl_closed_form(const Topology& t, const Env& e, const CostQuery& q, Seconds call_s) {
  const bool tree = q.algorithm == Algorithm::Tree || q.algorithm == Algorithm::NcclTree;
  const int algo = tree && q.collective == Collective::AllReduce ? kTree : kRing;
  Parts best;
  double best_t = INFINITY;
  Protocol best_p = q.protocol;
  for (Protocol pr : kNcclProtocols) {
    if (q.protocol != Protocol::None && pr != q.protocol) continue;
    Parts x = nccl_parts(t, e, q.collective, algo, pr, q.bytes);
    if (x.total() < best_t) {
      best_t = x.total();
      best = x;
      best_p = pr;
    }
  }
  return to_cost(best, q.algorithm, best_p, call_s);
}

}  // namespace commsim::closed_forms
