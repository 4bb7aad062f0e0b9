// Schedule pricing as a discrete-event simulation in max-plus form. Every transfer's duration
// depends only on the rounds it belongs to, so the simulation needs no event queue: a round's post
// time is the end of the rank's previous round plus its local ops; a transfer starts at the later
// post time of its two rounds; a round ends with its last transfer.
//
// Bandwidth sharing. Inside a node, the transfers a rank posts in one round share its bandwidth
// (intra.bw_Bps per direction), so each one takes latency + (bytes of all of them) / bandwidth, the
// time in which a fair share would move them all; the same holds for the receiving rank's round,
// and the larger of the two counts (the sender's bytes counted at intra.send_share: receivers
// that copy the data themselves take that load off the sender). Across nodes, one transfer is one
// flow, which a NIC serves at nic_bw_Bps at most, and the network transfers that the ranks of a
// node post in rounds of the same step (Round::step: the schedule's time step, which a rank idle in
// earlier steps reaches with fewer rounds) share the node's NICs (node_bw_Bps()), sending and
// receiving: equal steps stand in for "at the same time". Likewise the receives of a round that
// combine on arrival (RecvReduce) share the rank's reduction rate: each one ends (bytes they all
// combine) * gamma after it arrives.
//
// Optional terms of the topology (all off by default): intra_node.node_bandwidth caps the bytes
// that all ranks of a node move inside it in rounds of the same step (as the NICs above: a
// transfer takes at least (node's intra bytes of the round) / node_bandwidth); a message longer
// than a tier's eager_limit pays its rendezvous_latency instead of its latency, one of at most its
// inline_limit its inline_latency; a round that posts several sends posts them one after another,
// so its i-th send (from 0, in the schedule's order) starts i * message_overhead of the
// transfer's tier later (rendezvous_overhead above the eager limit, inline_overhead up to the
// inline limit), and the round ends with the last; with the tier's overhead_receive_share s the
// i-th send waits (1 - s) i overheads and, as the j-th receive of its receiver's round, s j more;
// a transfer whose receiver's round sends nothing and whose sender's round receives nothing pays
// its latency times the tier's one_way_factor, one whose receiver's round sends back to its
// sender its latency times the tier's exchange_factor (MessageCosts); call_overhead is added once
// to the time of a schedule of more than one rank; working_set_scale scales the memory-bound
// bandwidths by the working set of the schedule's Input and Output; local_op_scale scales the
// copy and reduction rates by the bytes of each copy, of the local reductions of a round
// (together), and of the reductions on arrival of a round (together, but at most one piece of
// Topology::piece() per receive: the host executor combines each piece as it arrives); message_scale scales the
// intra-node bandwidths by the bytes of each message (each message's bytes count as
// bytes / factor in the sharing above); written_scale scales them again for a message of data its
// sender wrote earlier in the schedule (received, combined, copied or reduced);
// network_message_scale scales the network bandwidths by the bytes of each message between nodes
// (a NIC's flow and the node's share, as message_scale inside a node); fan_out_scale scales the
// intra-node bandwidths again, by the bytes of each message, for a message whose sender's round
// posts more than one and whose receiver's round takes in only it (one to many).
#include "model/price.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "model/cost/cost.h"
#include "model/error.h"

