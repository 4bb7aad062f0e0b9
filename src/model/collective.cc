// applies(), is_hand_written() and hand_written_algorithms() read the table of model/algorithms.cc.
#include "model/collective.h"

#include <cctype>

namespace commsim {
namespace {

std::string normalize(std::string_view name) {
  std::string s;
  for (char ch : name) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return s;
}

}  // namespace

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "allreduce";
    case Collective::AllGather: return "allgather";
    case Collective::ReduceScatter: return "reducescatter";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::SendRecv: return "sendrecv";
    case Collective::AllToAll: return "alltoall";
  }
  return "?";
}

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Tree: return "tree";
    case Algorithm::RecursiveDoubling: return "recursive-doubling";
    case Algorithm::RecursiveHalving: return "recursive-halving";
    case Algorithm::Rabenseifner: return "rabenseifner";
    case Algorithm::Bruck: return "bruck";
    case Algorithm::Binomial: return "binomial";
    case Algorithm::Pairwise: return "pairwise";
    case Algorithm::Direct: return "direct";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::Mpi: return "mpi";
    case Algorithm::Nccl: return "nccl";
    case Algorithm::NcclRing: return "nccl-ring";
    case Algorithm::NcclTree: return "nccl-tree";
    case Algorithm::NcclNvls: return "nccl-nvls";
    case Algorithm::NcclNvlsTree: return "nccl-nvlstree";
    case Algorithm::NcclCollnetDirect: return "nccl-collnet-direct";
    case Algorithm::NcclCollnetChain: return "nccl-collnet-chain";
    case Algorithm::NcclPat: return "nccl-pat";
  }
  return "?";
}

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::None: return "";
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  std::string n = normalize(name);
  for (Collective c : kAllCollectives)
    if (n == normalize(to_string(c))) return c;
  if (n == "bcast") return Collective::Broadcast;
  if (n == "reducescatterblock") return Collective::ReduceScatter;
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  std::string n = normalize(name);
  for (Algorithm a : kAllAlgorithms)
    if (n == normalize(to_string(a))) return a;
  if (n == "rd") return Algorithm::RecursiveDoubling;
  if (n == "rh") return Algorithm::RecursiveHalving;
  if (n == "dbt" || n == "doublebinarytree") return Algorithm::Tree;
  if (n == "hier") return Algorithm::Hierarchical;
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view name) {
  std::string n = normalize(name);
  if (n == "ll") return Protocol::LL;
  if (n == "ll128") return Protocol::LL128;
  if (n == "simple") return Protocol::Simple;
  if (n == "none" || n.empty()) return Protocol::None;
  return std::nullopt;
}

bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}

double busbw_factor(Collective c, int nranks) {
  const double p = nranks;
  switch (c) {
    // With one rank these are 0, exactly as nccl-tests prints them.
    case Collective::AllReduce: return 2.0 * (p - 1) / p;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: return (p - 1) / p;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

BufferCounts buffer_counts(Collective c, std::uint64_t count, int nranks) {
  const std::uint64_t p = static_cast<std::uint64_t>(nranks < 1 ? 1 : nranks);
  const std::uint64_t block = count / p;  // allgather, reducescatter, alltoall: the remainder is dropped
  switch (c) {
    case Collective::AllGather: return {block, block * p};
    case Collective::ReduceScatter: return {block * p, block};
    case Collective::AllToAll: return {block * p, block * p};
    default: return {count, count};
  }
}

double working_set_bytes(Collective c, std::uint64_t bytes, int nranks) {
  const BufferCounts b = buffer_counts(c, bytes, nranks);
  return static_cast<double>(b.input + b.output);
}

}  // namespace commsim
