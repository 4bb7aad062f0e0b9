#include <string>

#include "runtime/command.h"

namespace commsim {

std::string_view version_line() {
  static const std::string line = [] {
    std::string s = "commsim " COMMSIM_VERSION " (backends: model";
#ifdef COMMSIM_HAVE_MPI
    s += ", host";
#endif
#ifdef COMMSIM_HAVE_CUDA
    s += ", cuda";
#endif
#ifdef COMMSIM_HAVE_NCCL
    s += ", nccl";
#endif
    s += "; transports:";
#ifdef COMMSIM_HAVE_MPI
    s += " mpi";
#endif
#ifdef COMMSIM_HAVE_UCX
    s += " ucx";
#endif
    s += ")";
#ifndef COMMSIM_HAVE_CUDA
    s += "\nthe cuda backend is absent: this build found no CUDA toolkit";
#endif
#ifndef COMMSIM_HAVE_NCCL
    s += "\nthe nccl baselines are absent: this build found no NCCL";
#endif
    return s;
  }();
  return line;
}

}  // namespace commsim
