// Bruck's algorithms (Bruck, Ho, Kipnis, Upfal, Weathersby, IEEE TPDS 1997), any rank count,
// K = ceil(lg p) communication steps; `tmp` is p blocks of Scratch.
//
// allgather  tmp[0] = own block; in step k (d = 2^k) rank i sends tmp[0, min(d, p-d)) to rank i-d
//            and receives the same number of blocks from rank i+d into tmp[d, ...), so that
//            tmp[j] holds the block of rank i+j; a final local rotation puts tmp[j] at Output
//            block (i+j) mod p.
// alltoall   the index algorithm: tmp[j] = Input block (i+j) mod p (local rotation); in step k rank
//            i sends the blocks j whose bit k is set to rank i+2^k and receives the same positions
//            from rank i-2^k; they travel packed into one message (Scratch pack buffers, copied
//            in and out); finally Output block (i-j) mod p = tmp[j].
#include "collectives/phases.h"

namespace commsim {
namespace {

// The runs [lo, hi) of block indices j < p whose bit k is set.
std::vector<std::pair<int, int>> runs_with_bit(int p, int k) {
  std::vector<std::pair<int, int>> out;
  const int d = 1 << k;
  for (int lo = d; lo < p; lo += 2 * d) out.push_back({lo, std::min(lo + d, p)});
  return out;
}

}  // namespace

void bruck_allgather(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  const int steps = ceil_log2(p);
  b.need_scratch(p * block);
  auto tmp = [&](int lo, int n) { return span(BufferId::Scratch, lo * block, n * block); };
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, 0, block), tmp(0, 1));
    for (int k = 0; k < steps; ++k) {
      const int d = 1 << k, n = std::min(d, p - d);
      b.send(i, k, wrap(i - d, p), tmp(0, n));
      b.recv(i, k, wrap(i + d, p), tmp(d, n));
    }
    b.copy(i, steps, tmp(0, p - i), span(BufferId::Output, i * block, (p - i) * block));
    b.copy(i, steps, tmp(p - i, i), span(BufferId::Output, 0, i * block));
  }
  b.advance(iota_ranks(p), steps + 1);
}

void bruck_alltoall(ScheduleBuilder& b) {
  const int p = b.nranks();
  const std::uint64_t block = b.output_count() / p;
  const int steps = ceil_log2(p);
  std::vector<std::vector<std::pair<int, int>>> runs(steps);
  int most = 0;  // blocks in the largest message
  for (int k = 0; k < steps; ++k) {
    runs[k] = runs_with_bit(p, k);
    int n = 0;
    for (auto [lo, hi] : runs[k]) n += hi - lo;
    most = std::max(most, n);
  }
  b.need_scratch((p + 2 * most) * block);
  auto tmp = [&](int lo, int n) { return span(BufferId::Scratch, lo * block, n * block); };
  auto pack = [&](int which, int lo, int n) {
    return span(BufferId::Scratch, (p + which * most + lo) * block, n * block);
  };
  // Copies between tmp's runs with bit k set and a packed buffer; `into_pack` picks the direction.
  auto move_runs = [&](int rank, std::size_t step, int k, int which, bool into_pack) {
    int at = 0;
    for (auto [lo, hi] : runs[k]) {
      const Span t = tmp(lo, hi - lo), q = pack(which, at, hi - lo);
      into_pack ? b.copy(rank, step, t, q) : b.copy(rank, step, q, t);
      at += hi - lo;
    }
    return at;
  };
  for (int i = 0; i < p; ++i) {
    b.copy(i, 0, span(BufferId::Input, i * block, (p - i) * block), tmp(0, p - i));
    b.copy(i, 0, span(BufferId::Input, 0, i * block), tmp(p - i, i));
    for (int k = 0; k < steps; ++k) {
      if (k > 0) move_runs(i, k, k - 1, 1, false);
      const int n = move_runs(i, k, k, 0, true);
      b.send(i, k, wrap(i + (1 << k), p), pack(0, 0, n));
      b.recv(i, k, wrap(i - (1 << k), p), pack(1, 0, n));
    }
    move_runs(i, steps, steps - 1, 1, false);
    for (int j = 0; j < p; ++j) b.copy(i, steps, tmp(j, 1), span(BufferId::Output, wrap(i - j, p) * block, block));
  }
  b.advance(iota_ranks(p), steps + 1);
}

}  // namespace commsim
