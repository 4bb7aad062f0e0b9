// Recursive halving (src/collectives/recursive_halving.cc): reducescatter.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// reducescatter recursive halving: step s exchanges and reduces half of what is left with the
// rank at distance p/2^(s+1): lg p a + n(p-1)/p (b + g) for p = 2^k. Otherwise the extra ranks
// first send all n to a partner (a + n(b + g)), the p' ranks halve (step s with g_s = p'/2^(s+1)
// carries the blocks of g_s ranks of which min(g_s, r) own two), and the partners send the extras
// their block (a + (n/p) b):
//   (m+2) a + (n + (n/p) sum_s (g_s + min(g_s, r)) + n/p) b + (n + (n/p) sum_s (g_s + min(g_s, r))) g.
Parts recursive_halving_reducescatter(const Env& e, double n) {
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

}  // namespace commsim::closed_forms
