// Binomial trees (src/collectives/binomial.cc): broadcast, reduce, and the scatter of the
// recursive-doubling broadcast.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// broadcast binomial: ceil(lg p)(a + n b); the root sends first to distance 2^(K-1), then halves.
Parts binomial_broadcast(const Env& e, double n) {
  int K = ceil_lg(e.p);
  Parts t;
  // At distance d the root sends from Input; the ranks that received earlier forward, from 2d on.
  for (int s = K - 1; s >= 0; --s) t += xor_tree(e, 1LL << s, n, 0, 3 * (1LL << s) < e.p);
  return t;
}

// Binomial scatter from rank 0: step with distance d = 2^(K-1), ..., 1 sends the receiver's
// subtree, min(d, p - d) blocks: ceil(lg p) a + n(p-1)/p b.
Parts binomial_scatter(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = K - 1; s >= 0; --s) {
    long long d = 1LL << s;
    t += xor_tree(e, d, static_cast<double>(std::min(d, e.p - d)) * block, 0, 3 * d < e.p);
  }
  return t;
}

// reduce binomial: ceil(lg p)(a + n b + n g), distance 1 first.
Parts binomial_reduce(const Env& e, double n) {
  int K = ceil_lg(e.p);
  Parts t;
  // At distance d >= 2 a sender sends what it combined, unless it had no child (d + 1 >= p).
  for (int s = 0; s < K; ++s) t += xor_tree(e, 1LL << s, n, n, s > 0 && (1LL << s) + 1 < e.p);
  return t;
}

}  // namespace commsim::closed_forms
