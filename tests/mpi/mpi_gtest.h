#pragma once
// GoogleTest under mpiexec: every rank runs every test, only rank 0 prints the log, and the exit
// status is the worst over ranks. Link mpi_gtest_main.cc for main().
#include <mpi.h>

namespace commsim::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace commsim::test
