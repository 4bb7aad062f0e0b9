#include "collectives/reference_executor.h"

#include <cstring>
#include <string>

#include "collectives/generators.h"
#include "collectives/elements/reduce.h"
#include "model/error.h"

namespace commsim {
namespace {

class ReferenceRun : public ScheduleVisitor {
 public:
  ReferenceRun(const Schedule& s, DType dtype, RedOp op, const std::vector<std::vector<std::uint8_t>>& inputs,
               const std::vector<MatchedTransfer>& transfers)
      : s_(s), dtype_(dtype), op_(op), inputs_(inputs), transfers_(transfers) {
    // Output and Scratch start as all-ones bytes (NaN for the float types, -1 for int32), so an
    // element a schedule never writes cannot pass for a right result.
    outputs_.assign(s.nranks, std::vector<std::uint8_t>(s.output_count * s.elem_size, 0xFF));
    scratch_.assign(s.nranks, std::vector<std::uint8_t>(s.scratch_count * s.elem_size, 0xFF));
  }

  void round_started(int rank, std::uint32_t round) override {
    for (const Op& op : s_.ranks[rank].rounds[round].ops) {
      if (op.kind == OpKind::Copy)
        std::memmove(at(rank, op.dst), at(rank, op.src), s_.bytes(op.dst));
      else if (op.kind == OpKind::Reduce)
        reduce_into(at(rank, op.dst), at(rank, op.src), op.dst.count, dtype_, op_);
    }
  }

  void transfer(std::size_t index) override {
    const MatchedTransfer& t = transfers_[index];
    const Op& send = s_.ranks[t.send.rank].rounds[t.send.round].ops[t.send.op];
    const Op& recv = s_.ranks[t.recv.rank].rounds[t.recv.round].ops[t.recv.op];
    if (recv.kind == OpKind::RecvReduce)
      reduce_into(at(t.recv.rank, recv.dst), at(t.send.rank, send.src), recv.dst.count, dtype_, op_);
    else if (const std::size_t n = s_.bytes(recv.dst); n > 0)  // an empty span may have no buffer
      std::memcpy(at(t.recv.rank, recv.dst), at(t.send.rank, send.src), n);
  }

  std::vector<std::vector<std::uint8_t>> take_outputs() { return std::move(outputs_); }

 private:
  std::uint8_t* at(int rank, const Span& sp) {
    std::uint8_t* base = nullptr;
    switch (sp.buffer) {
      // Input is only ever read (validate_schedule enforces it).
      case BufferId::Input: base = const_cast<std::uint8_t*>(inputs_[rank].data()); break;
      case BufferId::Output: base = outputs_[rank].data(); break;
      case BufferId::Scratch: base = scratch_[rank].data(); break;
    }
    return base + sp.offset * s_.elem_size;
  }

  const Schedule& s_;
  DType dtype_;
  RedOp op_;
  const std::vector<std::vector<std::uint8_t>>& inputs_;
  const std::vector<MatchedTransfer>& transfers_;
  std::vector<std::vector<std::uint8_t>> outputs_, scratch_;
};

}  // namespace

std::vector<std::vector<std::uint8_t>> run_reference(const Schedule& schedule, DType dtype, RedOp op,
                                                     const std::vector<std::vector<std::uint8_t>>& inputs) {
  if (dtype_size(dtype) != schedule.elem_size)
    throw Error("run_reference: the schedule has " + std::to_string(schedule.elem_size) + "-byte elements but " +
                std::string(to_string(dtype)) + " has " + std::to_string(dtype_size(dtype)));
  if (static_cast<int>(inputs.size()) != schedule.nranks)
    throw Error("run_reference: " + std::to_string(inputs.size()) + " inputs given for " +
                std::to_string(schedule.nranks) + " ranks");
  for (std::size_t r = 0; r < inputs.size(); ++r)
    if (inputs[r].size() != schedule.input_count * schedule.elem_size)
      throw Error("run_reference: rank " + std::to_string(r) + "'s input holds " + std::to_string(inputs[r].size()) +
                  " bytes, the schedule's Input " + std::to_string(schedule.input_count * schedule.elem_size));
  const std::vector<MatchedTransfer> transfers = validate_schedule(schedule);
  ReferenceRun run(schedule, dtype, op, inputs, transfers);
  walk_schedule(schedule, transfers, run);
  return run.take_outputs();
}

}  // namespace commsim
