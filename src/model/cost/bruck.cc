// Bruck (src/collectives/bruck.cc): allgather and alltoall.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// allgather Bruck: step s (s < K) sends min(2^s, p - 2^s) blocks to rank r - 2^s:
// ceil(lg p) a + n(p-1)/p b.
Parts bruck_allgather(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = 0; s < K; ++s) {
    long long d = 1LL << s;
    // A step of one block sends the rank's own, from Input; larger ones forward received blocks.
    const long long blocks = std::min(d, e.p - d);
    t += shift_step(e, d, static_cast<double>(blocks) * block, 0, blocks > 1);
  }
  return t;
}

// alltoall Bruck: step s sends the blocks whose index has bit s set to rank r + 2^s:
// ceil(lg p) a + (n/p) sum_s count_s b, count_s = #{j < p : bit s of j set}; lg p a + (n/2) lg p b
// for p = 2^k.
Parts bruck_alltoall(const Env& e, double n) {
  int K = ceil_lg(e.p);
  double block = n / static_cast<double>(e.p);
  Parts t;
  for (int s = 0; s < K; ++s) {
    long long d = 1LL << s;
    long long count = (e.p >> (s + 1)) * d + std::max(0LL, (e.p & (2 * d - 1)) - d);
    t += shift_step(e, d, static_cast<double>(count) * block, 0, true);  // blocks packed by a copy
  }
  return t;
}

}  // namespace commsim::closed_forms
