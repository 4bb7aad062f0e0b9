// Direct algorithms: every transfer posted in one step, each rank talking to every other rank at
// once (the transfers of a step share the rank's bandwidth).
//
// allgather      rank i sends its block to every rank and receives every block into Output.
// reducescatter  rank i sends Input block j to rank j and receives the p-1 contributions to its
//                own block into Scratch; a second, local step combines them into Output.
// alltoall       rank i sends Input block j to rank j and receives block i of every rank.
// sendrecv       rank i sends its Input to rank i+1 and receives rank i-1's into Output.
// broadcast      the root sends its Input to every rank at once (MPI's linear broadcast).
// reduce         every rank sends its Input to the root at once; the root receives them one after
//                another, the first into Output and the others into one Scratch block, combining
//                each into Output the step after (MPI's linear reduce): one block of Scratch, not
//                p - 1.
#include "collectives/phases.h"

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

void direct_broadcast(ScheduleBuilder& b) {
  const int p = b.nranks();
  const int root = b.request().root;
  const std::uint64_t n = b.count();
  const Span in = span(BufferId::Input, 0, n);
  const Span out = span(BufferId::Output, 0, n);
  for (int j = 0; j < p; ++j) {
    if (j == root) continue;
    b.send(root, 0, j, in);
    b.recv(j, 0, root, out);
  }
  // The root's own copy after its sends, off the critical path.
  b.copy(root, 1, in, out);
  b.advance(iota_ranks(p), 2);
}

void direct_reduce(ScheduleBuilder& b) {
  const int p = b.nranks();
  const int root = b.request().root;
  const std::uint64_t n = b.count();
  const Span in = span(BufferId::Input, 0, n);
  const Span out = span(BufferId::Output, 0, n);
  const Span slot = span(BufferId::Scratch, 0, n);
  if (p > 2) b.need_scratch(n);
  // The k-th sender (counted from the root) posts at the step in which the root receives from it:
  // the first into Output, the others into the Scratch block, combined into Output the step after
  // (a round's local ops run before its transfers). The root's own Input is combined last.
  for (int k = 1; k < p; ++k) {
    const int sender = (root + k) % p;
    b.send(sender, k - 1, root, in);
    b.recv(root, k - 1, sender, k == 1 ? out : slot);
    if (k > 1) b.reduce(root, k, slot, out);
  }
  b.reduce(root, p - 1, in, out);
  b.advance(iota_ranks(p), p);
}

}  // namespace commsim