namespace commsim {
namespace {

// Bytes a round sends and receives inside the node, and combines on arrival.
struct RoundLoad {
  double out_intra = 0, in_intra = 0, combined = 0;
  double combining = 0;  // receives that combine on arrival
  double reduced_locally = 0;  // bytes of the round's local reductions (before its transfers)
  double sends = 0;  // transfers the round posts
  double recvs = 0;  // transfers the round receives
  Seconds combine_s = 0;  // time to combine `combined` bytes (set once all transfers are known)
};

// Critical-path time, and the part of it spent in local copies.
struct PathTime {
  Seconds t = 0;
  Seconds copy = 0;
  void take_later(const PathTime& o) {
    if (o.t > t || (o.t == t && o.copy > copy)) *this = o;
  }
};

// Everything the simulation keeps about one round of one rank, together for locality.
struct RoundState {
  RoundLoad load;
  PathTime post;  // when its transfers are posted (before the walk: the time of its local ops)
  PathTime end;   // when it ends
};

double per_byte(BytesPerSecond bw) {
  return bw > 0 ? 1.0 / bw : 0.0;
}

// The element ranges one rank has written, per buffer, merged: [begin, end) by begin.
class WrittenRanges {
 public:
  void clear() { ranges_.clear(); }
  void add(const Span& s) {
    if (s.count == 0) return;
    auto& m = ranges_[s.buffer];
    std::uint64_t begin = s.offset, end = s.offset + s.count;
    auto it = m.upper_bound(begin);
    if (it != m.begin() && std::prev(it)->second >= begin) --it;  // the range before touches it
    while (it != m.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = m.erase(it);
    }
    m.emplace(begin, end);
  }
  bool overlaps(const Span& s) const {
    const auto b = ranges_.find(s.buffer);
    if (b == ranges_.end() || s.count == 0) return false;
    auto it = b->second.upper_bound(s.offset + s.count - 1);  // the first range starting after s
    return it != b->second.begin() && std::prev(it)->second > s.offset;
  }

 private:
  std::map<BufferId, std::map<std::uint64_t, std::uint64_t>> ranges_;
};

// The most ranks on one node: the GPUs in use there, whose NICs the node's traffic gets.
int largest_node(const Placement& pl) {
  int most = 1;
  for (int n : pl.node_size) most = std::max(most, n);
  return most;
}

class Pricer : public ScheduleVisitor {
 public:
  // f: the working-set factor on the memory-bound bandwidths (Topology::working_set_scale);
  // f_node: the one on intra_node.node_bandwidth (Topology::node_scale_at).
  Pricer(const Schedule& s, const Topology& topo, const Placement& pl, double f, double f_node)
      : s_(s),
        topo_(topo),
        pl_(pl),
        index_(s),
        copy_s_per_byte_(per_byte(topo.memory_bw_Bps * f)),
        gamma_(per_byte(topo.reduce_bw_Bps * f)),
        intra_s_per_byte_(per_byte(topo.intra.bw_Bps * f)),
        nic_s_per_byte_(per_byte(topo.network.nic_bw_Bps)),
        node_s_per_byte_(topo.network.present() ? per_byte(node_network_bw_Bps(topo, largest_node(pl))) : 0.0),
        rounds_(index_.size()),
        node_out_(pl.nnodes),
        node_in_(pl.nnodes),
        node_intra_s_per_byte_(per_byte(topo.intra.node_bw_Bps * f_node)),
        node_intra_(topo.intra.node_bw_Bps > 0 ? pl.nnodes : 0) {}

  // Local ops run first in a round: copies at memory bandwidth, reductions at gamma.
  void local_op(const OpRef& at, const Op& op) {
    const double bytes = static_cast<double>(s_.bytes(op.dst));
    PathTime& t = rounds_[index_(at.rank, at.round)].post;  // the local ops' time, until the round starts
    if (op.kind == OpKind::Copy) {
      const double f = topo_.local_op_scale_at(bytes);
      t.t += bytes * copy_s_per_byte_ / f;
      t.copy += bytes * copy_s_per_byte_ / f;
    } else {
      // Priced once all of the round's local reductions are known (set_transfers): one batch.
      rounds_[index_(at.rank, at.round)].load.reduced_locally += bytes;
    }
  }

