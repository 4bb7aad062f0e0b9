#include "model/algorithms.h"

#include <array>

#include "model/cost/closed_forms.h"

namespace commsim {
namespace {

using C = Collective;
using A = Algorithm;
using R = AlgorithmRow;
using namespace closed_forms;

// The NCCL baselines: every collective (ncclSend + ncclRecv for sendrecv and alltoall).
constexpr unsigned kNccl = R::kNcclModel | R::kProtocols;

// By collective; inside one, the hand-written algorithms as in src/collectives/registry.cc, then
// the library baselines. Every library baseline implements every collective (MPI_Sendrecv /
// ncclSend+ncclRecv for sendrecv); NCCL's forced algorithms have rows where NCCL's tuning model
// prices them (graph/tuning.cc): tree, NVLSTree and CollNetChain for allreduce only, NVLS and
// CollNetDirect for allreduce, allgather and reducescatter, PAT for allgather and reducescatter.
// The protocols of ring and tree are NCCL's: the tree's for allreduce only.
constexpr AlgorithmRow kRows[] = {
    {C::AllReduce, A::Ring, ring_allreduce, ring_reduce_copies, R::kChannels | R::kProtocols},
    {C::AllReduce, A::Tree, tree_allreduce, nullptr, R::kPipelined | R::kChannels | R::kProtocols},
    {C::AllReduce, A::RecursiveDoubling, recursive_doubling_allreduce, whole_copy, 0},
    {C::AllReduce, A::Rabenseifner, rabenseifner_allreduce, kept_half_copy, 0},
    {C::AllReduce, A::Hierarchical, hierarchical_allreduce, hierarchical_allreduce_copies, R::kChannels},
    {C::AllReduce, A::Mpi, nullptr, nullptr, 0},
    {C::AllReduce, A::Nccl, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclRing, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclTree, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclNvls, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclNvlsTree, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclCollnetDirect, nullptr, nullptr, kNccl},
    {C::AllReduce, A::NcclCollnetChain, nullptr, nullptr, kNccl},

    {C::AllGather, A::Ring, ring_allgather, own_block_copy, R::kChannels | R::kProtocols},
    {C::AllGather, A::RecursiveDoubling, recursive_doubling_allgather, own_block_copy, 0},
    {C::AllGather, A::Bruck, bruck_allgather, bruck_allgather_copies, 0},
    {C::AllGather, A::Direct, direct_allgather, own_block_copy, 0},
    {C::AllGather, A::Hierarchical, hierarchical_allgather, own_block_copy, R::kChannels},
    {C::AllGather, A::Mpi, nullptr, nullptr, 0},
    {C::AllGather, A::Nccl, nullptr, nullptr, kNccl},
    {C::AllGather, A::NcclRing, nullptr, nullptr, kNccl},
    {C::AllGather, A::NcclNvls, nullptr, nullptr, kNccl},
    {C::AllGather, A::NcclCollnetDirect, nullptr, nullptr, kNccl},
    {C::AllGather, A::NcclPat, nullptr, nullptr, kNccl},

    {C::ReduceScatter, A::Ring, ring_reducescatter, ring_reduce_copies, R::kChannels | R::kProtocols},
    {C::ReduceScatter, A::RecursiveHalving, recursive_halving_reducescatter, recursive_halving_copies, 0},
    {C::ReduceScatter, A::Pairwise, pairwise_reducescatter, own_block_copy, 0},
    {C::ReduceScatter, A::Direct, direct_reducescatter, own_block_copy, 0},
    {C::ReduceScatter, A::Mpi, nullptr, nullptr, 0},
    {C::ReduceScatter, A::Nccl, nullptr, nullptr, kNccl},
    {C::ReduceScatter, A::NcclRing, nullptr, nullptr, kNccl},
    {C::ReduceScatter, A::NcclNvls, nullptr, nullptr, kNccl},
    {C::ReduceScatter, A::NcclCollnetDirect, nullptr, nullptr, kNccl},
    {C::ReduceScatter, A::NcclPat, nullptr, nullptr, kNccl},

    {C::Broadcast, A::Ring, ring_broadcast, nullptr, R::kPipelined | R::kProtocols},
    {C::Broadcast, A::Tree, tree_broadcast, nullptr, R::kPipelined | R::kChannels},
    {C::Broadcast, A::Binomial, binomial_broadcast, whole_copy, 0},
    {C::Broadcast, A::RecursiveDoubling, recursive_doubling_broadcast, own_block_copy, 0},
    {C::Broadcast, A::Hierarchical, hierarchical_broadcast, whole_copy, 0},
    {C::Broadcast, A::Direct, direct_broadcast, whole_copy, 0},
    {C::Broadcast, A::Mpi, nullptr, nullptr, 0},
    {C::Broadcast, A::Nccl, nullptr, nullptr, kNccl},
    {C::Broadcast, A::NcclRing, nullptr, nullptr, kNccl},

    {C::Reduce, A::Ring, ring_reduce, nullptr, R::kPipelined | R::kProtocols},
    {C::Reduce, A::Tree, tree_reduce, nullptr, R::kPipelined | R::kChannels},
    {C::Reduce, A::Binomial, binomial_reduce, whole_copy, 0},
    {C::Reduce, A::Rabenseifner, rabenseifner_reduce, kept_half_copy, 0},
    {C::Reduce, A::Hierarchical, hierarchical_reduce, whole_copy, 0},
    {C::Reduce, A::Direct, direct_reduce, nullptr, 0},
    {C::Reduce, A::Mpi, nullptr, nullptr, 0},
    {C::Reduce, A::Nccl, nullptr, nullptr, kNccl},
    {C::Reduce, A::NcclRing, nullptr, nullptr, kNccl},

    {C::SendRecv, A::Direct, direct_sendrecv, nullptr, 0},
    {C::SendRecv, A::Mpi, nullptr, nullptr, 0},
    {C::SendRecv, A::Nccl, nullptr, nullptr, kNccl},
    {C::SendRecv, A::NcclRing, nullptr, nullptr, kNccl},

    {C::AllToAll, A::Pairwise, pairwise_alltoall, own_block_copy, 0},
    {C::AllToAll, A::Bruck, bruck_alltoall, bruck_alltoall_copies, 0},
    {C::AllToAll, A::Direct, direct_alltoall, own_block_copy, 0},
    {C::AllToAll, A::Mpi, nullptr, nullptr, 0},
    {C::AllToAll, A::Nccl, nullptr, nullptr, kNccl},
    {C::AllToAll, A::NcclRing, nullptr, nullptr, kNccl},
};

// [collective][algorithm] -> row, for the lookups of every closed_form() call.
using Index = std::array<std::array<const AlgorithmRow*, kAllAlgorithms.size()>, kAllCollectives.size()>;

const Index& index() {
  static const Index table = [] {
    Index t{};
    for (const AlgorithmRow& row : kRows)
      t[static_cast<std::size_t>(row.collective)][static_cast<std::size_t>(row.algorithm)] = &row;
    return t;
  }();
  return table;
}

}  // namespace

std::span<const AlgorithmRow> algorithm_table() {
  return kRows;
}

const AlgorithmRow* find_algorithm(Collective c, Algorithm a) {
  const auto ci = static_cast<std::size_t>(c), ai = static_cast<std::size_t>(a);
  if (ci >= kAllCollectives.size() || ai >= kAllAlgorithms.size()) return nullptr;
  return index()[ci][ai];
}

bool takes_channels(Collective c, Algorithm a) {
  const AlgorithmRow* row = find_algorithm(c, a);
  return row != nullptr && row->takes_channels();
}

bool is_pipelined(Collective c, Algorithm a) {
  const AlgorithmRow* row = find_algorithm(c, a);
  return row != nullptr && row->pipelined();
}

bool applies(Collective c, Algorithm a) {
  return find_algorithm(c, a) != nullptr;
}

bool is_hand_written(Algorithm a) {
  for (Collective c : kAllCollectives)
    if (const AlgorithmRow* row = find_algorithm(c, a); row != nullptr && row->hand_written()) return true;
  return false;
}

std::vector<Algorithm> hand_written_algorithms() {
  std::vector<Algorithm> out;
  for (Algorithm a : kAllAlgorithms)
    if (is_hand_written(a)) out.push_back(a);
  return out;
}

std::vector<Algorithm> hand_written_algorithms(Collective c) {
  std::vector<Algorithm> out;
  for (Algorithm a : kAllAlgorithms)
    if (const AlgorithmRow* row = find_algorithm(c, a); row != nullptr && row->hand_written()) out.push_back(a);
  return out;
}

}  // namespace commsim
