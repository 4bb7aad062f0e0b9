// Pairwise exchange (Thakur, Rabenseifner, Gropp 2005): p - 1 steps, in step s each rank sends one
// block to one peer and receives one block from another. For p a power of two the peer is
// rank ^ s (both ways); otherwise rank i sends to (i + s) mod p and receives from (i - s) mod p.
//
// reducescatter  each rank sends the peer its input block for that peer and combines the block it
//                receives into its Output (its own input block is copied there first).
// alltoall       each rank sends the peer its Input block for that peer and receives the peer's
//                block for it into Output.
#include "collectives/phases.h"

namespace commsim {
namespace {

struct Peers {
  int to, from;
};

Peers pairwise_peers(int rank, int step, int p) {
  if ((p & (p - 1)) == 0) return {rank ^ step, rank ^ step};
  return {(rank + step) % p, (rank - step + p) % p};
}

}  // namespace

void pairwise_reducescatter(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count();
  const Span out = span(BufferId::Output, 0, block);
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, i * block, block), out);
    for (int s = 1; s < p; ++s) {
      const Peers peer = pairwise_peers(i, s, p);
      b.send(i, s - 1, peer.to, span(BufferId::Input, peer.to * block, block));
      b.recv_reduce(i, s - 1, peer.from, out);
    }
  }
  b.advance(iota_ranks(p), p - 1);
}

void pairwise_alltoall(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, i * block, block), span(BufferId::Output, i * block, block));
    for (int s = 1; s < p; ++s) {
      const Peers peer = pairwise_peers(i, s, p);
      b.send(i, s - 1, peer.to, span(BufferId::Input, peer.to * block, block));
      b.recv(i, s - 1, peer.from, span(BufferId::Output, peer.from * block, block));
    }
  }
  b.advance(iota_ranks(p), p - 1);
}

}  // namespace commsim
