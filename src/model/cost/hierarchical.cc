// Hierarchical two-level algorithms (src/collectives/hierarchical.cc): allreduce and allgather
// made of rings, broadcast and reduce of binomial trees.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

namespace {

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

// Binomial broadcast (reduced: reduce) of n bytes on one node of G ranks, all nodes at once:
// ceil(lg G)(a_i + n b_i [+ n g]); in the step at distance d about G / (2d) ranks of a node send.
// Which steps send written data is as in binomial_broadcast and binomial_reduce; a broadcast
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

}  // namespace

// Hierarchical allreduce: intra-node ring reduce-scatter (G ranks, n), inter-node ring allreduce
// among the ranks with the same local index (nodes ranks, n/G each, G rings at once, one flow per
// ring: bw_flow(G)), intra-node ring allgather:
//   2(G-1) a_i + 2n(G-1)/G b_i + n(G-1)/G g
//   + 2(N-1) (a_n + (n/(GN)) / bw_flow(G)) + (n/G)(N-1)/N g.
// One tier: equals ring. With C channels every message is C messages of 1/C of it, and G C flows
// leave a node (hier_intra, hier_net).
Parts hierarchical_allreduce(const Env& e, double n) {
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

// Hierarchical allgather: inter-node ring allgather among the ranks with the same local index
// (each ends with the N blocks of its index; G rings at once, one flow each: bw_flow(G)), then
// intra-node ring allgather of those n/G bytes per rank:
//   (N-1)(a_n + (n/p) / bw_flow(G)) + (G-1)(a_i + (n/G) b_i).   One tier: equals ring.
Parts hierarchical_allgather(const Env& e, double n) {
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

// Hierarchical broadcast, as the schedule: binomial broadcast across the nodes among the ranks
// with the root's local index (one flow per node: ceil(lg N)(a_n + n / bw_flow(1))), then binomial
// broadcast inside every node from that rank (ceil(lg G)(a_i + n b_i)). One node: binomial; one
// rank per node: binomial over the nodes.
Parts hierarchical_broadcast(const Env& e, double n) {
  Parts t = node_binomial_whole(e, n, false);
  if (e.N > 1) t += static_cast<double>(ceil_lg(e.N)) * net(e, n, e.b_flow_1, Way::OneWay);
  return t;
}

// Hierarchical reduce, the reverse: binomial reduce inside every node (ceil(lg G)(a_i + n(b_i +
// g))), then binomial reduce across the nodes (ceil(lg N)(a_n + n / bw_flow(1) + n g)).
Parts hierarchical_reduce(const Env& e, double n) {
  Parts t = node_binomial_whole(e, n, true);
  if (e.N > 1) {
    const double K = static_cast<double>(ceil_lg(e.N));
    t += K * net(e, n, e.b_flow_1, Way::OneWay);
    t.red += K * e.comb(n);
  }
  return t;
}

}  // namespace commsim::closed_forms
