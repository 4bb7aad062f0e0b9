#pragma once
// The schedule generators: pure functions (request) -> Schedule, one file per algorithm, listed in
// one registry (registry.cc). No MPI, CUDA or I/O.
//
// Element counts follow nccl-tests. `count` is the request's size in elements:
//   allreduce, broadcast, reduce, sendrecv: Input and Output hold `count` elements on every rank;
//   allgather:     Input holds block = count / nranks elements, Output block * nranks;
//   reducescatter: Input holds block * nranks elements (block = count / nranks), Output block;
//   alltoall:      Input and Output hold block * nranks (block = count / nranks); block j of rank
//                  i's Input ends as block i of rank j's Output.
// (count not divisible by nranks: the remainder is dropped for these three, as nccl-tests does;
// allreduce/broadcast/reduce split `count` into unequal chunks and drop nothing.)
// sendrecv: rank r sends its Input to (r + 1) % nranks and receives from (r - 1) % nranks.
// reduce: only the root's Output is defined. broadcast: the root's Input is copied everywhere.
#include <cstdint>
#include <string>
#include <vector>

#include "model/placement.h"
#include "model/schedule.h"

namespace commsim {

struct ScheduleRequest {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  int nranks = 1;
  std::uint64_t count = 0;        // elements (see above)
  std::uint32_t elem_size = 4;    // bytes per element
  int root = 0;
  // Where the ranks run; nullptr means all on one node. Hierarchical needs it; others may use it
  // to order their rings.
  const Placement* placement = nullptr;
  // Pipelined algorithms (tree, ring broadcast/reduce) split the data into chunks of about this
  // many bytes; 0 picks the generator's default (512 KiB). The tree sends one half of the data down
  // each of its two trees: a chunk is then one piece of each half (two messages of half the size).
  std::uint64_t pipeline_chunk_bytes = 0;
  // Channels (Schedule::channels), 1..kMaxChannels: the data split into this many parts, each
  // moved by its own ring or double tree (or hierarchical rings) in the same rounds. Channel c's
  // ring (or trees) is the one-channel ring with each node's ranks rotated by c: it enters every node at local rank
  // c mod G and leaves it from local rank c - 1 mod G (G: the node's ranks), so every channel
  // leaves the node from a different GPU and, with one NIC per GPU (GPU i on NIC i, the DGX rails),
  // through a different NIC. Algorithms that take no channel count (takes_channels) ignore it, and
  // no channel gets less than one element (one per half for the tree): the schedule's
  // Schedule::channels says how many it has.
  int channels = 1;
};

// buffer_counts (model/collective.h) sizes each rank's Input and Output for a request.

// Builds the schedule of any hand-written algorithm. Throws Error when the algorithm does not
// apply to the collective, nranks < 1, the root is out of range, or the placement does not match.
Schedule make_schedule(const ScheduleRequest& request);
// True when registry.cc has a generator for (c, a): exactly the hand-written rows of the table of
// model/algorithms.h.
bool has_generator(Collective c, Algorithm a);

// Checks that a schedule is well formed: spans inside their buffers, every Send matched by a Recv
// or RecvReduce of the same size in the same order. Throws Error naming the rank, round and op.
// Also: nothing writes Input; inside a round no receive overlaps another transfer's elements and
// no local op overlaps itself; the rounds run to the end without deadlock (walk_schedule in
// model/schedule.h). Returns the matched transfers (match_transfers), for executors that use them.
std::vector<MatchedTransfer> validate_schedule(const Schedule& schedule);

}  // namespace commsim
