// Double binary tree (Sanders, Speck, Traeff, Parallel Computing 2009; NCCL's tree), pipelined.
//
// The trees are in-order binary trees over ranges of labels: the tree over a range of integers
// whose root is the label with the largest lowest set bit, and in which a label's parent is the
// nearer-in-rank of its neighbours x - b, x + b (b = x's lowest set bit) inside the range. Odd
// labels are its leaves, even labels interior (as NCCL's ncclGetBtree). Ranks v are counted from
// the root (v = (rank - root) mod p; v = rank for allreduce).
//   tree A  v = 0 is its root with one child; v = 1..p-1 form the tree over labels [1, p-1],
//           label = v (NCCL's first tree). Interior: even v; leaves: odd v.
//   tree B  allreduce: the tree over labels [1, p], label = v + 1, rooted at v = 2^floor(lg p) - 1.
//           broadcast, reduce (both trees rooted at the root): v = 0 is its root with one child;
//           v = 1..p-1 form the tree over labels [1, p-1] with label = p - v (the mirror image of
//           tree A) when p is odd, over labels [2, p] with label = v + 1 when p is even.
//           Interior: odd v; leaves: even v (and v = 0 for allreduce).
// So every rank is a leaf in one tree and interior in the other (for broadcast/reduce: every rank
// but the root, which has one child in each), and a rank moves at most four chunk messages each
// way per step. Heights: H_A = ceil(lg p); H_B = floor(lg p) for allreduce; for broadcast/reduce
// H_B = H_A, except H_A + 1 when p is a power of two (with the root on top of both trees, tree B
// has more interior ranks than leaves below the root, so it cannot be a perfect tree).
//
// The data is split in two halves, [0, ceil(n/2)) moves along tree A and the rest along tree B,
// each in k chunks; chunk c of both halves moves in the same steps, so a pipeline chunk is a pair
// of half-chunks: k = pipeline_chunks(count, ..., pipeline_chunk_bytes) (512 KiB pairs by default,
// the chunk of model/cost/cost.h's closed form, whose tree moves n/k bytes per step). With h(v) the
// height of v (leaves 0), d(v) its depth and H the height of the tree's root, in each tree:
//   up     v sends its partial sum of chunk c to its parent in step c + h(v) (leaves send their
//          input); a parent combines the chunk from its first child on arrival and receives the
//          second child's into Scratch, combined at the start of step c + h(v);
//   down   (allreduce) the root sends the reduced chunk c to its children in step c + H; v
//          receives it in step c + H + d(v) - 1 and forwards it in step c + H + d(v);
//          (broadcast) the root sends chunk c in step c; v receives it in step c + d(v) - 1.
// Reduction and broadcast overlap: chunk c goes down while later chunks still go up. Steps, with
// H = max(H_A, H_B): allreduce k + 2H - 1; reduce k + H - 1; broadcast k + H - 1. In the steady
// state of allreduce a rank sends, per step, one chunk up and two down in the tree where it is
// interior and one up in the tree where it is a leaf (and receives as many): four messages of
// n/(2k) bytes each way, against two for broadcast or reduce alone.
#include <algorithm>

#include "collectives/phases.h"
#include "model/cost/double_tree.h"

namespace commsim {
namespace {

struct BinaryTree {
  int root = 0;
  std::vector<int> parent;                 // [v], -1 at the root
  std::vector<std::vector<int>> children;  // [v], at most two, in increasing v
  std::vector<int> height;                 // [v], 0 at leaves
  std::vector<int> depth;                  // [v], 0 at the root
};

BinaryTree from_parents(std::vector<int> parent) {
  const int p = static_cast<int>(parent.size());
  BinaryTree t{0, std::move(parent), std::vector<std::vector<int>>(p), std::vector<int>(p, 0), std::vector<int>(p, 0)};
  for (int v = 0; v < p; ++v) {
    if (t.parent[v] >= 0)
      t.children[t.parent[v]].push_back(v);
    else
      t.root = v;
  }
  // Depths from the root down, then heights from the deepest up.
  std::vector<int> order{t.root};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : t.children[order[i]]) {
      t.depth[c] = t.depth[order[i]] + 1;
      order.push_back(c);
    }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int c : t.children[*it]) t.height[*it] = std::max(t.height[*it], t.height[c] + 1);
  return t;
}

BinaryTree tree_a(int p) {
  return from_parents(double_tree_parents(p, false)[0]);
}

BinaryTree tree_b(int p, bool rooted) {
  return from_parents(double_tree_parents(p, rooted)[1]);
}

// One tree with its half of the data.
struct TreeHalf {
  BinaryTree tree;
  std::uint64_t base = 0, len = 0;  // elements
};

struct DoubleTree {
  std::vector<int> g;  // g[v]: the rank of relative rank v
  TreeHalf halves[2];
  std::uint64_t k = 1;  // chunks per half
  int max_height = 0;

  Span chunk(int t, BufferId buffer, std::uint64_t c) const {
    return chunk_span(buffer, halves[t].base, halves[t].len, k, c);
  }
};

