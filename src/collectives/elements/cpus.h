#pragma once
// The CPUs this process may run on: its affinity mask (under Slurm or mpirun, the cores of the
// step or of the rank's binding), at least 1.
#include <sched.h>

#include <algorithm>

namespace commsim {

inline int usable_cores() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? std::max(1, CPU_COUNT(&cpus)) : 1;
}

}  // namespace commsim
