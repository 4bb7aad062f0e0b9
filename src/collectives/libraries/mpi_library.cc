// Open MPI 4.1's fixed decision (coll/tuned), commutative reductions: see mpi_library.h.
#include "collectives/libraries/mpi_library.h"

#include <bit>
#include <climits>
#include <cstdint>
#include <utility>

#include "model/error.h"

namespace commsim {
namespace {

constexpr std::uint64_t kAnySize = UINT64_MAX;
constexpr int kAnyRanks = INT_MAX;

// One row of a decision table: for communicators of fewer than `below_ranks` ranks (the rows are
// tried in order), the library's algorithm number for a size below each band's limit.
struct Band {
  std::uint64_t below_bytes;
  int algorithm;
};
struct Row {
  int below_ranks;
  std::vector<Band> bands;
};
using Table = std::vector<Row>;

int decide(const Table& table, int ranks, std::uint64_t bytes) {
  for (const Row& row : table) {
    if (ranks >= row.below_ranks) continue;
    for (const Band& band : row.bands)
      if (bytes < band.below_bytes) return band.algorithm;
  }
  throw Error("the Open MPI decision table has no entry for " + std::to_string(ranks) + " ranks and " +
              std::to_string(bytes) + " bytes");
}

// Allreduce: 1 basic linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented ring,
// 6 Rabenseifner. Size: the whole buffer.
const Table kAllreduce = {
    {4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}, {kAnySize, 6}}},
    {8, {{16, 4}, {8192, 3}, {kAnySize, 6}}},
    {16, {{8192, 3}, {kAnySize, 6}}},
    {32, {{64, 5}, {4096, 3}, {kAnySize, 6}}},
    {64, {{128, 5}, {kAnySize, 6}}},
    {128, {{262144, 3}, {kAnySize, 6}}},
    {256, {{131072, 2}, {262144, 3}, {kAnySize, 6}}},
    {512, {{4096, 2}, {kAnySize, 6}}},
    {2048, {{2048, 2}, {16384, 3}, {kAnySize, 6}}},
    {4096, {{2048, 2}, {4096, 5}, {16384, 3}, {kAnySize, 6}}},
    {kAnyRanks, {{2048, 2}, {16384, 5}, {32768, 3}, {kAnySize, 6}}},
};

// Broadcast: 1 linear, 2 chain, 3 pipeline, 4 split binary tree, 5 binary tree, 6 binomial,
// 7 k-nomial, 8 scatter + allgather, 9 scatter + ring allgather. Size: the whole buffer.
const Table kBroadcast = {
    {4,
     {{32, 3},
      {256, 5},
      {512, 3},
      {1024, 7},
      {32768, 1},
      {131072, 5},
      {262144, 2},
      {524288, 1},
      {1048576, 6},
      {kAnySize, 5}}},
    {8, {{64, 5}, {128, 6}, {2048, 5}, {8192, 6}, {1048576, 1}, {kAnySize, 2}}},
    {16, {{8, 7}, {64, 5}, {4096, 7}, {16384, 5}, {32768, 6}, {kAnySize, 1}}},
    {32, {{4096, 7}, {1048576, 6}, {kAnySize, 8}}},
    {64, {{2048, 6}, {kAnySize, 7}}},
    {128, {{kAnySize, 7}}},
    {256, {{2, 6}, {16384, 5}, {32768, 1}, {65536, 5}, {kAnySize, 7}}},
    {1024, {{16384, 7}, {32768, 4}, {kAnySize, 7}}},
    {2048, {{524288, 7}, {kAnySize, 8}}},
    {4096, {{262144, 7}, {kAnySize, 8}}},
    {kAnyRanks, {{8192, 7}, {16384, 5}, {262144, 7}, {kAnySize, 8}}},
};

// Reduce: 1 linear, 2 chain, 3 pipeline, 4 binary tree, 5 binomial, 6 in-order binary tree,
// 7 Rabenseifner. Size: the whole buffer.
const Table kReduce = {
    {4, {{8, 7}, {16, 4}, {32, 3}, {262144, 1}, {524288, 3}, {1048576, 2}, {kAnySize, 3}}},
    {8, {{4096, 4}, {65536, 2}, {262144, 5}, {524288, 1}, {1048576, 5}, {kAnySize, 1}}},
    {16, {{8192, 4}, {kAnySize, 5}}},
    {32, {{4096, 4}, {kAnySize, 5}}},
    {256, {{kAnySize, 5}}},
    {512, {{8192, 5}, {16384, 6}, {kAnySize, 5}}},
    {2048, {{kAnySize, 5}}},
    {4096, {{512, 5}, {1024, 6}, {8192, 5}, {16384, 6}, {kAnySize, 5}}},
    {kAnyRanks, {{16, 5}, {32, 6}, {1024, 5}, {2048, 6}, {8192, 5}, {16384, 6}, {kAnySize, 5}}},
};

