// Binomial trees rooted at the root, any rank count (MPICH's MPIR_Bcast_binomial and
// MPIR_Reduce_binomial). Positions are counted from the root (relative rank v = (rank - root) mod p)
// and K = ceil(lg p) steps run:
//   broadcast  in step s (mask = 2^(K-1-s)) every v that is a multiple of 2*mask and holds the data
//              sends it to v + mask;
//   reduce     in step s (mask = 2^s) every v that is an odd multiple of mask sends its partial sum
//              to v - mask, which combines it with its own.
// Each rank sends or receives the whole buffer in each step it takes part in; on the critical path
// that is K messages of n bytes.
#include "collectives/phases.h"

namespace commsim {
void binomial_broadcast(ScheduleBuilder& b, const std::vector<int>& group, int root_pos, const Span& src,
                        const Span& dst) {
  const std::vector<int> g = rotated(group, root_pos);
  const int m = static_cast<int>(g.size());
  const int steps = ceil_log2(m);
  for (int s = 0; s < steps; ++s) {
    const int mask = 1 << (steps - 1 - s);
    for (int v = 0; v + mask < m; v += 2 * mask) {
      b.send(g[v], s, g[v + mask], v == 0 ? src : dst);
      b.recv(g[v + mask], s, g[v], dst);
    }
  }
  // The root's own copy after its sends, off the tree's critical path.
  b.copy(g[0], steps, src, dst);
  b.advance(g, steps + 1);
}

void binomial_reduce(ScheduleBuilder& b, const std::vector<int>& group, int root_pos, const Span& own,
                     const Span& acc) {
  const std::vector<int> g = rotated(group, root_pos);
  const int m = static_cast<int>(g.size());
  const int steps = ceil_log2(m);
  std::vector<bool> in_acc(m, false);  // whether v's partial sum is in acc yet
  for (int s = 0; s < steps; ++s) {
    const int mask = 1 << s;
    for (int v = mask; v < m; v += 2 * mask) {
      const int parent = v - mask;
      b.send(g[v], s, g[parent], in_acc[v] ? acc : own);
      if (!in_acc[parent]) b.copy(g[parent], s, own, acc);
      b.recv_reduce(g[parent], s, g[v], acc);
      in_acc[parent] = true;
    }
  }
  if (!in_acc[0]) b.copy(g[0], steps, own, acc);
  b.advance(g, steps + 1);
}

void binomial_broadcast(ScheduleBuilder& b) {
  const std::uint64_t n = b.count();
  binomial_broadcast(b, iota_ranks(b.nranks()), b.request().root, span(BufferId::Input, 0, n),
                     span(BufferId::Output, 0, n));
}

void binomial_reduce(ScheduleBuilder& b) {
  const std::uint64_t n = b.count();
  binomial_reduce(b, iota_ranks(b.nranks()), b.request().root, span(BufferId::Input, 0, n),
                  span(BufferId::Output, 0, n));
}

}  // namespace commsim
