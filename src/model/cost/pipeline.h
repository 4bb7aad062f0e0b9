#pragma once
// The pipelined algorithms (the double binary tree, the ring's chained broadcast and reduce) as a
// Pipe of stages, and the chunk count that minimises their time. Internal to src/model/cost.
#include "model/cost/shape.h"

namespace commsim::closed_forms {

// A pipelined algorithm moves k chunks (x = n/k bytes each) through S_i intra-node and S_n network
// stages per phase (fill: the first chunk takes every stage once), then k - 1 steady-state steps
// of the slowest tier:
//   T(k) = sum over phases of (S_i t_i + S_n t_n) + (k - 1) max(s_i, s_n),
//   t_X = a_X + x (b_X + g_X) (fill), s_X = a_X + x (B_X + g'_X) (steady state, which may move more
//   than one chunk per step: the double tree's allreduce overlaps reduction and broadcast).
// k is chosen to minimise T over the integers in [1, max(1, n / 4 KiB)]; T is convex in k, so its
// integer minimum sits next to a stationary point of one branch of the max or next to the kink
// where s_i = s_n.
struct Stage {
  double a = 0, b = 0, g = 0;        // s; s/B moved; s/B reduced
  double limit = INFINITY;           // the eager limit of the tier's messages (bytes)
  const MessageCosts* mc = nullptr;  // the tier's protocol terms (latency by message size)
  double msg = 1;                    // one message carries msg * x bytes (the latency switch looks at it)
  bool scaled = false;               // intra-node: b at the rate of one message (Topology::message_scale)
  bool written = false;              // intra-node, forwarding: b at Topology::written_scale too
  bool network_scaled = false;       // network: b at the rate of one message (Topology::network_message_scale)
  bool fan_out = false;              // intra-node: b at Topology::fan_out_scale too (one sender to many receivers)
  double written_share = 1;          // of the bytes a rank sends in the stage, the forwarded part
  // Posting overheads a step waits for (MessageCosts::queued_overhead_s): the sends its rank posts
  // before the last, the receives the receiving rank takes in before it.
  double sends_before = 0, recvs_before = 0;
  // A step's latency alone (by its message size), and with the overheads it waits for.
  double latency(double x) const { return mc ? mc->latency_s(a, x * msg) : a; }
  double at(double x) const {
    const bool queued = mc && (sends_before > 0 || recvs_before > 0);
    return latency(x) + (queued ? mc->queued_overhead_s(x * msg, sends_before, recvs_before) : 0.0);
  }
  // Time to move chunks of x bytes; `curves` looks the factors up (once for stages of one size).
  template <typename Curves>
  double bw(double x, Curves& curves) const {
    if (!scaled && !written && !network_scaled && !fan_out) return x * b;
    curves.at(x * msg);
    if (network_scaled) return x * b / curves.network;
    const double w = written ? written_share / curves.written + (1 - written_share) : 1.0;
    return x * b / (scaled ? curves.message : 1.0) / (fan_out ? curves.fan : 1.0) * w;
  }
};
// The message_scale, written_scale, network_message_scale and fan_out_scale factors of the last
// message size asked for, and the local_op_scale factor of the last reduction size (red()): the stages of a
// pipeline mostly send and reduce chunks of one size.
struct CurvesAt {
  const Topology* topo;
  double bytes = -1, message = 1, written = 1, network = 1, fan = 1;
  double reduced = -1, local = 1;
  void at(double m) {
    if (m == bytes) return;
    bytes = m;
    message = topo->message_scale_at(m);
    written = topo->written_scale_at(m);
    network = topo->network_message_scale_at(m);
    fan = topo->fan_out_scale_at(m);
  }
  // Env::red(m), with the last factor remembered.
  double red(double m, double g) {
    if (m <= 0) return 0.0;
    if (m != reduced) {
      reduced = m;
      local = topo->local_op_scale_at(m);
    }
    return m * g / local;
  }
};
struct Phase {
  long long S_i = 0, S_n = 0;
  Stage si, sn;
};
struct Pipe {
  Phase ph[2];
  int nph = 1;
  Stage ss_i, ss_n;  // steady-state step per tier
  bool has_i = false, has_n = false;
  // Which steps are one-way (Topology: one_way_factor):
  //  - FirstPass (the double binary tree): a single chunk passes the phases one-way but for one
  //    step per phase, where the two trees cross (a rank sends up, or down, one tree while its
  //    partner sends to it in the other). With two chunks or more a rank takes in the next chunk
  //    while it sends one, and `tree_one_way_steps` steps of the first phase's first tier are
  //    one-way (the schedules': the first hop of broadcast and reduce, and the second of a
  //    broadcast whose root has one child on one node; the allreduce's first hop where the rank
  //    count is not a power of two);
  //  - Chain (ring broadcast, reduce): one chunk passes one-way from rank to rank, the phases; with
  //    k >= 2 chunks a rank receives the next chunk while it sends one, and only the first step
  //    and the last (on the tier of the last hop) are one-way.
  //  - None (the double tree's allreduce on two ranks): each rank is the root of one tree and sends
  //    up the other in the same step, so every step is an exchange (Topology: exchange_factor).
  enum class OneWay : std::uint8_t { FirstPass, Chain, None } one_way = OneWay::FirstPass;
  double tree_one_way_steps = 1;
  bool last_hop_net = false;
  // The intra-node stages forward chunks (Stage::written) but the first hop sends untouched data
  // (the root's Input, or a leaf's): on one node, the first phase's first stage is `first_i`.
  bool first_clean = false;
  Stage first_i;
  // The chain on one node (ring broadcast, reduce) with a node bandwidth: step t of the k + p - 2
  // has min(t + 1, k, p - 1, k + p - 2 - t) ranks sending at once, which share the node's bandwidth.
  bool ramp = false;
  // Local copies a step (the pipelines that reduce copy their own chunk into the accumulator before
  // they combine): `copy_ops` copies of copy_frac * x bytes in the fill stages of the first phase
  // and in the steady state; and the root's copy of all n after its last send (broadcast), which
  // the pipeline's last steps hide when they take longer.
  double copy_ops = 0, copy_frac = 0;
  bool root_copy = false;
  // The double tree on one node with a node bandwidth: while the first chunk passes, level j of
  // each tree has min(2^j, what is left of the p - 1) edges sending at once below a root with one
  // child (`rooted_single`), else min(2^(j+1), ..), not all p - 1; a level-edge moves x bytes (a
  // half-chunk in each tree).
  bool tree_fill = false, rooted_single = false;
  // The fill stages (the first chunk's pass) wait for these overheads instead of their stages'
  // (Stage::sends_before): nothing is ahead of the first chunk, so its messages wait less. The
  // steady-state steps wait for their own. The counts here and in tree_pipe are averages of what
  // the schedules' steps wait for, over 2-64 ranks and either side paying
  // (PriceOfPipelines.PostingOverheads in tests/collectives/test_price.cc).
  bool single_overheads = false;
  double single_sends = 0, single_recvs = 0;
};

constexpr double kMinChunkBytes = 4096;

// An intra-node stage: b_mult times the s/B of f ranks of a node sending at once, g s/B reduced,
// messages of msg * x bytes; `written`: the stage forwards data (Topology::written_scale).
Stage intra_stage(const Env& e, double b_mult, double g, double msg, double f, bool written = true);
// The pipeline's first hop on one node sends untouched data (Pipe::first_clean).
void set_first_clean(const Env& e, Pipe& P);
// A network stage: b s/B moved, g s/B reduced, messages of msg * x bytes.
Stage net_stage(const Env& e, double b, double g, double msg);

// T(k) of the pipeline P moving n bytes in k chunks, with its one-way and exchange steps, copies
// and node-bandwidth ramps.
Parts pipe_time(const Env& e, const Pipe& P, double n, double k);

// The number of chunks k that minimises the pipeline's time, and that time.
struct BestPipe {
  int k = 1;
  Parts t;
};
BestPipe best_pipe(const Env& e, const Pipe& P, double n);
// best_pipe's time.
Parts run_pipe(const Env& e, const Pipe& P, double n);

// Ranks of a node sending inside it at once in a pipeline's steady state (intra_node.node_bandwidth):
// on one node every rank but one (the chain's last rank; a tree of p ranks has p - 1 edges, each
// carrying a chunk a step), otherwise the node's G ranks.
double pipe_senders(const Env& e);

}  // namespace commsim::closed_forms
