// The double binary tree (src/collectives/tree.cc): where the nodes cut it, its pipeline, and the
// closed forms of tree allreduce, broadcast and reduce.
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "model/cost/closed_forms.h"
#include "model/cost/double_tree.h"
#include "model/cost/pipeline.h"

namespace commsim {

// How the nodes cut the double binary tree (model/cost/cost.h).
TreeCut tree_cut(long long N, long long G, bool rooted) {
  thread_local std::map<std::tuple<long long, long long, bool>, TreeCut> counted;
  thread_local std::tuple<long long, long long, bool> last_key{0, 0, false};
  thread_local TreeCut last;
  const auto key = std::make_tuple(N, G, rooted);
  if (key == last_key) return last;
  if (const auto it = counted.find(key); it != counted.end()) {
    last_key = key;
    return last = it->second;
  }
  TreeCut cut;
  std::vector<long long> out(static_cast<std::size_t>(N), 0), in(static_cast<std::size_t>(N), 0);
  const int p = static_cast<int>(N * G);
  for (const std::vector<int>& parent : double_tree_parents(p, rooted)) {
    // Depth and edges between nodes above every rank, from the root down.
    std::vector<long long> depth(p, -1), cuts(p, 0);
    std::vector<int> path;
    for (int v = 0; v < p; ++v) {
      for (int x = v; x >= 0 && depth[x] < 0; x = parent[x]) path.push_back(x);
      while (!path.empty()) {
        const int x = path.back();
        path.pop_back();
        const int up = parent[x];
        const bool crosses = up >= 0 && x / G != up / G;
        depth[x] = up < 0 ? 0 : depth[up] + 1;
        cuts[x] = up < 0 ? 0 : cuts[up] + (crosses ? 1 : 0);
        if (!crosses) continue;
        ++out[static_cast<std::size_t>(up / G)];  // down the tree (broadcast, allreduce)
        ++in[static_cast<std::size_t>(x / G)];
        if (!rooted) {  // and up (allreduce's reduction)
          ++out[static_cast<std::size_t>(x / G)];
          ++in[static_cast<std::size_t>(up / G)];
        }
      }
      cut.levels = std::max(cut.levels, cuts[v]);
      cut.height = std::max(cut.height, depth[v]);
    }
  }
  long long most = 1;
  for (std::size_t i = 0; i < out.size(); ++i) most = std::max({most, out[i], in[i]});
  cut.flows = static_cast<double>(most);
  last_key = key;
  return last = counted[key] = cut;
}

}  // namespace commsim

