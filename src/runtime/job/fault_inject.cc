#include "runtime/job/fault_inject.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/error.h"

namespace commsim {

void inject_fault_if_asked(int rank, int point_ordinal) {
  const char* spec = std::getenv("COMMSIM_FAULT_INJECT");
  if (spec == nullptr || *spec == '\0') return;
  int want_rank = -1, want_point = -1;
  char tail = '\0';
  if (std::sscanf(spec, "%d:%d%c", &want_rank, &want_point, &tail) != 2 || want_rank < 0 || want_point < 1)
    throw Error(std::string("COMMSIM_FAULT_INJECT='") + spec + "' is not RANK:POINT (e.g. 2:3)");
  if (rank == want_rank && point_ordinal == want_point)
    throw Error("injected fault (COMMSIM_FAULT_INJECT) at point " + std::to_string(point_ordinal));
}

}  // namespace commsim
