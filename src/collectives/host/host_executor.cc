#include "collectives/host/host_executor.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "collectives/elements/reduce.h"
#include "model/error.h"

namespace commsim {
namespace {

// Bytes of the receive buffer of one rank: the largest total of RecvReduce data in one round
// (all of a round's receives are in flight at once).
std::uint64_t recv_temp_bytes(const Schedule& s, int rank) {
  std::uint64_t most = 0;
  for (const Round& round : s.ranks[static_cast<std::size_t>(rank)].rounds) {
    std::uint64_t sum = 0;
    for (const Op& op : round.ops)
      if (op.kind == OpKind::RecvReduce) sum += op.dst.count;
    most = std::max(most, sum);
  }
  return most * s.elem_size;
}

std::string where(int rank, std::size_t round, std::size_t op) {
  return "rank " + std::to_string(rank) + " round " + std::to_string(round) + " op " + std::to_string(op);
}

}  // namespace

std::uint64_t HostExecutor::extra_bytes_for(const Schedule& schedule, int rank) {
  return schedule.scratch_count * schedule.elem_size + recv_temp_bytes(schedule, rank);
}

HostExecutor::HostExecutor(const Schedule& schedule, DType dtype, RedOp op, Transport& transport,
                           HostExecutorOptions options)
    : dtype_(dtype), op_(op), elem_size_(dtype_size(dtype)), transport_(transport) {
  const int rank = transport.rank();
  if (schedule.nranks != transport.size())
    throw Error("schedule for " + std::to_string(schedule.nranks) + " ranks cannot run on " +
                std::to_string(transport.size()) + " ranks");
  if (schedule.elem_size != elem_size_)
    throw Error("schedule built for " + std::to_string(schedule.elem_size) + "-byte elements, but " +
                std::string(to_string(dtype)) + " has " + std::to_string(elem_size_));
  if (static_cast<int>(schedule.ranks.size()) != schedule.nranks)
    throw Error("schedule has programs for " + std::to_string(schedule.ranks.size()) + " ranks, expected " +
                std::to_string(schedule.nranks));

  std::uint64_t limit = transport.max_message_bytes();
  if (options.piece_bytes > 0) limit = std::min(limit, options.piece_bytes);
  const std::uint64_t piece_limit = std::max<std::uint64_t>(limit / elem_size_, 1) * elem_size_;

  auto place_of = [&](const Span& span, const std::string& at) {
    if (span.offset + span.count > schedule.count_of(span.buffer))
      throw Error("schedule " + std::string(to_string(schedule.algorithm)) + ": span out of range at " + at);
    return Place{span.buffer, span.offset * elem_size_};
  };

  const auto& program = schedule.ranks[static_cast<std::size_t>(rank)];
  rounds_.reserve(program.rounds.size());
  for (std::size_t ri = 0; ri < program.rounds.size(); ++ri) {
    CompiledRound out;
    std::uint64_t temp_offset = 0;
    const auto& ops = program.rounds[ri].ops;
    for (std::size_t oi = 0; oi < ops.size(); ++oi) {
      const Op& o = ops[oi];
      const std::string at = where(rank, ri, oi);
      if (o.kind != OpKind::Send && o.dst.buffer == BufferId::Input)
        throw Error("schedule " + std::string(to_string(schedule.algorithm)) + " writes into Input at " + at);
      switch (o.kind) {
        case OpKind::Copy:
        case OpKind::Reduce: {
          if (o.src.count != o.dst.count) throw Error("local op with unequal spans at " + at);
          out.local.push_back({o.kind, place_of(o.src, at), place_of(o.dst, at), o.dst.count});
          break;
        }
        case OpKind::Send:
        case OpKind::Recv:
        case OpKind::RecvReduce: {
          if (o.peer < 0 || o.peer >= schedule.nranks) throw Error("peer out of range at " + at);
          const Span& span = o.kind == OpKind::Send ? o.src : o.dst;
          const Place base = place_of(span, at);
          const std::uint64_t total = span.count * elem_size_;
          const bool reduce = o.kind == OpKind::RecvReduce;
          out.has_reduce = out.has_reduce || reduce;
          // A zero-length transfer is still one message: both ends post it, so the matching
          // order and the synchronisation it implies are kept.
          std::uint64_t done = 0;
          do {
            const std::uint64_t bytes = std::min(piece_limit, total - done);
            Piece piece{o.peer, Place{base.buffer, base.byte_offset + done}, bytes, reduce, temp_offset};
            if (reduce) temp_offset += bytes;
            (o.kind == OpKind::Send ? out.sends : out.recvs).push_back(piece);
            done += bytes;
          } while (done < total);
          break;
        }
      }
    }
    rounds_.push_back(std::move(out));
  }
  scratch_ = AlignedBuffer(schedule.scratch_count * elem_size_);
  recv_temp_ = AlignedBuffer(recv_temp_bytes(schedule, rank));
}

std::byte* HostExecutor::resolve(const Place& p, const void* input, void* output) {
  switch (p.buffer) {
    // Input is only ever a send source or a local-op source (checked when compiling).
    case BufferId::Input: return const_cast<std::byte*>(static_cast<const std::byte*>(input)) + p.byte_offset;
    case BufferId::Output: return static_cast<std::byte*>(output) + p.byte_offset;
    case BufferId::Scratch: return scratch_.data() + p.byte_offset;
  }
  return nullptr;
}

void HostExecutor::run(const void* input, void* output) {
  for (const CompiledRound& round : rounds_) {
    for (const LocalOp& op : round.local) {
      std::byte* dst = resolve(op.dst, input, output);
      const std::byte* src = resolve(op.src, input, output);
      if (op.kind == OpKind::Copy) {
        if (dst != src) std::memmove(dst, src, op.count * elem_size_);
      } else {
        reduce_into(dst, src, op.count, dtype_, op_);
      }
    }
    for (const Piece& p : round.recvs)
      transport_.post_recv(p.peer, p.reduce ? recv_temp_.data() + p.temp_offset : resolve(p.place, input, output),
                           p.bytes);
    for (const Piece& p : round.sends) transport_.post_send(p.peer, resolve(p.place, input, output), p.bytes);
    if (round.has_reduce) {
      // Receives were posted first, so request i < recvs.size() is receive piece i.
      done_.clear();
      while (transport_.wait_some(done_)) {
        for (std::size_t idx : done_) {
          if (idx >= round.recvs.size()) continue;
          const Piece& p = round.recvs[idx];
          if (p.reduce)
            reduce_into(resolve(p.place, input, output), recv_temp_.data() + p.temp_offset, p.bytes / elem_size_,
                        dtype_, op_);
        }
        done_.clear();
      }
    }
    transport_.wait_all();
  }
}

}  // namespace commsim
