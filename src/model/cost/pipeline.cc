// Pipelines (pipeline.h): the time of k chunks, and the best k.
#include "model/cost/pipeline.h"

#include <algorithm>

namespace commsim::closed_forms {

Stage intra_stage(const Env& e, double b_mult, double g, double msg, double f, bool written) {
  return {e.a_i,
          b_mult * e.b_in(f),
          g,
          e.eager_i,
          &e.topo->intra.msg,
          msg,
          !e.topo->message_scale.empty(),
          written && !e.topo->written_scale.empty()};
}

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
      t.lat +=
          static_cast<double>(P.ph[i].S_i) * (single - si.mc->queued_overhead_s(m, si.sends_before, si.recvs_before));
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
    t.lat -= P.tree_one_way_steps * (P.ph[0].S_n > 0 ? save_n * latency(P.ph[0].sn) : save_i * latency(P.ph[0].si));
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

double pipe_senders(const Env& e) {
  return static_cast<double>(e.N == 1 ? e.p - 1 : e.G);
}

}  // namespace commsim::closed_forms

namespace commsim {

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
