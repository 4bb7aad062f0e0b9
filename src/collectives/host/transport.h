#pragma once
// The point-to-point layer under the host executor. The executor posts every transfer of a round
// and then waits; a transport only moves bytes between ranks. MPI is the one built here
// (mpi_transport.h); another (UCX) implements the same four calls.
//
// Contract: messages between one sender and one receiver are matched in the order they are posted
// (the k-th post_send from a to b pairs with the k-th post_recv on b from a) and carry the same
// number of bytes. Buffers stay untouched by the caller until the request completes.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace commsim {

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;  // "mpi", "ucx": Point::transport
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The largest single message, bytes; the executor splits longer transfers into pieces.
  virtual std::uint64_t max_message_bytes() const = 0;

  // Nonblocking send/receive; the returned index identifies the request until wait_all returns.
  virtual std::size_t post_send(int peer, const void* buffer, std::uint64_t bytes) = 0;
  virtual std::size_t post_recv(int peer, void* buffer, std::uint64_t bytes) = 0;
  // Blocks until at least one request not yet reported completes, and appends the indices of the
  // completed ones to `done`. Returns false (and appends nothing) when none is outstanding.
  virtual bool wait_some(std::vector<std::size_t>& done) = 0;
  // Blocks until every posted request completes; indices start again from 0 afterwards.
  virtual void wait_all() = 0;
};

}  // namespace commsim
