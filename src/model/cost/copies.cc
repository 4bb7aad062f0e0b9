// Local copies of the unpipelined schedules (closed_forms.h).
//
// The schedules (src/collectives) copy between a rank's buffers: a rank's own block into Output,
// its Input into the buffer it accumulates in, Bruck's rotations. Each copy costs its bytes at the
// memory bandwidth (Topology::memory_bw_Bps, times the working-set factor), over the
// local_op_scale factor of its own size (Env::cp), and delays the rank's next messages. What the
// slowest rank copies on the critical path, in seconds, per unpipelined algorithm (the pipelines
// carry their copies in their stages):
//  - n/p once: a rank's own block (allgather ring, recursive doubling, direct, hierarchical;
//    reduce-scatter pairwise and direct; alltoall pairwise and direct; broadcast recursive
//    doubling, whose root copies its block);
//  - n once: the accumulator (allreduce recursive doubling; reduce binomial, hierarchical), the
//    root's Output after its sends (broadcast binomial, direct, hierarchical); Rabenseifner and
//    recursive halving copy the half they keep, n/2, or with a fold the whole n first;
//  - a ring that reduces copies its own chunk before each combine: (p-1) copies of n/p (inside the
//    nodes for hierarchical allreduce; with one rank per node its one copy of n);
//  - Bruck rotates: rank i copies (p-i) and i blocks (the slowest rank's pair), and the alltoall
//    packs and unpacks the runs of blocks it sends each step, then places its p blocks one by one.
#include <algorithm>

#include "model/cost/closed_forms.h"

namespace commsim::closed_forms {
namespace {

// The slowest rank's rotation: max over i of cp((p-i) b) + cp(i b). Without a local_op_scale
// curve that is cp(n); with one, every split up to p/2 is looked at (the sum is symmetric) on up to
// 32 ranks, and beyond, 16 splits evenly spread and those next to the curve's points.
double rotation(const Env& e, double block) {
  const double n = block * static_cast<double>(e.p);
  if (e.topo->local_op_scale.empty() || !(block > 0)) return e.cp(n);
  double most = e.cp(n);
  auto split = [&](long long i) {
    if (i < 1 || 2 * i > e.p) return;
    const double x = static_cast<double>(i) * block;
    most = std::max(most, e.cp(n - x) + e.cp(x));
  };
  const long long half = e.p / 2;
  if (half <= 16) {
    for (long long i = 1; i <= half; ++i) split(i);
    return most;
  }
  for (long long j = 1; j <= 16; ++j) split(j * half / 16);
  for (const LocalOpScale& pt : e.topo->local_op_scale) {
    const auto i = static_cast<long long>(static_cast<double>(pt.bytes) / block);
    for (long long c : {i, i + 1, e.p - i, e.p - i - 1}) split(c);
  }
  return most;
}

bool power_of_two(const Env& e) {
  return (e.p & (e.p - 1)) == 0;
}

}  // namespace

double own_block_copy(const Env& e, double n) {
  return e.cp(n / static_cast<double>(e.p));
}

double whole_copy(const Env& e, double n) {
  return e.cp(n);
}

// A ring that reduces copies its own chunk before each combine: (p-1) copies of n/p, with channels
// each channel's part of the chunk (e.C copies of block / C).
double ring_reduce_copies(const Env& e, double n) {
  const double block = n / static_cast<double>(e.p);
  return static_cast<double>(e.p - 1) * e.C * e.cp(block / e.C);
}

// The ring reduce-scatter inside the nodes (with one rank per node its one copy of n); with
// channels, each channel's part.
double hierarchical_allreduce_copies(const Env& e, double n) {
  return e.G == 1 ? e.C * e.cp(n / e.C) : static_cast<double>(e.G - 1) * e.C * e.cp(n / static_cast<double>(e.G) / e.C);
}

double kept_half_copy(const Env& e, double n) {
  return e.cp(power_of_two(e) ? n / 2 : n);
}

// The half it keeps (n with a fold), and its own block at the end.
double recursive_halving_copies(const Env& e, double n) {
  const double block = n / static_cast<double>(e.p);
  return e.cp(power_of_two(e) ? n / 2 : n) + e.cp(block);
}

double bruck_allgather_copies(const Env& e, double n) {
  const double block = n / static_cast<double>(e.p);
  return e.cp(block) + rotation(e, block);
}

// Step s packs the runs of blocks with bit s set (p >> (s+1) runs of 2^s blocks and one shorter
// run) and unpacks them after it receives; then p single blocks.
double bruck_alltoall_copies(const Env& e, double n) {
  const double block = n / static_cast<double>(e.p);
  double t = rotation(e, block) + static_cast<double>(e.p) * e.cp(block);
  for (int s = 0; s < ceil_lg(e.p); ++s) {
    const long long d = 1LL << s, rest = std::max(0LL, (e.p & (2 * d - 1)) - d);
    t += 2 * (static_cast<double>(e.p >> (s + 1)) * e.cp(static_cast<double>(d) * block) +
              e.cp(static_cast<double>(rest) * block));
  }
  return t;
}

}  // namespace commsim::closed_forms
