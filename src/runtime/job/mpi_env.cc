#include "runtime/job/mpi_env.h"

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
std::vector<std::string> gather_strings(const std::string& mine) {
  if (!mpi_active()) return {mine};
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), at(static_cast<std::size_t>(size), 0);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < size; ++r) at[r] = at[r - 1] + lens[r - 1];
  std::vector<char> all(static_cast<std::size_t>(at.back() + lens.back()) + 1);
  MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + at[r], static_cast<std::size_t>(lens[r]));
  return out;
}
#else
bool have_mpi() { return false; }
std::vector<std::string> gather_strings(const std::string& mine) { return {mine}; }
bool mpi_active() { return false; }
void abort_job_on_error() {}
#endif

}  // namespace commsim
