#pragma once
// The MPI library's own collectives, run as algorithm `mpi`: MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Alltoall and MPI_Sendrecv on host buffers
// laid out like the schedules' Input and Output (collectives/generators.h).
//
// float32, float64 and int32 use MPI's predefined types and operators. bfloat16 and float16 have
// no MPI type: they travel as MPI_UINT16_T and reduce with a user-defined operator that calls
// reduce_into, so the library's algorithm is unchanged but its reduction loop is ours.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "collectives/elements/dtype.h"
#include "collectives/generators.h"
#include "model/collective.h"

namespace commsim {

// Element counts of Input and Output for `count` (generators.h meaning) on nranks ranks.

// Empty when the baseline can run this point; otherwise why not (e.g. a count over MPI's int limit).
std::string mpi_baseline_unsupported(Collective c, std::uint64_t count, DType dtype, RedOp op, int nranks);

class MpiBaseline {
 public:
  // Collective over `comm` (duplicates it). Throws Error when mpi_baseline_unsupported says so.
  MpiBaseline(Collective c, std::uint64_t count, DType dtype, RedOp op, int root, MPI_Comm comm);
  ~MpiBaseline();
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;

  // One call of the library collective. `input` and `output` hold buffer_counts(...)
  // elements. Broadcast: the root sends straight from its Input; its Output is not written (the
  // root's copy is not part of a broadcast), call finish_root_output() before checking it.
  void run(const void* input, void* output);
  // In place (MPI_IN_PLACE; nccl-tests' in-place columns): `buffer` holds max(Input, Output)
  // elements, laid out by load_in_place; afterwards it holds the Output in its first elements, except
  // allgather and alltoall, whose Output is the whole buffer.
  void run_in_place(void* buffer);
  // Puts this rank's Input where run_in_place reads it: allgather at block `rank`, broadcast on the
  // root only, every other collective at the start.
  void load_in_place(const void* input, void* buffer) const;
  void finish_root_output(const void* input, void* output) const;

 private:
  Collective collective_;
  std::uint64_t count_;
  std::uint64_t block_;
  DType dtype_;
  int root_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  bool user_op_ = false;
};

}  // namespace commsim
