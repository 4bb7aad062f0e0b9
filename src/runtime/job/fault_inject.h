#pragma once
// For the fault tests only (tests/faults/): COMMSIM_FAULT_INJECT="RANK:POINT" makes rank RANK
// throw when it starts its POINT-th point of `run` (1-based, in the order the points run), the
// way any rank-local failure would (an allocation that fails, a device error). The job must then
// end promptly with that rank's message, the points finished before it kept in the file. Not an
// option: nothing a user should set.
namespace commsim {

// Throws Error on the rank and point COMMSIM_FAULT_INJECT names; does nothing otherwise (or when it
// is unset). Throws Error when it is set but malformed.
void inject_fault_if_asked(int rank, int point_ordinal);

}  // namespace commsim
