// The environment of a query and the steps the closed forms are made of (shape.h).
#include <algorithm>

#include "model/cost/shape.h"

namespace commsim::closed_forms {

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
  e.node_bw = node_network_bw_Bps(t, ranks_per_node);
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

Parts intra(const Env& e, double m, double f, Way w, bool written) {
  return {e.lat_i(m, w), e.moved_i(m, written) * e.b_in(f), 0};
}

Parts intra(const Env& e, double m, Way w, bool written) {
  return intra(e, m, static_cast<double>(e.G), w, written);
}

Parts net(const Env& e, double m, double b, Way w) {
  return {e.lat_n(m, w), e.moved_n(m) * b, 0};
}

Way ring_way(long long q) {
  return q == 2 ? Way::Exchange : Way::Shift;
}

Parts xor_step(const Env& e, long long d, double m, double m_reduced, double f_all, double f_some, Way w, bool written,
               double f_one_node, bool on_arrival) {
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

double core_ranks(const Env& e) {
  return static_cast<double>(std::bit_floor(static_cast<unsigned long long>(e.p)));
}

Parts xor_all(const Env& e, long long d, double m, double m_reduced, bool written, double one_node_senders,
              bool on_arrival) {
  return xor_step(e, d, m, m_reduced, static_cast<double>(e.G), static_cast<double>(std::min(e.G, 2 * d)),
                  Way::Exchange, written, one_node_senders > 0 ? one_node_senders : core_ranks(e), on_arrival);
}

double folded_core_senders(const Env& e, long long g, long long r) {
  return static_cast<double>(g * e.p) / static_cast<double>(g + std::min(g, r));
}

Parts xor_fold(const Env& e, double m, double m_reduced, bool written) {
  return xor_step(e, 1, m, m_reduced, static_cast<double>(e.G), static_cast<double>(std::min(e.G, 2LL)), Way::OneWay,
                  written, static_cast<double>(e.p) - core_ranks(e));
}

Parts xor_tree(const Env& e, long long d, double m, double m_reduced, bool written, long long ranks) {
  if (e.node_intra_bw > 0 && (e.N == 1 || (d < e.G && e.G % (2 * d) == 0))) {
    const long long span = e.N == 1 ? (ranks > 0 ? ranks : e.p) : e.G;
    Parts s = intra(e, m, static_cast<double>(std::max(1LL, (span - d + 2 * d - 1) / (2 * d))), Way::OneWay, written);
    s.red = e.comb(m_reduced);
    return s;
  }
  return xor_step(e, d, m, m_reduced, 1, 1, Way::OneWay, written, static_cast<double>(e.G));
}

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

}  // namespace commsim::closed_forms

namespace commsim {

BytesPerSecond node_network_bw_Bps(const Topology& t, int ranks_per_node) {
  if (!t.network.present()) return 0.0;
  const BytesPerSecond all = t.network.node_bw_Bps();
  if (!t.gpu || ranks_per_node >= t.ranks_per_node || t.network.nics_per_node <= 1) return all;
  const long long nics = t.network.nics_per_node;
  const long long used = std::max(1LL, (nics * ranks_per_node + t.ranks_per_node - 1) / t.ranks_per_node);
  return all * static_cast<double>(used) / static_cast<double>(nics);
}

}  // namespace commsim
