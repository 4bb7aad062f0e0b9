// Pairwise exchange (src/collectives/pairwise.cc): reducescatter and alltoall.
#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {

// reducescatter pairwise: (p-1) a + n(p-1)/p (b + g).
Parts pairwise_reducescatter(const Env& e, double n) {
  const double block = n / static_cast<double>(e.p);
  return shift_all_distances(e, block, block);
}

// alltoall pairwise: the published (p-1) a + n b. Step d (1..p-1) exchanges with r +- d; the
// exact traffic is n(p-1)/p (n/p per step), the published form charges n (n/(p-1) per step).
Parts pairwise_alltoall(const Env& e, double n) {
  return shift_all_distances(e, n / static_cast<double>(e.p - 1), 0);
}

}  // namespace commsim::closed_forms
