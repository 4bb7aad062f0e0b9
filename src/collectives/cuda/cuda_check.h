#pragma once
// One family of CHECK macros for CUDA and NCCL calls. A failure throws commsim::Error naming the
// host, the MPI rank (when MPI is running), the file and the line, the call, and the library's
// own message:
//
//   CUDA_CHECK(cudaMalloc(&p, bytes));
//   NCCL_CHECK(ncclGroupEnd());
//
// The header is plain C++ (the result codes travel as int), so host .cc files and .cu files
// include it alike.
#include <string>

namespace commsim::cuda {

// "host:rank 3" or "host" outside MPI; used in every error message of the backend.
std::string where();

[[noreturn]] void throw_cuda_error(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(int code, const char* call, const char* file, int line);

}  // namespace commsim::cuda

#define CUDA_CHECK(call)                                                                                       \
  do {                                                                                                         \
    const int commsim_cuda_rc_ = static_cast<int>(call);                                                       \
    if (commsim_cuda_rc_ != 0) ::commsim::cuda::throw_cuda_error(commsim_cuda_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// NCCL calls on non-blocking communicators may return ncclInProgress (7): that is not a failure;
// the caller waits for completion with NcclComm::wait (nccl_comm.h).
#define NCCL_CHECK(call)                                                              \
  do {                                                                                \
    const int commsim_nccl_rc_ = static_cast<int>(call);                              \
    if (commsim_nccl_rc_ != 0 && commsim_nccl_rc_ != 7)                               \
      ::commsim::cuda::throw_nccl_error(commsim_nccl_rc_, #call, __FILE__, __LINE__); \
  } while (0)
