#pragma once
// The measurement loops of `commsim probe`: ping-pong, streaming, ring shifts (plain, of just-written
// data, and its control) between ranks, and memory copies and reductions on every rank at once.
// Every function is collective over `state.comm`: all ranks call it with the same pattern and size,
// each with its own Role. Each sample is the slowest rank's time per operation (its maximum over
// the ranks), returned on rank 0 only.
#include <mpi.h>

#include <vector>

#include "model/units.h"
#include "runtime/probe/tiers.h"

namespace commsim {

//  PingPong: one message there and one back; a sample is one way (half the round trip).
//  Stream: a window of 8 messages in flight one way, then a zero-byte acknowledgement back; a
//  sample is one message of the window.
//  RingShift: every active rank sends to `to` and receives from `from` at once (MPI_Sendrecv).
//  RingShiftWritten: the ring shift, except that before every operation each rank writes its whole
//  send buffer (a new byte value each time), outside the timed part: the data a ring collective
//  forwards was just received, combined or copied by its sender, and inside a node such data can
//  move slower than data nobody touched (the lines still sit in the sender core's caches).
//  RingShiftControl: the same, but each rank writes another buffer of the same size, so the two
//  differ only in which buffer was written (the writes also shift the ranks against each other a
//  little, and evict the caches; the control pays that too).
enum class Pattern { PingPong, Stream, RingShift, RingShiftWritten, RingShiftControl };

// Local operations, timed on every rank at once (they share the node's memory bandwidth, as in a
// collective): memcpy, and the executors' float32 sum.
enum class LocalOp { Memcpy, Reduce };

// What the loops need, and what they carry from one operation to the next.
struct PatternState {
  MPI_Comm comm = MPI_COMM_NULL;  // with MPI_ERRORS_RETURN, as MpiSession leaves MPI_COMM_WORLD
  int rank = 0;
  int iters = 20;                 // timed samples per size
  int warmup = 3;                 // untimed samples per size
  std::vector<char> send, recv;   // at least as large as the largest message
  std::vector<char> control;      // what RingShiftControl writes (grown as needed)
  unsigned char write_value = 0;  // the byte the written shift and its control write next
};

struct PatternSamples {
  std::vector<double> per_op_s;  // rank 0: one per timed sample, the slowest rank's seconds per operation
  int reps = 1;                  // operations per sample, the same on every rank
};

// Small operations repeat until one sample takes about kTargetSampleS (at most kMaxReps times), so
// the timer's resolution does not matter; one trial, the slowest rank's, fixes the repetitions.
inline constexpr double kTargetSampleS = 200e-6;
inline constexpr int kMaxReps = 10000;

// Times `pattern` at `bytes` (at most INT_MAX). `first_of_pair`: this rank sends first in the
// ping-pong and the stream.
PatternSamples time_pattern(PatternState& state, Pattern pattern, const Role& me, bool first_of_pair, Bytes bytes);
// Times `op` on state.recv <- state.send at `bytes` (Reduce: bytes / 4 float32 values).
PatternSamples time_local(PatternState& state, LocalOp op, Bytes bytes);

}  // namespace commsim
