#include "collectives/cuda/cuda_check.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <unistd.h>

#include <string>

#ifdef COMMSIM_HAVE_NCCL
#include <nccl.h>
#endif

#include "model/error.h"

namespace commsim::cuda {

std::string where() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string s = host[0] ? host : "unknown-host";
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    s += " (rank " + std::to_string(rank) + ")";
  }
  return s;
}

namespace {
std::string location(const char* call, const char* file, int line) {
  std::string f = file;
  // Print the path from src/ on, not the build machine's absolute path.
  if (auto pos = f.rfind("src/"); pos != std::string::npos) f = f.substr(pos);
  return "on " + where() + " at " + f + ":" + std::to_string(line) + ": " + call;
}
}  // namespace

void throw_cuda_error(int code, const char* call, const char* file, int line) {
  const auto err = static_cast<cudaError_t>(code);
  throw Error("CUDA error " + std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ") " +
              location(call, file, line));
}

void throw_nccl_error(int code, const char* call, const char* file, int line) {
#ifdef COMMSIM_HAVE_NCCL
  const char* text = ncclGetErrorString(static_cast<ncclResult_t>(code));
  std::string last = ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : "";
  throw Error("NCCL error " + std::to_string(code) + " (" + text + (last.empty() ? "" : ": " + last) + ") " +
              location(call, file, line));
#else
  throw Error("NCCL error " + std::to_string(code) + " " + location(call, file, line));
#endif
}

}  // namespace commsim::cuda
