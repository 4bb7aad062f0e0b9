#pragma once
// Runs one rank's part of a Schedule over a Transport on host memory (model/schedule.h gives the
// round semantics). Per round: the local ops (Copy, Reduce) in order; then every receive is
// posted, then every send; a RecvReduce lands in a temporary buffer and is reduced into its
// destination (reduce_into) as soon as its data has arrived, while later pieces are still in
// flight; the round ends when all its transfers are complete.
//
// Transfers longer than `piece_bytes` are sent as several messages of at most that size, so the
// reduction of one piece overlaps the arrival of the next and works on data still in cache. Both
// ends cut a transfer the same way (the cut depends only on its length), so messages still match.
#include <cstdint>
#include <vector>

#include "collectives/elements/dtype.h"
#include "collectives/host/aligned_buffer.h"
#include "collectives/host/transport.h"
#include "model/schedule.h"

namespace commsim {

struct HostExecutorOptions {
  // Largest message, bytes (rounded down to whole elements; capped by the transport's limit).
  // 0: no cutting beyond the transport's limit.
  std::uint64_t piece_bytes = 0;
};

class HostExecutor {
 public:
  // Prepares rank transport.rank()'s program of `schedule` (which must have transport.size()
  // ranks and elements of dtype_size(dtype) bytes) and allocates its scratch and receive buffers.
  // Throws Error when the schedule does not fit (rank count, element size, spans out of range,
  // a write into Input).
  HostExecutor(const Schedule& schedule, DType dtype, RedOp op, Transport& transport, HostExecutorOptions options = {});

  // Runs the program once. `input` holds schedule.input_count elements, `output`
  // schedule.output_count elements. Every rank of the schedule must call run() the same number of
  // times.
  void run(const void* input, void* output);

  // Host bytes this executor allocated beyond the caller's Input and Output (scratch + receive).
  std::uint64_t extra_bytes() const { return scratch_.bytes() + recv_temp_.bytes(); }

  // Host bytes HostExecutor would allocate for rank `rank` of `schedule` (for memory checks before
  // anything is allocated).
  static std::uint64_t extra_bytes_for(const Schedule& schedule, int rank);

 private:
  struct Place {
    BufferId buffer = BufferId::Output;
    std::uint64_t byte_offset = 0;
  };
  struct LocalOp {
    OpKind kind = OpKind::Copy;
    Place src, dst;
    std::uint64_t count = 0;  // elements
  };
  struct Piece {  // one message
    int peer = -1;
    Place place;  // send source, receive destination
    std::uint64_t bytes = 0;
    bool reduce = false;  // RecvReduce: arrives in recv_temp_ at temp_offset, then reduced into place
    std::uint64_t temp_offset = 0;
  };
  struct CompiledRound {
    std::vector<LocalOp> local;
    std::vector<Piece> recvs;  // posted first, in schedule order
    std::vector<Piece> sends;
    bool has_reduce = false;
  };

  std::byte* resolve(const Place& p, const void* input, void* output);

  DType dtype_;
  RedOp op_;
  std::uint32_t elem_size_;
  Transport& transport_;
  std::vector<CompiledRound> rounds_;
  AlignedBuffer scratch_;
  AlignedBuffer recv_temp_;
  std::vector<std::size_t> done_;
};

}  // namespace commsim
