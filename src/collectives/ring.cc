// Ring algorithms (Patarasuk & Yuan, JPDC 2009; the ring of NCCL and MPICH).
//
// allreduce      ring reduce-scatter then ring allgather, 2(p-1) steps, chunks of count/p.
// allgather      p-1 steps, one block per step.
// reducescatter  p-1 steps; partial sums kept in two Scratch blocks used in turn.
// broadcast      a chain along the ring from the root, pipelined in k chunks: position q of the
//                chain receives chunk c in step c+q-1 and forwards it in step c+q; p-1 + k-1 steps.
// reduce         the same chain towards the root, each position combining chunk c with its own
//                before forwarding it; p-1 + k-1 steps.
// k = pipeline_chunks(count, elem_size, request.pipeline_chunk_bytes) (512 KiB chunks by default).
#include <algorithm>

#include "collectives/phases.h"
#include "model/placement.h"

namespace commsim {
namespace {

int position_of(const std::vector<int>& ring, int rank) {
  return static_cast<int>(std::find(ring.begin(), ring.end(), rank) - ring.begin());
}

}  // namespace

std::vector<int> ring_order(const ScheduleRequest& request, int channel) {
  std::vector<int> ring = iota_ranks(request.nranks);
  const Placement* pl = request.placement;
  if (pl != nullptr && pl->nranks == request.nranks) {
    // Channel c: inside each node, local index c first.
    auto key = [pl, channel](int r) {
      const int node = pl->node_of_rank[r];
      return std::pair(node, wrap(pl->local_rank[r] - channel, pl->node_size[node]));
    };
    std::stable_sort(ring.begin(), ring.end(), [&key](int a, int b) { return key(a) < key(b); });
  } else if (channel != 0) {
    ring = rotated(ring, wrap(channel, request.nranks));
  }
  return ring;
}

std::vector<int> channel_ranks(const ScheduleRequest& request, int channel) {
  const int p = request.nranks;
  std::vector<int> out(p);
  const Placement* pl = request.placement;
  if (pl == nullptr || pl->nranks != p) {
    for (int r = 0; r < p; ++r) out[r] = wrap(r + channel, p);
    return out;
  }
  std::vector<std::vector<int>> by_local(pl->nnodes);  // [node][local index]
  for (int n = 0; n < pl->nnodes; ++n) by_local[n].assign(pl->node_size[n], 0);
  for (int r = 0; r < p; ++r) by_local[pl->node_of_rank[r]][pl->local_rank[r]] = r;
  for (int r = 0; r < p; ++r) {
    const auto& node = by_local[pl->node_of_rank[r]];
    out[r] = node[wrap(pl->local_rank[r] + channel, static_cast<int>(node.size()))];
  }
  return out;
}

void ring_reduce_scatter(ScheduleBuilder& b, const std::vector<int>& ring, const std::function<Span(int chunk)>& own,
                         const std::function<Span(int pos, int chunk)>& acc) {
  const int m = static_cast<int>(ring.size());
  if (m == 1) {
    b.copy(ring[0], 0, own(0), acc(0, 0));
    b.advance(ring, 1);
    return;
  }
  for (int s = 0; s + 1 < m; ++s)
    for (int i = 0; i < m; ++i) {
      const int rank = ring[i];
      const int send_chunk = wrap(i - s - 1, m), recv_chunk = wrap(i - s - 2, m);
      b.send(rank, s, ring[wrap(i + 1, m)], s == 0 ? own(send_chunk) : acc(i, send_chunk));
      b.copy(rank, s, own(recv_chunk), acc(i, recv_chunk));
      b.recv_reduce(rank, s, ring[wrap(i - 1, m)], acc(i, recv_chunk));
    }
  b.advance(ring, m - 1);
}

void ring_allgather(ScheduleBuilder& b, const std::vector<int>& ring, const std::vector<Piece>& pieces) {
  const int m = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < m; ++s)
    for (int i = 0; i < m; ++i) {
      b.send(ring[i], s, ring[wrap(i + 1, m)], pieces[wrap(i - s, m)]);
      b.recv(ring[i], s, ring[wrap(i - 1, m)], pieces[wrap(i - s - 1, m)]);
    }
  b.advance(ring, m > 0 ? m - 1 : 0);
}

void ring_allreduce(ScheduleBuilder& b, const std::vector<int>& ring, const Span& own, const Span& acc) {
  const int m = static_cast<int>(ring.size());
  ring_reduce_scatter(
      b, ring, [&](int j) { return chunk_span(own.buffer, own.offset, own.count, m, j); },
      [&](int, int j) { return chunk_span(acc.buffer, acc.offset, acc.count, m, j); });
  std::vector<Piece> pieces(m);
  for (int j = 0; j < m; ++j) pieces[j] = {chunk_span(acc.buffer, acc.offset, acc.count, m, j)};
  ring_allgather(b, ring, pieces);
}