  // The bandwidth each transfer shares: the bytes of its rounds, and of its nodes' network rounds.
  void set_transfers(const std::vector<MatchedTransfer>& transfers) {
    transfers_ = &transfers;
    posted_before_.reserve(transfers.size());
    received_before_.reserve(transfers.size());
    auto add_at = [](std::vector<double>& v, std::size_t i, double x) {
      if (v.size() <= i) v.resize(i + 1, 0.0);
      v[i] += x;
    };
    if (!topo_.written_scale.empty()) mark_written(transfers);
    // Topology::fan_out_scale: the sends and receives of every round, counted before the first.
    std::vector<std::uint32_t> round_sends, round_recvs;
    if (!topo_.fan_out_scale.empty()) {
      round_sends.assign(rounds_.size(), 0);
      round_recvs.assign(rounds_.size(), 0);
      for (const MatchedTransfer& t : transfers) {
        ++round_sends[index_(t.send.rank, t.send.round)];
        ++round_recvs[index_(t.recv.rank, t.recv.round)];
      }
    }
    for (std::size_t ti = 0; ti < transfers.size(); ++ti) {
      const MatchedTransfer& t = transfers[ti];
      const std::uint64_t bytes = t.count * s_.elem_size;
      RoundLoad& ls = rounds_[index_(t.send.rank, t.send.round)].load;
      RoundLoad& lr = rounds_[index_(t.recv.rank, t.recv.round)].load;
      if (t.recv_kind == OpKind::RecvReduce) {
        lr.combined += static_cast<double>(bytes);
        lr.combining += 1;
      }
      posted_before_.push_back(ls.sends);  // the sends of the round posted before this one
      received_before_.push_back(lr.recvs);  // the receives of the receiving round before this one
      ls.sends += 1;
      lr.recvs += 1;
      if (pl_.same_node(t.send.rank, t.recv.rank)) {
        // Bytes at the rate of a message of this size (Topology::message_scale), and of data its
        // sender has just written (Topology::written_scale).
        double moved = static_cast<double>(bytes) / topo_.message_scale_at(static_cast<double>(bytes));
        if (!written_.empty() && written_[ti]) moved /= topo_.written_scale_at(static_cast<double>(bytes));
        // One of several messages its sender posts at once, to a receiver that takes in only it
        // (Topology::fan_out_scale).
        if (!round_sends.empty() && round_sends[index_(t.send.rank, t.send.round)] > 1 &&
            round_recvs[index_(t.recv.rank, t.recv.round)] == 1)
          moved /= topo_.fan_out_scale_at(static_cast<double>(bytes));
        if (!node_intra_.empty()) add_at(node_intra_[pl_.node_of_rank[t.send.rank]], step_of(t.send), moved);
        ls.out_intra += moved;
        lr.in_intra += moved;
        out_.intra_bytes += bytes;
        continue;
      }
      if (!topo_.network.present())
        throw Error("price_schedule: ranks " + std::to_string(t.send.rank) + " and " + std::to_string(t.recv.rank) +
                    " are on different nodes but topology '" + topo_.name + "' has no network (nics_per_node is 0)");
      // Bytes at the rate of a message of this size between nodes (Topology::network_message_scale),
      // kept for the transfer's own NIC share (duration_s).
      const double moved = static_cast<double>(bytes) / topo_.network_message_scale_at(static_cast<double>(bytes));
      if (!topo_.network_message_scale.empty()) {
        if (net_moved_.empty()) net_moved_.resize(transfers.size());
        net_moved_[ti] = moved;
      }
      add_at(node_out_[pl_.node_of_rank[t.send.rank]], step_of(t.send), moved);
      add_at(node_in_[pl_.node_of_rank[t.recv.rank]], step_of(t.recv), moved);
      out_.inter_bytes += bytes;
    }
    out_.messages = transfers.size();
    // Exchanges: the receiver's round sends back to the sender. The transfers come ordered by
    // sender, receiver and round (match_transfers): the answer is found by binary search in the
    // receiver's block.
    if (topo_.intra.msg.exchange_factor != 1.0 || topo_.network.msg.exchange_factor != 1.0) {
      std::vector<std::size_t> first(s_.nranks + 1, transfers.size());  // [rank]: its first transfer as sender
      for (std::size_t i = transfers.size(); i-- > 0;) first[transfers[i].send.rank] = i;
      for (int r = s_.nranks - 1; r >= 0; --r) first[r] = std::min(first[r], first[r + 1]);
      exchange_.reserve(transfers.size());
      for (const MatchedTransfer& t : transfers) {
        const auto begin = transfers.begin() + static_cast<std::ptrdiff_t>(first[t.recv.rank]);
        const auto end = transfers.begin() + static_cast<std::ptrdiff_t>(first[t.recv.rank + 1]);
        const auto back = std::make_tuple(t.send.rank, t.recv.round);
        const auto it = std::lower_bound(begin, end, back, [](const MatchedTransfer& x, const auto& key) {
          return std::make_tuple(x.recv.rank, x.send.round) < key;
        });
        exchange_.push_back(it != end && std::make_tuple(it->recv.rank, it->send.round) == back);
      }
    }
    // Each round's reductions, together, at the factor of their batch (Topology::local_op_scale);
    // those on arrival at the factor of the pieces they combine at once (one per receive).
    const double piece = static_cast<double>(topo_.piece());
    for (RoundState& r : rounds_) {
      if (r.load.combined > 0) {
        const double at_once = piece > 0 ? std::min(r.load.combined, piece * r.load.combining) : r.load.combined;
        r.load.combine_s = r.load.combined * gamma_ / topo_.local_op_scale_at(at_once);
      }
      if (r.load.reduced_locally > 0)
        r.post.t += r.load.reduced_locally * gamma_ / topo_.local_op_scale_at(r.load.reduced_locally);
    }
  }

