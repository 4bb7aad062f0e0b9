#pragma once
// The vocabulary of the closed forms (model/cost/cost.h), internal to src/model/cost: the parts
// of a cost, what one query prices (Env), and the steps the algorithms are made of.
//
// Notation: p = nodes * G ranks (G = ranks per node, placed in blocks: ranks 0..G-1 on node 0,
// ...), n = bytes in nccl-tests' meaning, a/b = latency (s) and inverse bandwidth (s/B) of the tier
// a message crosses, g = 1 / reduce_bw. lg = log2, m = floor(lg p), p' = 2^m, r = p - p' (ranks
// left over when p is not a power of two), K = ceil(lg p).
//
// On one tier (nodes == 1, or G == 1) every formula of the algorithm files (closed_forms.h) is the
// published one (Thakur, Rabenseifner & Gropp 2005) with that tier's a and b. Across tiers each
// step is priced at the tier its messages cross: a step where some messages cross the network
// pays the network latency, a step where only some do costs max(intra-node step, network step).
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
// those it sends across the network. C = 1 is the formulas above unchanged. NCCL's two-algorithm
// model (nccl.cc: the protocols of ring and tree) keeps NCCL's own assumption: a ring's traffic is
// spread over all NICs of a node, min(intra_bw, node_bw).
//
// A node whose ranks use only some of its GPUs (G below gpus_per_node) reaches only the NICs next
// to those GPUs: node_bw counts ceil(nics x G / gpus_per_node) of them (make_env).
//
// Local copies (copies.cc): the copies each schedule makes on its slowest
// rank's critical path, at device.memory_bandwidth, in Cost::copy_s.
//
// Optional terms (configs/topologies/README.md), off unless the topology sets them:
//  - intra_node.node_bandwidth: the f ranks of a node moving m bytes each inside it at once get
//    min(intra_bw, node_bandwidth / f) each; f is known per step of every algorithm;
//  - eager_limit / rendezvous_latency (per tier): a message above the limit pays the rendezvous
//    latency instead of the tier's latency; inline_limit / inline_latency: a message up to that
//    limit pays the inline latency;
//  - message_overhead (per tier): a round that posts q messages at once (direct; the two of a
//    folded allgather's fold-out) pays (q - 1) * message_overhead on top (rendezvous_overhead for messages above the
//    eager limit, inline_overhead for messages up to the inline limit), as overhead_receive_share splits it between the
//    sending and the receiving side; the double tree's steps wait for the average overheads of its schedule's
//    (Stage::sends_before);
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
#include <bit>
#include <cmath>
#include <cstdint>

#include "model/cost/cost.h"

