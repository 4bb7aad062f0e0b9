#pragma once
// What the schedule generators share: the builder that collects each rank's rounds, chunk
// partitions, and the fold that lets power-of-two algorithms run on any rank count. Internal to
// src/collectives.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/generators.h"
#include "model/schedule.h"

namespace commsim {

inline Span span(BufferId buffer, std::uint64_t offset, std::uint64_t count) {
  return Span{buffer, offset, count};
}

// a mod m in [0, m), also for negative a (positions around a ring).
constexpr int wrap(int a, int m) {
  return ((a % m) + m) % m;
}
// The smallest k with 2^k >= m: the steps of a binomial tree or of Bruck's algorithms over m ranks.
constexpr int ceil_log2(int m) {
  int k = 0;
  while ((1 << k) < m) ++k;
  return k;
}

// `count` elements split into `parts` chunks whose sizes differ by at most one (the first
// count % parts chunks hold one more): chunk i is [chunk_offset(i), chunk_offset(i + 1)).
constexpr std::uint64_t chunk_offset(std::uint64_t count, std::uint64_t parts, std::uint64_t i) {
  return i * (count / parts) + std::min(i, count % parts);
}
// The parts + 1 boundaries of that split, shifted by `base`.
std::vector<std::uint64_t> chunk_offsets(std::uint64_t base, std::uint64_t count, std::uint64_t parts);
// Chunk i of the elements [base, base + count) of `buffer` split into `parts`.
inline Span chunk_span(BufferId buffer, std::uint64_t base, std::uint64_t count, std::uint64_t parts, std::uint64_t i) {
  const std::uint64_t lo = chunk_offset(count, parts, i);
  return span(buffer, base + lo, chunk_offset(count, parts, i + 1) - lo);
}

// Default size of one pipeline chunk of the pipelined algorithms (tree, ring broadcast/reduce).
inline constexpr std::uint64_t kDefaultPipelineChunkBytes = 512 * 1024;
// How many pipeline chunks `count` elements travel in: about chunk_bytes each (0: the default),
// at least one, never more than `count`.
std::uint64_t pipeline_chunks(std::uint64_t count, std::uint32_t elem_size, std::uint64_t chunk_bytes);

// Several element ranges moved as one unit (most pieces are one range).
using Piece = std::vector<Span>;

// Collects every rank's program. Ops are placed at a step relative to the rank's cursor; a phase
// (a ring pass, a tree, ...) uses steps 0..n-1 and then advances its ranks' cursors by n. Ranks
// keep their own cursors, so phases over different groups follow each other per rank. Rounds left
// empty are dropped by finish(), so a phase may leave idle steps empty.
class ScheduleBuilder {
 public:
  ScheduleBuilder(const ScheduleRequest& request, std::uint64_t input_count, std::uint64_t output_count);

  const ScheduleRequest& request() const { return request_; }
  int nranks() const { return schedule_.nranks; }
  std::uint64_t count() const { return schedule_.count; }
  std::uint64_t input_count() const { return schedule_.input_count; }
  std::uint64_t output_count() const { return schedule_.output_count; }
  // Grows the Scratch buffer to at least `elements`.
  void need_scratch(std::uint64_t elements) { schedule_.scratch_count = std::max(schedule_.scratch_count, elements); }

  void send(int rank, std::size_t step, int peer, const Span& src);
  void recv(int rank, std::size_t step, int peer, const Span& dst);
  void recv_reduce(int rank, std::size_t step, int peer, const Span& dst);
  // One transfer per span of the piece.
  void send(int rank, std::size_t step, int peer, const Piece& src);
  void recv(int rank, std::size_t step, int peer, const Piece& dst);
  // Local ops run before the round's transfers whatever the order they are added in. A copy onto
  // itself and empty local ops are left out.
  void copy(int rank, std::size_t step, const Span& src, const Span& dst);
  void reduce(int rank, std::size_t step, const Span& src, const Span& dst);

  void advance(int rank, std::size_t steps) { cursor_[rank] += steps; }
  void advance(const std::vector<int>& ranks, std::size_t steps) {
    for (int r : ranks) advance(r, steps);
  }
  // Moves every rank of `ranks` to the latest cursor among them, so that a phase that follows
  // starts at the same time step everywhere (Round::step, which the model prices as concurrent;
  // ranks that wait get no rounds for the steps they skip).
  void align(const std::vector<int>& ranks) {
    std::size_t latest = 0;
    for (int r : ranks) latest = std::max(latest, cursor_[r]);
    for (int r : ranks) cursor_[r] = latest;
  }

  // Channels (Schedule::channels): runs build(c) for c = 0..channels-1, each from the cursors the
  // ranks have now (so the channels' steps coincide and the model prices them as concurrent), with
  // every op it adds tagged with channel c; afterwards each rank's cursor is the latest any channel
  // left it at. `channels` is recorded in the schedule.
  void run_channels(int channels, const std::function<void(int channel)>& build);

  Schedule finish();

 private:
  Round& round(int rank, std::size_t step);
  void add_transfer(int rank, std::size_t step, Op op);
  void add_local(int rank, std::size_t step, Op op);

  ScheduleRequest request_;
  Schedule schedule_;
  std::vector<std::size_t> cursor_;
  std::uint8_t channel_ = 0;  // the channel the ops added now belong to
};

// Runs a power-of-two algorithm on any m positions: with m2 = 2^floor(lg m) and r = m - m2, each
// odd position below 2r hands its data to the even position below it and sits out; the m2 that
// remain are the algorithm's members, member j standing for positions [position(j), position(j+1)).
struct PowerOfTwoFold {
  int m = 1, m2 = 1, r = 0;
  explicit PowerOfTwoFold(int positions);
  bool sits_out(int pos) const { return pos < 2 * r && pos % 2 == 1; }
  // The position of member j (j = m2 gives m).
  int position(int j) const { return j < r ? 2 * j : j + r; }
  // The group's ranks of the members, member order.
  std::vector<int> members(const std::vector<int>& group) const;
};

// Fold-in over `group` in one step: each odd position pos < 2r sends send_src(pos) to pos - 1,
// which receives it into recv_dst(pos), combining it with what is there when `reduce`. Advances
// every rank of the group by one step.
void fold_in(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold,
             const std::function<Span(int pos)>& send_src, const std::function<Span(int pos)>& recv_dst, bool reduce);
// Fold-out in one step: each even position pos - 1 (pos odd, < 2r) sends data(pos) to pos, which
// receives it into the same elements. Advances every rank of the group by one step.
void fold_out(ScheduleBuilder& b, const std::vector<int>& group, const PowerOfTwoFold& fold,
              const std::function<Piece(int pos)>& data);

// The positions of `group` rotated so that position 0 is group[root_pos].
std::vector<int> rotated(const std::vector<int>& group, int root_pos);
// 0, 1, ..., n-1.
std::vector<int> iota_ranks(int n);

}  // namespace commsim
