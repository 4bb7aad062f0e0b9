// Closed-form alpha-beta-gamma costs (see cost.h). Notation: p = nodes * G ranks (G = ranks per
// node, placed in blocks: ranks 0..G-1 on node 0, ...), n = bytes in nccl-tests' meaning,
// a/b = latency (s) and inverse bandwidth (s/B) of the tier a message crosses, g = 1 / reduce_bw.
// lg = log2, m = floor(lg p), p' = 2^m, r = p - p' (ranks left over when p is not a power of two),
// K = ceil(lg p).
//
// On one tier (nodes == 1, or G == 1) every formula below is the published one (Thakur,
// Rabenseifner & Gropp 2005) with that tier's a and b. Across tiers each step is priced at the tier
// its messages cross: a step where some messages cross the network pays the network latency, a
// step where only some do costs max(intra-node step, network step).
//
// Network bandwidth of one message: every hand-written algorithm sends a message as one flow, as
// its schedule does (model/price.h), so a message crossing the network gets
//   bw_flow(f) = min(nic_bw, node_bw / f)     f = flows leaving the node at once
// (a NIC serves one flow at nic_bw; the node's NICs, node_bw = nics * nic_bw / oversubscription,
// are shared). A hand-written ring of one channel crosses each node boundary once and so gets one
// NIC; hierarchical runs G rings across the nodes at once (one per local index) and so uses G NICs.
//
// Channels (CostQuery::channels, the schedules' ScheduleRequest::channels): ring, tree and
// hierarchical allreduce/allgather split the data over C channels, each its own ring (or double
// tree, or set of rings) whose traffic leaves every node from a different GPU, all in the same
// steps. A step of C channels moves C messages of 1/C of a
// channel-less step's bytes: across nodes C times the flows, each at bw_flow(C f) (so C <= nics
// channels use C NICs at once, more share them); inside a node each GPU carries every channel but
// those it sends across the network. C = 1 is the formulas above unchanged. NCCL's model
// (NcclRing / NcclTree / Nccl) keeps NCCL's own assumption: a ring's traffic is spread over all
// NICs of a node, min(intra_bw, node_bw).
//
// Local copies (the "local copies" section below): the copies each schedule makes on its slowest
// rank's critical path, at device.memory_bandwidth, in Cost::copy_s.
//
// Optional terms (configs/topologies/README.md), off unless the topology sets them:
//  - intra_node.node_bandwidth: the f ranks of a node moving m bytes each inside it at once get
//    min(intra_bw, node_bandwidth / f) each; f is known per step of every algorithm;
//  - eager_limit / rendezvous_latency (per tier): a message above the limit pays the rendezvous
//    latency instead of the tier's latency; inline_limit / inline_latency: a message up to that
//    limit pays the inline latency;
//  - message_overhead (per tier): a round that posts q messages at once (direct; the two of a
//    folded allgather's fold-out) pays (q - 1) * message_overhead on top (rendezvous_overhead for messages above the eager limit,
//    inline_overhead for messages up to the inline limit), as overhead_receive_share splits it
//    between the sending and the receiving side; the double tree's steps wait for the average
//    overheads of its schedule's (Stage::sends_before);
//  - one_way_factor (per tier): one-way steps pay latency * one_way_factor: those of binomial
//    trees (broadcast, reduce, scatter, gather, and the hierarchical ones built of them), the folds
//    of recursive doubling and halving, a pipelined chain's single chunk (with several chunks its
//    first and last steps), and the double binary tree's steps that meet a rank sending nothing
//    back (Pipe::OneWay);
//  - exchange_factor (per tier): steps whose partners send to each other pay latency *
//    exchange_factor: those of recursive doubling and halving (Rabenseifner too), direct, pairwise
//    on a power of two, a shift by p/2 (Bruck's last step), and any ring of two ranks (Way), and
//    the double tree's allreduce on two ranks (Pipe::OneWay::None). The other pipelines (tree,
//    chain) are priced without it.
#include "model/cost/cost.h"

#include <algorithm>
#include <cstdint>
#include <bit>
#include <climits>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/cost/double_tree.h"
#include "model/error.h"
#include "model/schedule.h"

namespace commsim {
namespace {

// A cost split into its alpha, beta and gamma parts, and the local copies on the critical path.
struct Parts {
  double lat = 0, bw = 0, red = 0, copy = 0;
  double total() const { return lat + bw + red + copy; }
  Parts& operator+=(const Parts& o) {
    lat += o.lat;
    bw += o.bw;
    red += o.red;
    copy += o.copy;
    return *this;
  }
};
inline Parts operator*(double k, const Parts& x) {
  return {k * x.lat, k * x.bw, k * x.red, k * x.copy};
}
inline Parts operator+(Parts x, const Parts& y) {
  return x += y;
}
// The slower of two things that happen at the same time.
inline Parts slower(const Parts& x, const Parts& y) {
  return y.total() > x.total() ? y : x;
}

inline int floor_lg(long long p) {
  return static_cast<int>(std::bit_width(static_cast<unsigned long long>(p))) - 1;
}
inline int ceil_lg(long long p) {
  return p <= 1 ? 0 : floor_lg(p - 1) + 1;
}

// How the ranks of a step talk, for the latency factors of MessageCosts:
//   Shift     each rank sends to one rank and receives from another (rings, Bruck);
//   OneWay    the receiver sends nothing and the sender receives nothing (binomial trees, folds);
//   Exchange  the receiver sends back to the sender in the same step (recursive doubling and
//             halving, direct, any pattern on two ranks).
enum class Way : std::uint8_t { Shift, OneWay, Exchange };

// Everything a closed form needs, computed once per call.
struct Env {
  long long N = 1, G = 1, p = 1;
  double a_i = 0, b_i = 0;                       // intra-node tier: s, s/B
  double a_n = 0;                                // network latency, s
  double intra_bw = 0, nic_bw = 0, node_bw = 0;  // B/s
  double g = 0;                                  // s per byte reduced
  double c = 0;                                  // s per byte copied locally (memory bandwidth)
  const Topology* topo = nullptr;                // for local_op_scale
  double node_intra_bw = 0;                      // intra_node.node_bandwidth, 0 = unlimited
  double node_intra_b = 0;                       // 1 / node_intra_bw (0 when unlimited)
  double eager_i = INFINITY, eager_n = INFINITY;  // eager limits (B)
  double C = 1;  // channels (ring and tree; 1 for the others)

  // Precomputed for the common flow counts (only when nodes > 1).
  double b_flow_1 = 0, b_flow_G = 0;

