// Recursive doubling (src/collectives/recursive_doubling.cc): allreduce, allgather, and broadcast
// as a binomial scatter and a recursive-doubling allgather.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

namespace {

// allgather recursive doubling: step s (distance 2^s) exchanges 2^s blocks: lg p a + n(p-1)/p b
// for p = 2^k. Otherwise the r extra ranks first send their block to a partner (a + (n/p) b); the
// p' ranks run recursive doubling, where the largest message of step s carries the blocks of 2^s
// ranks of which min(2^s, r) hold two blocks; then the extra ranks receive all but their own block
// (a + n(p-1)/p b; two messages, the second after a posting overhead):
//   (m+2) a + (n/p)(1 + sum_{s<m} (2^s + min(2^s, r)) + (p-1)) b.
// `received`: the ranks' blocks were received before (the allgather of recursive_doubling_broadcast), so even the
// first messages forward written data; otherwise a rank's first message is its own block, sent
// from Input.
Parts allgather_rd(const Env& e, double n, bool received) {
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

}  // namespace

// allreduce recursive doubling: lg p (a + n b + n g) for p = 2^k. Otherwise (MPICH's fold) the r
// extra ranks first send their n to a partner (a + nb + ng), the p' ranks run recursive
// doubling, and the partners send the result back (a + nb):
//   (m+2) a + (m+2) n b + (m+1) n g.
// Across tiers the fold steps are priced as distance-1 steps (one-way) and the core steps at
// distance 2^s.
Parts recursive_doubling_allreduce(const Env& e, double n) {
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

Parts recursive_doubling_allgather(const Env& e, double n) {
  return allgather_rd(e, n, false);
}

// broadcast recursive doubling (van de Geijn): binomial scatter + recursive-doubling allgather:
// 2 lg p a + 2n(p-1)/p b for p = 2^k; otherwise scatter + the folded allgather above.
Parts recursive_doubling_broadcast(const Env& e, double n) {
  return binomial_scatter(e, n) + allgather_rd(e, n, true);
}

}  // namespace commsim::closed_forms
