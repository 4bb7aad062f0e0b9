// validate_schedule: the rules every executor relies on.
//   - spans lie inside their buffers, and nothing writes Input;
//   - inside one round, a receive's destination overlaps no other transfer's elements (executors
//     post all transfers of a round at once: a buffer being sent or received into must not be
//     written meanwhile), and a local op's source and destination do not overlap;
//   - every Send pairs with a receive of the same element count, in order (match_transfers);
//   - the rounds can run to the end without buffering unreceived messages (walk_schedule).
#include <algorithm>
#include <string>

#include "collectives/generators.h"
#include "model/error.h"

namespace commsim {
namespace {

std::string describe(const Span& sp) {
  return std::string(to_string(sp.buffer)) + "[" + std::to_string(sp.offset) + ", +" + std::to_string(sp.count) + ")";
}

bool overlap(const Span& a, const Span& b) {
  return a.buffer == b.buffer && a.count > 0 && b.count > 0 && a.offset < b.offset + b.count &&
         b.offset < a.offset + a.count;
}

class NoOp : public ScheduleVisitor {
 public:
  void round_started(int, std::uint32_t) override {}
  void transfer(std::size_t) override {}
};

}  // namespace

std::vector<MatchedTransfer> validate_schedule(const Schedule& s) {
  if (s.nranks < 1) throw Error("schedule: nranks must be at least 1, got " + std::to_string(s.nranks));
  if (static_cast<int>(s.ranks.size()) != s.nranks)
    throw Error("schedule: has programs for " + std::to_string(s.ranks.size()) + " ranks but nranks is " +
                std::to_string(s.nranks));
  if (s.elem_size == 0) throw Error("schedule: element size is 0");

  struct Touch {
    Span span;
    bool writes;
    std::uint32_t op;
  };
  std::vector<Touch> touches;
  for (int rank = 0; rank < s.nranks; ++rank) {
    const auto& rounds = s.ranks[rank].rounds;
    for (std::uint32_t r = 0; r < rounds.size(); ++r) {
      touches.clear();
      for (std::uint32_t o = 0; o < rounds[r].ops.size(); ++o) {
        const Op& op = rounds[r].ops[o];
        const std::string at = "schedule: rank " + std::to_string(rank) + " round " + std::to_string(r) + " op " +
                               std::to_string(o) + ": ";
        auto check = [&](const Span& sp, const char* role) {
          const std::uint64_t size = s.count_of(sp.buffer);
          if (sp.offset > size || sp.count > size - sp.offset)
            throw Error(at + role + " " + describe(sp) + " lies outside " + to_string(sp.buffer) + ", which holds " +
                        std::to_string(size) + " elements");
        };
        const bool reads = op.kind == OpKind::Send || op.kind == OpKind::Copy || op.kind == OpKind::Reduce;
        const bool writes = op.kind != OpKind::Send;
        if (reads) check(op.src, "source");
        if (writes) {
          check(op.dst, "destination");
          if (op.dst.buffer == BufferId::Input)
            throw Error(at + "writes " + describe(op.dst) + " but Input is read only");
        }
        if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) {
          if (overlap(op.src, op.dst))
            throw Error(at + "local op reads " + describe(op.src) + " and writes the overlapping " + describe(op.dst));
        } else {
          touches.push_back({op.kind == OpKind::Send ? op.src : op.dst, writes, o});
        }
      }
      // A transfer that writes must not overlap any other transfer of the round.
      std::sort(touches.begin(), touches.end(), [](const Touch& a, const Touch& b) {
        return std::pair(a.span.buffer, a.span.offset) < std::pair(b.span.buffer, b.span.offset);
      });
      for (std::size_t i = 0; i < touches.size(); ++i)
        for (std::size_t j = i + 1; j < touches.size() && touches[j].span.buffer == touches[i].span.buffer &&
                                    touches[j].span.offset < touches[i].span.offset + touches[i].span.count;
             ++j)
          if ((touches[i].writes || touches[j].writes) && overlap(touches[i].span, touches[j].span))
            throw Error("schedule: rank " + std::to_string(rank) + " round " + std::to_string(r) + ": op " +
                        std::to_string(touches[i].op) + " (" + describe(touches[i].span) + ") and op " +
                        std::to_string(touches[j].op) + " (" + describe(touches[j].span) +
                        ") overlap, and at least one of them receives into it while both are in flight");
    }
  }
  const std::vector<MatchedTransfer> transfers = match_transfers(s);
  NoOp visitor;
  walk_schedule(s, transfers, visitor);
  return transfers;
}

}  // namespace commsim