  double b_flow(double f) const { return 1.0 / std::min(nic_bw, node_bw / f); }
  // Intra-node s/B when f ranks of the node move data inside it at once.
  double b_in(double f) const { return node_intra_bw > 0 ? std::max(b_i, f * node_intra_b) : b_i; }
  // Latency of one message of m bytes on each tier, by its pattern (Way).
  double lat_i(double m, Way w = Way::Shift) const { return lat(topo->intra.msg, a_i, m, w); }
  double lat_n(double m, Way w = Way::Shift) const { return lat(topo->network.msg, a_n, m, w); }
  static double lat(const MessageCosts& mc, double a, double m, Way w) {
    return mc.latency_s(a, m) * mc.latency_factor(w == Way::OneWay, w == Way::Exchange);
  }
  // Time to reduce a batch of m bytes (the reductions of one round): m g, scaled by
  // Topology::local_op_scale.
  double red(double m) const { return m > 0 ? m * g / topo->local_op_scale_at(m) : 0.0; }
  // Time to combine m bytes on arrival from one peer: the host executor combines each piece
  // (Topology::piece) as it arrives, so the factor is the piece's.
  double comb(double m) const {
    const double piece = static_cast<double>(topo->piece());
    return m > 0 ? m * g / topo->local_op_scale_at(piece > 0 ? std::min(m, piece) : m) : 0.0;
  }
  // Time of one local copy of m bytes: m c, scaled by Topology::local_op_scale as well.
  double cp(double m) const { return m > 0 && c > 0 ? m * c / topo->local_op_scale_at(m) : 0.0; }
  // Intra-node bytes moved at the rate of a message of m bytes (Topology::message_scale), of data
  // its sender has just written when `written` (Topology::written_scale).
  double moved_i(double m, bool written = false) const {
    return m / (written ? topo->message_scale_at(m) * topo->written_scale_at(m) : topo->message_scale_at(m));
  }
  // The factor of Topology::fan_out_scale on a message of m bytes that its sender posts with
  // others to a receiver that takes in only it.
  double fan(double m) const { return topo->fan_out_scale_at(m); }
  // Network bytes moved at the rate of a message of m bytes (Topology::network_message_scale).
  double moved_n(double m) const { return m / topo->network_message_scale_at(m); }
  // Posting overhead of one more message of m bytes on each tier.
  double ovh_i(double m) const { return topo->intra.msg.overhead_s(m); }
  double ovh_n(double m) const { return topo->network.msg.overhead_s(m); }
};

// `bytes` of collective c set the working set that scales the memory-bound bandwidths
// (Topology::working_set_scale); without a curve they do not matter.
Env make_env(const Topology& t, Collective c, int nodes, int ranks_per_node, Bytes bytes) {
  const double ws = working_set_bytes(c, bytes, nodes * ranks_per_node);
  const double f = t.scale_at(ws);
  Env e;
  e.N = nodes;
  e.G = ranks_per_node;
  e.p = e.N * e.G;
  e.a_i = t.intra.latency_s;
  e.b_i = 1.0 / (t.intra.bw_Bps * f);
  e.a_n = t.network.latency_s;
  e.intra_bw = t.intra.bw_Bps * f;
  e.nic_bw = t.network.nic_bw_Bps;
  e.node_bw = t.network.present() ? t.network.node_bw_Bps() : 0.0;
  e.g = 1.0 / (t.reduce_bw_Bps * f);
  e.c = t.memory_bw_Bps > 0 ? 1.0 / (t.memory_bw_Bps * f) : 0.0;
  e.topo = &t;
  if (t.intra.node_bw_Bps > 0) e.node_intra_bw = t.intra.node_bw_Bps * t.node_scale_at(ws, static_cast<double>(e.G));
  if (e.node_intra_bw > 0) e.node_intra_b = 1.0 / e.node_intra_bw;
  if (t.intra.msg.eager_limit_bytes > 0) e.eager_i = static_cast<double>(t.intra.msg.eager_limit_bytes);
  if (t.network.msg.eager_limit_bytes > 0) e.eager_n = static_cast<double>(t.network.msg.eager_limit_bytes);
  if (e.N > 1) {
    const double G = static_cast<double>(e.G);
    e.b_flow_1 = e.b_flow(1);
    e.b_flow_G = e.b_flow(G);
  }
  return e;
}

// A step inside a node: m bytes per rank, f ranks of the node moving data at once; `written`: the
// messages carry data their senders wrote earlier in the collective (forwarded, combined or
// copied; Topology::written_scale). Where some senders of a step forward and others send
// untouched data, the step counts as written: the slowest message ends the step.
Parts intra(const Env& e, double m, double f, Way w = Way::Shift, bool written = false) {
  return {e.lat_i(m, w), e.moved_i(m, written) * e.b_in(f), 0};
}
// All ranks of the node active (G of them; p on one node).
Parts intra(const Env& e, double m, Way w = Way::Shift, bool written = false) {
  return intra(e, m, static_cast<double>(e.G), w, written);
}
Parts net(const Env& e, double m, double b, Way w = Way::Shift) {
  return {e.lat_n(m, w), e.moved_n(m) * b, 0};
}
// A ring of q ranks: each sends to its successor; on two ranks that is an exchange.
Way ring_way(long long q) {
  return q == 2 ? Way::Exchange : Way::Shift;
}

// One step of a recursive-doubling-like pattern: rank r exchanges with r XOR d (binomial trees
// too: a sender r is a multiple of 2d and sends to r + d = r XOR d, one-way). With block
// placement, every message stays inside a node when 2d divides G, every message crosses when
// d >= G, otherwise some do. f_all / f_some: flows leaving a node when all / some messages cross.
// f_one_node: the ranks that send at once when all are on one node (the node bandwidth's share).
Parts xor_step(const Env& e, long long d, double m, double m_reduced, double f_all, double f_some, Way w,
               bool written, double f_one_node, bool on_arrival = true) {
  Parts s;
  if (e.N == 1)
    s = intra(e, m, f_one_node, w, written);
  else if (d < e.G && e.G % (2 * d) == 0)
    s = intra(e, m, static_cast<double>(e.G), w, written);
  else if (d >= e.G)
    s = net(e, m, f_all == 1 ? e.b_flow_1 : f_all == static_cast<double>(e.G) ? e.b_flow_G : e.b_flow(f_all), w);
  else
    s = slower(intra(e, m, static_cast<double>(e.G), w, written),
               net(e, m, f_some == 1 ? e.b_flow_1 : e.b_flow(f_some), w));
  s.red = on_arrival ? e.comb(m_reduced) : e.red(m_reduced);
  return s;
}
// p' = 2^floor(lg p): the ranks of a power-of-two algorithm's core steps; p - p' the ranks its
// fold leaves out.
double core_ranks(const Env& e) {
  return static_cast<double>(std::bit_floor(static_cast<unsigned long long>(e.p)));
}
// Every rank of the power-of-two core active (recursive doubling/halving): all G cross, or at most
// 2d per node (d on each side of a node boundary); on one node the p' core ranks send at once.
// `one_node_senders`: on one node, the node's bytes of the step in messages of m bytes (0: the p'
// core ranks'). After a fold the core's messages differ in size (m is the largest): the node
// moves fewer bytes than p' messages of m.
Parts xor_all(const Env& e, long long d, double m, double m_reduced, bool written, double one_node_senders = 0,
              bool on_arrival = true) {
  return xor_step(e, d, m, m_reduced, static_cast<double>(e.G), static_cast<double>(std::min(e.G, 2 * d)),
                  Way::Exchange, written, one_node_senders > 0 ? one_node_senders : core_ranks(e), on_arrival);
}
// The core step of a folded recursive doubling or halving over groups of g members: a member sends
// the blocks of g members, min(g, r) of which hold two (a folded-in rank's too), so the largest
// message carries g + min(g, r) blocks, and the p' members together g p' + g r = g p blocks. In
// messages of the largest size: g p / (g + min(g, r)).
double folded_core_senders(const Env& e, long long g, long long r) {
  return static_cast<double>(g * e.p) / static_cast<double>(g + std::min(g, r));
}
// The fold of a power-of-two algorithm on p' = 2^floor(lg p) ranks (MPICH's): the r extra ranks
// send to a partner at distance 1, or get the result back from it. One-way, priced as a
// distance-1 step of every rank; on one node r ranks send at once.
Parts xor_fold(const Env& e, double m, double m_reduced, bool written) {
  return xor_step(e, 1, m, m_reduced, static_cast<double>(e.G), static_cast<double>(std::min(e.G, 2LL)),
                  Way::OneWay, written, static_cast<double>(e.p) - core_ranks(e));
}
// Binomial tree step: senders are 2d apart, so at most one per node crosses, and about
// G / (2d) of a node's ranks send inside it. Its messages are one-way. `ranks`: the ranks the tree
// spans on one node (0: all p; the gather among a fold's core: p').
Parts xor_tree(const Env& e, long long d, double m, double m_reduced, bool written, long long ranks = 0) {
  if (e.node_intra_bw > 0 && (e.N == 1 || (d < e.G && e.G % (2 * d) == 0))) {
    const long long span = e.N == 1 ? (ranks > 0 ? ranks : e.p) : e.G;
    Parts s = intra(e, m, static_cast<double>(std::max(1LL, (span - d + 2 * d - 1) / (2 * d))), Way::OneWay, written);
    s.red = e.comb(m_reduced);
    return s;
  }
  return xor_step(e, d, m, m_reduced, 1, 1, Way::OneWay, written, static_cast<double>(e.G));
}

// One step of a shift pattern: every rank sends to r + d (mod p). The ring distance is
// min(d, p - d); when it is at least G every message crosses (G flows per node), otherwise that
// many ranks per node cross and the rest stay inside. At d = p/2 the partners exchange.
Parts shift_step(const Env& e, long long d, double m, double m_reduced, bool written) {
  Parts s;
  long long dist = std::min(d, e.p - d);
  const Way w = 2 * d == e.p ? Way::Exchange : Way::Shift;
  if (e.N == 1)
    s = intra(e, m, w, written);
  else if (dist >= e.G)
    s = net(e, m, e.b_flow_G, w);
  else
    s = slower(intra(e, m, w, written), net(e, m, e.b_flow(static_cast<double>(dist)), w));
  s.red = e.comb(m_reduced);
  return s;
}
// Pairwise exchange, steps d = 1..p-1, with the schedule's partners: rank ^ d when p is a power of
// two (with block placement and G a power of two, steps d < G stay inside the node and the other
// p - G all cross, G flows per node), rank + d otherwise: the sum of shift_step(d), without a loop
// over p: the distances 1..G-1 occur twice each (d and p - d), the other p - 1 - 2(G-1) steps all
// cross.
// Every step is an exchange with the XOR partners; with r + d, only d = p/2 (p even) is.
Parts shift_all_distances(const Env& e, double m, double m_reduced) {
  Parts t;
  const bool pow2 = (e.p & (e.p - 1)) == 0;
  const double half = !pow2 && e.p % 2 == 0 ? 1.0 : 0.0;  // the exchange at d = p/2 of r + d
  if (e.N == 1) {
    const Way w = pow2 ? Way::Exchange : Way::Shift;
    t = (static_cast<double>(e.p - 1) - half) * intra(e, m, w) + half * intra(e, m, Way::Exchange);
  } else if (pow2) {
    t = static_cast<double>(e.G - 1) * intra(e, m, Way::Exchange) +
        static_cast<double>(e.p - e.G) * net(e, m, e.b_flow_G, Way::Exchange);
  } else {
    // d = p/2 is at ring distance p/2 >= G: among the steps that all cross.
    t = (static_cast<double>(e.p - 1 - 2 * (e.G - 1)) - half) * net(e, m, e.b_flow_G) +
        half * net(e, m, e.b_flow_G, Way::Exchange);
    for (long long dist = 1; dist < e.G; ++dist)
      t += 2.0 * slower(intra(e, m), net(e, m, e.b_flow(static_cast<double>(dist))));
  }
  t.red = static_cast<double>(e.p - 1) * e.comb(m_reduced);
  return t;
}

// Every rank sends one block of `block` bytes to each of the p-1 others at once: the G-1 inside
// the node share its intra-node link, the p-G outside share its NIC bandwidth
// (min(node_bw / G, (p - G) * nic_bw) per rank); both proceed together. One tier:
// a + (p-1) block b (+ (p-1) block g when the blocks are reduced).
Parts direct(const Env& e, double block, bool reduced) {
  Parts in, out;
  const double posted_before = static_cast<double>(e.p - 2);  // messages a rank posts before its last
  if (e.G > 1)
    in = {e.lat_i(block, Way::Exchange) + posted_before * e.ovh_i(block),
          static_cast<double>(e.G - 1) * e.moved_i(block) * e.b_in(static_cast<double>(e.G)), 0};
  if (e.N > 1) {
    double outside = static_cast<double>(e.p - e.G);
    double rate = std::min(e.node_bw / static_cast<double>(e.G), outside * e.nic_bw);
    out = {e.lat_n(block, Way::Exchange) + posted_before * e.ovh_n(block), outside * e.moved_n(block) / rate, 0};
  }
  Parts t = slower(in, out);
  if (reduced) t.red = e.red(static_cast<double>(e.p - 1) * block);  // all in one round
  return t;
}

// ---- pipelines --------------------------------------------------------------------------------
// A pipelined algorithm moves k chunks (x = n/k bytes each) through S_i intra-node and S_n network
// stages per phase (fill: the first chunk takes every stage once), then k - 1 steady-state steps
// of the slowest tier:
//   T(k) = sum over phases of (S_i t_i + S_n t_n) + (k - 1) max(s_i, s_n),
//   t_X = a_X + x (b_X + g_X) (fill), s_X = a_X + x (B_X + g'_X) (steady state, which may move more
//   than one chunk per step: the double tree's allreduce overlaps reduction and broadcast).
// k is chosen to minimise T over the integers in [1, max(1, n / 4 KiB)]; T is convex in k, so its
// integer minimum sits next to a stationary point of one branch of the max or next to the kink
// where s_i = s_n.
struct Stage {
  double a = 0, b = 0, g = 0;  // s; s/B moved; s/B reduced
  double limit = INFINITY;     // the eager limit of the tier's messages (bytes)
  const MessageCosts* mc = nullptr;  // the tier's protocol terms (latency by message size)
  double msg = 1;              // one message carries msg * x bytes (the latency switch looks at it)
  bool scaled = false;          // intra-node: b at the rate of one message (Topology::message_scale)
  bool written = false;         // intra-node, forwarding: b at Topology::written_scale too
  bool network_scaled = false;  // network: b at the rate of one message (Topology::network_message_scale)
  bool fan_out = false;  // intra-node: b at Topology::fan_out_scale too (one sender to many receivers)
  double written_share = 1;           // of the bytes a rank sends in the stage, the forwarded part
  // Posting overheads a step waits for (MessageCosts::queued_overhead_s): the sends its rank posts
  // before the last, the receives the receiving rank takes in before it.
  double sends_before = 0, recvs_before = 0;
  // A step's latency alone (by its message size), and with the overheads it waits for.
  double latency(double x) const { return mc ? mc->latency_s(a, x * msg) : a; }
  double at(double x) const {
    const bool queued = mc && (sends_before > 0 || recvs_before > 0);
    return latency(x) + (queued ? mc->queued_overhead_s(x * msg, sends_before, recvs_before) : 0.0);
  }
  // Time to move chunks of x bytes; `curves` looks the factors up (once for stages of one size).
  template <typename Curves>
  double bw(double x, Curves& curves) const {
    if (!scaled && !written && !network_scaled && !fan_out) return x * b;
    curves.at(x * msg);
    if (network_scaled) return x * b / curves.network;
    const double w = written ? written_share / curves.written + (1 - written_share) : 1.0;
    return x * b / (scaled ? curves.message : 1.0) / (fan_out ? curves.fan : 1.0) * w;
  }
};
// The message_scale, written_scale, network_message_scale and fan_out_scale factors of the last
// message size asked for, and the local_op_scale factor of the last reduction size (red()): the stages of a
// pipeline mostly send and reduce chunks of one size.
struct CurvesAt {
  const Topology* topo;
  double bytes = -1, message = 1, written = 1, network = 1, fan = 1;
  double reduced = -1, local = 1;
  void at(double m) {
    if (m == bytes) return;
    bytes = m;
    message = topo->message_scale_at(m);
    written = topo->written_scale_at(m);
    network = topo->network_message_scale_at(m);
    fan = topo->fan_out_scale_at(m);
  }
  // Env::red(m), with the last factor remembered.
  double red(double m, double g) {
    if (m <= 0) return 0.0;
    if (m != reduced) {
      reduced = m;
      local = topo->local_op_scale_at(m);
    }
    return m * g / local;
  }
};
struct Phase {
  long long S_i = 0, S_n = 0;
  Stage si, sn;
};
struct Pipe {
  Phase ph[2];
  int nph = 1;
  Stage ss_i, ss_n;  // steady-state step per tier
  bool has_i = false, has_n = false;
  // Which steps are one-way (Topology: one_way_factor):
  //  - FirstPass (the double binary tree): a single chunk passes the phases one-way but for one
  //    step per phase, where the two trees cross (a rank sends up, or down, one tree while its
  //    partner sends to it in the other). With two chunks or more a rank takes in the next chunk
  //    while it sends one, and `tree_one_way_steps` steps of the first phase's first tier are
  //    one-way (the schedules': the first hop of broadcast and reduce, and the second of a
  //    broadcast whose root has one child on one node; the allreduce's first hop where the rank
  //    count is not a power of two);
  //  - Chain (ring broadcast, reduce): one chunk passes one-way from rank to rank, the phases; with
  //    k >= 2 chunks a rank receives the next chunk while it sends one, and only the first step
  //    and the last (on the tier of the last hop) are one-way.
  //  - None (the double tree's allreduce on two ranks): each rank is the root of one tree and sends
  //    up the other in the same step, so every step is an exchange (Topology: exchange_factor).
  enum class OneWay : std::uint8_t { FirstPass, Chain, None } one_way = OneWay::FirstPass;
  double tree_one_way_steps = 1;
  bool last_hop_net = false;
  // The intra-node stages forward chunks (Stage::written) but the first hop sends untouched data
  // (the root's Input, or a leaf's): on one node, the first phase's first stage is `first_i`.
  bool first_clean = false;
  Stage first_i;
  // The chain on one node (ring broadcast, reduce) with a node bandwidth: step t of the k + p - 2
  // has min(t + 1, k, p - 1, k + p - 2 - t) ranks sending at once, which share the node's bandwidth.
  bool ramp = false;
  // Local copies a step (the pipelines that reduce copy their own chunk into the accumulator before
  // they combine): `copy_ops` copies of copy_frac * x bytes in the fill stages of the first phase
  // and in the steady state; and the root's copy of all n after its last send (broadcast), which
  // the pipeline's last steps hide when they take longer.
  double copy_ops = 0, copy_frac = 0;
  bool root_copy = false;
  // The double tree on one node with a node bandwidth: while the first chunk passes, level j of
  // each tree has min(2^j, what is left of the p - 1) edges sending at once below a root with one
  // child (`rooted_single`), else min(2^(j+1), ..), not all p - 1; a level-edge moves x bytes (a
  // half-chunk in each tree).
  bool tree_fill = false, rooted_single = false;
  // The fill stages (the first chunk's pass) wait for these overheads instead of their stages'
  // (Stage::sends_before): nothing is ahead of the first chunk, so its messages wait less. The
  // steady-state steps wait for their own. The counts here and in tree_pipe are averages of what
  // the schedules' steps wait for, over 2-64 ranks and either side paying
  // (PriceOfPipelines.PostingOverheads in tests/collectives/test_price.cc).
  bool single_overheads = false;
  double single_sends = 0, single_recvs = 0;
};

constexpr double kMinChunkBytes = 4096;

Stage intra_stage(const Env& e, double b_mult, double g, double msg, double f, bool written = true) {
  return {e.a_i, b_mult * e.b_in(f), g, e.eager_i, &e.topo->intra.msg, msg,
          !e.topo->message_scale.empty(), written && !e.topo->written_scale.empty()};
}
// The pipeline's first hop on one node sends untouched data (Pipe::first_clean).
void set_first_clean(const Env& e, Pipe& P) {
  P.first_clean = e.N == 1 && P.ph[0].S_i > 0 && !e.topo->written_scale.empty();
  P.first_i = P.ph[0].si;
  P.first_i.written = false;
}
Stage net_stage(const Env& e, double b, double g, double msg) {
  Stage s{e.a_n, b, g, e.eager_n, &e.topo->network.msg, msg};
  s.network_scaled = !e.topo->network_message_scale.empty();
  return s;
}

Parts pipe_time(const Env& e, const Pipe& P, double n, double k) {
  Parts t;
  double x = n / k;
  // A stage's g is gamma times the bytes it reduces per byte of chunk: x g / e.g bytes a step.
  CurvesAt c{e.topo};
  auto red = [&](const Stage& s) { return s.g > 0 ? c.red(x * s.g / e.g, e.g) : 0.0; };
  auto stage = [&](const Stage& s) { return Parts{s.at(x), s.bw(x, c), red(s)}; };
  Parts fill_i[2], fill_n[2];  // one stage of each phase and tier
  for (int i = 0; i < P.nph; ++i) {
    const Phase& ph = P.ph[i];
    if (ph.S_i > 0) t += static_cast<double>(ph.S_i) * (fill_i[i] = stage(ph.si));
    if (ph.S_n > 0) t += static_cast<double>(ph.S_n) * (fill_n[i] = stage(ph.sn));
  }
  if (P.tree_fill && e.node_intra_bw > 0) {
    // Each phase's intra-node stages at the share of the edges of their level (Pipe::tree_fill).
    double f_sum = 0, left = static_cast<double>(e.p - 1), width = P.rooted_single ? 1 : 2;
    for (long long j = 0; j < P.ph[0].S_i; ++j, width *= 2) {
      const double edges = std::max(1.0, std::min(width, left));
      left -= edges;
      f_sum += e.b_in(edges);
    }
    const double full = e.b_in(static_cast<double>(e.p - 1));
    for (int i = 0; i < P.nph; ++i) t.bw += fill_i[i].bw * (f_sum / full - static_cast<double>(P.ph[i].S_i));
  }
  if (P.single_overheads) {
    // The fill stages wait for the overheads of a single pass (Pipe::single_sends). Their sending
    // and receiving sides (overhead_receive_share) fall partly at once on the schedule's critical
    // path: counted halfway between their sum and the larger of the two, which matches the
    // schedules' single-chunk broadcast within a tenth of an overhead at 4-16 ranks, where the sum
    // came out a quarter too high.
    for (int i = 0; i < P.nph; ++i) {
      const Stage& si = P.ph[i].si;
      const double m = x * si.msg;
      const double r = si.mc->overhead_receive_share, o = si.mc->overhead_s(m);
      const double send = (1 - r) * P.single_sends * o, recv = r * P.single_recvs * o;
      const double single = 0.5 * (send + recv + std::max(send, recv));
      t.lat += static_cast<double>(P.ph[i].S_i) * (single - si.mc->queued_overhead_s(m, si.sends_before, si.recvs_before));
    }
  }
  // The pipeline's steps after the root's last send: the last chunk's way past the first hop.
  double tail = 0;
  if (P.root_copy) tail = t.total() - (P.ph[0].S_i > 0 ? fill_i[0] : fill_n[0]).total();
  if (P.first_clean) t.bw += P.first_i.bw(x, c) - fill_i[0].bw;
  const double step_copy = P.copy_ops > 0 ? P.copy_ops * e.cp(P.copy_frac * x) : 0.0;
  // A rank's first step copies before its first chunk can have arrived: while the first chunk
  // passes, only the first hop waits for a copy. With two chunks or more every later step does,
  // the drain's too.
  t.copy += (k >= 2 ? static_cast<double>(P.ph[0].S_i + P.ph[0].S_n) : 1.0) * step_copy;
  Parts pi, pn;
  if (P.has_i) pi = stage(P.ss_i);
  if (P.has_n) pn = stage(P.ss_n);
  pi.copy = pn.copy = step_copy;
  if (P.has_i || P.has_n) t += (k - 1) * (!P.has_i ? pn : !P.has_n ? pi : slower(pi, pn));
  if (P.ramp && e.node_intra_bw > 0) {
    // Every step's bytes at the rate of its senders' share: sum over the steps of b_in(senders),
    // 1, 2, .., q - 1 while the chain fills and again while it drains, q = min(k, p - 1) between.
    const double per_b = fill_i[0].bw / P.ph[0].si.b;  // a step's bytes, at the messages' rates
    const double L = static_cast<double>(e.p) + k - 2, q = std::min(k, static_cast<double>(e.p - 1));
    auto sum_to = [&](double m) {  // sum of b_in(j), j = 1..m
      const double j = std::min(m, std::floor(e.b_i / e.node_intra_b));
      return j * e.b_i + e.node_intra_b * (m * (m + 1) - j * (j + 1)) / 2;
    };
    t.bw = per_b * (2 * sum_to(q - 1) + (L - 2 * (q - 1)) * e.b_in(q));
    if (P.first_clean) t.bw += (P.first_i.bw(x, c) - fill_i[0].bw) / P.ph[0].si.b * e.b_in(1);
    // The last p - 2 steps, after the root's last send, have min(q, p - 2 - i) senders each.
    const double d = static_cast<double>(e.p - 2), dq = std::min(q, d);
    tail = d * (fill_i[0].lat + fill_i[0].red) + per_b * (sum_to(dq) + (d - dq) * e.b_in(q));
  }
  if (P.root_copy && e.c > 0) t.copy += std::max(0.0, e.C * e.cp(n) - tail);  // each channel's part
  auto latency = [&](const Stage& s) { return s.latency(x); };
  if (P.one_way == Pipe::OneWay::None) {
    // Every step an exchange (the double tree's allreduce on two ranks, one tier): each pays its
    // latency times exchange_factor.
    const double xi = 1 - e.topo->intra.msg.exchange_factor, xn = 1 - e.topo->network.msg.exchange_factor;
    for (int i = 0; i < P.nph; ++i)
      t.lat -= static_cast<double>(P.ph[i].S_i) * xi * latency(P.ph[i].si) +
               static_cast<double>(P.ph[i].S_n) * xn * latency(P.ph[i].sn);
    t.lat -= (k - 1) * (P.has_i ? xi * latency(P.ss_i) : xn * latency(P.ss_n));
    return t;
  }
  // The one-way steps (Pipe::one_way) save (1 - one_way_factor) of their latency (not of the
  // posting overheads they wait for).
  const double save_i = 1 - e.topo->intra.msg.one_way_factor, save_n = 1 - e.topo->network.msg.one_way_factor;
  if (save_i == 0 && save_n == 0) return t;
  if (P.one_way == Pipe::OneWay::FirstPass && k >= 2) {
    t.lat -= P.tree_one_way_steps *
             (P.ph[0].S_n > 0 ? save_n * latency(P.ph[0].sn) : save_i * latency(P.ph[0].si));
  } else if (P.one_way == Pipe::OneWay::FirstPass || k <= 1) {
    // Every step of each phase; the double tree's single chunk but for the step where its trees
    // cross (on the intra-node tier when the phase has one).
    const long long crossing = P.one_way == Pipe::OneWay::FirstPass && e.p > 2 ? 1 : 0;
    for (int i = 0; i < P.nph; ++i) {
      const long long cross_i = std::min(crossing, P.ph[i].S_i), cross_n = std::min(crossing - cross_i, P.ph[i].S_n);
      t.lat -= static_cast<double>(P.ph[i].S_i - cross_i) * save_i * latency(P.ph[i].si) +
               static_cast<double>(P.ph[i].S_n - cross_n) * save_n * latency(P.ph[i].sn);
    }
  } else {
    const double lat_i = P.has_i ? latency(P.ss_i) : 0, lat_n = P.has_n ? latency(P.ss_n) : 0;
    t.lat -= P.has_i ? save_i * lat_i : save_n * lat_n;
    t.lat -= P.last_hop_net || !P.has_i ? save_n * lat_n : save_i * lat_i;
  }
  return t;
}

// The number of chunks k that minimises the pipeline's time, and that time.
struct BestPipe {
  int k = 1;
  Parts t;
};
BestPipe best_pipe(const Env& e, const Pipe& P, double n) {
  const double kmax = std::max(1.0, std::min(std::floor(n / kMinChunkBytes), static_cast<double>(1 << 30)));
  if (kmax <= 1 || !(P.has_i || P.has_n)) return {1, pipe_time(e, P, n, 1)};
  // Real-valued candidates: the stationary point of T with steady stage X the slowest
  // (k = sqrt(n * (fill bytes coefficient - steady X's) / a_X)), and the kink s_i = s_n.
  const double copy_b = P.copy_ops * P.copy_frac * e.c;  // s per byte of chunk copied a step
  double fill = static_cast<double>(P.ph[0].S_i + P.ph[0].S_n) * copy_b;
  for (int i = 0; i < P.nph; ++i)
    fill += static_cast<double>(P.ph[i].S_i) * (P.ph[i].si.b + P.ph[i].si.g) +
            static_cast<double>(P.ph[i].S_n) * (P.ph[i].sn.b + P.ph[i].sn.g);
  double real[3];
  int nr = 0;
  for (int X = 0; X < 2; ++X) {
    if (!(X == 0 ? P.has_i : P.has_n)) continue;
    const Stage& s = X == 0 ? P.ss_i : P.ss_n;
    double coef_inv = fill - (s.b + s.g + copy_b);
    real[nr++] = s.a > 0 ? std::sqrt(std::max(0.0, coef_inv * n) / s.a) : kmax;
  }
  if (P.has_i && P.has_n) {
    double db = (P.ss_i.b + P.ss_i.g) - (P.ss_n.b + P.ss_n.g), da = P.ss_n.a - P.ss_i.a;
    if (db != 0 && da / db > 0) real[nr++] = n / (da / db);
  }
  double cand[8];
  int nc = 0;
  auto add = [&](double k) {
    k = std::isfinite(k) ? std::min(kmax, std::max(1.0, k)) : kmax;
    for (int j = 0; j < nc; ++j)
      if (cand[j] == k) return;
    cand[nc++] = k;
  };
  for (int i = 0; i < nr; ++i) {
    add(std::floor(real[i]));
    add(std::ceil(real[i]));
  }
  // With an eager limit, the smallest k whose messages stay eager.
  const Stage& s0 = P.has_i ? P.ss_i : P.ss_n;
  if (std::isfinite(s0.limit) && s0.limit > 0) add(std::ceil(n * s0.msg / s0.limit));
  double best_k = 1, best_t = INFINITY;
  Parts best;
  for (int i = 0; i < nc; ++i) {
    const Parts x = pipe_time(e, P, n, cand[i]);
    const double t = x.total();
    if (t < best_t || (t == best_t && cand[i] < best_k)) {
      best_t = t;
      best_k = cand[i];
      best = x;
    }
  }
  return {static_cast<int>(best_k), best};
}

Parts run_pipe(const Env& e, const Pipe& P, double n) {
  return best_pipe(e, P, n).t;
}

}  // namespace

// How the nodes cut the double binary tree (model/cost/cost.h).
TreeCut tree_cut(long long N, long long G, bool rooted) {
  thread_local std::map<std::tuple<long long, long long, bool>, TreeCut> counted;
  thread_local std::tuple<long long, long long, bool> last_key{0, 0, false};
  thread_local TreeCut last;
  const auto key = std::make_tuple(N, G, rooted);
  if (key == last_key) return last;
  if (const auto it = counted.find(key); it != counted.end()) {
    last_key = key;
    return last = it->second;
  }
  TreeCut cut;
  std::vector<long long> out(static_cast<std::size_t>(N), 0), in(static_cast<std::size_t>(N), 0);
  const int p = static_cast<int>(N * G);
  for (const std::vector<int>& parent : double_tree_parents(p, rooted)) {
    // Depth and edges between nodes above every rank, from the root down.
    std::vector<long long> depth(p, -1), cuts(p, 0);
    std::vector<int> path;
    for (int v = 0; v < p; ++v) {
      for (int x = v; x >= 0 && depth[x] < 0; x = parent[x]) path.push_back(x);
      while (!path.empty()) {
        const int x = path.back();
        path.pop_back();
        const int up = parent[x];
        const bool crosses = up >= 0 && x / G != up / G;
        depth[x] = up < 0 ? 0 : depth[up] + 1;
        cuts[x] = up < 0 ? 0 : cuts[up] + (crosses ? 1 : 0);
        if (!crosses) continue;
        ++out[static_cast<std::size_t>(up / G)];  // down the tree (broadcast, allreduce)
        ++in[static_cast<std::size_t>(x / G)];
        if (!rooted) {  // and up (allreduce's reduction)
          ++out[static_cast<std::size_t>(x / G)];
          ++in[static_cast<std::size_t>(up / G)];
        }
      }
      cut.levels = std::max(cut.levels, cuts[v]);
      cut.height = std::max(cut.height, depth[v]);
    }
  }
  long long most = 1;
  for (std::size_t i = 0; i < out.size(); ++i) most = std::max({most, out[i], in[i]});
  cut.flows = static_cast<double>(most);
  last_key = key;
  return last = counted[key] = cut;
}

namespace {

// Ranks of a node sending inside it at once in a pipeline's steady state (intra_node.node_bandwidth):
// on one node every rank but one (the chain's last rank; a tree of p ranks has p - 1 edges, each
// carrying a chunk a step), otherwise the node's G ranks.
double pipe_senders(const Env& e) {
  return static_cast<double>(e.N == 1 ? e.p - 1 : e.G);
}

// Double binary tree (Sanders, Speck & Traeff 2009; NCCL), as src/collectives/tree.cc builds it:
// two trees, each carrying half of the data in k chunks (a pipeline chunk is a pair of
// half-chunks, n/k bytes); every rank is interior (two children) in one tree and a leaf in the
// other. Heights: H = ceil(lg p) (the taller tree); for broadcast/reduce with p a power of two
// (p > 2) tree B is one deeper, H = ceil(lg p) + 1. Per step:
//  - broadcast: a rank receives a half-chunk in each tree and sends two in the tree where it is
//    interior: n/k bytes each way; k + H - 1 steps:  T = (k + H - 1)(a + (n/k) b);
//  - reduce: the mirror, combining n/k bytes per step: T = (k + H - 1)(a + (n/k)(b + g));
//  - allreduce: reduction and broadcast overlap (chunk c goes down while later chunks go up), so
//    a rank in the steady state moves four half-chunks each way (2n/k) and combines n/k; the
//    pipeline fills for H steps going up and H going down (n/k each), then k - 1 steady steps:
//      T = (k + 2H - 1) a + 2(k + H - 1)(n/k) b + (k + H - 1)(n/k) g.
//    With p = 2 each tree's interior rank has one child: every step moves n/(2k) half-chunks
//    in each tree, n/k each way in the steady state and n/(2k) while filling.
// Across nodes the trees' edges between nodes are counted (tree_cut): S_n of the H levels cross
// the network (the most on a path from a root to a leaf), the other H - S_n stay inside a node.
// Every edge between two nodes carries one half-chunk (n/(2k)) a step, each its own flow: a step
// across the network takes n/(2k) bw_flow(f), f the messages out of (or into) the busiest node (one
// or two while the pipeline fills).
// With C > 1 channels the pipeline is one channel's, on n / C bytes (run_pipe's n), its C copies
// running in the same steps: a step moves C times a channel's bytes through each GPU (b and g times
// C, C times the copies) and C f flows out of the busiest node (bw_flow(C f)).
Pipe tree_pipe(const Env& e, Collective c) {
  Pipe P;
  const bool pow2 = (e.p & (e.p - 1)) == 0;
  long long S_i = ceil_lg(e.G), S_n = 0;
  if (c != Collective::AllReduce && pow2 && e.p > 2 && e.N == 1) S_i += 1;
  double flows = 1;
  if (e.N > 1) {
    const TreeCut cut = tree_cut(e.N, e.G, c != Collective::AllReduce);
    S_n = cut.levels;
    S_i = cut.height - cut.levels;
    flows = cut.flows;
  }
  // s/B across the network per byte of pipeline chunk, in the steady state and while filling.
  const double C = e.C;
  const double b_n = e.N > 1 ? 0.5 * e.b_flow(C * flows) : 0;
  const double fG = pipe_senders(e);
  if (c == Collective::AllReduce) {
    const double fill = e.p == 2 ? 0.5 : 1, steady = e.p == 2 ? 1 : 2;
    const double b_fill = e.N > 1 ? 0.5 * e.b_flow(C * (e.p == 2 ? 1 : std::min(flows, 2.0))) : 0;
    P.nph = 2;
    P.ph[0] = {S_i, S_n, intra_stage(e, C * fill, C * e.g * fill, 0.5, fG),
               net_stage(e, b_fill, C * e.g * fill, 0.5)};
    P.ph[1] = {S_i, S_n, intra_stage(e, C * fill, 0, 0.5, fG), net_stage(e, b_fill, 0, 0.5)};
    P.ss_i = intra_stage(e, C * steady, C * e.g * steady / 2, 0.5, fG);
    P.ss_n = net_stage(e, b_n, C * e.g * steady / 2, 0.5);
    // Going down, the first chunk passes from parents to children that take in only it: one to
    // many (Topology::fan_out_scale). In the steady state a rank takes in a chunk while it sends.
    P.ph[1].si.fan_out = !e.topo->fan_out_scale.empty();
    // In the steady state a rank sends its own chunk up the tree where it is a leaf (from Input)
    // and forwards the rest (1 of 2 half-chunks with p = 2). Counted at 7 of 8: the receiving
    // side of an interior rank takes in forwarded chunks only.
    P.ss_i.written_share = e.p == 2 ? 0.5 : 0.875;
    // Posting overheads: while a chunk passes (up or down) a rank posts a message or two and takes
    // in one or two, counted as half a message before its last each way; in the steady state it
    // posts four (to its parents and to its children) and takes in two.
    // With p = 2 a rank posts one message up one tree and one down the other a step.
    for (Phase& ph : P.ph)
      for (Stage* st : {&ph.si, &ph.sn}) st->sends_before = st->recvs_before = e.p == 2 ? 0 : 0.5;
    for (Stage* st : {&P.ss_i, &P.ss_n}) {
      st->sends_before = e.p == 2 ? 1 : 3;
      st->recvs_before = 1;
    }
    P.single_overheads = e.p > 2;
    P.single_sends = P.single_recvs = 1.0 / 3;
    if (e.p == 2) P.one_way = Pipe::OneWay::None;
    // Going up, a rank interior in one tree copies its own half-chunk before it combines.
    P.copy_ops = C;
    P.copy_frac = 0.5;
  } else {
    const double g = c == Collective::Reduce ? C * e.g : 0;
    const double b_fill = e.N > 1 ? 0.5 * e.b_flow(C * std::min(flows, 2.0)) : 0;
    P.ph[0] = {S_i, S_n, intra_stage(e, C, g, 0.5, fG), net_stage(e, b_fill, g, 0.5)};
    // Posting overheads: an interior rank sends to its two children (reduce: takes in from them),
    // one message before its last each way (p = 2: both half-chunks to the one other rank).
    P.ph[0].si.sends_before = P.ph[0].si.recvs_before = 1;
    P.ph[0].sn.sends_before = P.ph[0].sn.recvs_before = 1;
    P.single_overheads = e.p > 2;
    P.single_sends = c == Collective::Reduce ? 0 : 0.75;
    P.single_recvs = c == Collective::Reduce ? 0.5 : 0.25;
    P.ss_i = P.ph[0].si;
    P.ss_n = net_stage(e, b_n, g, 0.5);
    P.ss_n.sends_before = P.ss_n.recvs_before = 1;
    // Broadcast: the first chunk passes from parents to children that take in only it, one to many
    // (Topology::fan_out_scale), as in the allreduce's second phase.
    P.ph[0].si.fan_out = c == Collective::Broadcast && !e.topo->fan_out_scale.empty();
    // Reduce: the root, which has a child in each tree, copies both half-chunks before it
    // combines; broadcast: the root copies its Input to Output after its last send.
    P.copy_ops = c == Collective::Reduce ? 2 * C : 0;
    P.copy_frac = 0.5;
    P.root_copy = c == Collective::Broadcast;
  }
  P.has_i = e.G > 1;
  P.has_n = e.N > 1;
  P.tree_fill = e.N == 1;
  P.rooted_single = c != Collective::AllReduce && pow2 && e.p > 2;
  P.tree_one_way_steps = c == Collective::AllReduce ? (pow2 ? 0 : 1)
                         : c == Collective::Broadcast && P.rooted_single && e.N == 1 ? 2
                                                                                       : 1;
  set_first_clean(e, P);
  return P;
}

// Pipelined chain along the ring (src/collectives/ring.cc), root 0: broadcast runs 0 -> 1 -> ... ->
// p-1 (p - nodes intra-node hops, nodes - 1 network hops); reduce runs 1 -> 2 -> ... -> p-1 -> 0,
// so with G > 1 its last hop also crosses the network (p - 1 - nodes intra-node hops, nodes network
// hops). One tier: T = (p - 1 + k - 1)(a + (n/k) b) for broadcast and
// (p - 1 + k - 1)(a + (n/k)(b + g)) for reduce.
Pipe chain_pipe(const Env& e, bool reduces) {
  Pipe P;
  P.ph[0].S_n = e.N == 1 ? 0 : reduces && e.G > 1 ? e.N : e.N - 1;
  P.ph[0].S_i = e.p - 1 - P.ph[0].S_n;
  P.ph[0].si = intra_stage(e, 1, reduces ? e.g : 0, 1, pipe_senders(e));
  if (e.N > 1) P.ph[0].sn = net_stage(e, e.b_flow_1, reduces ? e.g : 0, 1);
  P.ss_i = P.ph[0].si;
  P.ss_n = P.ph[0].sn;
  P.has_i = P.ph[0].S_i > 0;
  P.has_n = P.ph[0].S_n > 0;
  P.one_way = Pipe::OneWay::Chain;
  P.last_hop_net = reduces ? e.N > 1 : e.G == 1 && e.N > 1;
  P.ramp = e.N == 1;
  // Reduce: every rank after the first copies its chunk before it combines; broadcast: the root
  // copies its Input to Output after its last send.
  P.copy_ops = reduces ? 1 : 0;
  P.copy_frac = 1;
  P.root_copy = !reduces;
  set_first_clean(e, P);
  return P;
}

// ---- the algorithms --------------------------------------------------------------------------

// Ring over all p ranks: `steps` steps moving `bytes_total` and reducing `reduced_total` bytes in
// all. Across nodes the ring crosses each node boundary once: per step one flow leaves each node
// (bw_flow(1)) while its other G - 1 ranks send inside it; every step waits for the slower. The
// first step sends untouched data (a rank's own block, from Input); every later one forwards what
// the rank received or combined in the step before.
//
// With C > 1 channels each step moves C messages of x = m/C per rank. Channel c leaves each node
// from local rank c - 1 (mod G), so a GPU sends across the network in floor(C/G) or ceil(C/G)
// channels and inside the node in the others: the busiest GPU moves (C - floor(C/G)) x on its
// link, the node C (G - 1) x inside it (intra_node.node_bandwidth) and C x across the network in
// C flows (bw_flow(C)). Each channel's messages pay the tier's latency once, the rounds' extra
// messages their posting overheads (C - 1 before the last, on both sides).
Parts ring_channels(const Env& e, double steps, double bytes_total, double reduced_total) {
  const double C = e.C, m = bytes_total / steps, x = m / C, G = static_cast<double>(e.G);
  const double before = C - 1;
  auto lat_i = [&](Way w) { return e.lat_i(x, w) + e.topo->intra.msg.queued_overhead_s(x, before, before); };
  auto lat_n = [&](Way w) { return e.lat_n(x, w) + e.topo->network.msg.queued_overhead_s(x, before, before); };
  // With two ranks per node the rotated rings run the other way round inside the node: local rank 0
  // sends to 1 in channel 0 while 1 sends to 0 in channel 1, an exchange; on two nodes the same
  // holds for the messages between them.
  const bool pairs = e.G == 2;
  const Way w_in = pairs ? Way::Exchange : Way::Shift;
  const Way w_out = e.G == 1 ? ring_way(e.p) : pairs && e.N == 2 ? Way::Exchange : Way::Shift;
  auto step = [&](bool written) {
    const double moved = e.moved_i(x, written);
    if (e.N == 1) return Parts{lat_i(ring_way(e.p)), C * moved * e.b_in(G), 0};
    const Parts out{lat_n(w_out), e.moved_n(x) * e.b_flow(C), 0};
    if (e.G == 1) return out;
    const double busiest = (C - std::floor(C / G)) * moved;
    const Parts in{lat_i(w_in), std::max(busiest * e.b_i, C * (G - 1) * moved * e.node_intra_b), 0};
    return slower(in, out);
  };
  Parts t = step(false) + (steps - 1) * step(true);
  if (reduced_total > 0) {
    // A rank combines the C messages of a step together, each piece as it arrives.
    const double piece = static_cast<double>(e.topo->piece());
    const double at_once = piece > 0 ? std::min(m, piece * C) : m;
    t.red = reduced_total * e.g / e.topo->local_op_scale_at(at_once);
  }
  return t;
}

Parts ring(const Env& e, double steps, double bytes_total, double reduced_total) {
  if (e.C > 1) return ring_channels(e, steps, bytes_total, reduced_total);
  const double m = bytes_total / steps;
  auto step = [&](bool written) {
    if (e.N == 1) return intra(e, m, ring_way(e.p), written);
    if (e.G == 1) return net(e, m, e.b_flow_1, ring_way(e.p));
    return slower(intra(e, m, static_cast<double>(e.G - 1), Way::Shift, written), net(e, m, e.b_flow_1));
  };
  Parts t = step(false) + (steps - 1) * step(true);
  if (reduced_total > 0) t.red = reduced_total / m * e.comb(m);  // steps that reduce, m bytes each
  return t;
}

// allreduce ring: 2(p-1)a + 2n(p-1)/p b + n(p-1)/p g.
Parts allreduce_ring(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, 2 * (p - 1), 2 * n * (p - 1) / p, n * (p - 1) / p);
}

// allreduce recursive doubling: lg p (a + n b + n g) for p = 2^k. Otherwise (MPICH's fold) the r
// extra ranks first send their n to a partner (a + nb + ng), the p' ranks run recursive
// doubling, and the partners send the result back (a + nb):
//   (m+2) a + (m+2) n b + (m+1) n g.
// Across tiers the fold steps are priced as distance-1 steps (one-way) and the core steps at
// distance 2^s.
Parts allreduce_rd(const Env& e, double n) {
  int m = floor_lg(e.p);
  long long r = e.p - (1LL << m);
  Parts t;
  if (r > 0) t += xor_fold(e, n, n, false);
  // Step 0 sends Input, unless the rank combined an extra rank's data in the fold.
  // The core receives into Scratch and combines it at the start of the next step: a local op.
  for (int s = 0; s < m; ++s) t += xor_all(e, 1LL << s, n, n, s > 0 || r > 0, 0, false);
  if (r > 0) t += xor_fold(e, n, 0, true);
  return t;
}

// Rabenseifner allreduce: reduce-scatter by recursive halving (distance 1, 2, 4, ... with n/2,
// n/4, ... so the large exchanges stay near), then allgather by recursive doubling in the reverse
// order: 2 lg p a + 2n(p-1)/p b + n(p-1)/p g for p = 2^k. Otherwise, as the schedule, the fold
// (a + nb + ng), the core on the p' ranks, whose halves are those of n split p' ways, and the
// unfold (a + nb):
//   (2m+2) a + (2 + 2(p'-1)/p') n b + (1 + (p'-1)/p') n g.
// (The published form, Thakur et al. 2005, charges the core n(p-1)/p, as if its p' ranks split n
// p ways: a little more bandwidth, and messages just above a protocol limit where the
// schedule's are at it.)
Parts allreduce_rabenseifner(const Env& e, double n) {
  int m = floor_lg(e.p);
  long long r = e.p - (1LL << m);
  Parts t;
  if (r > 0) t += xor_fold(e, n, n, false);
  double size = n;
  for (int s = 0; s < m; ++s) {
    size /= 2;
    t += xor_all(e, 1LL << s, size, size, s > 0 || r > 0);
  }
  for (int s = m - 1; s >= 0; --s) {
    t += xor_all(e, 1LL << s, size, 0, true);
    size *= 2;
  }
  if (r > 0) t += xor_fold(e, n, 0, true);
  return t;
}

// The steps of the hierarchical algorithms with C channels (C = 1: intra() and net() with one
// message): C messages of x bytes each per rank and step, inside the node (all G ranks of it) or
// across the network along the columns (G C flows per node), the rounds' extra messages paying
// their posting overheads; and the combining of m bytes a step that arrive in C messages.
Parts hier_intra(const Env& e, double x, Way w, bool written = false) {
  const double before = e.C - 1;
  return {e.lat_i(x, w) + e.topo->intra.msg.queued_overhead_s(x, before, before),
          e.C * e.moved_i(x, written) * e.b_in(static_cast<double>(e.G)), 0};
}
Parts hier_net(const Env& e, double x, Way w) {
  const double before = e.C - 1;
  return {e.lat_n(x, w) + e.topo->network.msg.queued_overhead_s(x, before, before),
          e.moved_n(x) * (e.C == 1 ? e.b_flow_G : e.b_flow(static_cast<double>(e.G) * e.C)), 0};
}
double hier_comb(const Env& e, double m) {
  const double piece = static_cast<double>(e.topo->piece());
  return m > 0 ? m * e.g / e.topo->local_op_scale_at(piece > 0 ? std::min(m, piece * e.C) : m) : 0.0;
}

// Hierarchical allreduce: intra-node ring reduce-scatter (G ranks, n), inter-node ring allreduce
// among the ranks with the same local index (nodes ranks, n/G each, G rings at once, one flow per
// ring: bw_flow(G)), intra-node ring allgather:
//   2(G-1) a_i + 2n(G-1)/G b_i + n(G-1)/G g
//   + 2(N-1) (a_n + (n/(GN)) / bw_flow(G)) + (n/G)(N-1)/N g.
// One tier: equals ring. With C channels every message is C messages of 1/C of it, and G C flows
// leave a node (hier_intra, hier_net).
Parts allreduce_hier(const Env& e, double n) {
  double G = static_cast<double>(e.G), N = static_cast<double>(e.N);
  const double x = n / G / e.C;  // one channel's chunk
  Parts t;
  // The first intra-node step sends Input; the others forward what was combined or received.
  if (e.G > 1) t = hier_intra(e, x, ring_way(e.G)) + (2 * G - 3) * hier_intra(e, x, ring_way(e.G), true);
  t.red = (G - 1) * hier_comb(e, n / G);
  if (e.N > 1) {
    t += 2 * (N - 1) * hier_net(e, x / N, ring_way(e.N));
    t.red += (N - 1) * hier_comb(e, n / G / N);
  }
  return t;
}

// allgather ring: (p-1) a + n(p-1)/p b.
Parts allgather_ring(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, p - 1, n * (p - 1) / p, 0);
}

