// Rabenseifner's algorithms (Rabenseifner 2004; Thakur, Rabenseifner, Gropp 2005), any rank count
// through the power-of-two fold (schedule_builder.h), data split into p2 = 2^floor(lg p) chunks:
//
// allreduce  fold-in (whole vector, combined), recursive-halving reduce-scatter of the p2 chunks
//            with distances doubling (partner j ^ 2^s in step s, halves n/2, n/4, ...: as MPICH,
//            the large exchanges between near ranks), recursive-doubling allgather undoing it
//            (distances halving), fold-out (whole vector). 2 lg p2 (+2) steps.
// reduce     over the ranks counted from the root, so the root is member 0: fold-in,
//            reduce-scatter with distances halving (member j ends with chunk j), then a binomial
//            gather of the chunks to the root (lg p2 steps: in step s member j, an odd multiple of
//            2^s, sends its 2^s chunks to member j - 2^s).
// Both work in place in Output.
#include "collectives/phases.h"

namespace commsim {
namespace {

struct Halved {
  PowerOfTwoFold fold;
  std::vector<int> members;
  std::vector<std::uint64_t> offsets;  // chunk c is [offsets[c], offsets[c+1]) of Output
  HalvingPlan plan;
};

// Fold-in and recursive-halving reduce-scatter over `group`, in place in Output.
Halved reduce_scatter(ScheduleBuilder& b, const std::vector<int>& group, bool distances_double) {
  const std::uint64_t n = b.count();
  const PowerOfTwoFold fold(static_cast<int>(group.size()));
  Halved h{fold, fold.members(group), chunk_offsets(0, n, fold.m2), HalvingPlan(fold.m2, distances_double)};
  if (fold.r > 0) fold_in_reduction(b, group, fold, span(BufferId::Input, 0, n), span(BufferId::Output, 0, n));
  const int r = fold.r;
  recursive_halving(
      b, h.members, h.offsets, [r](int j) { return j < r ? BufferId::Output : BufferId::Input; }, BufferId::Output,
      h.plan);
  return h;
}

}  // namespace

void rabenseifner_allreduce(ScheduleBuilder& b) {
  const std::vector<int> group = iota_ranks(b.nranks());
  const Halved h = reduce_scatter(b, group, true);
  recursive_doubling_exchange(b, h.members, h.offsets, BufferId::Output, h.plan);
  if (h.fold.r > 0) fold_out(b, group, h.fold, [&](int) { return Piece{span(BufferId::Output, 0, b.count())}; });
}

void rabenseifner_reduce(ScheduleBuilder& b) {
  const std::vector<int> group = rotated(iota_ranks(b.nranks()), b.request().root);
  const Halved h = reduce_scatter(b, group, false);  // member j ends with chunk j
  const int m = h.fold.m2;
  int steps = 0;
  for (int mask = 1; mask < m; mask *= 2, ++steps)
    for (int j = mask; j < m; j += 2 * mask) {
      const Span chunks = span(BufferId::Output, h.offsets[j], h.offsets[j + mask] - h.offsets[j]);
      b.send(h.members[j], steps, h.members[j - mask], chunks);
      b.recv(h.members[j - mask], steps, h.members[j], chunks);
    }
  b.advance(h.members, steps);
}

}  // namespace commsim
