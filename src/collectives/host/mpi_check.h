#pragma once
// The one check every MPI call goes through. Wrap each call that returns an error code:
//
//   COMMSIM_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MAX, comm));
//
// On anything but MPI_SUCCESS it throws commsim::Error naming the host, the world rank, the source
// file and line, the call as written and MPI's own error string. `main` prints it and, in a job of
// more than one rank, MPI_Aborts so the other ranks do not wait for this one forever.
//
// MPI hands errors back only on communicators whose error handler is MPI_ERRORS_RETURN (the default,
// MPI_ERRORS_ARE_FATAL, aborts inside the call): MpiSession sets it on MPI_COMM_WORLD, and
// communicators duplicated from it inherit it.
//
// In destructors, which must not throw, COMMSIM_MPI_CHECK_NOTHROW prints the same message to stderr
// instead. Functions that return no error code (MPI_Wtime, MPI_Wtick) need no check.
#include <string>

namespace commsim {

// "MPI_Send(...) failed on rank 3 (node1) at src/runtime/probe/patterns.cc:42: <MPI's error string>".
std::string mpi_error_message(int rc, const char* call, const char* file, int line);
// Throws Error(mpi_error_message(...)) when rc != MPI_SUCCESS.
void mpi_check(int rc, const char* call, const char* file, int line);
// Prints mpi_error_message(...) to stderr when rc != MPI_SUCCESS; never throws. True on success.
bool mpi_check_nothrow(int rc, const char* call, const char* file, int line) noexcept;

}  // namespace commsim

#define COMMSIM_MPI_CHECK(call) ::commsim::mpi_check((call), #call, __FILE__, __LINE__)
#define COMMSIM_MPI_CHECK_NOTHROW(call) ::commsim::mpi_check_nothrow((call), #call, __FILE__, __LINE__)