// allgather recursive doubling: step s (distance 2^s) exchanges 2^s blocks: lg p a + n(p-1)/p b
// for p = 2^k. Otherwise the r extra ranks first send their block to a partner (a + (n/p) b); the
// p' ranks run recursive doubling, where the largest message of step s carries the blocks of 2^s
// ranks of which min(2^s, r) hold two blocks; then the extra ranks receive all but their own block
// (a + n(p-1)/p b; two messages, the second after a posting overhead):
//   (m+2) a + (n/p)(1 + sum_{s<m} (2^s + min(2^s, r)) + (p-1)) b.
// `received`: the ranks' blocks were received before (the allgather of broadcast_rd), so even the
// first messages forward written data; otherwise a rank's first message is its own block, sent
// from Input.
Parts allgather_rd(const Env& e, double n, bool received = false) {
  int m = floor_lg(e.p);
  long long r = e.p - (1LL << m);
  double block = n / static_cast<double>(e.p);
  Parts t;
  if (r > 0) t += xor_fold(e, block, 0, received);
  for (int s = 0; s < m; ++s) {
    long long d = 1LL << s;
    t += xor_all(e, d, static_cast<double>(d + std::min(d, r)) * block, 0, received || s > 0 || r > 0,
                 folded_core_senders(e, d, r));
  }
  // Fold-out: the blocks before an extra rank's own and those after it, two messages, of which the
  // second waits one posting overhead; the first extra rank's second message is the larger, p - 2
  // blocks, the latency and overhead of the step.
  if (r > 0) {
    Parts out = xor_fold(e, static_cast<double>(e.p - 1) * block, 0, true);
    const double larger = static_cast<double>(e.p - 2) * block;
    out.lat = e.G > 1 ? e.lat_i(larger, Way::OneWay) + e.topo->intra.msg.queued_overhead_s(larger, 1, 1)
                      : e.lat_n(larger, Way::OneWay) + e.topo->network.msg.queued_overhead_s(larger, 1, 1);
    t += out;
  }
  return t;
}