// Channel c of `channels`: its part of the data and the ranks relabelled by channel_ranks (the
// root kept at v = 0 for broadcast and reduce).
DoubleTree double_tree(ScheduleBuilder& b, bool rooted, int channel, int channels) {
  const int p = b.nranks();
  const std::uint64_t base = chunk_offset(b.count(), channels, channel);
  const std::uint64_t n = chunk_offset(b.count(), channels, channel + 1) - base, first = n - n / 2;
  DoubleTree d{rotated(iota_ranks(p), rooted ? b.request().root : 0),
               {{tree_a(p), base, first}, {tree_b(p, rooted), base + first, n - first}},
               1,
               0};
  if (channel != 0) {
    const std::vector<int> relabel = channel_ranks(b.request(), channel);
    for (int& r : d.g) r = relabel[r];
    if (rooted) std::swap(d.g[0], *std::find(d.g.begin(), d.g.end(), b.request().root));
  }
  d.k = std::min(pipeline_chunks(n, b.request().elem_size, b.request().pipeline_chunk_bytes),
                 std::max<std::uint64_t>(first, 1));
  for (const TreeHalf& h : d.halves) {
    d.max_height = std::max(d.max_height, h.tree.height[h.tree.root]);
    for (const auto& kids : h.tree.children)
      if (kids.size() > 1) b.need_scratch(b.count());  // second children arrive in Scratch
  }
  return d;
}

// The reduction up both trees: after step c + H - 1 the root holds chunk c reduced in Output.
void reduce_up(ScheduleBuilder& b, const DoubleTree& d) {
  for (int t = 0; t < 2; ++t) {
    const BinaryTree& tree = d.halves[t].tree;
    for (int v = 0; v < static_cast<int>(d.g.size()); ++v)
      for (std::uint64_t c = 0; c < d.k; ++c) {
        const Span in = d.chunk(t, BufferId::Input, c), out = d.chunk(t, BufferId::Output, c);
        const auto& kids = tree.children[v];
        if (v != tree.root) b.send(d.g[v], c + tree.height[v], d.g[tree.parent[v]], kids.empty() ? in : out);
        for (std::size_t i = 0; i < kids.size(); ++i) {
          const int u = kids[i];
          const std::size_t step = c + tree.height[u];
          if (i == 0) {
            b.copy(d.g[v], step, in, out);
            b.recv_reduce(d.g[v], step, d.g[u], out);
          } else {
            const Span tmp = d.chunk(t, BufferId::Scratch, c);
            b.recv(d.g[v], step, d.g[u], tmp);
            b.reduce(d.g[v], c + tree.height[v], tmp, out);
          }
        }
      }
  }
}

// Chunk c of each half leaves the root of its tree in step c + start[t] and reaches depth x in
// step c + start[t] + x - 1; `root_src` is where the root reads it.
void broadcast_down(ScheduleBuilder& b, const DoubleTree& d, const std::size_t start[2], BufferId root_src) {
  for (int t = 0; t < 2; ++t) {
    const BinaryTree& tree = d.halves[t].tree;
    for (int v = 0; v < static_cast<int>(d.g.size()); ++v)
      for (std::uint64_t c = 0; c < d.k; ++c) {
        const Span out = d.chunk(t, BufferId::Output, c);
        const std::size_t at = c + start[t] + tree.depth[v];
        if (v != tree.root) b.recv(d.g[v], at - 1, d.g[tree.parent[v]], out);
        for (int u : tree.children[v]) b.send(d.g[v], at, d.g[u], v == tree.root ? d.chunk(t, root_src, c) : out);
      }
  }
}

}  // namespace

// Channel c of C runs the double tree on part c of the data, with its ranks relabelled
// (channel_ranks), so the trees' edges between nodes start from other GPUs in every channel.
void tree_allreduce(ScheduleBuilder& b) {
  const int channels = b.request().channels;
  b.run_channels(channels, [&](int ch) {
    const DoubleTree d = double_tree(b, false, ch, channels);
    reduce_up(b, d);
    std::size_t start[2];
    for (int t = 0; t < 2; ++t) start[t] = d.halves[t].tree.height[d.halves[t].tree.root];
    broadcast_down(b, d, start, BufferId::Output);
    b.advance(d.g, d.k + 2 * d.max_height);
  });
}

void tree_broadcast(ScheduleBuilder& b) {
  const int channels = b.request().channels;
  b.run_channels(channels, [&](int ch) {
    const DoubleTree d = double_tree(b, true, ch, channels);
    const std::size_t start[2] = {0, 0};
    broadcast_down(b, d, start, BufferId::Input);
    // The root's own copy of the channel's part after its last send, off the pipeline's path.
    const std::size_t last = d.k + d.max_height;
    const std::uint64_t base = d.halves[0].base, n = d.halves[0].len + d.halves[1].len;
    b.copy(d.g[0], last, span(BufferId::Input, base, n), span(BufferId::Output, base, n));
    b.advance(d.g, last + 1);
  });
}

void tree_reduce(ScheduleBuilder& b) {
  const int channels = b.request().channels;
  b.run_channels(channels, [&](int ch) {
    const DoubleTree d = double_tree(b, true, ch, channels);
    reduce_up(b, d);
    b.advance(d.g, d.k + d.max_height + 1);
  });
}

}  // namespace commsim
