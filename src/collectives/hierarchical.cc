// Hierarchical (two-level) algorithms: the N nodes of the request's placement each hold G ranks;
// rank (node n, local index l). "Columns" are the N ranks with the same local index. Traffic
// between nodes moves only along columns, G columns at once, each with 1/G of the data (allreduce)
// or of the blocks (allgather).
//
// allreduce  intra-node ring reduce-scatter of G chunks (local index l ends with chunk l reduced
//            over its node), ring allreduce of chunk l along column l, intra-node ring allgather.
//            2(G-1) + 2(N-1) steps.
// allgather  ring allgather along each column (every rank gathers the blocks of its column), then
//            intra-node ring allgather in which local index l passes on its column's N blocks.
// broadcast  binomial broadcast along the root's column, then binomial broadcast in every node
//            from the rank with the root's local index.
// reduce     the reverse: binomial reduce in every node to the rank with the root's local index,
//            then binomial reduce along the root's column.
// With one node these are the plain (intra-node) ring and binomial algorithms; with one rank per
// node, the ring and binomial algorithms over the nodes.
//
// Channels (allreduce, allgather): channel c of C moves part c of the data (of every block for
// allgather) through the same phases, its node rings rotated by c (position i of a node's ring is
// local index i + c), so the chunk each column carries across the network moves to another local
// index, and with it to another NIC, from one channel to the next.
#include <string>

#include "collectives/phases.h"
#include "model/error.h"
#include "model/placement.h"

namespace commsim {
namespace {

struct NodeGrid {
  std::vector<std::vector<int>> node;    // [n][l]: the ranks of node n by local index
  std::vector<std::vector<int>> column;  // [l][n]: the ranks with local index l by node
  std::vector<int> node_of, local_of;    // [rank]
};

NodeGrid node_grid(const ScheduleRequest& request) {
  const int p = request.nranks;
  const Placement one_node = Placement::uniform(1, p);
  const Placement& pl = request.placement != nullptr ? *request.placement : one_node;
  if (!pl.is_uniform()) {
    std::string sizes;
    for (std::size_t n = 0; n < pl.node_size.size(); ++n)
      sizes += (n == 0 ? "" : ", ") + std::to_string(pl.node_size[n]);
    throw Error("hierarchical algorithms need every node to hold the same number of ranks, but the placement's " +
                std::to_string(pl.nnodes) + " nodes hold " + sizes +
                " ranks; use a rank count that is a multiple of the node count, or another algorithm");
  }
  const int nodes = pl.nnodes, per_node = pl.node_size.front();
  NodeGrid g{std::vector<std::vector<int>>(nodes, std::vector<int>(per_node)),
             std::vector<std::vector<int>>(per_node, std::vector<int>(nodes)), pl.node_of_rank, pl.local_rank};
  for (int r = 0; r < p; ++r) {
    g.node[pl.node_of_rank[r]][pl.local_rank[r]] = r;
    g.column[pl.local_rank[r]][pl.node_of_rank[r]] = r;
  }
  return g;
}

}  // namespace

void hierarchical_allreduce(ScheduleBuilder& b) {
  const NodeGrid g = node_grid(b.request());
  const std::uint64_t count = b.count();
  const int per_node = static_cast<int>(g.column.size()), channels = b.request().channels;
  b.run_channels(channels, [&](int c) {
    const std::uint64_t base = chunk_offset(count, channels, c), n = chunk_offset(count, channels, c + 1) - base;
    // Position i of the node rings (local index i + c) ends the reduce-scatter with chunk i.
    auto chunk = [&](BufferId buffer, int i) { return chunk_span(buffer, base, n, per_node, i); };
    for (const auto& ranks : g.node)
      ring_reduce_scatter(
          b, rotated(ranks, c % per_node), [&](int i) { return chunk(BufferId::Input, i); },
          [&](int, int i) { return chunk(BufferId::Output, i); });
    for (int i = 0; i < per_node; ++i)
      ring_allreduce(b, g.column[(i + c) % per_node], chunk(BufferId::Output, i), chunk(BufferId::Output, i));
    std::vector<Piece> pieces(per_node);
    for (int i = 0; i < per_node; ++i) pieces[i] = {chunk(BufferId::Output, i)};
    for (const auto& ranks : g.node) ring_allgather(b, rotated(ranks, c % per_node), pieces);
  });
}

void hierarchical_allgather(ScheduleBuilder& b) {
  const NodeGrid g = node_grid(b.request());
  const int p = b.nranks(), per_node = static_cast<int>(g.column.size()), channels = b.request().channels;
  const std::uint64_t block = b.output_count() / p;
  for (int r = 0; r < p; ++r) b.copy(r, 0, span(BufferId::Input, 0, block), span(BufferId::Output, r * block, block));
  b.run_channels(channels, [&](int c) {
    // Part c of every block.
    auto out_block = [&](int rank) { return chunk_span(BufferId::Output, rank * block, block, channels, c); };
    std::vector<Piece> column_pieces(per_node);  // [i]: the blocks of the column at node position i
    for (int i = 0; i < per_node; ++i) {
      const std::vector<int>& column = g.column[(i + c) % per_node];
      std::vector<Piece> pieces;
      for (int r : column) {
        pieces.push_back({out_block(r)});
        column_pieces[i].push_back(out_block(r));
      }
      ring_allgather(b, column, pieces);
    }
    for (const auto& ranks : g.node) ring_allgather(b, rotated(ranks, c % per_node), column_pieces);
  });
}

void hierarchical_broadcast(ScheduleBuilder& b) {
  const NodeGrid g = node_grid(b.request());
  const int root = b.request().root;
  const Span in = span(BufferId::Input, 0, b.count()), out = span(BufferId::Output, 0, b.count());
  binomial_broadcast(b, g.column[g.local_of[root]], g.node_of[root], in, out);
  b.align(iota_ranks(b.nranks()));  // every node's broadcast starts after the column's
  for (const auto& ranks : g.node) binomial_broadcast(b, ranks, g.local_of[root], out, out);
}

void hierarchical_reduce(ScheduleBuilder& b) {
  const NodeGrid g = node_grid(b.request());
  const int root = b.request().root;
  const Span in = span(BufferId::Input, 0, b.count()), out = span(BufferId::Output, 0, b.count());
  for (const auto& ranks : g.node) binomial_reduce(b, ranks, g.local_of[root], in, out);
  binomial_reduce(b, g.column[g.local_of[root]], g.node_of[root], out, out);
}

}  // namespace commsim
