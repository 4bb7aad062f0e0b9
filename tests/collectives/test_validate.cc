// validate_schedule and the reference executor reject broken schedules with an Error that says
// where: unmatched or mismatched transfers, spans outside buffers, writes to Input, overlapping
// transfers in one round, and deadlocks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/generators.h"
#include "collectives/reference_executor.h"
#include "model/error.h"

namespace commsim {
namespace {

Op send(int peer, std::uint64_t off, std::uint64_t n) {
  return {.kind = OpKind::Send, .peer = peer, .src = {BufferId::Input, off, n}};
}
Op recv(int peer, std::uint64_t off, std::uint64_t n) {
  return {.kind = OpKind::Recv, .peer = peer, .dst = {BufferId::Output, off, n}};
}

// Two ranks, 4 elements in and out; rank 0 sends its input to rank 1.
Schedule two_ranks() {
  Schedule s;
  s.collective = Collective::SendRecv;
  s.algorithm = Algorithm::Direct;
  s.nranks = 2;
  s.count = s.input_count = s.output_count = 4;
  s.ranks.resize(2);
  s.ranks[0].rounds = {Round{{send(1, 0, 4)}}};
  s.ranks[1].rounds = {Round{{recv(0, 0, 4)}}};
  return s;
}

void expect_error(const Schedule& s, const std::string& needle) {
  try {
    validate_schedule(s);
    FAIL() << "expected an Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<std::vector<std::uint8_t>> inputs(const Schedule& s) {
  return std::vector<std::vector<std::uint8_t>>(s.nranks, std::vector<std::uint8_t>(s.input_count * s.elem_size, 1));
}

TEST(Validate, AcceptsAWellFormedSchedule) {
  const Schedule s = two_ranks();
  EXPECT_EQ(validate_schedule(s).size(), 1u);
  const auto out = run_reference(s, DType::Float32, RedOp::Sum, inputs(s));
  EXPECT_EQ(out[1], inputs(s)[0]);
}

TEST(Validate, UnmatchedSend) {
  Schedule s = two_ranks();
  s.ranks[0].rounds.push_back(Round{{send(1, 0, 2)}});
  expect_error(s, "rank 0 round 1 op 0");
  EXPECT_THROW(run_reference(s, DType::Float32, RedOp::Sum, inputs(s)), Error);
}

TEST(Validate, UnmatchedReceive) {
  Schedule s = two_ranks();
  s.ranks[1].rounds.push_back(Round{{recv(0, 0, 4)}});
  expect_error(s, "no matching Send");
}

TEST(Validate, SizeMismatch) {
  Schedule s = two_ranks();
  s.ranks[1].rounds[0].ops[0].dst.count = 3;
  expect_error(s, "expects 3");
}

TEST(Validate, PeerOutOfRangeOrSelf) {
  Schedule s = two_ranks();
  s.ranks[0].rounds[0].ops[0].peer = 2;
  expect_error(s, "peer 2");
  s.ranks[0].rounds[0].ops[0].peer = 0;
  expect_error(s, "peer 0");
}

TEST(Validate, SpanOutsideItsBuffer) {
  Schedule s = two_ranks();
  s.ranks[1].rounds[0].ops[0].dst.offset = 1;
  expect_error(s, "outside Output");
  Schedule t = two_ranks();
  t.ranks[0].rounds[0].ops[0].src.buffer = BufferId::Scratch;  // no Scratch at all
  expect_error(t, "outside Scratch");
}

TEST(Validate, WritesToInput) {
  Schedule s = two_ranks();
  s.ranks[1].rounds[0].ops[0].dst.buffer = BufferId::Input;
  expect_error(s, "read only");
}

TEST(Validate, ReceiveOverlappingAnotherTransferOfItsRound) {
  Schedule s = two_ranks();
  s.ranks[1].rounds[0].ops.push_back(Op{.kind = OpKind::Send, .peer = 0, .src = {BufferId::Output, 2, 2}});
  s.ranks[0].rounds[0].ops.push_back(recv(1, 0, 2));
  expect_error(s, "overlap");
}

TEST(Validate, LocalOpOverlappingItself) {
  Schedule s = two_ranks();
  s.ranks[1].rounds.push_back(
      Round{{Op{.kind = OpKind::Copy, .src = {BufferId::Output, 0, 3}, .dst = {BufferId::Output, 1, 3}}}});
  expect_error(s, "overlapping");
}

TEST(Validate, Deadlock) {
  // Each rank first waits to receive what the other sends only in its second round.
  Schedule s = two_ranks();
  s.ranks[0].rounds = {Round{{recv(1, 0, 4)}}, Round{{send(1, 0, 4)}}};
  s.ranks[1].rounds = {Round{{recv(0, 0, 4)}}, Round{{send(0, 0, 4)}}};
  expect_error(s, "deadlock");
  EXPECT_THROW(run_reference(s, DType::Float32, RedOp::Sum, inputs(s)), Error);
}

TEST(Validate, SendsAreNotBuffered) {
  // Both ranks send first and receive in their next round: fine with buffered sends, a deadlock
  // for an executor whose large sends wait for their receive (MPI rendezvous) - and so here.
  Schedule s = two_ranks();
  s.ranks[0].rounds = {Round{{send(1, 0, 4)}}, Round{{recv(1, 0, 4)}}};
  s.ranks[1].rounds = {Round{{send(0, 0, 4)}}, Round{{recv(0, 0, 4)}}};
  expect_error(s, "deadlock");
}

TEST(Validate, ReferenceExecutorChecksItsInputs) {
  const Schedule s = two_ranks();
  EXPECT_THROW(run_reference(s, DType::Float64, RedOp::Sum, inputs(s)), Error);  // 8-byte elements
  EXPECT_THROW(run_reference(s, DType::Float32, RedOp::Sum, {{}}), Error);       // one input for two ranks
}

}  // namespace
}  // namespace commsim
