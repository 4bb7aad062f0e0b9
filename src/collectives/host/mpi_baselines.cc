#include "collectives/host/mpi_baselines.h"

#include <climits>
#include <cstring>

#include "collectives/elements/reduce.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"

namespace commsim {
namespace {

bool is_half(DType t) {
  return t == DType::BFloat16 || t == DType::Float16;
}

// MPI user operators receive no argument saying which operator they are: one function per
// (dtype, op), all forwarding to the shared reduction loops.
template <DType D, RedOp O>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, static_cast<std::uint64_t>(*len), D, O);
}

using UserFn = void (*)(void*, void*, int*, MPI_Datatype*);

UserFn user_fn(DType d, RedOp o) {
  if (d == DType::BFloat16) {
    if (o == RedOp::Sum) return user_reduce<DType::BFloat16, RedOp::Sum>;
    if (o == RedOp::Min) return user_reduce<DType::BFloat16, RedOp::Min>;
    return user_reduce<DType::BFloat16, RedOp::Max>;
  }
  if (o == RedOp::Sum) return user_reduce<DType::Float16, RedOp::Sum>;
  if (o == RedOp::Min) return user_reduce<DType::Float16, RedOp::Min>;
  return user_reduce<DType::Float16, RedOp::Max>;
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int32: return MPI_INT32_T;
    case DType::BFloat16:
    case DType::Float16: return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(RedOp o) {
  switch (o) {
    case RedOp::Sum: return MPI_SUM;
    case RedOp::Min: return MPI_MIN;
    case RedOp::Max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

bool is_block_collective(Collective c) {
  return c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll;
}

}  // namespace

std::string mpi_baseline_unsupported(Collective c, std::uint64_t count, DType, RedOp, int nranks) {
  // MPI-3 counts are int; the per-call count is the block for the block collectives.
  const std::uint64_t per_call = is_block_collective(c) ? count / static_cast<std::uint64_t>(nranks) : count;
  if (per_call > static_cast<std::uint64_t>(INT_MAX))
    return "MPI counts are int: " + std::to_string(per_call) + " elements per call is over the limit of " +
           std::to_string(INT_MAX);
  return {};
}

MpiBaseline::MpiBaseline(Collective c, std::uint64_t count, DType dtype, RedOp op, int root, MPI_Comm comm)
    : collective_(c), count_(count), dtype_(dtype), root_(root) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  if (std::string why = mpi_baseline_unsupported(c, count, dtype, op, size_); !why.empty()) throw Error(why);
  if (root < 0 || root >= size_)
    throw Error("root " + std::to_string(root) + " is not a rank of " + std::to_string(size_));
  block_ = count / static_cast<std::uint64_t>(size_);
  type_ = mpi_type(dtype);
  if (is_half(dtype)) {
    COMMSIM_MPI_CHECK(MPI_Op_create(user_fn(dtype, op), /*commute=*/1, &op_));
    user_op_ = true;
  } else {
    op_ = mpi_op(op);
  }
}

MpiBaseline::~MpiBaseline() {
  if (user_op_) COMMSIM_MPI_CHECK_NOTHROW(MPI_Op_free(&op_));
  if (comm_ != MPI_COMM_NULL) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
}

void MpiBaseline::run(const void* input, void* output) {
  const int n = static_cast<int>(count_);
  const int b = static_cast<int>(block_);
  void* in = const_cast<void*>(input);  // MPI-3 takes const send buffers; older headers do not
  switch (collective_) {
    case Collective::AllReduce: COMMSIM_MPI_CHECK(MPI_Allreduce(in, output, n, type_, op_, comm_)); break;
    case Collective::AllGather: COMMSIM_MPI_CHECK(MPI_Allgather(in, b, type_, output, b, type_, comm_)); break;
    case Collective::ReduceScatter:
      COMMSIM_MPI_CHECK(MPI_Reduce_scatter_block(in, output, b, type_, op_, comm_));
      break;
    case Collective::Broadcast:
      COMMSIM_MPI_CHECK(MPI_Bcast(rank_ == root_ ? in : output, n, type_, root_, comm_));
      break;
    case Collective::Reduce: COMMSIM_MPI_CHECK(MPI_Reduce(in, output, n, type_, op_, root_, comm_)); break;
    case Collective::AllToAll: COMMSIM_MPI_CHECK(MPI_Alltoall(in, b, type_, output, b, type_, comm_)); break;
    case Collective::SendRecv: {
      const int next = (rank_ + 1) % size_;
      const int prev = (rank_ + size_ - 1) % size_;
      COMMSIM_MPI_CHECK(MPI_Sendrecv(in, n, type_, next, 0, output, n, type_, prev, 0, comm_, MPI_STATUS_IGNORE));
      break;
    }
  }
}

void MpiBaseline::run_in_place(void* buffer) {
  const int n = static_cast<int>(count_);
  const int b = static_cast<int>(block_);
  switch (collective_) {
    case Collective::AllReduce: COMMSIM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer, n, type_, op_, comm_)); break;
    case Collective::AllGather:
      COMMSIM_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, b, type_, comm_));
      break;
    case Collective::ReduceScatter:
      COMMSIM_MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, buffer, b, type_, op_, comm_));
      break;
    case Collective::Broadcast: COMMSIM_MPI_CHECK(MPI_Bcast(buffer, n, type_, root_, comm_)); break;
    case Collective::Reduce:
      // Only the root names MPI_IN_PLACE; the others send from the buffer.
      COMMSIM_MPI_CHECK(MPI_Reduce(rank_ == root_ ? MPI_IN_PLACE : buffer, rank_ == root_ ? buffer : nullptr, n, type_,
                                   op_, root_, comm_));
      break;
    case Collective::AllToAll:
      COMMSIM_MPI_CHECK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buffer, b, type_, comm_));
      break;
    case Collective::SendRecv: {
      const int next = (rank_ + 1) % size_;
      const int prev = (rank_ + size_ - 1) % size_;
      COMMSIM_MPI_CHECK(MPI_Sendrecv_replace(buffer, n, type_, next, 0, prev, 0, comm_, MPI_STATUS_IGNORE));
      break;
    }
  }
}

void MpiBaseline::load_in_place(const void* input, void* buffer) const {
  const std::uint64_t elem = dtype_size(dtype_);
  const BufferCounts bc = buffer_counts(collective_, count_, size_);
  if (bc.input == 0) return;  // nothing to place (and the buffers of an empty call may be null)
  if (collective_ == Collective::AllGather)
    std::memcpy(static_cast<char*>(buffer) + static_cast<std::uint64_t>(rank_) * block_ * elem, input, bc.input * elem);
  else if (collective_ != Collective::Broadcast || rank_ == root_)
    std::memcpy(buffer, input, bc.input * elem);
}

void MpiBaseline::finish_root_output(const void* input, void* output) const {
  if (collective_ == Collective::Broadcast && rank_ == root_ && count_ > 0)
    std::memcpy(output, input, count_ * dtype_size(dtype_));
}

}  // namespace commsim
