#pragma once
// Which parts of the MPI library carry its messages, for the `note` of rows whose bytes go through
// MPI (hand-written schedules over the mpi transport, and the MPI library's own collectives).
// With Open MPI: the PML (ob1, ucx, cm) and, under ob1, the BTLs (vader/sm inside a node, tcp or
// another network BTL between nodes), read from the components Open MPI kept loaded after
// MPI_Init; when its components are built into the library, the pml/btl settings it was given
// (MPI_T control variables, i.e. OMPI_MCA_pml / --mca pml and the MCA parameter files).
// No MPI in this header.
#include <string>

namespace commsim {

// "Open MPI 4.1.4: pml ob1, btl vader inside a node, tcp between nodes". `nnodes` decides which
// BTLs matter (one node: only the one inside a node). For another MPI library: its version line.
// "" in a build without MPI. Call after MPI_Init.
std::string mpi_carrier(int nnodes);

}  // namespace commsim
