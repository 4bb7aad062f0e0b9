#include "runtime/mpi_env.h"

#include <cstdio>

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace commsim {

#ifdef COMMSIM_HAVE_MPI
bool have_mpi() { return true; }
bool mpi_active() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}
void abort_job_on_error() {
  if (!mpi_active()) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}
#else
bool have_mpi() { return false; }
bool mpi_active() { return false; }
void abort_job_on_error() {}
#endif

}  // namespace commsim