// allgather Bruck: step s (s < K) sends min(2^s, p - 2^s) blocks to rank r - 2^s:
// ceil(lg p) a + n(p-1)/p b.
Parts allgather_bruck(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = 0; s < K; ++s) {
    long long d = 1LL << s;
    // A step of one block sends the rank's own, from Input; larger ones forward received blocks.
    const long long blocks = std::min(d, e.p - d);
    t += shift_step(e, d, static_cast<double>(blocks) * block, 0, blocks > 1);
  }
  return t;
}

// Hierarchical allgather: inter-node ring allgather among the ranks with the same local index
// (each ends with the N blocks of its index; G rings at once, one flow each: bw_flow(G)), then
// intra-node ring allgather of those n/G bytes per rank:
//   (N-1)(a_n + (n/p) / bw_flow(G)) + (G-1)(a_i + (n/G) b_i).   One tier: equals ring.
Parts allgather_hier(const Env& e, double n) {
  double G = static_cast<double>(e.G), N = static_cast<double>(e.N), p = static_cast<double>(e.p);
  Parts t;
  // Inside the node, the first step sends a rank's own block (from Input) on one node, and the
  // blocks gathered across the network otherwise; every later step forwards. With C channels, a
  // channel's part of each (hier_intra, hier_net).
  if (e.G > 1)
    t = hier_intra(e, n / G / e.C, ring_way(e.G), e.N > 1) + (G - 2) * hier_intra(e, n / G / e.C, ring_way(e.G), true);
  if (e.N > 1) t += (N - 1) * hier_net(e, n / p / e.C, ring_way(e.N));
  return t;
}

