// Direct algorithms: every transfer posted in one step, each rank talking to every other rank at
// once (the transfers of a step share the rank's bandwidth).
//
// allgather      rank i sends its block to every rank and receives every block into Output.
// reducescatter  rank i sends Input block j to rank j and receives the p-1 contributions to its
//                own block into Scratch; a second, local step combines them into Output.
// alltoall       rank i sends Input block j to rank j and receives block i of every rank.
// sendrecv       rank i sends its Input to rank i+1 and receives rank i-1's into Output.
#include "collectives/algorithms.h"

namespace commsim {

void direct_allgather(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  const Span in = span(BufferId::Input, 0, block);
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, in, span(BufferId::Output, i * block, block));
    for (int j = 0; j < p; ++j) {
      if (j == i) continue;
      b.send(i, 0, j, in);
      b.recv(i, 0, j, span(BufferId::Output, j * block, block));
    }
  }
  b.advance(iota_ranks(p), 1);
}

void direct_reducescatter(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count();
  const Span out = span(BufferId::Output, 0, block);
  b.need_scratch((p - 1) * block);
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, i * block, block), out);
    for (int j = 0; j < p; ++j) {
      if (j == i) continue;
      const Span slot = span(BufferId::Scratch, (j < i ? j : j - 1) * block, block);
      b.send(i, 0, j, span(BufferId::Input, j * block, block));
      b.recv(i, 0, j, slot);
      b.reduce(i, 1, slot, out);
    }
  }
  b.advance(iota_ranks(p), 2);
}

void direct_alltoall(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, i * block, block), span(BufferId::Output, i * block, block));
    for (int j = 0; j < p; ++j) {
      if (j == i) continue;
      b.send(i, 0, j, span(BufferId::Input, j * block, block));
      b.recv(i, 0, j, span(BufferId::Output, j * block, block));
    }
  }
  b.advance(iota_ranks(p), 1);
}

void direct_sendrecv(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t n = b.count();
  for (int i = 0; i < p; ++i) {
    b.send(i, 0, (i + 1) % p, span(BufferId::Input, 0, n));
    b.recv(i, 0, (i - 1 + p) % p, span(BufferId::Output, 0, n));
  }
  b.advance(iota_ranks(p), 1);
}

}  // namespace commsim
