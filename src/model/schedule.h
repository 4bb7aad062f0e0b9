#pragma once
// A schedule is a hand-written algorithm written down as data: for every rank, an ordered list of
// rounds, each a set of operations on element ranges of the rank's buffers. The generators in
// src/collectives/ produce schedules; the executors (reference, host/MPI, CUDA, UCX) run them; the
// model prices them (model/price.h). No MPI, CUDA or I/O here.
//
// Buffers, per rank (element counts are in the Schedule; every rank has the same sizes):
//   Input   the user's send buffer (read only)
//   Output  the user's receive buffer
//   Scratch temporary space of scratch_count elements
//
// A round runs like this on one rank:
//   1. its local ops (Copy, Reduce) run in the order listed;
//   2. all its transfers (Send, Recv, RecvReduce) are posted at once, and proceed concurrently;
//   3. the round ends when all its transfers are complete; a RecvReduce's data is combined into
//      its destination when it arrives (dst = dst op received).
// Messages between one sender and one receiver are matched in the order they are posted (as in
// MPI), so the k-th Send from a to b pairs with the k-th Recv/RecvReduce on b from a, and both
// carry the same number of elements. Ranks do not run rounds in lockstep: a round waits only on
// its own transfers.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "model/algorithms.h"  // takes_channels
#include "model/collective.h"

namespace commsim {

enum class BufferId : std::uint8_t { Input, Output, Scratch };

inline const char* to_string(BufferId b) {
  switch (b) {
    case BufferId::Input: return "Input";
    case BufferId::Output: return "Output";
    case BufferId::Scratch: return "Scratch";
  }
  return "?";
}

// A range of elements of one buffer.
struct Span {
  BufferId buffer = BufferId::Output;
  std::uint64_t offset = 0;  // elements
  std::uint64_t count = 0;   // elements
};

enum class OpKind : std::uint8_t {
  Send,        // send `src` to `peer`
  Recv,        // receive from `peer` into `dst`
  RecvReduce,  // receive from `peer` dst.count elements, then dst = dst op received
  Copy,        // dst = src (local)
  Reduce,      // dst = dst op src (local)
};

struct Op {
  OpKind kind = OpKind::Copy;
  // The channel the op belongs to (Schedule::channels): 0 in a one-channel schedule. Executors may
  // give each channel its own resources (the CUDA executor: its own group of blocks).
  std::uint8_t channel = 0;
  int peer = -1;  // for transfers
  Span src{};     // Send, Copy, Reduce
  Span dst{};     // Recv, RecvReduce, Copy, Reduce
};

struct Round {
  std::vector<Op> ops;
  // The time step the round belongs to: rounds of the same step run at the same time on every
  // rank (ranks idle in a step have no round for it, so a rank's round index can be smaller than
  // its step). kStepIsIndex: the round's index in its rank's program.
  static constexpr std::uint32_t kStepIsIndex = 0xffffffffu;
  std::uint32_t step = kStepIsIndex;
};

struct RankProgram {
  std::vector<Round> rounds;
};

struct Schedule {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  int nranks = 0;
  int root = 0;                    // broadcast / reduce
  std::uint32_t elem_size = 4;     // bytes per element
  std::uint64_t count = 0;         // the request's element count (nccl-tests meaning, see generators.h)
  std::uint64_t input_count = 0;   // elements of each rank's Input
  std::uint64_t output_count = 0;  // elements of each rank's Output
  std::uint64_t scratch_count = 0; // elements of each rank's Scratch
  // Channels: the data split into this many parts, each moved by its own copy of the algorithm
  // (its own ring or trees, in the same rounds as the others), whose traffic between nodes
  // leaves each node from a different GPU and so through a different NIC. 1 for the algorithms
  // that take no channel count (takes_channels).
  int channels = 1;
  std::vector<RankProgram> ranks;  // [rank]

