#pragma once
// Transport over MPI nonblocking point-to-point (MPI_Isend / MPI_Irecv / MPI_Waitsome) on a
// private duplicate of the communicator, so its messages never match anyone else's.
#include <mpi.h>

#include <vector>

#include "collectives/host/transport.h"

namespace commsim {

class MpiTransport final : public Transport {
 public:
  // Collective over `comm` (duplicates it).
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::uint64_t max_message_bytes() const override;

  std::size_t post_send(int peer, const void* buffer, std::uint64_t bytes) override;
  std::size_t post_recv(int peer, void* buffer, std::uint64_t bytes) override;
  bool wait_some(std::vector<std::size_t>& done) override;
  void wait_all() override;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Request> requests_;
  std::size_t outstanding_ = 0;
  std::vector<int> indices_;  // MPI_Waitsome output, kept to avoid reallocating
};

}  // namespace commsim
