// Direct (src/collectives/direct.cc): every rank sends to its peers at once.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// allgather, reducescatter and alltoall direct: every rank sends a block to each of the others at
// once (direct() in shape.h), reducescatter combining them.
Parts direct_allgather(const Env& e, double n) {
  return direct(e, n / static_cast<double>(e.p), false);
}
Parts direct_reducescatter(const Env& e, double n) {
  return direct(e, n / static_cast<double>(e.p), true);
}
Parts direct_alltoall(const Env& e, double n) {
  return direct(e, n / static_cast<double>(e.p), false);
}

// broadcast direct (MPI's linear broadcast): the root posts p - 1 sends of n at once; inside the
// node they share its bandwidth, across nodes each is one flow and all share the node's NICs:
//   a + (p-1) n b on one tier.
Parts direct_broadcast(const Env& e, double n) {
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
Parts direct_reduce(const Env& e, double n) {
  const double inside = static_cast<double>(e.G - 1), outside = static_cast<double>(e.p - e.G);
  Parts t{inside * e.lat_i(n, Way::OneWay), inside * e.moved_i(n) * e.b_in(1), 0};
  if (e.N > 1) t += Parts{outside * e.lat_n(n, Way::OneWay), outside * e.moved_n(n) * e.b_flow_1, 0};
  // The root combines each contribution from Scratch in the step after it arrives (the first lands
  // in Output), and its own Input with the last one: one batch of 2n (Topology::local_op_scale).
  t.red = e.p == 2 ? e.red(n) : static_cast<double>(e.p - 3) * e.red(n) + e.red(2 * n);
  return t;
}

// sendrecv: rank r sends n to r + 1: a + n b; across nodes one flow per node crosses.
Parts direct_sendrecv(const Env& e, double n) {
  const Way w = ring_way(e.p);
  if (e.N == 1) return intra(e, n, w);
  Parts out = net(e, n, e.b_flow_1, w);
  return e.G == 1 ? out : slower(intra(e, n), out);
}

}  // namespace commsim::closed_forms