// reducescatter ring: (p-1) a + n(p-1)/p (b + g).
Parts reducescatter_ring(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, p - 1, n * (p - 1) / p, n * (p - 1) / p);
}

// reducescatter recursive halving: step s exchanges and reduces half of what is left with the
// rank at distance p/2^(s+1): lg p a + n(p-1)/p (b + g) for p = 2^k. Otherwise the extra ranks
// first send all n to a partner (a + n(b + g)), the p' ranks halve (step s with g_s = p'/2^(s+1)
// carries the blocks of g_s ranks of which min(g_s, r) own two), and the partners send the extras
// their block (a + (n/p) b):
//   (m+2) a + (n + (n/p) sum_s (g_s + min(g_s, r)) + n/p) b + (n + (n/p) sum_s (g_s + min(g_s, r))) g.
Parts reducescatter_rh(const Env& e, double n) {
  int m = floor_lg(e.p);
  long long p2 = 1LL << m, r = e.p - p2;
  double block = n / static_cast<double>(e.p);
  Parts t;
  if (r > 0) t += xor_fold(e, n, n, false);
  for (int s = 0; s < m; ++s) {
    long long gs = p2 >> (s + 1);
    double size = static_cast<double>(gs + std::min(gs, r)) * block;
    // In step 0 the largest message carries blocks a fold partner combined when r > gs, and
    // blocks a rank without one sends from Input otherwise.
    t += xor_all(e, gs, size, size, s > 0 || r > gs, folded_core_senders(e, gs, r));
  }
  if (r > 0) t += xor_fold(e, block, 0, true);
  return t;
}