// Reduce-scatter with equal blocks (MPI_Reduce_scatter_block): 1 linear (reduce, then scatter),
// 2 recursive doubling, 3 recursive halving, 4 butterfly. Size: one rank's block.
const Table kReduceScatterBlock = {
    {4, {{4, 2}, {8, 4}, {16, 3}, {128, 4}, {256, 3}, {4096, 4}, {8192, 3}, {131072, 4}, {kAnySize, 1}}},
    {8, {{8, 3}, {32, 2}, {256, 4}, {8192, 3}, {16384, 4}, {1048576, 3}, {kAnySize, 1}}},
    {16, {{4, 1}, {32, 3}, {128, 4}, {524288, 3}, {4194304, 1}, {kAnySize, 4}}},
    {32, {{32, 1}, {524288, 3}, {2097152, 1}, {4194304, 3}, {kAnySize, 4}}},
    {kAnyRanks, {{4, 3}, {16, 1}, {65536, 4}, {262144, 1}, {kAnySize, 4}}},
};

// Allgather: 1 linear (gather, then broadcast), 2 Bruck, 3 recursive doubling, 4 ring, 5 neighbor
// exchange, 6 two processes. Size: one rank's block.
const Table kAllgather = {
    {3, {{kAnySize, 6}}},
    {32, {{kAnySize, 3}}},
    {64, {{1024, 3}, {65536, 5}, {kAnySize, 4}}},
    {128, {{512, 3}, {65536, 5}, {kAnySize, 4}}},
    {256, {{512, 3}, {131072, 5}, {524288, 4}, {1048576, 5}, {kAnySize, 4}}},
    {512, {{32, 3}, {128, 2}, {1024, 3}, {131072, 5}, {524288, 4}, {1048576, 5}, {kAnySize, 4}}},
    {1024, {{64, 3}, {256, 2}, {2048, 3}, {kAnySize, 5}}},
    {2048, {{4, 3}, {8, 2}, {16, 3}, {32, 2}, {256, 3}, {512, 2}, {4096, 3}, {kAnySize, 5}}},
    {4096, {{32, 2}, {128, 3}, {512, 2}, {4096, 3}, {kAnySize, 5}}},
    {kAnyRanks, {{2, 3}, {8, 2}, {16, 3}, {512, 2}, {4096, 3}, {kAnySize, 5}}},
};

// Alltoall: 1 linear, 2 pairwise, 3 modified Bruck, 4 linear with a bound on requests in flight,
// 5 two processes. Size: one rank's block to one peer.
const Table kAlltoall = {
    {3,
     {{2, 2},
      {4, 5},
      {16, 2},
      {64, 5},
      {256, 2},
      {4096, 5},
      {32768, 2},
      {262144, 4},
      {1048576, 5},
      {kAnySize, 2}}},
    {8, {{8192, 4}, {16384, 1}, {65536, 4}, {524288, 1}, {1048576, 2}, {kAnySize, 1}}},
    {16, {{262144, 4}, {kAnySize, 1}}},
    {32, {{4, 4}, {512, 3}, {8192, 4}, {32768, 1}, {262144, 4}, {524288, 1}, {kAnySize, 4}}},
    {64, {{512, 3}, {524288, 1}, {kAnySize, 4}}},
    {128, {{1024, 3}, {2048, 1}, {4096, 4}, {262144, 1}, {kAnySize, 2}}},
    {256, {{1024, 3}, {2048, 4}, {262144, 1}, {kAnySize, 2}}},
    {512, {{1024, 3}, {8192, 4}, {32768, 1}, {kAnySize, 2}}},
    {1024, {{512, 3}, {8192, 4}, {16384, 1}, {131072, 4}, {262144, 1}, {kAnySize, 2}}},
    {2048, {{512, 3}, {1024, 4}, {2048, 1}, {16384, 4}, {262144, 1}, {kAnySize, 4}}},
    {4096, {{1024, 3}, {4096, 4}, {8192, 1}, {131072, 4}, {kAnySize, 1}}},
    {kAnyRanks, {{2048, 3}, {8192, 4}, {16384, 1}, {32768, 4}, {65536, 1}, {kAnySize, 4}}},
};

class Chooser {
 public:
  explicit Chooser(const ScheduleRequest& request) : base_(request) {}

