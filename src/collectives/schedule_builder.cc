#include "collectives/schedule_builder.h"

#include <numeric>

namespace commsim {

std::vector<std::uint64_t> chunk_offsets(std::uint64_t base, std::uint64_t count, std::uint64_t parts) {
  std::vector<std::uint64_t> out(parts + 1);
  for (std::uint64_t i = 0; i <= parts; ++i) out[i] = base + chunk_offset(count, parts, i);
  return out;
}

std::uint64_t pipeline_chunks(std::uint64_t count, std::uint32_t elem_size, std::uint64_t chunk_bytes) {
  if (chunk_bytes == 0) chunk_bytes = kDefaultPipelineChunkBytes;
  const std::uint64_t bytes = count * elem_size;
  const std::uint64_t k = (bytes + chunk_bytes - 1) / chunk_bytes;
  return std::max<std::uint64_t>(1, std::min(k, count));
}

ScheduleBuilder::ScheduleBuilder(const ScheduleRequest& request, std::uint64_t input_count, std::uint64_t output_count)
    : request_(request), cursor_(request.nranks, 0) {
  schedule_.collective = request.collective;
  schedule_.algorithm = request.algorithm;
  schedule_.nranks = request.nranks;
  schedule_.root = request.root;
  schedule_.elem_size = request.elem_size;
  schedule_.count = request.count;
  schedule_.input_count = input_count;
  schedule_.output_count = output_count;
  schedule_.ranks.resize(request.nranks);
}

Round& ScheduleBuilder::round(int rank, std::size_t step) {
  auto& rounds = schedule_.ranks[rank].rounds;
  const std::size_t index = cursor_[rank] + step;
  if (rounds.size() <= index) rounds.resize(index + 1);
  Round& round = rounds[index];
  round.step = static_cast<std::uint32_t>(index);  // kept when finish() drops the empty rounds
  if (round.ops.capacity() == 0) round.ops.reserve(2);  // most rounds hold two or three ops
  return round;
}

void ScheduleBuilder::add_transfer(int rank, std::size_t step, Op op) {
  round(rank, step).ops.push_back(op);
}

void ScheduleBuilder::add_local(int rank, std::size_t step, Op op) {
  if (op.dst.count == 0) return;
  if (op.kind == OpKind::Copy && op.src.buffer == op.dst.buffer && op.src.offset == op.dst.offset) return;
  auto& ops = round(rank, step).ops;
  // Keep local ops ahead of the transfers, in the order they were added: that is how they run.
  auto it = std::find_if(ops.begin(), ops.end(),
                         [](const Op& o) { return o.kind != OpKind::Copy && o.kind != OpKind::Reduce; });
  ops.insert(it, op);
}

void ScheduleBuilder::send(int rank, std::size_t step, int peer, const Span& src) {
  add_transfer(rank, step, Op{.kind = OpKind::Send, .channel = channel_, .peer = peer, .src = src});
}
void ScheduleBuilder::recv(int rank, std::size_t step, int peer, const Span& dst) {
  add_transfer(rank, step, Op{.kind = OpKind::Recv, .channel = channel_, .peer = peer, .dst = dst});
}
void ScheduleBuilder::recv_reduce(int rank, std::size_t step, int peer, const Span& dst) {
  add_transfer(rank, step, Op{.kind = OpKind::RecvReduce, .channel = channel_, .peer = peer, .dst = dst});
}
void ScheduleBuilder::send(int rank, std::size_t step, int peer, const Piece& src) {
  for (const Span& s : src) send(rank, step, peer, s);
}
void ScheduleBuilder::recv(int rank, std::size_t step, int peer, const Piece& dst) {
  for (const Span& s : dst) recv(rank, step, peer, s);
}
void ScheduleBuilder::copy(int rank, std::size_t step, const Span& src, const Span& dst) {
  add_local(rank, step, Op{.kind = OpKind::Copy, .channel = channel_, .src = src, .dst = dst});
}
void ScheduleBuilder::reduce(int rank, std::size_t step, const Span& src, const Span& dst) {
  add_local(rank, step, Op{.kind = OpKind::Reduce, .channel = channel_, .src = src, .dst = dst});
}

void ScheduleBuilder::run_channels(int channels, const std::function<void(int channel)>& build) {
  schedule_.channels = channels;
  const std::vector<std::size_t> start = cursor_;
  std::vector<std::size_t> latest = cursor_;
  for (int c = 0; c < channels; ++c) {
    cursor_ = start;
    channel_ = static_cast<std::uint8_t>(c);
    build(c);
    for (std::size_t r = 0; r < cursor_.size(); ++r) latest[r] = std::max(latest[r], cursor_[r]);
  }
  cursor_ = std::move(latest);
  channel_ = 0;
}

namespace {

bool within(const Span& inner, const Span& outer) {
  return inner.buffer == outer.buffer && inner.offset >= outer.offset &&
         inner.offset + inner.count <= outer.offset + outer.count;
}
bool overlap(const Span& a, const Span& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

// A rank that sends data it copied from Input (in this round or an earlier one, and left
// untouched since) sends it from Input. Open MPI's shared-memory single copy took up to three
// times as long for a message read from a buffer the sender had just written as for the same
// message read from Input (2 ranks, 16-256 KiB); Input is never written, so the data is the same.
// The copies still run where they are.
void send_copied_data_from_input(std::vector<Round>& rounds) {
  struct Copied {
    Span dst;
    std::uint64_t input_offset;  // where dst's first element lies in Input
  };
  std::vector<Copied> copied;  // ranges that hold a copy of Input, not written since
  auto written = [&](const Span& dst) {
    copied.erase(std::remove_if(copied.begin(), copied.end(), [&](const Copied& c) { return overlap(c.dst, dst); }),
                 copied.end());
  };
  for_each_write_and_send(
      rounds,
      [&](const Op& op) {
        written(op.dst);
        if (op.kind == OpKind::Copy && op.src.buffer == BufferId::Input) copied.push_back({op.dst, op.src.offset});
      },
      [&](Op& op, std::uint32_t, std::uint32_t) {
        if (op.src.buffer == BufferId::Input || op.src.count == 0) return;
        for (const Copied& c : copied)
          if (within(op.src, c.dst)) {
            op.src = Span{BufferId::Input, c.input_offset + (op.src.offset - c.dst.offset), op.src.count};
            return;
          }
      });
}

}  // namespace

Schedule ScheduleBuilder::finish() {
  for (auto& program : schedule_.ranks) {
    auto& rounds = program.rounds;
    rounds.erase(std::remove_if(rounds.begin(), rounds.end(), [](const Round& r) { return r.ops.empty(); }),
                 rounds.end());
    send_copied_data_from_input(rounds);
  }
  return std::move(schedule_);
}

PowerOfTwoFold::PowerOfTwoFold(int positions) : m(positions) {
  while (m2 * 2 <= m) m2 *= 2;
  r = m - m2;
}

std::vector<int> PowerOfTwoFold::members(const std::vector<int>& group) const {
  std::vector<int> out(m2);
  for (int j = 0; j < m2; ++j) out[j] = group[position(j)];
  return out;
}

void fold_in(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold,
             const std::function<Span(int pos)>& send_src, const std::function<Span(int pos)>& recv_dst, bool reduce) {
  for (int pos = 1; pos < 2 * fold.r; pos += 2) {
    b.send(group[pos], 0, group[pos - 1], send_src(pos));
    if (reduce)
      b.recv_reduce(group[pos - 1], 0, group[pos], recv_dst(pos));
    else
      b.recv(group[pos - 1], 0, group[pos], recv_dst(pos));
  }
  b.advance(group, 1);
}

void fold_out(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold,
              const std::function<Piece(int pos)>& data) {
  for (int pos = 1; pos < 2 * fold.r; pos += 2) {
    const Piece piece = data(pos);
    b.send(group[pos - 1], 0, group[pos], piece);
    b.recv(group[pos], 0, group[pos - 1], piece);
  }
  b.advance(group, 1);
}

std::vector<int> rotated(const std::vector<int>& group, int root_pos) {
  const int m = static_cast<int>(group.size());
  std::vector<int> out(m);
  for (int i = 0; i < m; ++i) out[i] = group[(root_pos + i) % m];
  return out;
}

std::vector<int> iota_ranks(int n) {
  std::vector<int> out(n);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

}  // namespace commsim
