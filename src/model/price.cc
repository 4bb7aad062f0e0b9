// Schedule pricing as a discrete-event simulation in max-plus form. Every transfer's duration is
// fixed before the walk (it depends only on which rounds it belongs to), so the simulation needs
// no event queue: a round's post time is the end of the rank's previous round plus its local ops; a
// transfer starts at the later post time of its two rounds; a round ends with its last transfer.
//
// Bandwidth sharing: the transfers a rank posts in one round share its bandwidth, so each one
// takes latency + (bytes of all of them) / bandwidth, the time in which a fair share would move
// them all; the same holds for the receiving rank's round, and the larger of the two counts. For
// the network the per-rank bandwidth is one NIC (nic_bw_Bps), and the network transfers that the
// ranks of one node post in rounds of the same index share the node's NICs (node_bw_Bps()): ranks
// of a node run their rounds in step in every algorithm here, so equal round indices stand in for
// "at the same time".
#include "model/price.h"

#include <algorithm>
#include <string>
#include <vector>

#include "model/error.h"

namespace commsim {
namespace {

struct RoundLoad {
  double out_intra = 0, in_intra = 0, out_net = 0, in_net = 0;  // bytes
};

// Critical-path time, and the part of it spent in local copies.
struct PathTime {
  Seconds t = 0;
  Seconds copy = 0;
  void take_later(const PathTime& o) {
    if (o.t > t || (o.t == t && o.copy > copy)) *this = o;
  }
};

class PriceVisitor : public ScheduleVisitor {
 public:
  PriceVisitor(const std::vector<std::size_t>& round_base, const std::vector<MatchedTransfer>& transfers,
               const std::vector<Seconds>& local_s, const std::vector<Seconds>& local_copy_s,
               const std::vector<Seconds>& duration_s, const std::vector<Seconds>& reduce_after_s)
      : base_(round_base),
        transfers_(transfers),
        local_s_(local_s),
        local_copy_s_(local_copy_s),
        duration_s_(duration_s),
        reduce_after_s_(reduce_after_s),
        post_(local_s.size()),
        end_(local_s.size()) {}

  void round_started(int rank, std::uint32_t round) override {
    const std::size_t g = base_[rank] + round;
    const PathTime prev = round == 0 ? PathTime{} : end_[g - 1];
    post_[g] = {prev.t + local_s_[g], prev.copy + local_copy_s_[g]};
    end_[g] = post_[g];
  }

  void transfer(std::size_t i) override {
    const std::size_t gs = base_[transfers_[i].send.rank] + transfers_[i].send.round;
    const std::size_t gr = base_[transfers_[i].recv.rank] + transfers_[i].recv.round;
    PathTime start = post_[gs];
    start.take_later(post_[gr]);
    const PathTime arrived{start.t + duration_s_[i], start.copy};
    end_[gs].take_later(arrived);
    end_[gr].take_later({arrived.t + reduce_after_s_[i], arrived.copy});
  }

  const PathTime& end(std::size_t g) const { return end_[g]; }

