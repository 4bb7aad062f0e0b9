#pragma once
// The IDs shared by the model, the schedule generators, the runtime and the HDF5 rows: one enum
// per concept, one name per value. Which algorithm applies to which collective, and what each
// (collective, algorithm) is, lives in the one table of model/algorithms.h.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commsim {

enum class Collective : std::uint8_t { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, AllToAll };
inline constexpr std::array kAllCollectives = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                               Collective::Broadcast, Collective::Reduce,    Collective::SendRecv,
                                               Collective::AllToAll};

// Hand-written algorithms (schedules) first, then the library baselines the runtime can run.
enum class Algorithm : std::uint8_t {
  Ring,
  Tree,               // double binary tree, pipelined in chunks (Sanders/Speck/Traff; NCCL)
  RecursiveDoubling,
  RecursiveHalving,
  Rabenseifner,       // reduce-scatter (recursive halving) + allgather (recursive doubling)
  Bruck,
  Binomial,
  Pairwise,
  Direct,
  Hierarchical,       // inside the node, then across nodes, then inside the node
  Mpi,                // the MPI library's own collective
  Nccl,               // NCCL, its own choice of algorithm/protocol
  NcclRing,           // NCCL with NCCL_ALGO=Ring
  NcclTree,           // NCCL with NCCL_ALGO=Tree
  NcclNvls,           // NCCL with NCCL_ALGO=NVLS (NVLink SHARP, NVSwitch multicast)
  NcclNvlsTree,       // NCCL with NCCL_ALGO=NVLSTree (NVLS inside the node, a tree across)
  NcclCollnetDirect,  // NCCL with NCCL_ALGO=CollNetDirect (in-network reduction, SHARP)
  NcclCollnetChain,   // NCCL with NCCL_ALGO=CollNetChain
  NcclPat,            // NCCL with NCCL_ALGO=PAT (one GPU per node)
};
// The hand-written values of Algorithm, in order (the table of model/algorithms.h has rows for each,
// tests/model/test_algorithms.cc checks it); hand_written_algorithms() reads the table.
inline constexpr std::array kHandWrittenAlgorithms = {
    Algorithm::Ring,     Algorithm::Tree,     Algorithm::RecursiveDoubling, Algorithm::RecursiveHalving,
    Algorithm::Rabenseifner, Algorithm::Bruck, Algorithm::Binomial, Algorithm::Pairwise,
    Algorithm::Direct,   Algorithm::Hierarchical};
inline constexpr std::array kAllAlgorithms = {
    Algorithm::Ring,     Algorithm::Tree,     Algorithm::RecursiveDoubling, Algorithm::RecursiveHalving,
    Algorithm::Rabenseifner, Algorithm::Bruck, Algorithm::Binomial, Algorithm::Pairwise,
    Algorithm::Direct,   Algorithm::Hierarchical, Algorithm::Mpi, Algorithm::Nccl,
    Algorithm::NcclRing, Algorithm::NcclTree, Algorithm::NcclNvls, Algorithm::NcclNvlsTree,
    Algorithm::NcclCollnetDirect, Algorithm::NcclCollnetChain, Algorithm::NcclPat};
// NCCL's algorithms that can be forced (NCCL_ALGO), in NCCL's order of its tuning model ids.
inline constexpr std::array kNcclForcedAlgorithms = {Algorithm::NcclTree,          Algorithm::NcclRing,
                                                     Algorithm::NcclCollnetDirect, Algorithm::NcclCollnetChain,
                                                     Algorithm::NcclNvls,          Algorithm::NcclNvlsTree,
                                                     Algorithm::NcclPat};

// NCCL-style protocols, priced as latency/bandwidth variants. None = plain alpha-beta-gamma.
enum class Protocol : std::uint8_t { None, LL, LL128, Simple };
// NCCL's own collectives (the baselines run by NCCL, priced by NCCL's model): nccl and every
// forced NCCL algorithm (nccl-ring, nccl-tree, nccl-nvls, nccl-nvlstree, nccl-collnet-direct,
// nccl-collnet-chain, nccl-pat).
inline constexpr bool is_nccl_algorithm(Algorithm a) {
  return a >= Algorithm::Nccl;
}
inline constexpr std::array kNcclProtocols = {Protocol::LL, Protocol::LL128, Protocol::Simple};

std::string_view to_string(Collective c);
std::string_view to_string(Algorithm a);
std::string_view to_string(Protocol p);  // None -> "", LL -> "LL", LL128 -> "LL128", Simple -> "Simple"
std::optional<Collective> parse_collective(std::string_view name);  // "allreduce", "all_reduce", "AllReduce"
std::optional<Algorithm> parse_algorithm(std::string_view name);    // "recursive-doubling", "rd", "nccl-ring"
std::optional<Protocol> parse_protocol(std::string_view name);      // "ll", "LL128", "simple"

// These read the table of model/algorithms.h (defined in algorithms.cc).
// True for the hand-written algorithms that have a schedule and a closed form.
bool is_hand_written(Algorithm a);
// True when the algorithm is implemented for the collective (hand-written or baseline).
bool applies(Collective c, Algorithm a);
// Every hand-written algorithm, in Algorithm order.
std::vector<Algorithm> hand_written_algorithms();
// The hand-written algorithms that apply to c, in Algorithm order.
std::vector<Algorithm> hand_written_algorithms(Collective c);
// Collectives that reduce (have a gamma term and need a reduction op).
bool reduces(Collective c);

// nccl-tests bus-bandwidth factor: busbw = algbw * factor (doc/PERFORMANCE.md of nccl-tests).
double busbw_factor(Collective c, int nranks);

// Elements of each rank's Input and Output for a request of `count` elements, as nccl-tests sizes
// them: allgather gathers count / p from each rank, reducescatter leaves count / p, alltoall moves
// count / p to each rank (the remainder is dropped); the others use count for both. Every executor,
// library baseline and the model size buffers with this.
struct BufferCounts {
  std::uint64_t input = 0;
  std::uint64_t output = 0;
};
BufferCounts buffer_counts(Collective c, std::uint64_t count, int nranks);

// Bytes of one rank's Input and Output for a collective of `bytes` (nccl-tests convention): the
// working set whose fit in the caches sets the memory-bound bandwidths (see Topology::working_set_scale).
double working_set_bytes(Collective c, std::uint64_t bytes, int nranks);

}  // namespace commsim
