// The generators of the hand-written schedules: (collective, algorithm) -> generator. It holds
// exactly the hand-written rows of model/algorithms.h's table (tests/model/test_algorithms.cc
// checks both ways), which says everything else about each pair.
#include <algorithm>
#include <string>

#include "collectives/phases.h"
#include "model/error.h"
#include "model/placement.h"

namespace commsim {
namespace {

using C = Collective;
using A = Algorithm;

struct Generator {
  Collective collective;
  Algorithm algorithm;
  void (*build)(ScheduleBuilder&);
};

constexpr Generator kGenerators[] = {
    {C::AllReduce, A::Ring, ring_allreduce},
    {C::AllReduce, A::Tree, tree_allreduce},
    {C::AllReduce, A::RecursiveDoubling, recursive_doubling_allreduce},
    {C::AllReduce, A::Rabenseifner, rabenseifner_allreduce},
    {C::AllReduce, A::Hierarchical, hierarchical_allreduce},

    {C::AllGather, A::Ring, ring_allgather},
    {C::AllGather, A::RecursiveDoubling, recursive_doubling_allgather},
    {C::AllGather, A::Bruck, bruck_allgather},
    {C::AllGather, A::Direct, direct_allgather},
    {C::AllGather, A::Hierarchical, hierarchical_allgather},

    {C::ReduceScatter, A::Ring, ring_reducescatter},
    {C::ReduceScatter, A::RecursiveHalving, recursive_halving_reducescatter},
    {C::ReduceScatter, A::Pairwise, pairwise_reducescatter},
    {C::ReduceScatter, A::Direct, direct_reducescatter},

    {C::Broadcast, A::Ring, ring_broadcast},
    {C::Broadcast, A::Tree, tree_broadcast},
    {C::Broadcast, A::Binomial, binomial_broadcast},
    {C::Broadcast, A::RecursiveDoubling, recursive_doubling_broadcast},
    {C::Broadcast, A::Hierarchical, hierarchical_broadcast},
    {C::Broadcast, A::Direct, direct_broadcast},

    {C::Reduce, A::Ring, ring_reduce},
    {C::Reduce, A::Tree, tree_reduce},
    {C::Reduce, A::Binomial, binomial_reduce},
    {C::Reduce, A::Rabenseifner, rabenseifner_reduce},
    {C::Reduce, A::Hierarchical, hierarchical_reduce},
    {C::Reduce, A::Direct, direct_reduce},

    {C::SendRecv, A::Direct, direct_sendrecv},

    {C::AllToAll, A::Pairwise, pairwise_alltoall},
    {C::AllToAll, A::Bruck, bruck_alltoall},
    {C::AllToAll, A::Direct, direct_alltoall},
};

std::string pair_name(Collective c, Algorithm a) {
  return std::string(to_string(c)) + " with algorithm '" + std::string(to_string(a)) + "'";
}

const Generator* find_generator(Collective c, Algorithm a) {
  for (const Generator& g : kGenerators)
    if (g.collective == c && g.algorithm == a) return &g;
  return nullptr;
}

}  // namespace

bool has_generator(Collective c, Algorithm a) {
  return find_generator(c, a) != nullptr;
}

Schedule make_schedule(const ScheduleRequest& request) {
  const Collective c = request.collective;
  const Algorithm a = request.algorithm;
  if (!is_hand_written(a))
    throw Error("algorithm '" + std::string(to_string(a)) +
                "' is a library baseline and has no schedule; hand-written algorithms are ring, tree, "
                "recursive-doubling, recursive-halving, rabenseifner, bruck, binomial, pairwise, direct, hierarchical");
  const Generator* generator = find_generator(c, a);
  if (generator == nullptr || !applies(c, a)) {
    std::string choices;
    for (Algorithm x : hand_written_algorithms(c)) choices += (choices.empty() ? "" : ", ") + std::string(to_string(x));
    throw Error("there is no " + pair_name(c, a) + "; for " + std::string(to_string(c)) + " use one of: " + choices);
  }
  if (request.nranks < 1)
    throw Error(pair_name(c, a) + ": needs at least one rank, got " + std::to_string(request.nranks));
  if (request.root < 0 || request.root >= request.nranks)
    throw Error(pair_name(c, a) + ": root " + std::to_string(request.root) + " is not a rank of 0.." +
                std::to_string(request.nranks - 1));
  if (request.elem_size == 0) throw Error(pair_name(c, a) + ": element size must be at least one byte");
  if (request.placement != nullptr && request.placement->nranks != request.nranks)
    throw Error(pair_name(c, a) + ": the placement holds " + std::to_string(request.placement->nranks) +
                " ranks but the request has " + std::to_string(request.nranks));

  if (request.channels < 1 || request.channels > kMaxChannels)
    throw Error(pair_name(c, a) + ": channels must be 1 to " + std::to_string(kMaxChannels) + ", got " +
                std::to_string(request.channels));

  const auto [in, out] = buffer_counts(c, request.count, request.nranks);
  // The channels this schedule gets: none for the algorithms that take no channel count, and at
  // least one element (per half for the tree) for each.
  ScheduleRequest built = request;
  if (!takes_channels(c, a) || request.nranks == 1) {
    built.channels = 1;
  } else {
    const std::uint64_t units = a == Algorithm::Tree ? request.count / 2
                                : c == C::AllReduce  ? request.count
                                                     : out / (c == C::AllGather ? request.nranks : 1);
    built.channels = static_cast<int>(std::clamp<std::uint64_t>(units, 1, request.channels));
  }
  ScheduleBuilder b(built, in, out);
  if (request.nranks == 1)
    b.copy(0, 0, span(BufferId::Input, 0, in), span(BufferId::Output, 0, out));
  else
    generator->build(b);
  return b.finish();
}

}  // namespace commsim
