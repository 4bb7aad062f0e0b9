#pragma once
// The closed form of every hand-written (collective, algorithm), one file per family named as the
// generators in src/collectives/, and the local copies of their schedules (copies.cc). Each prices
// the messages and reductions of `n` bytes (nccl-tests' meaning, cost.h) on e. The table of
// model/algorithms.cc points at them; closed_form() (closed_form.cc) calls them through it.
// Internal to src/model.
#include "model/cost/shape.h"

namespace commsim::closed_forms {

// ring.cc
Parts ring_allreduce(const Env& e, double n);
Parts ring_allgather(const Env& e, double n);
Parts ring_reducescatter(const Env& e, double n);
Parts ring_broadcast(const Env& e, double n);  // pipelined
Parts ring_reduce(const Env& e, double n);     // pipelined

// tree.cc (pipelined; n / e.C bytes a channel)
Parts tree_allreduce(const Env& e, double n);
Parts tree_broadcast(const Env& e, double n);
Parts tree_reduce(const Env& e, double n);

// recursive_doubling.cc
Parts recursive_doubling_allreduce(const Env& e, double n);
Parts recursive_doubling_allgather(const Env& e, double n);
Parts recursive_doubling_broadcast(const Env& e, double n);

// recursive_halving.cc
Parts recursive_halving_reducescatter(const Env& e, double n);

// rabenseifner.cc
Parts rabenseifner_allreduce(const Env& e, double n);
Parts rabenseifner_reduce(const Env& e, double n);

// bruck.cc
Parts bruck_allgather(const Env& e, double n);
Parts bruck_alltoall(const Env& e, double n);

// binomial.cc; binomial_scatter: the first half of recursive_doubling_broadcast.
Parts binomial_broadcast(const Env& e, double n);
Parts binomial_reduce(const Env& e, double n);
Parts binomial_scatter(const Env& e, double n);

// pairwise.cc
Parts pairwise_reducescatter(const Env& e, double n);
Parts pairwise_alltoall(const Env& e, double n);

// direct.cc
Parts direct_allgather(const Env& e, double n);
Parts direct_reducescatter(const Env& e, double n);
Parts direct_alltoall(const Env& e, double n);
Parts direct_sendrecv(const Env& e, double n);
Parts direct_broadcast(const Env& e, double n);
Parts direct_reduce(const Env& e, double n);

// hierarchical.cc
Parts hierarchical_allreduce(const Env& e, double n);
Parts hierarchical_allgather(const Env& e, double n);
Parts hierarchical_broadcast(const Env& e, double n);
Parts hierarchical_reduce(const Env& e, double n);

// ---- local copies (copies.cc) ---------------------------------------------------------------------
// What the slowest rank of an unpipelined schedule copies on its critical path, in seconds (the
// pipelines carry their copies in their stages). Named by what is copied; the table picks one per
// row.
double own_block_copy(const Env& e, double n);      // n/p once: a rank's own block
double whole_copy(const Env& e, double n);          // n once: the accumulator, or the root's Output
double ring_reduce_copies(const Env& e, double n);  // its own chunk before each combine
double hierarchical_allreduce_copies(const Env& e, double n);
double kept_half_copy(const Env& e, double n);  // Rabenseifner: the half it keeps (n with a fold)
double recursive_halving_copies(const Env& e, double n);
double bruck_allgather_copies(const Env& e, double n);
double bruck_alltoall_copies(const Env& e, double n);

// ---- NCCL's model (nccl.cc) -----------------------------------------------------------------------
// closed_form() of q under NCCL's model (q.algorithm is nccl, nccl-ring or nccl-tree, or a protocol
// is asked for), p > 1.
// NCCL's two-algorithm model with the topology's nccl: constants: the protocols of our ring and tree,
// and nccl-ring / nccl-tree once `commsim calibrate` has fitted those constants.
Cost nccl_closed_form(const Topology& t, const Env& e, const CostQuery& q, Seconds call_s);

// ---- NCCL's ported tuning model (nccl_tuned.cc) ---------------------------------------------------
// True when q is priced by nccl_tuned_closed_form: nccl and every forced NCCL algorithm, except
// nccl-ring / nccl-tree on a topology whose nccl.bus_bandwidth of that algorithm was fitted.
bool uses_ported_nccl_model(const Topology& t, const CostQuery& q);
// closed_form() of an NCCL collective under NCCL's ported model (model/nccl/, release
// q.nccl_version or the topology's), p > 1. Throws Error naming why when NCCL cannot run a forced
// algorithm on this machine (NVLS without NVSwitch multicast, PAT with several GPUs per node,
// CollNet without SHARP).
Cost nccl_tuned_closed_form(const Topology& t, const Env& e, const CostQuery& q, Seconds call_s);

}  // namespace commsim::closed_forms