  std::uint64_t bytes(const Span& s) const { return s.count * elem_size; }
  // Elements of buffer b on every rank.
  std::uint64_t count_of(BufferId b) const {
    switch (b) {
      case BufferId::Input: return input_count;
      case BufferId::Output: return output_count;
      case BufferId::Scratch: return scratch_count;
    }
    return 0;
  }
};

// Most channels a schedule may have (Op::channel holds the index).
inline constexpr int kMaxChannels = 64;

// Where an op sits: ranks[rank].rounds[round].ops[op].
struct OpRef {
  int rank = 0;
  std::uint32_t round = 0;
  std::uint32_t op = 0;
};

// One message of a schedule: a Send and the Recv/RecvReduce it pairs with under the matching rule
// above.
struct MatchedTransfer {
  OpRef send;
  OpRef recv;
  std::uint64_t count = 0;          // elements
  OpKind recv_kind = OpKind::Recv;  // Recv or RecvReduce
};

// Pairs every Send with its receive, ordered by sending rank, then by receiving rank, then in the
// order the sends are posted (by round). Throws Error naming the rank, round
// and op of the first transfer whose peer is out of range or the rank itself, that has no partner,
// or whose partner expects a different element count. `local_op`, when given, is called for every
// Copy and Reduce on the way, so that one pass over a large schedule serves both.
std::vector<MatchedTransfer> match_transfers(const Schedule& schedule,
                                             const std::function<void(const OpRef&, const Op&)>& local_op = {});

// One rank's rounds (a Program's `rounds`, const or not) in the order their ops take effect on its
// buffers: in each round its local ops (Copy, Reduce) first, in their order, then its sends, then
// its receives (Recv, RecvReduce), which complete at the round's end. wrote(op) is called for every
// op that writes its `dst`, send(op, round, index) for every Send after the writes that precede it:
// what a send reads was written earlier in the collective when it overlaps the `dst` of an earlier
// wrote(). The schedule builder and the pricer both follow this order.
template <class Rounds, class Wrote, class Sent>
void for_each_write_and_send(Rounds& rounds, Wrote&& wrote, Sent&& send) {
  for (std::uint32_t ro = 0; ro < rounds.size(); ++ro) {
    auto& ops = rounds[ro].ops;
    for (const Op& op : ops)
      if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) wrote(op);
    for (std::uint32_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == OpKind::Send) send(ops[i], ro, i);
    for (const Op& op : ops)
      if (op.kind == OpKind::Recv || op.kind == OpKind::RecvReduce) wrote(op);
  }
}

// A dense index of every (rank, round) of a schedule, rank by rank, for arrays with one entry per
// round.
class RoundIndex {
 public:
  explicit RoundIndex(const Schedule& schedule);
  std::size_t size() const { return base_.back(); }
  std::size_t operator()(int rank, std::uint32_t round) const { return base_[rank] + round; }

 private:
  std::vector<std::size_t> base_;  // [rank]: the index of its round 0; [nranks]: the number of rounds
};

// Runs a schedule's rounds in an order its semantics allow, as every executor must: a rank's round
// starts when its previous round has ended; a transfer proceeds once the rounds of its Send and of
// its receive have both started (no message is buffered before its receive is posted, so a
// schedule that would need such buffering deadlocks here as it may under MPI); a round ends when
// all its transfers are done. The visitor is called as rounds start and transfers proceed.
class ScheduleVisitor {
 public:
  virtual ~ScheduleVisitor() = default;
  virtual void round_started(int rank, std::uint32_t round) = 0;
  // transfers[index] proceeds: the rounds of its two ends have started and not ended.
  virtual void transfer(std::size_t index) = 0;
};

// `transfers` comes from match_transfers(schedule). Throws Error when ranks are left waiting on
// each other (a deadlock), naming them and the transfer each one waits for.
void walk_schedule(const Schedule& schedule, const std::vector<MatchedTransfer>& transfers, ScheduleVisitor& visitor);

}  // namespace commsim