  // written_[i]: transfer i sends data that its sender wrote earlier in the schedule: received or
  // combined in an earlier round, or copied or reduced by a local op (of this round or an earlier
  // one). Any overlap counts: the message's lines are in the sender's caches. The transfers come
  // grouped by sending rank (match_transfers).
  void mark_written(const std::vector<MatchedTransfer>& transfers) {
    written_.assign(transfers.size(), false);
    WrittenRanges written;
    std::vector<std::size_t> first_op;  // [round]: the index of its op 0 in `sends_written`
    std::vector<bool> sends_written;    // [op of the rank]: a Send of just-written data
    std::size_t i = 0;
    for (int r = 0; r < s_.nranks; ++r) {
      const auto& rounds = s_.ranks[r].rounds;
      first_op.assign(1, 0);
      for (const Round& round : rounds) first_op.push_back(first_op.back() + round.ops.size());
      sends_written.assign(first_op.back(), false);
      written.clear();
      for_each_write_and_send(
          rounds, [&](const Op& op) { written.add(op.dst); },
          [&](const Op& op, std::uint32_t round, std::uint32_t index) {
            sends_written[first_op[round] + index] = written.overlaps(op.src);
          });
      for (; i < transfers.size() && transfers[i].send.rank == r; ++i)
        written_[i] = sends_written[first_op[transfers[i].send.round] + transfers[i].send.op];
    }
  }

  void round_started(int rank, std::uint32_t round) override {
    const PathTime prev = round == 0 ? PathTime{} : rounds_[index_(rank, round - 1)].end;
    RoundState& now = rounds_[index_(rank, round)];
    now.post = now.end = {prev.t + now.post.t, prev.copy + now.post.copy};
  }

  void transfer(std::size_t i) override {
    const MatchedTransfer& t = (*transfers_)[i];
    RoundState& sender = rounds_[index_(t.send.rank, t.send.round)];
    RoundState& receiver = rounds_[index_(t.recv.rank, t.recv.round)];
    PathTime start = sender.post;
    start.take_later(receiver.post);
    const PathTime arrived{
        start.t + duration_s(i, posted_before_[i], received_before_[i], sender.load, receiver.load), start.copy};
    sender.end.take_later(arrived);
    const double combine_s = t.recv_kind == OpKind::RecvReduce ? receiver.load.combine_s : 0;
    receiver.end.take_later({arrived.t + combine_s, arrived.copy});
  }

  PriceBreakdown result() const {
    PriceBreakdown out = out_;
    for (int r = 0; r < s_.nranks; ++r) {
      const auto& rounds = s_.ranks[r].rounds;
      if (rounds.empty()) continue;
      const PathTime& e = rounds_[index_(r, static_cast<std::uint32_t>(rounds.size() - 1))].end;
      if (e.t > out.time_s || (e.t == out.time_s && e.copy > out.copy_s)) {
        out.time_s = e.t;
        out.copy_s = e.copy;
      }
    }
    return out;
  }

