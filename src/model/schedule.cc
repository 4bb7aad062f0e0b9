#include "model/schedule.h"

#include <algorithm>
#include <string>

#include "model/error.h"

namespace commsim {
namespace {

bool is_transfer(OpKind k) {
  return k == OpKind::Send || k == OpKind::Recv || k == OpKind::RecvReduce;
}

std::string where(const OpRef& r) {
  return "rank " + std::to_string(r.rank) + " round " + std::to_string(r.round) + " op " + std::to_string(r.op);
}

// A rank's sends or receives in program order, then stably grouped by peer.
struct PeerOp {
  int peer;
  OpRef ref;
  std::uint64_t count;
  OpKind kind;
};

void group_by_peer(std::vector<PeerOp>& ops) {
  auto by_peer = [](const PeerOp& a, const PeerOp& b) { return a.peer < b.peer; };
  if (!std::is_sorted(ops.begin(), ops.end(), by_peer)) std::stable_sort(ops.begin(), ops.end(), by_peer);
}

// The [begin, end) range of `ops` (grouped by peer) whose peer is `peer`.
std::pair<std::size_t, std::size_t> peer_range(const std::vector<PeerOp>& ops, int peer) {
  auto lo = std::lower_bound(ops.begin(), ops.end(), peer, [](const PeerOp& a, int p) { return a.peer < p; });
  auto hi = std::upper_bound(lo, ops.end(), peer, [](int p, const PeerOp& a) { return p < a.peer; });
  return {static_cast<std::size_t>(lo - ops.begin()), static_cast<std::size_t>(hi - ops.begin())};
}

}  // namespace

std::vector<MatchedTransfer> match_transfers(const Schedule& s,
                                             const std::function<void(const OpRef&, const Op&)>& local_op) {
  if (static_cast<int>(s.ranks.size()) != s.nranks)
    throw Error("schedule: has programs for " + std::to_string(s.ranks.size()) + " ranks but nranks is " +
                std::to_string(s.nranks));
  std::vector<std::vector<PeerOp>> sends(s.nranks), recvs(s.nranks);
  for (int rank = 0; rank < s.nranks; ++rank) {
    const auto& rounds = s.ranks[rank].rounds;
    sends[rank].reserve(rounds.size());  // most rounds send and receive about once
    recvs[rank].reserve(rounds.size());
    for (std::uint32_t r = 0; r < rounds.size(); ++r) {
      // Each round's ops lie in their own allocation: ask for them a few rounds ahead.
      if (r + 4 < rounds.size()) __builtin_prefetch(rounds[r + 4].ops.data());
      for (std::uint32_t o = 0; o < rounds[r].ops.size(); ++o) {
        const Op& op = rounds[r].ops[o];
        const OpRef ref{rank, r, o};
        if (!is_transfer(op.kind)) {
          if (local_op) local_op(ref, op);
          continue;
        }
        if (op.peer < 0 || op.peer >= s.nranks || op.peer == rank)
          throw Error("schedule: " + where(ref) + " names peer " + std::to_string(op.peer) +
                      ", which is not another rank of 0.." + std::to_string(s.nranks - 1));
        if (op.kind == OpKind::Send)
          sends[rank].push_back({op.peer, ref, op.src.count, op.kind});
        else
          recvs[rank].push_back({op.peer, ref, op.dst.count, op.kind});
      }
    }
  }
  std::size_t total_recvs = 0;
  for (int rank = 0; rank < s.nranks; ++rank) {
    group_by_peer(sends[rank]);
    group_by_peer(recvs[rank]);
    total_recvs += recvs[rank].size();
  }
  std::vector<MatchedTransfer> out;
  out.reserve(total_recvs);
  for (int a = 0; a < s.nranks; ++a) {
    const auto& sa = sends[a];
    for (std::size_t i = 0; i < sa.size();) {
      const int b = sa[i].peer;
      std::size_t j = i;
      while (j < sa.size() && sa[j].peer == b) ++j;
      const auto [lo, hi] = peer_range(recvs[b], a);
      const std::size_t n_send = j - i, n_recv = hi - lo;
      for (std::size_t k = 0; k < std::min(n_send, n_recv); ++k) {
        const PeerOp& so = sa[i + k];
        const PeerOp& ro = recvs[b][lo + k];
        if (so.count != ro.count)
          throw Error("schedule: " + where(so.ref) + " sends " + std::to_string(so.count) + " elements to rank " +
                      std::to_string(b) + " but the matching receive (" + where(ro.ref) + ") expects " +
                      std::to_string(ro.count));
        out.push_back({so.ref, ro.ref, so.count, ro.kind});
      }
      if (n_send > n_recv)
        throw Error("schedule: " + where(sa[i + n_recv].ref) + " (Send to rank " + std::to_string(b) +
                    ") has no matching receive: rank " + std::to_string(a) + " posts " + std::to_string(n_send) +
                    " sends to rank " + std::to_string(b) + ", which posts " + std::to_string(n_recv) +
                    " receives from it");
      if (n_recv > n_send)
        throw Error("schedule: " + where(recvs[b][lo + n_send].ref) + " (receive from rank " + std::to_string(a) +
                    ") has no matching Send: rank " + std::to_string(a) + " posts " + std::to_string(n_send) +
                    " sends to rank " + std::to_string(b) + ", which posts " + std::to_string(n_recv) +
                    " receives from it");
      i = j;
    }
  }
  if (out.size() != total_recvs) {
    // Some receive names a sender that posts no Send to it at all.
    for (int b = 0; b < s.nranks; ++b)
      for (const PeerOp& r : recvs[b]) {
        const auto [lo, hi] = peer_range(sends[r.peer], b);
        if (lo == hi)
          throw Error("schedule: " + where(r.ref) + " (receive from rank " + std::to_string(r.peer) +
                      ") has no matching Send: rank " + std::to_string(r.peer) + " posts no sends to rank " +
                      std::to_string(b));
      }
  }
  return out;
}

RoundIndex::RoundIndex(const Schedule& s) : base_(s.nranks + 1, 0) {
  for (int r = 0; r < s.nranks; ++r) base_[r + 1] = base_[r] + s.ranks[r].rounds.size();
}

void walk_schedule(const Schedule& s, const std::vector<MatchedTransfer>& transfers, ScheduleVisitor& visitor) {
  const int p = s.nranks;
  // The transfers of each round in CSR form.
  const RoundIndex index(s);
  const std::size_t nrounds = index.size();
  std::vector<std::uint32_t> first(nrounds + 1, 0);
  for (const auto& t : transfers) {
    ++first[index(t.send.rank, t.send.round) + 1];
    ++first[index(t.recv.rank, t.recv.round) + 1];
  }
  for (std::size_t g = 0; g < nrounds; ++g) first[g + 1] += first[g];
  std::vector<std::uint32_t> members(first[nrounds]);
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < transfers.size(); ++i) {
      members[fill[index(transfers[i].send.rank, transfers[i].send.round)]++] = static_cast<std::uint32_t>(i);
      members[fill[index(transfers[i].recv.rank, transfers[i].recv.round)]++] = static_cast<std::uint32_t>(i);
    }
  }

  std::vector<std::uint32_t> current(p, 0);              // the round each rank is in (or rounds.size() when done)
  std::vector<std::uint32_t> pending(p, 0);              // transfers of the current round not yet done
  std::vector<std::uint8_t> sides(transfers.size(), 0);  // how many of a transfer's two rounds have started
  std::vector<int> ready;                                // ranks whose current round may start
  ready.reserve(p);
  for (int r = p - 1; r >= 0; --r)
    if (!s.ranks[r].rounds.empty()) ready.push_back(r);

  auto finish_transfer = [&](std::uint32_t t) {
    visitor.transfer(t);
    for (int rank : {transfers[t].send.rank, transfers[t].recv.rank})
      if (--pending[rank] == 0 && ++current[rank] < s.ranks[rank].rounds.size()) ready.push_back(rank);
  };

  while (!ready.empty()) {
    const int rank = ready.back();
    ready.pop_back();
    const std::uint32_t round = current[rank];
    const std::size_t g = index(rank, round);
    visitor.round_started(rank, round);
    pending[rank] = first[g + 1] - first[g] + 1;  // +1 holds the round open while its transfers are posted
    for (std::uint32_t k = first[g]; k < first[g + 1]; ++k)
      if (++sides[members[k]] == 2) finish_transfer(members[k]);
    if (--pending[rank] == 0 && ++current[rank] < s.ranks[rank].rounds.size()) ready.push_back(rank);
  }

  std::string stuck;
  int nstuck = 0;
  for (int rank = 0; rank < p; ++rank) {
    if (current[rank] >= s.ranks[rank].rounds.size()) continue;
    if (++nstuck > 8) continue;
    const std::size_t g = index(rank, current[rank]);
    stuck += "\n  rank " + std::to_string(rank) + " in round " + std::to_string(current[rank]);
    for (std::uint32_t k = first[g]; k < first[g + 1]; ++k) {
      const MatchedTransfer& t = transfers[members[k]];
      if (sides[members[k]] == 2) continue;
      const bool sending = t.send.rank == rank;
      const OpRef& other = sending ? t.recv : t.send;
      stuck += sending ? " waits to send to rank " : " waits to receive from rank ";
      stuck += std::to_string(other.rank) + " (its round " + std::to_string(other.round) + ", now in round " +
               std::to_string(current[other.rank]) + ")";
      break;
    }
  }
  if (nstuck > 0) {
    if (nstuck > 8) stuck += "\n  ... and " + std::to_string(nstuck - 8) + " more ranks";
    throw Error("schedule deadlocks: " + std::to_string(nstuck) + " of " + std::to_string(p) +
                " ranks cannot finish:" + stuck);
  }
}

}  // namespace commsim