// broadcast binomial: ceil(lg p)(a + n b); the root sends first to distance 2^(K-1), then halves.
Parts broadcast_binomial(const Env& e, double n) {
  int K = ceil_lg(e.p);
  Parts t;
  // At distance d the root sends from Input; the ranks that received earlier forward, from 2d on.
  for (int s = K - 1; s >= 0; --s) t += xor_tree(e, 1LL << s, n, 0, 3 * (1LL << s) < e.p);
  return t;
}

// Binomial scatter from rank 0: step with distance d = 2^(K-1), ..., 1 sends the receiver's
// subtree, min(d, p - d) blocks: ceil(lg p) a + n(p-1)/p b.
Parts scatter_binomial(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = K - 1; s >= 0; --s) {
    long long d = 1LL << s;
    t += xor_tree(e, d, static_cast<double>(std::min(d, e.p - d)) * block, 0, 3 * d < e.p);
  }
  return t;
}
// broadcast recursive doubling (van de Geijn): binomial scatter + recursive-doubling allgather:
// 2 lg p a + 2n(p-1)/p b for p = 2^k; otherwise scatter + the folded allgather above.
Parts broadcast_rd(const Env& e, double n) {
  return scatter_binomial(e, n) + allgather_rd(e, n, true);
}

// reduce binomial: ceil(lg p)(a + n b + n g), distance 1 first.
Parts reduce_binomial(const Env& e, double n) {
  int K = ceil_lg(e.p);
  Parts t;
  // At distance d >= 2 a sender sends what it combined, unless it had no child (d + 1 >= p).
  for (int s = 0; s < K; ++s) t += xor_tree(e, 1LL << s, n, n, s > 0 && (1LL << s) + 1 < e.p);
  return t;
}

// reduce Rabenseifner (as the schedule: ranks counted from the root): fold-in of the r extra
// ranks (a + n(b + g)), reduce-scatter by recursive halving among the p' = 2^m core ranks with
// distances halving (n/2, n/4, ...: m a + n(p'-1)/p' (b + g)), binomial gather of the p' chunks to
// the root among the p' (step s sends 2^s chunks of n/p' at distance 2^s: m a + n(p'-1)/p' b):
//   2 lg p a + 2n(p-1)/p b + n(p-1)/p g for p = 2^k;
//   (2m + 1) a + (1 + 2(p'-1)/p') n b + (1 + (p'-1)/p') n g otherwise.
Parts reduce_rabenseifner(const Env& e, double n) {
  int m = floor_lg(e.p);
  long long p2 = 1LL << m, r = e.p - p2;
  Parts t;
  if (r > 0) t += xor_fold(e, n, n, false);
  double size = n;
  for (int s = 0; s < m; ++s) {
    size /= 2;
    t += xor_all(e, p2 >> (s + 1), size, size, s > 0 || r > 0);
  }
  const double chunk = n / static_cast<double>(p2);
  for (int s = 0; s < m; ++s) {
    long long d = 1LL << s;
    t += xor_tree(e, d, static_cast<double>(d) * chunk, 0, true, p2);
  }
  return t;
}

// Binomial broadcast (reduced: reduce) of n bytes on one node of G ranks, all nodes at once:
// ceil(lg G)(a_i + n b_i [+ n g]); in the step at distance d about G / (2d) ranks of a node send.
// Which steps send written data is as in broadcast_binomial and reduce_binomial; a broadcast
// across nodes starts inside each node from a rank that received the data over the network.
Parts node_binomial_whole(const Env& e, double n, bool reduced) {
  int K = ceil_lg(e.G);
  Parts t;
  for (int s = 0; s < K; ++s) {
    long long d = 1LL << s;
    const bool written = reduced ? s > 0 && d + 1 < e.G : e.N > 1 || 3 * d < e.G;
    t += intra(e, n, static_cast<double>(std::max(1LL, (e.G + d - 1) / (2 * d))), Way::OneWay, written);
  }
  if (reduced) t.red = static_cast<double>(K) * e.comb(n);
  return t;
}

// Hierarchical broadcast, as the schedule: binomial broadcast across the nodes among the ranks
// with the root's local index (one flow per node: ceil(lg N)(a_n + n / bw_flow(1))), then binomial
// broadcast inside every node from that rank (ceil(lg G)(a_i + n b_i)). One node: binomial; one
// rank per node: binomial over the nodes.
Parts broadcast_hier(const Env& e, double n) {
  Parts t = node_binomial_whole(e, n, false);
  if (e.N > 1) t += static_cast<double>(ceil_lg(e.N)) * net(e, n, e.b_flow_1, Way::OneWay);
  return t;
}

