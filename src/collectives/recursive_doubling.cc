// Recursive doubling (Thakur, Rabenseifner, Gropp 2005), any rank count through the power-of-two
// fold (schedule_builder.h): with p2 = 2^floor(lg p) and r = p - p2, the odd ranks below 2r first
// hand their data to the even rank below them, the p2 members run the algorithm, then the results
// go back to the odd ranks.
//
// allreduce  fold-in (whole vector, combined); lg p2 steps in which member j sends its whole
//            vector to member j ^ 2^s and receives the partner's into Scratch, combined at the
//            start of the next step; fold-out (whole vector).
// allgather  fold-in (one block); lg p2 steps in which member j exchanges the blocks of its aligned
//            group of 2^s members with member j ^ 2^s (distances doubling); fold-out (all blocks but the odd rank's
//            own, as two messages).
// broadcast  van de Geijn: binomial scatter of p chunks from the root (ceil(lg p) steps), then the
//            recursive-doubling allgather of the chunks over the ranks counted from the root.
#include "collectives/phases.h"

namespace commsim {
namespace {

// Recursive-doubling allgather of `buffer` over any m positions: position j holds
// [offsets[j], offsets[j+1]); afterwards all hold [offsets[0], offsets[m]).
void allgather_any(ScheduleBuilder& b, const std::vector<int>& group, const std::vector<std::uint64_t>& offsets,
                   BufferId buffer) {
  const PowerOfTwoFold fold(static_cast<int>(group.size()));
  auto block = [&](int pos) { return span(buffer, offsets[pos], offsets[pos + 1] - offsets[pos]); };
  if (fold.r > 0) fold_in(b, group, fold, block, block, false);
  std::vector<std::uint64_t> member_offsets(fold.m2 + 1);
  for (int j = 0; j <= fold.m2; ++j) member_offsets[j] = offsets[fold.position(j)];
  recursive_doubling_exchange(b, fold.members(group), member_offsets, buffer, HalvingPlan(fold.m2, false));
  // Fold-out: each odd position receives everything but its own block (two messages).
  if (fold.r > 0)
    fold_out(b, group, fold, [&](int pos) {
      return Piece{span(buffer, offsets.front(), offsets[pos] - offsets.front()),
                   span(buffer, offsets[pos + 1], offsets.back() - offsets[pos + 1])};
    });
}

}  // namespace

void recursive_doubling_exchange(ScheduleBuilder& b, const std::vector<int>& members,
                                 const std::vector<std::uint64_t>& offsets, BufferId buffer, const HalvingPlan& plan) {
  const int m = static_cast<int>(members.size());
  auto chunks = [&](std::pair<int, int> r) {
    return span(buffer, offsets[r.first], offsets[r.second] - offsets[r.first]);
  };
  for (int t = 0; t < plan.steps(); ++t) {
    const int s = plan.steps() - 1 - t;  // undo halving step s
    for (int j = 0; j < m; ++j) {
      const int partner = j ^ plan.bit[s];
      b.send(members[j], t, members[partner], chunks(plan.range[s + 1][j]));
      b.recv(members[j], t, members[partner], chunks(plan.range[s + 1][partner]));
    }
  }
  b.advance(members, plan.steps());
}

void recursive_doubling_allreduce(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t n = b.count();
  const std::vector<int> group = iota_ranks(p);
  const PowerOfTwoFold fold(p);
  const Span own = span(BufferId::Input, 0, n), acc = span(BufferId::Output, 0, n), tmp = span(BufferId::Scratch, 0, n);
  b.need_scratch(n);
  if (fold.r > 0) fold_in_reduction(b, group, fold, own, acc);
  const std::vector<int> members = fold.members(group);
  const int steps = ceil_log2(fold.m2);
  for (int s = 0; s < steps; ++s)
    for (int j = 0; j < fold.m2; ++j) {
      const int rank = members[j];
      const bool acc_ready = s > 0 || j < fold.r;  // members that took a fold-in already have acc
      if (s == 0 && !acc_ready) b.copy(rank, 0, own, acc);
      if (s > 0) b.reduce(rank, s, tmp, acc);
      b.send(rank, s, members[j ^ (1 << s)], acc_ready ? acc : own);
      b.recv(rank, s, members[j ^ (1 << s)], tmp);
    }
  // The last exchange is combined at the start of the next step, which the fold-out shares.
  for (int rank : members) b.reduce(rank, steps, tmp, acc);
  b.advance(members, steps);
  if (fold.r > 0)
    fold_out(b, group, fold, [&](int) { return Piece{acc}; });
  else
    b.advance(group, 1);
}

void recursive_doubling_allgather(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  for (int r = 0; r < p; ++r) b.copy(r, 0, span(BufferId::Input, 0, block), span(BufferId::Output, r * block, block));
  std::vector<std::uint64_t> offsets(p + 1);
  for (int j = 0; j <= p; ++j) offsets[j] = j * block;
  allgather_any(b, iota_ranks(p), offsets, BufferId::Output);
}

void recursive_doubling_broadcast(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t n = b.count();
  // Position v (counted from the root) ends the scatter with chunk v of p.
  const std::vector<int> g = rotated(iota_ranks(p), b.request().root);
  const std::vector<std::uint64_t> offsets = chunk_offsets(0, n, p);
  auto chunks = [&](BufferId buffer, int lo, int hi) { return span(buffer, offsets[lo], offsets[hi] - offsets[lo]); };
  const int steps = ceil_log2(p);
  b.copy(g[0], 0, chunks(BufferId::Input, 0, 1), chunks(BufferId::Output, 0, 1));
  for (int s = 0; s < steps; ++s) {
    const int mask = 1 << (steps - 1 - s);
    for (int v = 0; v + mask < p; v += 2 * mask) {
      const int hi = std::min(v + 2 * mask, p);
      b.send(g[v], s, g[v + mask], chunks(v == 0 ? BufferId::Input : BufferId::Output, v + mask, hi));
      b.recv(g[v + mask], s, g[v], chunks(BufferId::Output, v + mask, hi));
    }
  }
  b.advance(g, steps);
  allgather_any(b, g, offsets, BufferId::Output);
}

}  // namespace commsim