 private:
  const std::vector<std::size_t>& base_;
  const std::vector<MatchedTransfer>& transfers_;
  const std::vector<Seconds>& local_s_;
  const std::vector<Seconds>& local_copy_s_;
  const std::vector<Seconds>& duration_s_;
  const std::vector<Seconds>& reduce_after_s_;
  std::vector<PathTime> post_, end_;
};

double per_byte(BytesPerSecond bw) {
  return bw > 0 ? 1.0 / bw : 0.0;
}

}  // namespace

PriceBreakdown price_schedule(const Schedule& s, const Topology& topo, const Placement& placement) {
  if (placement.nranks != s.nranks)
    throw Error("price_schedule: the placement has " + std::to_string(placement.nranks) +
                " ranks but the schedule has " + std::to_string(s.nranks));
  const std::vector<MatchedTransfer> transfers = match_transfers(s);
  const int p = s.nranks;
  std::vector<std::size_t> base(p + 1, 0);
  for (int r = 0; r < p; ++r) base[r + 1] = base[r] + s.ranks[r].rounds.size();
  const std::size_t nrounds = base[p];

  const double copy_s_per_byte = per_byte(topo.memory_bw_Bps);
  const double gamma = per_byte(topo.reduce_bw_Bps);
  std::vector<Seconds> local_s(nrounds, 0), local_copy_s(nrounds, 0);
  for (int r = 0; r < p; ++r)
    for (std::size_t k = 0; k < s.ranks[r].rounds.size(); ++k)
      for (const Op& op : s.ranks[r].rounds[k].ops) {
        if (op.kind == OpKind::Copy) {
          const Seconds t = static_cast<double>(s.bytes(op.dst)) * copy_s_per_byte;
          local_s[base[r] + k] += t;
          local_copy_s[base[r] + k] += t;
        } else if (op.kind == OpKind::Reduce) {
          local_s[base[r] + k] += static_cast<double>(s.bytes(op.dst)) * gamma;
        }
      }

  PriceBreakdown out;
  out.messages = transfers.size();
  std::vector<RoundLoad> load(nrounds);
  std::vector<std::vector<double>> node_out(placement.nnodes), node_in(placement.nnodes);  // [node][round index]
  auto add_at = [](std::vector<double>& v, std::size_t i, double x) {
    if (v.size() <= i) v.resize(i + 1, 0.0);
    v[i] += x;
  };
  for (const MatchedTransfer& t : transfers) {
    const double bytes = static_cast<double>(s.bytes(s.ranks[t.send.rank].rounds[t.send.round].ops[t.send.op].src));
    RoundLoad& ls = load[base[t.send.rank] + t.send.round];
    RoundLoad& lr = load[base[t.recv.rank] + t.recv.round];
    if (placement.same_node(t.send.rank, t.recv.rank)) {
      ls.out_intra += bytes;
      lr.in_intra += bytes;
      out.intra_bytes += static_cast<std::uint64_t>(bytes);
    } else {
      if (!topo.network.present())
        throw Error("price_schedule: ranks " + std::to_string(t.send.rank) + " and " + std::to_string(t.recv.rank) +
                    " are on different nodes but topology '" + topo.name + "' has no network (nics_per_node is 0)");
      ls.out_net += bytes;
      lr.in_net += bytes;
      add_at(node_out[placement.node_of_rank[t.send.rank]], t.send.round, bytes);
      add_at(node_in[placement.node_of_rank[t.recv.rank]], t.recv.round, bytes);
      out.inter_bytes += static_cast<std::uint64_t>(bytes);
    }
  }

  const double intra_s_per_byte = per_byte(topo.intra.bw_Bps);
  const double nic_s_per_byte = per_byte(topo.network.nic_bw_Bps);
  const double node_s_per_byte = topo.network.present() ? per_byte(topo.network.node_bw_Bps()) : 0.0;
  std::vector<Seconds> duration_s(transfers.size()), reduce_after_s(transfers.size(), 0);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const MatchedTransfer& t = transfers[i];
    const RoundLoad& ls = load[base[t.send.rank] + t.send.round];
    const RoundLoad& lr = load[base[t.recv.rank] + t.recv.round];
    if (placement.same_node(t.send.rank, t.recv.rank)) {
      duration_s[i] = topo.intra.latency_s + std::max(ls.out_intra, lr.in_intra) * intra_s_per_byte;
    } else {
      const double node_bytes = std::max(node_out[placement.node_of_rank[t.send.rank]][t.send.round],
                                         node_in[placement.node_of_rank[t.recv.rank]][t.recv.round]);
      duration_s[i] = topo.network.latency_s +
                      std::max(std::max(ls.out_net, lr.in_net) * nic_s_per_byte, node_bytes * node_s_per_byte);
    }
    const Op& recv = s.ranks[t.recv.rank].rounds[t.recv.round].ops[t.recv.op];
    if (recv.kind == OpKind::RecvReduce) reduce_after_s[i] = static_cast<double>(s.bytes(recv.dst)) * gamma;
  }

  PriceVisitor visitor(base, transfers, local_s, local_copy_s, duration_s, reduce_after_s);
  walk_schedule(s, transfers, visitor);
  for (int r = 0; r < p; ++r) {
    if (base[r + 1] == base[r]) continue;
    const PathTime& e = visitor.end(base[r + 1] - 1);
    if (e.t > out.time_s || (e.t == out.time_s && e.copy > out.copy_s)) {
      out.time_s = e.t;
      out.copy_s = e.copy;
    }
  }
  return out;
}

}  // namespace commsim
