// Rabenseifner (src/collectives/rabenseifner.cc): allreduce and reduce.
#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// Rabenseifner allreduce: reduce-scatter by recursive halving (distance 1, 2, 4, ... with n/2,
// n/4, ... so the large exchanges stay near), then allgather by recursive doubling in the reverse
// order: 2 lg p a + 2n(p-1)/p b + n(p-1)/p g for p = 2^k. Otherwise, as the schedule, the fold
// (a + nb + ng), the core on the p' ranks, whose halves are those of n split p' ways, and the
// unfold (a + nb):
//   (2m+2) a + (2 + 2(p'-1)/p') n b + (1 + (p'-1)/p') n g.
// (The published form, Thakur et al. 2005, charges the core n(p-1)/p, as if its p' ranks split n
// p ways: a little more bandwidth, and messages just above a protocol limit where the
// schedule's are at it.)
Parts rabenseifner_allreduce(const Env& e, double n) {
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

// reduce Rabenseifner (as the schedule: ranks counted from the root): fold-in of the r extra
// ranks (a + n(b + g)), reduce-scatter by recursive halving among the p' = 2^m core ranks with
// distances halving (n/2, n/4, ...: m a + n(p'-1)/p' (b + g)), binomial gather of the p' chunks to
// the root among the p' (step s sends 2^s chunks of n/p' at distance 2^s: m a + n(p'-1)/p' b):
//   2 lg p a + 2n(p-1)/p b + n(p-1)/p g for p = 2^k;
//   (2m + 1) a + (1 + 2(p'-1)/p') n b + (1 + (p'-1)/p') n g otherwise.
Parts rabenseifner_reduce(const Env& e, double n) {
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

}  // namespace commsim::closed_forms
