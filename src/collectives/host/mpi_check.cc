#include "collectives/host/mpi_check.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdio>

#include "model/error.h"

namespace commsim {

std::string mpi_error_message(int rc, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "MPI error code %d", rc);
  // The rank only while MPI runs: a failing MPI_Init or MPI_Finalize has none to ask for.
  int rank = -1, init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  // The path from src/ on, not the build machine's absolute path.
  std::string where = file;
  if (const auto pos = where.rfind("src/"); pos != std::string::npos) where = where.substr(pos);
  return std::string(call) + " failed on rank " + (rank >= 0 ? std::to_string(rank) : std::string("?")) + " (" +
         (host[0] ? host : "unknown host") + ") at " + where + ":" + std::to_string(line) + ": " + text;
}

void mpi_check(int rc, const char* call, const char* file, int line) {
  if (rc != MPI_SUCCESS) throw Error(mpi_error_message(rc, call, file, line));
}

bool mpi_check_nothrow(int rc, const char* call, const char* file, int line) noexcept {
  if (rc == MPI_SUCCESS) return true;
  try {
    std::fprintf(stderr, "commsim: warning: %s\n", mpi_error_message(rc, call, file, line).c_str());
  } catch (...) {
    std::fprintf(stderr, "commsim: warning: %s failed\n", call);
  }
  return false;
}

}  // namespace commsim
