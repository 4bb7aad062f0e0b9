// Recursive-halving reduce-scatter (Thakur, Rabenseifner, Gropp 2005), any rank count through the
// power-of-two fold (schedule_builder.h): the odd ranks below 2r send their whole input to the even
// rank below (combined there), the p2 = 2^floor(lg p) members halve, and each even rank below 2r
// finally sends the odd rank above it its block.
//
// Halving: member j's current range is the aligned group of p2 >> s members' blocks containing j;
// in step s it sends the half that its partner j ^ (p2 >> (s+1)) keeps and combines the half it
// keeps with the one received. After lg p2 steps member j holds its own blocks fully reduced.
// Partial sums live in Scratch (count elements); each rank's block is copied to Output at the end.
#include "collectives/algorithms.h"

namespace commsim {

void recursive_halving(ScheduleBuilder& b, const std::vector<int>& members, const std::vector<std::uint64_t>& offsets,
                       const std::function<BufferId(int member)>& own_buffer, BufferId acc_buffer) {
  const int m = static_cast<int>(members.size());
  auto range = [&](BufferId buffer, int lo, int hi) { return span(buffer, offsets[lo], offsets[hi] - offsets[lo]); };
  int steps = 0;
  while ((1 << steps) < m) ++steps;
  if (steps == 0) b.copy(members[0], 0, range(own_buffer(0), 0, m), range(acc_buffer, 0, m));
  for (int s = 0; s < steps; ++s) {
    const int size = m >> s, half = size >> 1;
    for (int j = 0; j < m; ++j) {
      const int lo = j & ~(size - 1), mid = lo + half, hi = lo + size;
      const bool upper = (j & half) != 0;
      const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
      const int give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
      const BufferId from = s == 0 ? own_buffer(j) : acc_buffer;
      b.send(members[j], s, members[j ^ half], range(from, give_lo, give_hi));
      if (s == 0) b.copy(members[j], 0, range(from, keep_lo, keep_hi), range(acc_buffer, keep_lo, keep_hi));
      b.recv_reduce(members[j], s, members[j ^ half], range(acc_buffer, keep_lo, keep_hi));
    }
  }
  b.advance(members, std::max(steps, 1));
}

void fold_in_reduction(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold, const Span& own,
                       const Span& acc) {
  for (int pos = 0; pos + 1 < 2 * fold.r; pos += 2) b.copy(group[pos], 0, own, acc);
  fold_in(
      b, group, fold, [&](int) { return own; }, [&](int) { return acc; }, true);
}

void recursive_halving_reducescatter(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count();
  const std::vector<int> group = iota_ranks(p);
  const PowerOfTwoFold fold(p);
  b.need_scratch(p * block);
  const Span own = span(BufferId::Input, 0, p * block), acc = span(BufferId::Scratch, 0, p * block);
  if (fold.r > 0) fold_in_reduction(b, group, fold, own, acc);
  std::vector<std::uint64_t> offsets(fold.m2 + 1);
  for (int j = 0; j <= fold.m2; ++j) offsets[j] = fold.position(j) * block;
  recursive_halving(
      b, fold.members(group), offsets, [&](int j) { return j < fold.r ? BufferId::Scratch : BufferId::Input; },
      BufferId::Scratch);
  // Every member copies its own block out; the even ranks below 2r also send the odd rank above
  // them its block.
  for (int pos = 0; pos < p; ++pos)
    if (!fold.sits_out(pos))
      b.copy(group[pos], 0, span(BufferId::Scratch, pos * block, block), span(BufferId::Output, 0, block));
  for (int pos = 1; pos < 2 * fold.r; pos += 2) {
    b.send(group[pos - 1], 0, group[pos], span(BufferId::Scratch, pos * block, block));
    b.recv(group[pos], 0, group[pos - 1], span(BufferId::Output, 0, block));
  }
  b.advance(group, 1);
}

}  // namespace commsim
