#pragma once
// The MPI library baseline as the model sees it: the algorithm the library itself runs for a
// collective, at a size and a rank count, as a sequence of schedules priced one after another.
//
// Open MPI 4.1 runs its collectives in the coll/tuned component, which picks an algorithm from
// fixed tables of communicator size and message size (no measurement of the machine). Those tables
// are reproduced here for commutative reductions, the only kind commsim runs. The size the tables
// look at is the whole buffer for allreduce, broadcast and reduce, and one rank's block for
// allgather, reduce-scatter (MPI_Reduce_scatter_block) and alltoall, as in the library.
//
// Each of the library's algorithms is priced as the hand-written schedule that moves the same
// messages in the same order; where there is none, the nearest one stands in and the choice says
// so (LibraryPhase::exact). Setting coll_tuned_use_dynamic_rules, forcing an algorithm, or a
// different collective component (coll/han, coll/ucc) makes the library run something else.
#include <optional>
#include <string>
#include <vector>

#include "collectives/generators.h"
#include "model/price.h"
#include "model/topology/topology.h"

namespace commsim {

struct LibraryPhase {
  ScheduleRequest request;        // the schedule that stands for this phase
  std::string library_algorithm;  // the library's name for its algorithm, e.g. "chain"
  bool exact = true;  // false: the library's algorithm has no schedule here; the nearest stands in
  // The library works in the caller's buffer (MPI_Bcast sends the root's buffer itself): the
  // schedule's copy of the root's Input to its Output is not part of the phase.
  bool in_place = false;
};

struct LibraryChoice {
  std::string library;  // e.g. "Open MPI 4.1 coll/tuned"
  std::vector<LibraryPhase> phases;
  // One line: "Open MPI 4.1 coll/tuned: broadcast chain, one segment (as ring, 1 chunk)".
  std::string describe() const;
};

// The MPI library of a run: what MPI_Get_library_version said, and the run's environment
// ("KEY=VALUE"; the OMPI_MCA_* variables that mpirun --mca sets can change the library's choice).
struct MpiLibrary {
  std::string version;
  std::vector<std::string> environment;
};

// Empty when the library's choice is known; otherwise why it is not: another library or version,
// or an OMPI_MCA_coll* setting (another component, forced algorithms, dynamic rules).
std::string why_choice_unknown(const MpiLibrary& library);

// The library's algorithm for `request` (its collective, rank count, count, element size and root;
// the algorithm field is ignored). nullopt when the choice is not known (why_choice_unknown) or
// the request has one rank.
std::optional<LibraryChoice> library_choice(const MpiLibrary& library, const ScheduleRequest& request);

// The schedule that stands for one phase: make_schedule's, less the root's copy of its Input to its
// Output when the library works in place.
Schedule library_schedule(const LibraryPhase& phase);

// The time of the choice: each phase's schedule (library_schedule) priced on `topology`
// (model/price.h), one after another, with the call's overhead (Topology::call_overhead_s) once.
Seconds price_library_choice(const LibraryChoice& choice, const Topology& topology, const Placement& placement);

}  // namespace commsim