  std::vector<LibraryPhase> choose(Collective c, std::uint64_t count, int root) const {
    const int p = base_.nranks;
    const std::uint64_t bytes = count * base_.elem_size;
    const std::uint64_t block_bytes = count / static_cast<std::uint64_t>(p) * base_.elem_size;
    using A = Algorithm;
    switch (c) {
      case Collective::AllReduce:
        switch (const int alg = decide(kAllreduce, p, bytes); alg) {
          case 1: return join(one(Collective::Reduce, A::Direct, "linear reduce", true, count, 0),
                              in_place(one(Collective::Broadcast, A::Direct, "linear broadcast", true, count, 0)));
          case 2: return join(choose(Collective::Reduce, count, 0), choose(Collective::Broadcast, count, 0));
          case 3: return one(c, A::RecursiveDoubling, "recursive doubling", true, count, root);
          case 4:
          case 5: {
            // The segmented ring with no segment size set runs the plain ring.
            const char* name = alg == 4 ? "ring" : "segmented ring, one segment";
            if (count < static_cast<std::uint64_t>(p))
              return one(c, A::RecursiveDoubling, "ring (fewer elements than ranks: recursive doubling)", true, count,
                         root);
            return one(c, A::Ring, name, true, count, root);
          }
          default:
            if (count < std::bit_floor(static_cast<std::uint64_t>(p)))
              return join(one(Collective::Reduce, A::Direct, "Rabenseifner (too few elements: linear reduce)", true,
                              count, 0),
                          in_place(one(Collective::Broadcast, A::Direct, "linear broadcast", true, count, 0)));
            return one(c, A::Rabenseifner, "Rabenseifner", true, count, root);
        }
      case Collective::Broadcast:
        return in_place(broadcast(count, root));
      case Collective::Reduce:
        switch (decide(kReduce, p, bytes)) {
          case 1: return one(c, A::Direct, "linear", true, count, root);
          case 2: return one(c, A::Ring, "chain, one segment", true, count, root, bytes);
          case 3: return one(c, A::Ring, "pipeline, one segment", true, count, root, bytes);
          case 4: return one(c, A::Binomial, "binary tree", false, count, root);
          case 5: return one(c, A::Binomial, "binomial", true, count, root);
          case 6: return one(c, A::Binomial, "in-order binary tree", false, count, root);
          default: return one(c, A::Rabenseifner, "Rabenseifner", true, count, root);
        }
      case Collective::ReduceScatter:
        switch (decide(kReduceScatterBlock, p, block_bytes)) {
          case 1: {
            // A reduce of the whole buffer to rank 0 (the library's own choice for it), then a
            // scatter of one block to each rank, which moves what a linear broadcast of one block does.
            const std::uint64_t block = count / static_cast<std::uint64_t>(p);
            return join(choose(Collective::Reduce, block * static_cast<std::uint64_t>(p), 0),
                        one(Collective::Broadcast, A::Direct, "linear scatter (as a linear broadcast of one block)",
                            false, block, 0));
          }
          case 2: return one(c, A::RecursiveHalving, "recursive doubling", false, count, root);
          case 3: return one(c, A::RecursiveHalving, "recursive halving", true, count, root);
          default: return one(c, A::RecursiveHalving, "butterfly", false, count, root);
        }
      case Collective::AllGather:
        switch (decide(kAllgather, p, block_bytes)) {
          case 1: return one(c, A::Direct, "linear (gather, then broadcast)", false, count, root);
          case 2: return one(c, A::Bruck, "Bruck", true, count, root);
          case 3:
            if (!std::has_single_bit(static_cast<unsigned>(p)))
              return one(c, A::Bruck, "recursive doubling (not a power of two: Bruck)", true, count, root);
            return one(c, A::RecursiveDoubling, "recursive doubling", true, count, root);
          case 4: return one(c, A::Ring, "ring", true, count, root);
          case 5: return one(c, A::Ring, "neighbor exchange", false, count, root);
          default: return one(c, A::Direct, "two processes", true, count, root);
        }
      case Collective::AllToAll:
        switch (decide(kAlltoall, p, block_bytes)) {
          case 1: return one(c, A::Direct, "linear", true, count, root);
          case 2: return one(c, A::Pairwise, "pairwise", true, count, root);
          case 3: return one(c, A::Bruck, "modified Bruck", false, count, root);
          case 4: return one(c, A::Direct, "linear, requests in flight bounded", false, count, root);
          default: return one(c, A::Pairwise, "two processes", true, count, root);
        }
      case Collective::SendRecv:
        return one(c, A::Direct, "MPI_Sendrecv", true, count, root);
    }
    throw Error("no library choice for this collective");
  }

