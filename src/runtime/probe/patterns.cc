// Built only with MPI (the probe needs it).
#ifdef COMMSIM_HAVE_MPI
#include "runtime/probe/patterns.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "collectives/elements/dtype.h"
#include "collectives/host/mpi_check.h"
#include "collectives/elements/reduce.h"

namespace commsim {
namespace {

constexpr int kStreamWindow = 8;

void one_pingpong(PatternState& s, const Role& me, bool first, int n) {
  if (first) {
    COMMSIM_MPI_CHECK(MPI_Send(s.send.data(), n, MPI_BYTE, me.to, 1, s.comm));
    COMMSIM_MPI_CHECK(MPI_Recv(s.recv.data(), n, MPI_BYTE, me.from, 1, s.comm, MPI_STATUS_IGNORE));
  } else {
    COMMSIM_MPI_CHECK(MPI_Recv(s.recv.data(), n, MPI_BYTE, me.from, 1, s.comm, MPI_STATUS_IGNORE));
    COMMSIM_MPI_CHECK(MPI_Send(s.send.data(), n, MPI_BYTE, me.to, 1, s.comm));
  }
}

void one_stream(PatternState& s, const Role& me, bool first, int n) {
  MPI_Request req[kStreamWindow];
  if (first) {
    for (int w = 0; w < kStreamWindow; ++w)
      COMMSIM_MPI_CHECK(MPI_Isend(s.send.data(), n, MPI_BYTE, me.to, 2, s.comm, &req[w]));
    COMMSIM_MPI_CHECK(MPI_Waitall(kStreamWindow, req, MPI_STATUSES_IGNORE));
    COMMSIM_MPI_CHECK(MPI_Recv(nullptr, 0, MPI_BYTE, me.from, 3, s.comm, MPI_STATUS_IGNORE));
  } else {
    for (int w = 0; w < kStreamWindow; ++w)
      COMMSIM_MPI_CHECK(MPI_Irecv(s.recv.data(), n, MPI_BYTE, me.from, 2, s.comm, &req[w]));
    COMMSIM_MPI_CHECK(MPI_Waitall(kStreamWindow, req, MPI_STATUSES_IGNORE));
    COMMSIM_MPI_CHECK(MPI_Send(nullptr, 0, MPI_BYTE, me.to, 3, s.comm));
  }
}

void one_ring_shift(PatternState& s, const Role& me, int n) {
  COMMSIM_MPI_CHECK(MPI_Sendrecv(s.send.data(), me.to >= 0 ? n : 0, MPI_BYTE, me.to >= 0 ? me.to : MPI_PROC_NULL, 4,
                                 s.recv.data(), me.from >= 0 ? n : 0, MPI_BYTE, me.from >= 0 ? me.from : MPI_PROC_NULL,
                                 4, s.comm, MPI_STATUS_IGNORE));
}

// `reps` operations of `pattern`; this rank's seconds per operation.
double run_once(PatternState& s, Pattern pattern, const Role& me, bool first_of_pair, Bytes bytes, int reps) {
  const int n = static_cast<int>(bytes);
  const bool write_first = (pattern == Pattern::RingShiftWritten || pattern == Pattern::RingShiftControl) && me.to >= 0;
  if (pattern == Pattern::RingShiftControl && s.control.size() < bytes) s.control.resize(bytes);
  char* const write_to = pattern == Pattern::RingShiftControl ? s.control.data() : s.send.data();
  double elapsed = 0;
  double t0 = MPI_Wtime();
  if (me.active()) {
    for (int r = 0; r < reps; ++r) {
      if (write_first) {
        elapsed += MPI_Wtime() - t0;
        std::memset(write_to, ++s.write_value, bytes);
        t0 = MPI_Wtime();
      }
      switch (pattern) {
        case Pattern::PingPong: one_pingpong(s, me, first_of_pair, n); break;
        case Pattern::Stream: one_stream(s, me, first_of_pair, n); break;
        case Pattern::RingShift:
        case Pattern::RingShiftWritten:
        case Pattern::RingShiftControl: one_ring_shift(s, me, n); break;
      }
    }
  }
  elapsed += MPI_Wtime() - t0;
  double per_op = elapsed / reps;
  if (pattern == Pattern::PingPong) per_op /= 2;            // one way
  if (pattern == Pattern::Stream) per_op /= kStreamWindow;  // per message of the window
  return per_op;
}

// The repetitions that make one sample last about kTargetSampleS, from the slowest rank's trial.
int reps_for(const PatternState& s, double trial_s) {
  double slowest = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&trial_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, s.comm));
  return static_cast<int>(
      std::clamp(std::ceil(kTargetSampleS / std::max(slowest, 1e-9)), 1.0, static_cast<double>(kMaxReps)));
}

// The slowest rank's `mine`, on rank 0 (appended to `out` there).
void keep_slowest(const PatternState& s, double mine, std::vector<double>& out) {
  double slowest = 0;
  COMMSIM_MPI_CHECK(MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, s.comm));
  if (s.rank == 0) out.push_back(slowest);
}

}  // namespace

PatternSamples time_pattern(PatternState& s, Pattern pattern, const Role& me, bool first_of_pair, Bytes bytes) {
  // The least of three trials: the first message between two ranks also sets up their connection.
  double trial = INFINITY;
  for (int i = 0; i < 3; ++i) {
    COMMSIM_MPI_CHECK(MPI_Barrier(s.comm));
    trial = std::min(trial, run_once(s, pattern, me, first_of_pair, bytes, 1));
  }
  PatternSamples out;
  out.reps = reps_for(s, trial);
  for (int i = 0; i < s.warmup; ++i) {
    COMMSIM_MPI_CHECK(MPI_Barrier(s.comm));
    run_once(s, pattern, me, first_of_pair, bytes, out.reps);
  }
  for (int i = 0; i < s.iters; ++i) {
    COMMSIM_MPI_CHECK(MPI_Barrier(s.comm));
    keep_slowest(s, me.active() ? run_once(s, pattern, me, first_of_pair, bytes, out.reps) : 0.0, out.per_op_s);
  }
  return out;
}

PatternSamples time_local(PatternState& s, LocalOp op, Bytes bytes) {
  auto once = [&](int reps) {
    const double t0 = MPI_Wtime();
    for (int r = 0; r < reps; ++r) {
      if (op == LocalOp::Reduce)
        reduce_into(s.recv.data(), s.send.data(), bytes / 4, DType::Float32, RedOp::Sum);
      else
        std::memcpy(s.recv.data(), s.send.data(), bytes);
    }
    return (MPI_Wtime() - t0) / reps;
  };
  COMMSIM_MPI_CHECK(MPI_Barrier(s.comm));
  PatternSamples out;
  out.reps = reps_for(s, std::min(once(1), once(1)));
  for (int i = 0; i < s.warmup; ++i) once(out.reps);
  for (int i = 0; i < s.iters; ++i) {
    COMMSIM_MPI_CHECK(MPI_Barrier(s.comm));
    keep_slowest(s, once(out.reps), out.per_op_s);
  }
  return out;
}

}  // namespace commsim

#endif  // COMMSIM_HAVE_MPI