// Hierarchical reduce, the reverse: binomial reduce inside every node (ceil(lg G)(a_i + n(b_i +
// g))), then binomial reduce across the nodes (ceil(lg N)(a_n + n / bw_flow(1) + n g)).
Parts reduce_hier(const Env& e, double n) {
  Parts t = node_binomial_whole(e, n, true);
  if (e.N > 1) {
    const double K = static_cast<double>(ceil_lg(e.N));
    t += K * net(e, n, e.b_flow_1, Way::OneWay);
    t.red += K * e.comb(n);
  }
  return t;
}

// broadcast direct (MPI's linear broadcast): the root posts p - 1 sends of n at once; inside the
// node they share its bandwidth, across nodes each is one flow and all share the node's NICs:
//   a + (p-1) n b on one tier.
Parts broadcast_direct(const Env& e, double n) {
  Parts in, out;
  // The root's last send waits for the p - 2 it posts before it; each receiver takes in one
  // message, so the receiving side's share of the overheads (overhead_receive_share) is not paid.
  // With more than one receiver the messages inside the node are one to many
  // (Topology::fan_out_scale).
  const double posted_before = static_cast<double>(e.p - 2);
  if (e.G > 1) {
    // The root's sends at intra_node.send_share of its rate, each receiver's one message at its
    // own, all of them within the node's bandwidth.
    const double out_share = std::max(e.topo->intra.send_share * static_cast<double>(e.G - 1), 1.0);
    in = {e.lat_i(n, Way::OneWay) + e.topo->intra.msg.queued_overhead_s(n, posted_before, 0),
          e.moved_i(n) / (e.p > 2 ? e.fan(n) : 1.0) *
              std::max(out_share * e.b_i, static_cast<double>(e.G - 1) * e.node_intra_b),
          0};
  }
  if (e.N > 1) {
    const double outside = static_cast<double>(e.p - e.G);
    out = {e.lat_n(n, Way::OneWay) + e.topo->network.msg.queued_overhead_s(n, posted_before, 0),
           e.moved_n(n) * std::max(1.0 / e.nic_bw, outside / e.node_bw), 0};
  }
  return slower(in, out);
}

// reduce direct (MPI's linear reduce): the root receives the p - 1 contributions one after another
// and combines each before the next: (p-1) (a + n b + n g).
Parts reduce_direct(const Env& e, double n) {
  const double inside = static_cast<double>(e.G - 1), outside = static_cast<double>(e.p - e.G);
  Parts t{inside * e.lat_i(n, Way::OneWay), inside * e.moved_i(n) * e.b_in(1), 0};
  if (e.N > 1) t += Parts{outside * e.lat_n(n, Way::OneWay), outside * e.moved_n(n) * e.b_flow_1, 0};
  // The root combines each contribution from Scratch in the step after it arrives (the first lands
  // in Output), and its own Input with the last one: one batch of 2n (Topology::local_op_scale).
  t.red = e.p == 2 ? e.red(n) : static_cast<double>(e.p - 3) * e.red(n) + e.red(2 * n);
  return t;
}

// sendrecv: rank r sends n to r + 1: a + n b; across nodes one flow per node crosses.
Parts sendrecv_direct(const Env& e, double n) {
  const Way w = ring_way(e.p);
  if (e.N == 1) return intra(e, n, w);
  Parts out = net(e, n, e.b_flow_1, w);
  return e.G == 1 ? out : slower(intra(e, n), out);
}

// alltoall pairwise: the published (p-1) a + n b. Step d (1..p-1) exchanges with r +- d; the
// exact traffic is n(p-1)/p (n/p per step), the published form charges n (n/(p-1) per step).
Parts alltoall_pairwise(const Env& e, double n) {
  return shift_all_distances(e, n / static_cast<double>(e.p - 1), 0);
}

// alltoall Bruck: step s sends the blocks whose index has bit s set to rank r + 2^s:
// ceil(lg p) a + (n/p) sum_s count_s b, count_s = #{j < p : bit s of j set}; lg p a + (n/2) lg p b
// for p = 2^k.
Parts alltoall_bruck(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = 0; s < K; ++s) {
    long long d = 1LL << s;
    long long count = (e.p >> (s + 1)) * d + std::max(0LL, (e.p & (2 * d - 1)) - d);
    t += shift_step(e, d, static_cast<double>(count) * block, 0, true);  // blocks packed by a copy
  }
  return t;
}

// ---- local copies ------------------------------------------------------------------------------
// The schedules (src/collectives) copy between a rank's buffers: a rank's own block into Output,
// its Input into the buffer it accumulates in, Bruck's rotations. Each copy costs its bytes at the
// memory bandwidth (Topology::memory_bw_Bps, times the working-set factor), over the
// local_op_scale factor of its own size (Env::cp), and delays the rank's next messages. What the
// slowest rank copies on the critical path, in seconds, per unpipelined algorithm (the pipelines
// carry their copies in their stages):
//  - n/p once: a rank's own block (allgather ring, recursive doubling, direct, hierarchical;
//    reduce-scatter pairwise and direct; alltoall pairwise and direct; broadcast recursive
//    doubling, whose root copies its block);
//  - n once: the accumulator (allreduce recursive doubling; reduce binomial, hierarchical), the
//    root's Output after its sends (broadcast binomial, direct, hierarchical); Rabenseifner and
//    recursive halving copy the half they keep, n/2, or with a fold the whole n first;
//  - a ring that reduces copies its own chunk before each combine: (p-1) copies of n/p (inside the
//    nodes for hierarchical allreduce; with one rank per node its one copy of n);
//  - Bruck rotates: rank i copies (p-i) and i blocks (the slowest rank's pair), and the alltoall
//    packs and unpacks the runs of blocks it sends each step, then places its p blocks one by one.

// The slowest rank's rotation: max over i of cp((p-i) b) + cp(i b). Without a local_op_scale
// curve that is cp(n); with one, every split up to p/2 is looked at (the sum is symmetric) on up to
// 32 ranks, and beyond, 16 splits evenly spread and those next to the curve's points.
double rotation(const Env& e, double block) {
  const double n = block * static_cast<double>(e.p);
  if (e.topo->local_op_scale.empty() || !(block > 0)) return e.cp(n);
  double most = e.cp(n);
  auto split = [&](long long i) {
    if (i < 1 || 2 * i > e.p) return;
    const double x = static_cast<double>(i) * block;
    most = std::max(most, e.cp(n - x) + e.cp(x));
  };
  const long long half = e.p / 2;
  if (half <= 16) {
    for (long long i = 1; i <= half; ++i) split(i);
    return most;
  }
  for (long long j = 1; j <= 16; ++j) split(j * half / 16);
  for (const LocalOpScale& pt : e.topo->local_op_scale) {
    const auto i = static_cast<long long>(static_cast<double>(pt.bytes) / block);
    for (long long c : {i, i + 1, e.p - i, e.p - i - 1}) split(c);
  }
  return most;
}

double copies(const Env& e, Collective c, Algorithm a, double n) {
  using A = Algorithm;
  using C = Collective;
  const double block = n / static_cast<double>(e.p);
  const bool pow2 = (e.p & (e.p - 1)) == 0;
  switch (a) {
    case A::Ring:
      // With channels, each channel's part of the chunk (e.C copies of block / C).
      if (c == C::AllReduce || c == C::ReduceScatter) return static_cast<double>(e.p - 1) * e.C * e.cp(block / e.C);
      return c == C::AllGather ? e.cp(block) : 0.0;
    case A::Hierarchical:
      if (c == C::AllReduce)  // with channels, each channel's part
        return e.G == 1 ? e.C * e.cp(n / e.C)
                        : static_cast<double>(e.G - 1) * e.C * e.cp(n / static_cast<double>(e.G) / e.C);
      return c == C::AllGather ? e.cp(block) : e.cp(n);  // broadcast, reduce: binomial's
    case A::RecursiveDoubling:
      return c == C::AllReduce ? e.cp(n) : e.cp(block);  // allgather; broadcast: the root's block
    case A::Rabenseifner: return e.cp(pow2 ? n / 2 : n);
    case A::RecursiveHalving: return e.cp(pow2 ? n / 2 : n) + e.cp(block);
    case A::Binomial: return e.cp(n);
    case A::Pairwise: return e.cp(block);
    case A::Direct:
      if (c == C::Broadcast) return e.cp(n);
      return c == C::Reduce || c == C::SendRecv ? 0.0 : e.cp(block);
    case A::Bruck: {
      if (c == C::AllGather) return e.cp(block) + rotation(e, block);
      // alltoall: step s packs the runs of blocks with bit s set (p >> (s+1) runs of 2^s blocks
      // and one shorter run) and unpacks them after it receives; then p single blocks.
      double t = rotation(e, block) + static_cast<double>(e.p) * e.cp(block);
      for (int s = 0; s < ceil_lg(e.p); ++s) {
        const long long d = 1LL << s, rest = std::max(0LL, (e.p & (2 * d - 1)) - d);
        t += 2 * (static_cast<double>(e.p >> (s + 1)) * e.cp(static_cast<double>(d) * block) +
                  e.cp(static_cast<double>(rest) * block));
      }
      return t;
    }
    default: return 0.0;
  }
}

Parts communication(const Env& e, Collective c, Algorithm a, Bytes bytes) {
  const double n = static_cast<double>(bytes);
  const double block = n / static_cast<double>(e.p);
  using A = Algorithm;
  switch (c) {
    case Collective::AllReduce:
      switch (a) {
        case A::Ring: return allreduce_ring(e, n);
        case A::Tree: return run_pipe(e, tree_pipe(e, c), n / e.C);
        case A::RecursiveDoubling: return allreduce_rd(e, n);
        case A::Rabenseifner: return allreduce_rabenseifner(e, n);
        case A::Hierarchical: return allreduce_hier(e, n);
        default: break;
      }
      break;
    case Collective::AllGather:
      switch (a) {
        case A::Ring: return allgather_ring(e, n);
        case A::RecursiveDoubling: return allgather_rd(e, n);
        case A::Bruck: return allgather_bruck(e, n);
        case A::Direct: return direct(e, block, false);
        case A::Hierarchical: return allgather_hier(e, n);
        default: break;
      }
      break;
    case Collective::ReduceScatter:
      switch (a) {
        case A::Ring: return reducescatter_ring(e, n);
        case A::RecursiveHalving: return reducescatter_rh(e, n);
        case A::Pairwise: return shift_all_distances(e, block, block);  // (p-1) a + n(p-1)/p (b + g)
        case A::Direct: return direct(e, block, true);
        default: break;
      }
      break;
    case Collective::Broadcast:
      switch (a) {
        case A::Ring: return run_pipe(e, chain_pipe(e, false), n);
        case A::Tree: return run_pipe(e, tree_pipe(e, c), n / e.C);
        case A::Binomial: return broadcast_binomial(e, n);
        case A::RecursiveDoubling: return broadcast_rd(e, n);
        case A::Hierarchical: return broadcast_hier(e, n);
        case A::Direct: return broadcast_direct(e, n);
        default: break;
      }
      break;
    case Collective::Reduce:
      switch (a) {
        case A::Ring: return run_pipe(e, chain_pipe(e, true), n);
        case A::Tree: return run_pipe(e, tree_pipe(e, c), n / e.C);
        case A::Binomial: return reduce_binomial(e, n);
        case A::Rabenseifner: return reduce_rabenseifner(e, n);
        case A::Hierarchical: return reduce_hier(e, n);
        case A::Direct: return reduce_direct(e, n);
        default: break;
      }
      break;
    case Collective::SendRecv:
      if (a == A::Direct) return sendrecv_direct(e, n);
      break;
    case Collective::AllToAll:
      switch (a) {
        case A::Pairwise: return alltoall_pairwise(e, n);
        case A::Bruck: return alltoall_bruck(e, n);
        case A::Direct: return direct(e, block, false);
        default: break;
      }
      break;
  }
  throw Error(std::string(to_string(a)) + " does not apply to " + std::string(to_string(c)));
}