namespace commsim::closed_forms {

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
  double a_i = 0, b_i = 0;                        // intra-node tier: s, s/B
  double a_n = 0;                                 // network latency, s
  double intra_bw = 0, nic_bw = 0, node_bw = 0;   // B/s
  double g = 0;                                   // s per byte reduced
  double c = 0;                                   // s per byte copied locally (memory bandwidth)
  const Topology* topo = nullptr;                 // for local_op_scale
  double node_intra_bw = 0;                       // intra_node.node_bandwidth, 0 = unlimited
  double node_intra_b = 0;                        // 1 / node_intra_bw (0 when unlimited)
  double eager_i = INFINITY, eager_n = INFINITY;  // eager limits (B)
  double C = 1;                                   // channels (ring and tree; 1 for the others)

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
Env make_env(const Topology& t, Collective c, int nodes, int ranks_per_node, Bytes bytes);

// ---- steps (steps.cc) ---------------------------------------------------------------------------

// A step inside a node: m bytes per rank, f ranks of the node moving data at once; `written`: the
// messages carry data their senders wrote earlier in the collective (forwarded, combined or
// copied; Topology::written_scale). Where some senders of a step forward and others send
// untouched data, the step counts as written: the slowest message ends the step.
Parts intra(const Env& e, double m, double f, Way w = Way::Shift, bool written = false);
// All ranks of the node active (G of them; p on one node).
Parts intra(const Env& e, double m, Way w = Way::Shift, bool written = false);
Parts net(const Env& e, double m, double b, Way w = Way::Shift);
// A ring of q ranks: each sends to its successor; on two ranks that is an exchange.
Way ring_way(long long q);
// One step of a recursive-doubling-like pattern: rank r exchanges with r XOR d (binomial trees
// too: a sender r is a multiple of 2d and sends to r + d = r XOR d, one-way). With block
// placement, every message stays inside a node when 2d divides G, every message crosses when
// d >= G, otherwise some do. f_all / f_some: flows leaving a node when all / some messages cross.
// f_one_node: the ranks that send at once when all are on one node (the node bandwidth's share).
Parts xor_step(const Env& e, long long d, double m, double m_reduced, double f_all, double f_some, Way w, bool written,
               double f_one_node, bool on_arrival = true);
// p' = 2^floor(lg p): the ranks of a power-of-two algorithm's core steps; p - p' the ranks its
// fold leaves out.
double core_ranks(const Env& e);
// Every rank of the power-of-two core active (recursive doubling/halving): all G cross, or at most
// 2d per node (d on each side of a node boundary); on one node the p' core ranks send at once.
// `one_node_senders`: on one node, the node's bytes of the step in messages of m bytes (0: the p'
// core ranks'). After a fold the core's messages differ in size (m is the largest): the node
// moves fewer bytes than p' messages of m.
Parts xor_all(const Env& e, long long d, double m, double m_reduced, bool written, double one_node_senders = 0,
              bool on_arrival = true);
// The core step of a folded recursive doubling or halving over groups of g members: a member sends
// the blocks of g members, min(g, r) of which hold two (a folded-in rank's too), so the largest
// message carries g + min(g, r) blocks, and the p' members together g p' + g r = g p blocks. In
// messages of the largest size: g p / (g + min(g, r)).
double folded_core_senders(const Env& e, long long g, long long r);
// The fold of a power-of-two algorithm on p' = 2^floor(lg p) ranks (MPICH's): the r extra ranks
// send to a partner at distance 1, or get the result back from it. One-way, priced as a
// distance-1 step of every rank; on one node r ranks send at once.
Parts xor_fold(const Env& e, double m, double m_reduced, bool written);
// Binomial tree step: senders are 2d apart, so at most one per node crosses, and about
// G / (2d) of a node's ranks send inside it. Its messages are one-way. `ranks`: the ranks the tree
// spans on one node (0: all p; the gather among a fold's core: p').
Parts xor_tree(const Env& e, long long d, double m, double m_reduced, bool written, long long ranks = 0);
// One step of a shift pattern: every rank sends to r + d (mod p). The ring distance is
// min(d, p - d); when it is at least G every message crosses (G flows per node), otherwise that
// many ranks per node cross and the rest stay inside. At d = p/2 the partners exchange.
Parts shift_step(const Env& e, long long d, double m, double m_reduced, bool written);
// Pairwise exchange, steps d = 1..p-1, with the schedule's partners: rank ^ d when p is a power of
// two (with block placement and G a power of two, steps d < G stay inside the node and the other
// p - G all cross, G flows per node), rank + d otherwise: the sum of shift_step(d), without a loop
// over p: the distances 1..G-1 occur twice each (d and p - d), the other p - 1 - 2(G-1) steps all
// cross.
// Every step is an exchange with the XOR partners; with r + d, only d = p/2 (p even) is.
Parts shift_all_distances(const Env& e, double m, double m_reduced);
// Every rank sends one block of `block` bytes to each of the p-1 others at once: the G-1 inside
// the node share its intra-node link, the p-G outside share its NIC bandwidth
// (min(node_bw / G, (p - G) * nic_bw) per rank); both proceed together. One tier:
// a + (p-1) block b (+ (p-1) block g when the blocks are reduced).
Parts direct(const Env& e, double block, bool reduced);

// ---- the query (closed_form.cc) -----------------------------------------------------------------

// Throws Error when closed_form() cannot price q on t (has_closed_form, node counts, max_nodes).
void check_query(const Topology& t, const CostQuery& q);
// call_s (the topology's call overhead) counts with the latency terms.
Cost to_cost(const Parts& x, Algorithm a, Protocol p, Seconds call_s = 0);

}  // namespace commsim::closed_forms