  // The library's broadcast of `count` elements from `root`.
  std::vector<LibraryPhase> broadcast(std::uint64_t count, int root) const {
    const Collective c = Collective::Broadcast;
    const int p = base_.nranks;
    const std::uint64_t bytes = count * base_.elem_size;
    using A = Algorithm;
    switch (decide(kBroadcast, p, bytes)) {
      case 1: return one(c, A::Direct, "linear", true, count, root);
      case 2: return one(c, A::Ring, "chain, one segment", true, count, root, bytes);
      case 3: return one(c, A::Ring, "pipeline, one segment", true, count, root, bytes);
      case 4: return one(c, A::Tree, "split binary tree", false, count, root);
      case 5: return one(c, A::Binomial, "binary tree", false, count, root);
      case 6: return one(c, A::Binomial, "binomial", true, count, root);
      case 7: return one(c, A::Binomial, "k-nomial tree", false, count, root);
      case 8:
        if (count < static_cast<std::uint64_t>(p))
          return one(c, A::Direct, "scatter + allgather (fewer elements than ranks: linear)", true, count, root);
        return one(c, A::RecursiveDoubling, "scatter + allgather", std::has_single_bit(static_cast<unsigned>(p)), count,
                   root);
      default: return one(c, A::RecursiveDoubling, "scatter + ring allgather", false, count, root);
    }
  }

 private:
  static std::vector<LibraryPhase> in_place(std::vector<LibraryPhase> phases) {
    for (LibraryPhase& ph : phases) ph.in_place = true;
    return phases;
  }
  std::vector<LibraryPhase> one(Collective c, Algorithm a, const char* name, bool exact, std::uint64_t count,
                                int root, std::uint64_t chunk_bytes = 0) const {
    LibraryPhase ph;
    ph.request = base_;
    ph.request.collective = c;
    ph.request.algorithm = a;
    ph.request.count = count;
    ph.request.root = root;
    ph.request.pipeline_chunk_bytes = chunk_bytes;
    ph.library_algorithm = std::string(to_string(c)) + " " + name;
    ph.exact = exact;
    return {ph};
  }
  static std::vector<LibraryPhase> join(std::vector<LibraryPhase> a, const std::vector<LibraryPhase>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  ScheduleRequest base_;
};

}  // namespace

std::string LibraryChoice::describe() const {
  std::string s = library + ":";
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const LibraryPhase& ph = phases[i];
    s += (i == 0 ? " " : ", then ") + ph.library_algorithm + " (" + (ph.exact ? "as " : "nearest: ") +
         std::string(to_string(ph.request.algorithm));
    if (ph.request.pipeline_chunk_bytes > 0 && ph.request.algorithm == Algorithm::Ring) s += ", 1 chunk";
    s += ")";
  }
  return s;
}

std::string why_choice_unknown(const MpiLibrary& library) {
  if (library.version.empty()) return "the MPI library is not known";
  if (library.version.find("Open MPI v4.1") == std::string::npos)
    return "the choice of " + library.version.substr(0, library.version.find_first_of(",\n")) + " is not known";
  for (const std::string& kv : library.environment)
    if (kv.rfind("OMPI_MCA_coll", 0) == 0) return kv.substr(0, kv.find('=')) + " is set";
  return "";
}

std::optional<LibraryChoice> library_choice(const MpiLibrary& library, const ScheduleRequest& request) {
  if (!why_choice_unknown(library).empty() || request.nranks < 2) return std::nullopt;
  LibraryChoice out;
  out.library = "Open MPI 4.1 coll/tuned";
  out.phases = Chooser(request).choose(request.collective, request.count, request.root);
  return out;
}

Schedule library_schedule(const LibraryPhase& phase) {
  Schedule s = make_schedule(phase.request);
  if (!phase.in_place) return s;
  // The root's copy of its Input to its Output, and any round left empty by it.
  auto& rounds = s.ranks[static_cast<std::size_t>(phase.request.root)].rounds;
  for (Round& round : rounds)
    std::erase_if(round.ops, [](const Op& op) {
      return op.kind == OpKind::Copy && op.src.buffer == BufferId::Input && op.dst.buffer == BufferId::Output;
    });
  std::erase_if(rounds, [](const Round& round) { return round.ops.empty(); });
  return s;
}

Seconds price_library_choice(const LibraryChoice& choice, const Topology& on, const Placement& placement) {
  // The library moves and combines whole messages: commsim's pieces (Topology::piece) are its own
  // executor's.
  std::optional<Topology> whole;
  if (on.piece() > 0) {
    whole = on;
    whole->piece_bytes = 0;
  }
  const Topology& topology = whole ? *whole : on;
  Seconds t = 0;
  for (const LibraryPhase& ph : choice.phases) t += price_schedule(library_schedule(ph), topology, placement).time_s;
  // The phases run inside one MPI call: its overhead (Topology::call_overhead_s, which every
  // priced schedule of more than one rank adds) counts once.
  if (choice.phases.size() > 1 && placement.nranks > 1)
    t -= static_cast<double>(choice.phases.size() - 1) * topology.call_overhead_s;
  return t;
}

}  // namespace commsim
