#pragma once
// The generators behind make_schedule (one per (collective, algorithm), listed in registry.cc) and
// the phases that several algorithms share. Each phase runs over a `group` of global ranks given in
// the phase's own order (positions 0..m-1), places its ops at steps 0..n-1 relative to each rank's
// cursor and advances the cursors of the group by n. Internal to src/collectives.
#include <functional>
#include <vector>

#include "collectives/schedule_builder.h"

namespace commsim {

// ---- shared phases --------------------------------------------------------------------------------

// ring.cc. The ranks in ring order: by node, then by index inside the node, when the request has a
// placement (so a ring crosses the network once per node); 0..p-1 otherwise. Channel c rotates
// every node's ranks by c: the ring enters each node at local index c mod G and leaves it from
// c - 1 mod G (G the node's ranks; on one node, a rotation of the same ring).
std::vector<int> ring_order(const ScheduleRequest& request, int channel = 0);
// ring.cc. How channel c relabels the ranks of a one-channel schedule: [rank] -> the rank of the
// same node whose local index is rank's plus c (mod the node's ranks; all ranks on one node when
// the request has no placement).
std::vector<int> channel_ranks(const ScheduleRequest& request, int channel);

// ring.cc. Ring reduce-scatter of m chunks over the m ranks of `ring`, m - 1 steps: position i's
// contribution to chunk j is own(j) on every rank; position i keeps its partial sum of chunk j in
// acc(i, j) and ends with chunk i fully reduced there. At step s position i sends chunk i-s-1 to
// position i+1 and receives (combining) chunk i-s-2 from position i-1.
void ring_reduce_scatter(ScheduleBuilder& b, const std::vector<int>& ring, const std::function<Span(int chunk)>& own,
                         const std::function<Span(int pos, int chunk)>& acc);
// ring.cc. Ring allgather over the m ranks of `ring`, m - 1 steps: position i holds pieces[i] (the
// same elements on every rank); afterwards every position holds all pieces. At step s position i
// sends piece i-s to position i+1 and receives piece i-s-1 from position i-1.
void ring_allgather(ScheduleBuilder& b, const std::vector<int>& ring, const std::vector<Piece>& pieces);
// ring.cc. Ring allreduce (reduce-scatter then allgather, 2(m-1) steps) of own (on every rank) into
// acc, both of the same element count, split into m chunks.
void ring_allreduce(ScheduleBuilder& b, const std::vector<int>& ring, const Span& own, const Span& acc);

// binomial.cc. Binomial-tree broadcast over `group` from group[root_pos], ceil(lg m) steps: the root
// holds the data in `src`, every rank (the root too) ends with it in `dst`.
void binomial_broadcast(ScheduleBuilder& b, const std::vector<int>& group, int root_pos, const Span& src,
                        const Span& dst);
// binomial.cc. Binomial-tree reduce over `group` to group[root_pos], ceil(lg m) steps: every rank's
// contribution is `own`; partial sums are kept in `acc` (the same count) on every rank, and the
// root ends with the reduction there.
void binomial_reduce(ScheduleBuilder& b, const std::vector<int>& group, int root_pos, const Span& own, const Span& acc);

// recursive_halving.cc. Which chunks each of m members (a power of two) holds during recursive
// halving: in step s member j pairs with j ^ bit[s] and keeps the lower half of its range when
// j & bit[s] is 0, the upper half otherwise. With distances halving (bit[s] = m >> (s+1)) member j
// ends with chunk j; with distances doubling (bit[s] = 2^s, MPICH's allreduce) it ends with chunk
// bit-reverse(j), and the large early exchanges stay between near ranks (on one node, with ranks
// placed node by node).
struct HalvingPlan {
  std::vector<int> bit;                                 // [step]
  std::vector<std::vector<std::pair<int, int>>> range;  // [s][j]: chunks [lo, hi) member j holds before step s
  HalvingPlan(int m, bool distances_double);
  int steps() const { return static_cast<int>(bit.size()); }
};

// recursive_halving.cc. Recursive-halving reduce-scatter among `members` (a power of two of them),
// plan.steps() steps: every member contributes elements [offsets[0], offsets[m]) (chunk c is
// [offsets[c], offsets[c+1])), read from own_buffer(j); partial sums are kept in acc_buffer, and
// member j ends with its plan.range[steps][j] fully reduced there.
void recursive_halving(ScheduleBuilder& b, const std::vector<int>& members, const std::vector<std::uint64_t>& offsets,
                       const std::function<BufferId(int member)>& own_buffer, BufferId acc_buffer,
                       const HalvingPlan& plan);
// recursive_doubling.cc. Recursive-doubling allgather among `members`, the halving plan run
// backwards: member j starts with its plan.range[steps][j] of `buffer`; in each step it exchanges
// what it holds with its partner of the matching halving step; all end with [offsets[0],
// offsets[m]).
void recursive_doubling_exchange(ScheduleBuilder& b, const std::vector<int>& members,
                                 const std::vector<std::uint64_t>& offsets, BufferId buffer, const HalvingPlan& plan);

// recursive_halving.cc. Fold-in of a reduction over `group`, one step: each odd position below 2r
// sends `own` to the even position below it, which copies its own `own` into `acc` and combines
// the received data there. Afterwards member j of the fold holds its data in acc when j < r and in
// own otherwise.
void fold_in_reduction(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold, const Span& own,
                       const Span& acc);

// ---- generators (one per (collective, algorithm), see registry.cc) ---------------------------------
// Each receives a builder whose buffers are sized for the request; nranks >= 2.

void ring_allreduce(ScheduleBuilder& b);
void ring_allgather(ScheduleBuilder& b);
void ring_reducescatter(ScheduleBuilder& b);
void ring_broadcast(ScheduleBuilder& b);
void ring_reduce(ScheduleBuilder& b);

void tree_allreduce(ScheduleBuilder& b);
void tree_broadcast(ScheduleBuilder& b);
void tree_reduce(ScheduleBuilder& b);

void recursive_doubling_allreduce(ScheduleBuilder& b);
void recursive_doubling_allgather(ScheduleBuilder& b);
void recursive_doubling_broadcast(ScheduleBuilder& b);

void recursive_halving_reducescatter(ScheduleBuilder& b);

void rabenseifner_allreduce(ScheduleBuilder& b);
void rabenseifner_reduce(ScheduleBuilder& b);

void bruck_allgather(ScheduleBuilder& b);
void bruck_alltoall(ScheduleBuilder& b);

void binomial_broadcast(ScheduleBuilder& b);
void binomial_reduce(ScheduleBuilder& b);

void pairwise_reducescatter(ScheduleBuilder& b);
void pairwise_alltoall(ScheduleBuilder& b);

void direct_allgather(ScheduleBuilder& b);
void direct_reducescatter(ScheduleBuilder& b);
void direct_alltoall(ScheduleBuilder& b);
void direct_sendrecv(ScheduleBuilder& b);
void direct_broadcast(ScheduleBuilder& b);
void direct_reduce(ScheduleBuilder& b);

void hierarchical_allreduce(ScheduleBuilder& b);
void hierarchical_allgather(ScheduleBuilder& b);
void hierarchical_broadcast(ScheduleBuilder& b);
void hierarchical_reduce(ScheduleBuilder& b);

}  // namespace commsim
