#include "collectives/host/mpi_transport.h"

#include <climits>

#include "collectives/host/mpi_check.h"

namespace commsim {

MpiTransport::MpiTransport(MPI_Comm comm) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiTransport::~MpiTransport() {
  if (comm_ != MPI_COMM_NULL) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
}

// MPI counts are int: one message carries at most INT_MAX bytes; a round 1 GiB keeps pieces aligned.
std::uint64_t MpiTransport::max_message_bytes() const {
  return std::uint64_t{1} << 30;
}

std::size_t MpiTransport::post_send(int peer, const void* buffer, std::uint64_t bytes) {
  MPI_Request req = MPI_REQUEST_NULL;
  COMMSIM_MPI_CHECK(MPI_Isend(buffer, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &req));
  requests_.push_back(req);
  ++outstanding_;
  return requests_.size() - 1;
}

std::size_t MpiTransport::post_recv(int peer, void* buffer, std::uint64_t bytes) {
  MPI_Request req = MPI_REQUEST_NULL;
  COMMSIM_MPI_CHECK(MPI_Irecv(buffer, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &req));
  requests_.push_back(req);
  ++outstanding_;
  return requests_.size() - 1;
}

bool MpiTransport::wait_some(std::vector<std::size_t>& done) {
  if (outstanding_ == 0) return false;
  indices_.resize(requests_.size());
  int completed = 0;
  COMMSIM_MPI_CHECK(MPI_Waitsome(static_cast<int>(requests_.size()), requests_.data(), &completed, indices_.data(),
                                 MPI_STATUSES_IGNORE));
  if (completed == MPI_UNDEFINED) {
    outstanding_ = 0;
    return false;
  }
  for (int i = 0; i < completed; ++i) done.push_back(static_cast<std::size_t>(indices_[i]));
  outstanding_ -= static_cast<std::size_t>(completed);
  return true;
}

void MpiTransport::wait_all() {
  if (!requests_.empty())
    COMMSIM_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  requests_.clear();
  outstanding_ = 0;
}

}  // namespace commsim
