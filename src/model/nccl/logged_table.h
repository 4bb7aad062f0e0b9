#pragma once
// NCCL's TUNING table as NCCL printed it on a real machine (NCCL_DEBUG=INFO
// NCCL_DEBUG_SUBSYS=TUNING), turned into the topology's `nccl.tuning_table` and used in place of
// what the ported model computes. The table is NCCL's comm->latencies and comm->bandwidths after
// ncclTopoTuneModel, before the per-size corrections (tree correction, ring plateau, pipelined
// calls), which algo_time() still applies; so a topology holding it prices calls with NCCL's own
// numbers for that machine.
//
// The printed layout (graph/tuning.cc:499-539 at v2.28.9-1; the same from 2.18.1, whose
// tuning.cc:291-325 prints 6 algorithms in two blocks), one INFO line each, per block of three
// algorithms:
//   "  Algorithm   |" then " %14s   %14s   %14s |" per algorithm (its name centred);
//   "  Protocol    |" then " %14s |" per protocol, three times (LL LL128 Simple);
//   " Max NThreads |" then " %14d |" per algorithm and protocol;
//   "%13s |" (the function: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce) then
//   "%8.1f/%6.1f |" per algorithm and protocol: latency (us) / algorithm bandwidth (GB/s).
// A bandwidth of 0.0 is an entry NCCL disabled (never picked).
#include <string>
#include <vector>

#include "model/nccl/tuning.h"
#include "model/topology/topology.h"

namespace commsim::nccl {

// The table from its printed lines, each as printed after "NCCL INFO " (leading spaces optional),
// in order, for a communicator of `ranks` ranks on `nodes` nodes. `forced`: the run set NCCL_ALGO
// or NCCL_PROTO, which zeroes the bandwidth of every entry the setting leaves out whatever the
// machine can do; those zero entries are then left out (the model keeps its own), otherwise a
// zero is kept as "NCCL disabled it here". Throws commsim::Error naming the line (from 1) and what
// is wrong when a line is not of the table, or when no function row is found.
NcclTuningTable parse_tuning_table(const std::vector<std::string>& lines, int ranks, int nodes, bool forced);

// The `tuning_table:` block of the `nccl:` section (indented by 2, comment lines first), one line
// per function and algorithm: "{ LL: 7.2 us / 141 GB/s, LL128: off, ... }". "" when not given.
std::string tuning_table_yaml(const NcclTuningTable& logged);

// The value of one entry as written in that block ("7.2 us / 141 GB/s", or "off" for a bandwidth of
// 0), and back; the parser throws commsim::Error saying what is wrong.
std::string tuning_entry_text(double latency_us, double bandwidth_GBps);
void parse_tuning_entry(const std::string& text, double& latency_us, double& bandwidth_GBps);

// Puts the logged entries in place of the model's in `table` when the call's communicator is the
// one logged (`ranks` ranks on `nodes` nodes), every bandwidth x `bandwidth_scale` (the fitted
// share of NCCL's bandwidth, nccl.bandwidth_scale, which otherwise scales the graphs' speeds).
// Returns whether it did.
bool apply_tuning_table(TuningTable& table, const NcclTuningTable& logged, int nodes, int ranks,
                        double bandwidth_scale);

}  // namespace commsim::nccl