namespace commsim::closed_forms {

namespace {

// Double binary tree (Sanders, Speck & Traeff 2009; NCCL), as src/collectives/tree.cc builds it:
// two trees, each carrying half of the data in k chunks (a pipeline chunk is a pair of
// half-chunks, n/k bytes); every rank is interior (two children) in one tree and a leaf in the
// other. Heights: H = ceil(lg p) (the taller tree); for broadcast/reduce with p a power of two
// (p > 2) tree B is one deeper, H = ceil(lg p) + 1. Per step:
//  - broadcast: a rank receives a half-chunk in each tree and sends two in the tree where it is
//    interior: n/k bytes each way; k + H - 1 steps:  T = (k + H - 1)(a + (n/k) b);
//  - reduce: the mirror, combining n/k bytes per step: T = (k + H - 1)(a + (n/k)(b + g));
//  - allreduce: reduction and broadcast overlap (chunk c goes down while later chunks go up), so
//    a rank in the steady state moves four half-chunks each way (2n/k) and combines n/k; the
//    pipeline fills for H steps going up and H going down (n/k each), then k - 1 steady steps:
//      T = (k + 2H - 1) a + 2(k + H - 1)(n/k) b + (k + H - 1)(n/k) g.
//    With p = 2 each tree's interior rank has one child: every step moves n/(2k) half-chunks
//    in each tree, n/k each way in the steady state and n/(2k) while filling.
// Across nodes the trees' edges between nodes are counted (tree_cut): S_n of the H levels cross
// the network (the most on a path from a root to a leaf), the other H - S_n stay inside a node.
// Every edge between two nodes carries one half-chunk (n/(2k)) a step, each its own flow: a step
// across the network takes n/(2k) bw_flow(f), f the messages out of (or into) the busiest node (one
// or two while the pipeline fills).
// With C > 1 channels the pipeline is one channel's, on n / C bytes (run_pipe's n), its C copies
// running in the same steps: a step moves C times a channel's bytes through each GPU (b and g times
// C, C times the copies) and C f flows out of the busiest node (bw_flow(C f)).
Pipe tree_pipe(const Env& e, Collective c) {
  Pipe P;
  const bool pow2 = (e.p & (e.p - 1)) == 0;
  long long S_i = ceil_lg(e.G), S_n = 0;
  if (c != Collective::AllReduce && pow2 && e.p > 2 && e.N == 1) S_i += 1;
  double flows = 1;
  if (e.N > 1) {
    const TreeCut cut = tree_cut(e.N, e.G, c != Collective::AllReduce);
    S_n = cut.levels;
    S_i = cut.height - cut.levels;
    flows = cut.flows;
  }
  // s/B across the network per byte of pipeline chunk, in the steady state and while filling.
  const double C = e.C;
  const double b_n = e.N > 1 ? 0.5 * e.b_flow(C * flows) : 0;
  const double fG = pipe_senders(e);
  if (c == Collective::AllReduce) {
    const double fill = e.p == 2 ? 0.5 : 1, steady = e.p == 2 ? 1 : 2;
    const double b_fill = e.N > 1 ? 0.5 * e.b_flow(C * (e.p == 2 ? 1 : std::min(flows, 2.0))) : 0;
    P.nph = 2;
    P.ph[0] = {S_i, S_n, intra_stage(e, C * fill, C * e.g * fill, 0.5, fG), net_stage(e, b_fill, C * e.g * fill, 0.5)};
    P.ph[1] = {S_i, S_n, intra_stage(e, C * fill, 0, 0.5, fG), net_stage(e, b_fill, 0, 0.5)};
    P.ss_i = intra_stage(e, C * steady, C * e.g * steady / 2, 0.5, fG);
    P.ss_n = net_stage(e, b_n, C * e.g * steady / 2, 0.5);
    // Going down, the first chunk passes from parents to children that take in only it: one to
    // many (Topology::fan_out_scale). In the steady state a rank takes in a chunk while it sends.
    P.ph[1].si.fan_out = !e.topo->fan_out_scale.empty();
    // In the steady state a rank sends its own chunk up the tree where it is a leaf (from Input)
    // and forwards the rest (1 of 2 half-chunks with p = 2). Counted at 7 of 8: the receiving
    // side of an interior rank takes in forwarded chunks only.
    P.ss_i.written_share = e.p == 2 ? 0.5 : 0.875;
    // Posting overheads: while a chunk passes (up or down) a rank posts a message or two and takes
    // in one or two, counted as half a message before its last each way; in the steady state it
    // posts four (to its parents and to its children) and takes in two.
    // With p = 2 a rank posts one message up one tree and one down the other a step.
    for (Phase& ph : P.ph)
      for (Stage* st : {&ph.si, &ph.sn}) st->sends_before = st->recvs_before = e.p == 2 ? 0 : 0.5;
    for (Stage* st : {&P.ss_i, &P.ss_n}) {
      st->sends_before = e.p == 2 ? 1 : 3;
      st->recvs_before = 1;
    }
    P.single_overheads = e.p > 2;
    P.single_sends = P.single_recvs = 1.0 / 3;
    if (e.p == 2) P.one_way = Pipe::OneWay::None;
    // Going up, a rank interior in one tree copies its own half-chunk before it combines.
    P.copy_ops = C;
    P.copy_frac = 0.5;
  } else {
    const double g = c == Collective::Reduce ? C * e.g : 0;
    const double b_fill = e.N > 1 ? 0.5 * e.b_flow(C * std::min(flows, 2.0)) : 0;
    P.ph[0] = {S_i, S_n, intra_stage(e, C, g, 0.5, fG), net_stage(e, b_fill, g, 0.5)};
    // Posting overheads: an interior rank sends to its two children (reduce: takes in from them),
    // one message before its last each way (p = 2: both half-chunks to the one other rank).
    P.ph[0].si.sends_before = P.ph[0].si.recvs_before = 1;
    P.ph[0].sn.sends_before = P.ph[0].sn.recvs_before = 1;
    P.single_overheads = e.p > 2;
    P.single_sends = c == Collective::Reduce ? 0 : 0.75;
    P.single_recvs = c == Collective::Reduce ? 0.5 : 0.25;
    P.ss_i = P.ph[0].si;
    P.ss_n = net_stage(e, b_n, g, 0.5);
    P.ss_n.sends_before = P.ss_n.recvs_before = 1;
    // Broadcast: the first chunk passes from parents to children that take in only it, one to many
    // (Topology::fan_out_scale), as in the allreduce's second phase.
    P.ph[0].si.fan_out = c == Collective::Broadcast && !e.topo->fan_out_scale.empty();
    // Reduce: the root, which has a child in each tree, copies both half-chunks before it
    // combines; broadcast: the root copies its Input to Output after its last send.
    P.copy_ops = c == Collective::Reduce ? 2 * C : 0;
    P.copy_frac = 0.5;
    P.root_copy = c == Collective::Broadcast;
  }
  P.has_i = e.G > 1;
  P.has_n = e.N > 1;
  P.tree_fill = e.N == 1;
  P.rooted_single = c != Collective::AllReduce && pow2 && e.p > 2;
  P.tree_one_way_steps = c == Collective::AllReduce                                  ? (pow2 ? 0 : 1)
                         : c == Collective::Broadcast && P.rooted_single && e.N == 1 ? 2
                                                                                     : 1;
  set_first_clean(e, P);
  return P;
}

}  // namespace

Parts tree_allreduce(const Env& e, double n) {
  return run_pipe(e, tree_pipe(e, Collective::AllReduce), n / e.C);
}
Parts tree_broadcast(const Env& e, double n) {
  return run_pipe(e, tree_pipe(e, Collective::Broadcast), n / e.C);
}
Parts tree_reduce(const Env& e, double n) {
  return run_pipe(e, tree_pipe(e, Collective::Reduce), n / e.C);
}

}  // namespace commsim::closed_forms

namespace commsim {

int tree_pipeline_chunks(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes, int channels) {
  using namespace closed_forms;  // check_query, make_env and the pipeline of this file
  if (c != Collective::AllReduce && c != Collective::Broadcast && c != Collective::Reduce) return 1;
  const CostQuery q{c, Algorithm::Tree, Protocol::None, nodes, ranks_per_node, bytes, channels};
  check_query(topo, q);
  Env e = make_env(topo, c, nodes, ranks_per_node, bytes);
  if (e.p == 1) return 1;
  e.C = channels_for(topo, q);
  return best_pipe(e, tree_pipe(e, c), static_cast<double>(bytes) / e.C).k;
}

}  // namespace commsim
