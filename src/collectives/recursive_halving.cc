// Recursive-halving reduce-scatter (Thakur, Rabenseifner, Gropp 2005), any rank count through the
// power-of-two fold (schedule_builder.h): the odd ranks below 2r send their whole input to the even
// rank below (combined there), the p2 = 2^floor(lg p) members halve, and each even rank below 2r
// finally sends the odd rank above it its block.
//
// Halving (distances halving, HalvingPlan): member j's current range is the aligned group of
// p2 >> s members' blocks containing j; in step s it sends the half that its partner
// j ^ (p2 >> (s+1)) keeps and combines the half it keeps with the one received. After lg p2 steps
// member j holds its own blocks fully reduced.
// Partial sums live in Scratch (count elements); each rank's block is copied to Output at the end.
#include "collectives/phases.h"

namespace commsim {

HalvingPlan::HalvingPlan(int m, bool distances_double) : range(1, std::vector<std::pair<int, int>>(m, {0, m})) {
  for (int b = 1; b < m; b *= 2) bit.push_back(distances_double ? b : m / (2 * b));
  for (int s = 0; s < steps(); ++s) {
    range.push_back(range.back());
    for (int j = 0; j < m; ++j) {
      auto& [lo, hi] = range.back()[j];
      const int mid = lo + (hi - lo) / 2;
      (j & bit[s]) != 0 ? lo = mid : hi = mid;
    }
  }
}

void recursive_halving(ScheduleBuilder& b, const std::vector<int>& members, const std::vector<std::uint64_t>& offsets,
                       const std::function<BufferId(int member)>& own_buffer, BufferId acc_buffer,
                       const HalvingPlan& plan) {
  const int m = static_cast<int>(members.size());
  auto chunks = [&](BufferId buffer, std::pair<int, int> r) {
    return span(buffer, offsets[r.first], offsets[r.second] - offsets[r.first]);
  };
  if (plan.steps() == 0) b.copy(members[0], 0, chunks(own_buffer(0), {0, m}), chunks(acc_buffer, {0, m}));
  for (int s = 0; s < plan.steps(); ++s)
    for (int j = 0; j < m; ++j) {
      const int partner = j ^ plan.bit[s];
      const auto keep = plan.range[s + 1][j], give = plan.range[s + 1][partner];
      const BufferId from = s == 0 ? own_buffer(j) : acc_buffer;
      b.send(members[j], s, members[partner], chunks(from, give));
      if (s == 0) b.copy(members[j], 0, chunks(from, keep), chunks(acc_buffer, keep));
      b.recv_reduce(members[j], s, members[partner], chunks(acc_buffer, keep));
    }
  b.advance(members, std::max(plan.steps(), 1));
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
      BufferId::Scratch, HalvingPlan(fold.m2, false));
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