// Messages, reductions and, for the unpipelined algorithms, the copies (the pipelines price theirs
// in their stages).
Parts hand_written(const Env& e, Collective c, Algorithm a, Bytes bytes) {
  Parts t = communication(e, c, a, bytes);
  if (!is_pipelined(c, a)) t.copy += copies(e, c, a, static_cast<double>(bytes));
  return t;
}

// ---- NCCL's model (src/graph/tuning.cc) --------------------------------------------------------
// time = latency + n / algbw. Ring: latency = base + (steps - interSteps) intraHop + interSteps
// interHop with steps = 2(p-1), interSteps = 2(nodes-1) for allreduce; p-1, nodes-1 for allgather,
// reducescatter, broadcast and reduce (the hops of the chain). busbw = the ring's bottleneck
// bandwidth (intra, or min(intra, node network) across nodes) times bw_fraction[protocol], where
// a fitted nccl.bus_bandwidth of the (algorithm, protocol) stands for intra x bw_fraction;
// algbw = busbw * p / steps' with steps' = 2(p-1) for allreduce, p-1 for allgather/reducescatter
// and p for broadcast/reduce (NCCL counts nRanks steps there, so algbw = busbw).
// Tree (allreduce only): latency = base + 2((p/nodes - 1) intraHop + log2i(nodes) interHop),
// algbw = busbw / 2. sendrecv and alltoall run as NCCL point-to-point: latency = base(ring) + one
// hop (network when nodes > 1), bandwidth of the direct algorithm above divided by bw_fraction.
constexpr int kRing = 0, kTree = 1;

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
    Parts d = c == Collective::SendRecv ? sendrecv_direct(e, n) : direct(e, n / p, false);
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

// applies(), as a table: closed_form() checks it on every call.
struct AppliesTable {
  bool v[kAllCollectives.size()][kAllAlgorithms.size()] = {};
};
const AppliesTable& applies_table() {
  static const AppliesTable table = [] {
    AppliesTable t;
    for (Collective c : kAllCollectives)
      for (Algorithm a : kAllAlgorithms) t.v[static_cast<int>(c)][static_cast<int>(a)] = applies(c, a);
    return t;
  }();
  return table;
}

// Why (c, a, proto) has no closed form on t, or nullptr.
const char* why_no_model(const Topology& t, Collective c, Algorithm a, Protocol proto) {
  auto ci = static_cast<std::size_t>(c), ai = static_cast<std::size_t>(a);
  if (ci >= kAllCollectives.size() || ai >= kAllAlgorithms.size() || !applies_table().v[ci][ai])
    return "the algorithm does not apply to this collective";
  if (a == Algorithm::Mpi) return "the MPI library's own algorithm has no closed form (measure it with `commsim run`)";
  bool nccl_model = is_nccl_algorithm(a) || proto != Protocol::None;
  if (proto != Protocol::None && !is_nccl_algorithm(a) && a != Algorithm::Ring && a != Algorithm::Tree)
    return "protocols LL/LL128/Simple apply only to ring, tree, nccl, nccl-ring and nccl-tree";
  if (proto != Protocol::None && a == Algorithm::Tree && c != Collective::AllReduce)
    return "NCCL's tree (and so a protocol with tree) exists for allreduce only";
  if (nccl_model && !t.nccl.present)
    return "the topology has no `nccl` constants, needed for NCCL's model and protocols";
  return nullptr;
}

[[noreturn]] void throw_query(const Topology& t, const CostQuery& q, const std::string& why) {
  std::string what = std::string(to_string(q.collective)) + " " + std::string(to_string(q.algorithm));
  if (q.protocol != Protocol::None) what += "/" + std::string(to_string(q.protocol));
  throw Error("cannot price " + what + " on topology '" + t.name + "' with " + std::to_string(q.nodes) + " node(s) x " +
              std::to_string(q.ranks_per_node) + " rank(s): " + why);
}

void check_query(const Topology& t, const CostQuery& q) {
  if (q.nodes < 1 || q.ranks_per_node < 1) throw_query(t, q, "nodes and ranks per node must be at least 1");
  if (static_cast<long long>(q.nodes) * q.ranks_per_node > INT_MAX) throw_query(t, q, "too many ranks");
  if (q.nodes > 1 && !t.network.present())
    throw_query(t, q, "the topology has no network (network.kind none), so it has a single node");
  if (t.max_nodes > 0 && q.nodes > t.max_nodes)
    throw_query(t, q, "the topology allows at most " + std::to_string(t.max_nodes) + " node(s) (max_nodes)");
  if (const char* why = why_no_model(t, q.collective, q.algorithm, q.protocol)) throw_query(t, q, why);
}

// call_s (the topology's call overhead) counts with the latency terms.
Cost to_cost(const Parts& x, Algorithm a, Protocol p, Seconds call_s = 0) {
  Cost c;
  c.latency_s = x.lat + call_s;
  c.bandwidth_s = x.bw;
  c.reduction_s = x.red;
  c.copy_s = x.copy;
  c.time_s = c.latency_s + x.bw + x.red + x.copy;
  c.algorithm = a;
  c.protocol = p;
  return c;
}

}  // namespace

bool has_closed_form(const Topology& topo, Collective c, Algorithm a, Protocol p) {
  return why_no_model(topo, c, a, p) == nullptr;
}

int default_channels(const Topology& topo, int nodes) {
  if (!topo.gpu || nodes <= 1 || !topo.network.present()) return 1;
  return std::min(kMaxChannels, 2 * topo.network.nics_per_node);
}

int channels_for(const Topology& topo, const CostQuery& q) {
  if (q.channels < 0 || q.channels > kMaxChannels)
    throw Error("channels must be 0 (the topology's default) or 1 to " + std::to_string(kMaxChannels) + ", got " +
                std::to_string(q.channels));
  if (!takes_channels(q.collective, q.algorithm)) return 1;
  return q.channels > 0 ? q.channels : default_channels(topo, q.nodes);
}

Cost closed_form(const Topology& topo, const CostQuery& q) {
  check_query(topo, q);
  Env e = make_env(topo, q.collective, q.nodes, q.ranks_per_node, q.bytes);
  e.C = channels_for(topo, q);
  const bool nccl_model = is_nccl_algorithm(q.algorithm) || q.protocol != Protocol::None;
  if (e.p == 1) {
    // One rank: nothing to communicate.
    Algorithm a = q.algorithm == Algorithm::Nccl ? Algorithm::NcclRing : q.algorithm;
    Protocol p = nccl_model && q.protocol == Protocol::None ? Protocol::Simple : q.protocol;
    return to_cost(Parts{}, a, p);
  }
  const Seconds call_s = topo.call_overhead_s;  // once per call of more than one rank
  if (!nccl_model) return to_cost(hand_written(e, q.collective, q.algorithm, q.bytes), q.algorithm, q.protocol, call_s);

  // NCCL's model: the requested protocol, or the fastest of LL / LL128 / Simple; Algorithm::Nccl
  // also chooses between ring and (allreduce only) tree.
  bool try_ring =
      q.algorithm == Algorithm::Ring || q.algorithm == Algorithm::NcclRing || q.algorithm == Algorithm::Nccl;
  bool try_tree =
      (q.algorithm == Algorithm::Tree || q.algorithm == Algorithm::NcclTree || q.algorithm == Algorithm::Nccl) &&
      q.collective == Collective::AllReduce;
  Parts best;
  double best_t = INFINITY;
  Algorithm best_a = q.algorithm;
  Protocol best_p = q.protocol;
  for (int algo = kRing; algo <= kTree; ++algo) {
    if (!(algo == kRing ? try_ring : try_tree)) continue;
    for (Protocol pr : kNcclProtocols) {
      if (q.protocol != Protocol::None && pr != q.protocol) continue;
      Parts x = nccl_parts(topo, e, q.collective, algo, pr, q.bytes);
      if (x.total() < best_t) {
        best_t = x.total();
        best = x;
        best_p = pr;
        best_a =
            q.algorithm == Algorithm::Nccl ? (algo == kRing ? Algorithm::NcclRing : Algorithm::NcclTree) : q.algorithm;
      }
    }
  }
  return to_cost(best, best_a, best_p, call_s);
}

int tree_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes, int channels) {
  if (c != Collective::AllReduce && c != Collective::Broadcast && c != Collective::Reduce) return 1;
  const CostQuery q{c, Algorithm::Tree, Protocol::None, nodes, ranks_per_node, bytes, channels};
  check_query(topo, q);
  Env e = make_env(topo, c, nodes, ranks_per_node, bytes);
  if (e.p == 1) return 1;
  e.C = channels_for(topo, q);
  return best_pipe(e, tree_pipe(e, c), static_cast<double>(bytes) / e.C).k;
}

int ring_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes) {
  if (c != Collective::Broadcast && c != Collective::Reduce) return 1;
  check_query(topo, CostQuery{c, Algorithm::Ring, Protocol::None, nodes, ranks_per_node, bytes});
  Env e = make_env(topo, c, nodes, ranks_per_node, bytes);
  if (e.p == 1) return 1;
  return best_pipe(e, chain_pipe(e, c == Collective::Reduce), static_cast<double>(bytes)).k;
}

bool is_pipelined(Collective c, Algorithm a) {
  const bool bcast_or_reduce = c == Collective::Broadcast || c == Collective::Reduce;
  return (a == Algorithm::Tree && (c == Collective::AllReduce || bcast_or_reduce)) ||
         (a == Algorithm::Ring && bcast_or_reduce);
}

Bytes pipeline_chunk_bytes(const Topology& topo, const CostQuery& q) {
  if (q.protocol != Protocol::None || !is_pipelined(q.collective, q.algorithm)) return 0;
  auto ceil_div = [](Bytes a, Bytes b) { return b == 0 ? a : (a + b - 1) / b; };
  const int k = q.algorithm == Algorithm::Tree
                    ? tree_pipeline_chunks(topo, q.collective, q.nodes, q.ranks_per_node, q.bytes, q.channels)
                    : ring_pipeline_chunks(topo, q.collective, q.nodes, q.ranks_per_node, q.bytes);
  // A channel's part of the data, in k chunks.
  const Bytes part = ceil_div(q.bytes, static_cast<Bytes>(channels_for(topo, q)));
  return ceil_div(part, static_cast<Bytes>(k));
}

}  // namespace commsim
