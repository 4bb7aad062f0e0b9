#pragma once
// The one table of algorithms: a row per (collective, algorithm) that exists, hand-written or a
// library baseline, holding what the model, the generators and the commands need to know of it.
// applies(), is_hand_written() and hand_written_algorithms() (model/collective.h), takes_channels,
// is_pipelined and has_closed_form (model/cost/cost.h) all read it, and closed_form() calls the
// row's closed form.
//
// Adding a hand-written algorithm: its generator in src/collectives/ (listed in registry.cc), its
// closed form in src/model/cost/ (the file of the same name), and one row in algorithms.cc.
// tests/model/test_algorithms.cc fails when a row has no generator or a generator no row.
#include <span>

#include "model/collective.h"

namespace commsim {

namespace closed_forms {
struct Env;
struct Parts;
}  // namespace closed_forms

struct AlgorithmRow {
  // The closed form of the messages and reductions of `bytes` (nccl-tests' meaning), and the local
  // copies on the slowest rank's critical path (model/cost/closed_forms.h).
  using ClosedForm = closed_forms::Parts (*)(const closed_forms::Env&, double bytes);
  using Copies = double (*)(const closed_forms::Env&, double bytes);
  enum Flag : unsigned {
    kPipelined = 1u << 0,  // the schedule moves the data in chunks (ScheduleRequest::pipeline_chunk_bytes)
    kChannels = 1u << 1,   // the schedule takes a channel count (ScheduleRequest::channels)
    kProtocols = 1u << 2,  // priced by NCCL's model when a protocol (LL, LL128, Simple) is asked for
    kNcclModel = 1u << 3,  // NCCL's own collective, priced by NCCL's model (nccl, nccl-ring, nccl-tree)
  };

  Collective collective;
  Algorithm algorithm;
  ClosedForm closed_form;  // hand-written rows; nullptr for the library baselines
  Copies copies;           // nullptr: no copies, or the pipeline's stages carry them
  unsigned flags;

  // A schedule (src/collectives) and a closed form: the algorithms the runtime runs itself.
  bool hand_written() const { return closed_form != nullptr; }
  bool pipelined() const { return (flags & kPipelined) != 0; }
  bool takes_channels() const { return (flags & kChannels) != 0; }
  bool protocols() const { return (flags & kProtocols) != 0; }
  bool nccl_model() const { return (flags & kNcclModel) != 0; }
};

// Every row, by collective (in kAllCollectives order).
std::span<const AlgorithmRow> algorithm_table();
// The row of (c, a), or nullptr when a does not apply to c.
const AlgorithmRow* find_algorithm(Collective c, Algorithm a);

// True for the (collective, algorithm) pairs whose schedules take a channel count: ring allreduce,
// allgather and reducescatter, the double binary tree (allreduce, broadcast, reduce), and
// hierarchical allreduce and allgather (made of rings). The others are built with one channel:
// hierarchical broadcast and reduce are binomial trees, and the rest are patterns of one message
// per peer and step.
bool takes_channels(Collective c, Algorithm a);
// True for the pipelined algorithms (Tree for allreduce, broadcast and reduce; Ring for broadcast
// and reduce), whose schedules move the data in chunks (pipeline_chunk_bytes in model/cost/cost.h).
bool is_pipelined(Collective c, Algorithm a);

}  // namespace commsim
