// Rings (src/collectives/ring.cc): allreduce, allgather and reducescatter around the ring, with
// channels, and the pipelined chain of broadcast and reduce.
#include <algorithm>

#include "model/cost/closed_forms.h"
#include "model/cost/pipeline.h"

namespace commsim::closed_forms {

namespace {

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

}  // namespace

// allreduce ring: 2(p-1)a + 2n(p-1)/p b + n(p-1)/p g.
Parts ring_allreduce(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, 2 * (p - 1), 2 * n * (p - 1) / p, n * (p - 1) / p);
}

// allgather ring: (p-1) a + n(p-1)/p b.
Parts ring_allgather(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, p - 1, n * (p - 1) / p, 0);
}

// reducescatter ring: (p-1) a + n(p-1)/p (b + g).
Parts ring_reducescatter(const Env& e, double n) {
  double p = static_cast<double>(e.p);
  return ring(e, p - 1, n * (p - 1) / p, n * (p - 1) / p);
}

// broadcast and reduce: the pipelined chain.
Parts ring_broadcast(const Env& e, double n) {
  return run_pipe(e, chain_pipe(e, false), n);
}
Parts ring_reduce(const Env& e, double n) {
  return run_pipe(e, chain_pipe(e, true), n);
}

}  // namespace commsim::closed_forms

namespace commsim {

int ring_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes) {
  using namespace closed_forms;  // check_query, make_env and the pipeline of this file
  if (c != Collective::Broadcast && c != Collective::Reduce) return 1;
  check_query(topo, CostQuery{c, Algorithm::Ring, Protocol::None, nodes, ranks_per_node, bytes});
  Env e = make_env(topo, c, nodes, ranks_per_node, bytes);
  if (e.p == 1) return 1;
  return best_pipe(e, chain_pipe(e, c == Collective::Reduce), static_cast<double>(bytes)).k;
}

}  // namespace commsim