// Channel c of C moves part c of every block (and of the whole buffer for allreduce).
void ring_allreduce(ScheduleBuilder& b) {
  const int channels = b.request().channels;
  const std::uint64_t n = b.count();
  b.run_channels(channels, [&](int c) {
    ring_allreduce(b, ring_order(b.request(), c), chunk_span(BufferId::Input, 0, n, channels, c),
                   chunk_span(BufferId::Output, 0, n, channels, c));
  });
}

void ring_allgather(ScheduleBuilder& b) {
  const int p = b.nranks(), channels = b.request().channels;
  const std::uint64_t block = b.output_count() / p;
  for (int r = 0; r < p; ++r) b.copy(r, 0, span(BufferId::Input, 0, block), span(BufferId::Output, r * block, block));
  b.run_channels(channels, [&](int c) {
    const std::vector<int> ring = ring_order(b.request(), c);
    std::vector<Piece> pieces(p);
    for (int i = 0; i < p; ++i) pieces[i] = {chunk_span(BufferId::Output, ring[i] * block, block, channels, c)};
    ring_allgather(b, ring, pieces);
  });
}

void ring_reducescatter(ScheduleBuilder& b) {
  const int p = b.nranks(), channels = b.request().channels;
  const std::uint64_t block = b.output_count();
  if (p > 2) b.need_scratch(2 * block);
  b.run_channels(channels, [&](int c) {
    const std::vector<int> ring = ring_order(b.request(), c);
    auto part = [&](BufferId buffer, std::uint64_t base) { return chunk_span(buffer, base, block, channels, c); };
    // Position i receives chunk j in step (i - j - 2) mod p: two Scratch blocks in turn hold the
    // partial sum received in one step and sent in the next; the last one lands in Output.
    ring_reduce_scatter(
        b, ring, [&](int j) { return part(BufferId::Input, ring[j] * block); },
        [&](int i, int j) {
          if (i == j) return part(BufferId::Output, 0);
          return part(BufferId::Scratch, (wrap(i - j - 2, p) % 2) * block);
        });
  });
}

void ring_broadcast(ScheduleBuilder& b) {
  const std::vector<int> ring = ring_order(b.request());
  const std::vector<int> chain = rotated(ring, position_of(ring, b.request().root));
  const int m = static_cast<int>(chain.size());
  const std::uint64_t count = b.count();
  const std::uint64_t k = pipeline_chunks(count, b.request().elem_size, b.request().pipeline_chunk_bytes);
  for (std::uint64_t c = 0; c < k; ++c) {
    const Span out = chunk_span(BufferId::Output, 0, count, k, c);
    b.send(chain[0], c, chain[1], chunk_span(BufferId::Input, 0, count, k, c));
    for (int q = 1; q < m; ++q) {
      b.recv(chain[q], c + q - 1, chain[q - 1], out);
      if (q + 1 < m) b.send(chain[q], c + q, chain[q + 1], out);
    }
  }
  // The root's own copy after its last send, off the pipeline's path.
  b.copy(chain[0], k, span(BufferId::Input, 0, count), span(BufferId::Output, 0, count));
  b.advance(chain, k + m - 1);
}

void ring_reduce(ScheduleBuilder& b) {
  const std::vector<int> ring = ring_order(b.request());
  // The chain ends at the root: position q is the (q+1)-th rank after the root along the ring.
  const std::vector<int> chain = rotated(ring, (position_of(ring, b.request().root) + 1) % b.nranks());
  const int m = static_cast<int>(chain.size());
  const std::uint64_t count = b.count();
  const std::uint64_t k = pipeline_chunks(count, b.request().elem_size, b.request().pipeline_chunk_bytes);
  for (std::uint64_t c = 0; c < k; ++c) {
    const Span in = chunk_span(BufferId::Input, 0, count, k, c);
    const Span out = chunk_span(BufferId::Output, 0, count, k, c);
    b.send(chain[0], c, chain[1], in);
    for (int q = 1; q < m; ++q) {
      b.copy(chain[q], c + q - 1, in, out);
      b.recv_reduce(chain[q], c + q - 1, chain[q - 1], out);
      if (q + 1 < m) b.send(chain[q], c + q, chain[q + 1], out);
    }
  }
  b.advance(chain, k + m - 2);
}

}  // namespace commsim