 private:
  // The time step of a transfer's round (Round::step): what the node-wide sharing counts by.
  std::size_t step_of(const OpRef& at) const {
    const std::uint32_t step = s_.ranks[at.rank].rounds[at.round].step;
    return step == Round::kStepIsIndex ? at.round : step;
  }

  Seconds duration_s(std::size_t i, double posted_before, double received_before, const RoundLoad& ls,
                     const RoundLoad& lr) const {
    const MatchedTransfer& t = (*transfers_)[i];
    const double bytes = static_cast<double>(t.count * s_.elem_size);
    // One way: the receiver's round sends nothing and the sender's receives nothing.
    const bool one_way = lr.sends == 0 && ls.recvs == 0;
    const bool exchange = !exchange_.empty() && exchange_[i];
    if (pl_.same_node(t.send.rank, t.recv.rank)) {
      double bw_s = std::max(ls.out_intra * topo_.intra.send_share, lr.in_intra) * intra_s_per_byte_;
      if (!node_intra_.empty())
        bw_s = std::max(bw_s, node_intra_[pl_.node_of_rank[t.send.rank]][step_of(t.send)] * node_intra_s_per_byte_);
      return topo_.intra.message_latency_s(bytes) * topo_.intra.msg.latency_factor(one_way, exchange) +
             topo_.intra.msg.queued_overhead_s(bytes, posted_before, received_before) + bw_s;
    }
    const double node_bytes = std::max(node_out_[pl_.node_of_rank[t.send.rank]][step_of(t.send)],
                                       node_in_[pl_.node_of_rank[t.recv.rank]][step_of(t.recv)]);
    return topo_.network.message_latency_s(bytes) * topo_.network.msg.latency_factor(one_way, exchange) +
           topo_.network.msg.queued_overhead_s(bytes, posted_before, received_before) +
           std::max((net_moved_.empty() ? bytes : net_moved_[i]) * nic_s_per_byte_, node_bytes * node_s_per_byte_);
  }

  const Schedule& s_;
  const Topology& topo_;
  const Placement& pl_;
  const std::vector<MatchedTransfer>* transfers_ = nullptr;
  const RoundIndex index_;
  const double copy_s_per_byte_, gamma_, intra_s_per_byte_, nic_s_per_byte_, node_s_per_byte_;
  std::vector<RoundState> rounds_;                       // [round]
  std::vector<double> posted_before_;                    // [transfer]: sends its round posts before it
  std::vector<double> received_before_;                  // [transfer]: receives its receiver's round has before it
  std::vector<bool> written_;  // [transfer]: it sends just-written data (only with a written_scale)
  std::vector<double> net_moved_;  // [transfer]: network bytes at its size's rate (only with a network_message_scale)
  std::vector<bool> exchange_;  // [transfer]: its receiver's round sends to its sender (only with an exchange_factor)
  std::vector<std::vector<double>> node_out_, node_in_;  // [node][step]: network bytes
  const double node_intra_s_per_byte_;
  std::vector<std::vector<double>> node_intra_;  // [node][step]: intra-node bytes (only with node_bandwidth)
  PriceBreakdown out_;
};

}  // namespace

PriceBreakdown price_schedule(const Schedule& s, const Topology& topo, const Placement& placement) {
  if (placement.nranks != s.nranks)
    throw Error("price_schedule: the placement has " + std::to_string(placement.nranks) +
                " ranks but the schedule has " + std::to_string(s.nranks));
  const auto working_set = static_cast<double>((s.input_count + s.output_count) * s.elem_size);
  Pricer pricer(s, topo, placement, topo.scale_at(working_set),
                topo.node_scale_at(working_set, placement.max_ranks_per_node()));
  const std::vector<MatchedTransfer> transfers =
      match_transfers(s, [&](const OpRef& at, const Op& op) { pricer.local_op(at, op); });
  pricer.set_transfers(transfers);
  walk_schedule(s, transfers, pricer);
  PriceBreakdown out = pricer.result();
  if (s.nranks > 1) out.time_s += topo.call_overhead_s;  // Topology::call_overhead_s
  return out;
}

}  // namespace commsim
