#pragma once
// MPI bootstrap shared by the commands that run under mpirun/srun. Without MPI support these
// report that the build has no MPI.
#include <string>
#include <vector>

namespace commsim {

// True when this binary was built with MPI.
bool have_mpi();
// True when MPI_Init has run and MPI_Finalize has not.
bool mpi_active();
// On an error in a command running under MPI with more than one rank: MPI_Abort so the job does
// not hang waiting for this rank. Does nothing otherwise.
void abort_job_on_error();
// Every rank's `mine`, in rank order, on every rank (collective over MPI_COMM_WORLD; {mine} without
// MPI or before MPI_Init).
std::vector<std::string> gather_strings(const std::string& mine);

}  // namespace commsim
