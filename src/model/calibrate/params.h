#pragma once
// The terms a collective fit adjusts (Param), one row per term in one table: its name, the
// topology field it is written to, its unit (which sets its floor, its step and how it prints),
// and how to read and write it on a Topology.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/topology/topology.h"

namespace commsim {

// The model parameters a collective fit may adjust.
//  - the tiers' alpha and beta, gamma, and the local copy rate (1 / device.memory_bandwidth);
//  - what the runtime adds per message and per call: the intra-node rendezvous latency and
//    rendezvous overhead (only with an eager_limit), the intra-node message_overhead, the call_overhead;
//  - the working-set curve (Topology::working_set_scale): the factor at its 2nd..7th point (the
//    first point stays at 1, so intra_node.bandwidth is the bandwidth of a working set that fits
//    the caches). A point the topology does not have is held;
//  - the local-operation curve (Topology::local_op_scale): the factor at its 2nd..6th point, the
//    same way (reduction.bandwidth and device.memory_bandwidth are those of operations that fit
//    the caches);
//  - the message-size curve (Topology::message_scale): the factor at its 2nd..8th point, the same
//    way (intra_node.bandwidth is that of a 1 KiB message);
//  - the inline regime's latency and overhead (intra_node.inline_latency, .inline_overhead), when
//    the topology has an inline limit;
//  - intra_node.one_way_factor, the factor on the latency of one-way messages (a scale, like the
//    curves' points);
//  - intra_node.exchange_factor, the factor on the latency of messages answered in the same round
//    (a scale);
//  - network.one_way_factor, the same as intra_node's for messages between nodes;
//  - the network's rate curve (Topology::network_message_scale), when the probe measured one: its
//    points every 4x from 4 KiB below the last (add_network_message_points);
//  - intra_node.overhead_receive_share, the part of the message overheads paid by the receiving
//    rank (from 0 to 1);
//  - intra_node.send_share, the part of a round's outgoing bytes that the sending rank's bandwidth
//    carries (from 0 to 1; only rounds that send more than they receive, such as a direct
//    broadcast's root, depend on it);
//  - the one-to-many curve (Topology::fan_out_scale), for host ranks: its points every 4x from
//    4 KiB to 16 MiB but the last, which holds at 1 (add_fan_out_points);
//  - the node's working-set curve (Topology::node_working_set_scale), when the topology has an
//    intra_node.node_bandwidth and a node's ranks do not outnumber its logical CPUs: points every
//    4x from 1 MiB (add_node_working_set_points).
enum class Param : std::uint8_t {
  IntraLatency,
  IntraBeta,
  NetLatency,
  NetBeta,
  Gamma,
  IntraRendezvousLatency,
  IntraMessageOverhead,
  CallOverhead,
  WorkingSet1,
  WorkingSet2,
  WorkingSet3,
  WorkingSet4,
  WorkingSet5,
  WorkingSet6,
  IntraRendezvousOverhead,
  LocalOp1,
  LocalOp2,
  LocalOp3,
  LocalOp4,
  LocalOp5,
  MemoryBeta,
  Message1,
  Message2,
  Message3,
  Message4,
  Message5,
  Message6,
  Message7,
  IntraInlineLatency,
  IntraInlineOverhead,
  IntraOneWay,
  IntraReceiveShare,
  IntraExchange,
  NetOneWay,
  NetMessage1,
  NetMessage2,
  NetMessage3,
  NetMessage4,
  NetMessage5,
  NetMessage6,
  IntraSendShare,
  NodeWorkingSet1,
  NodeWorkingSet2,
  NodeWorkingSet3,
  NodeWorkingSet4,
  NodeWorkingSet5,
  NodeWorkingSet6,
  FanOut1,
  FanOut2,
  FanOut3,
  FanOut4,
  FanOut5,
  FanOut6,
};
inline constexpr int kParamCount = 53;
std::string_view to_string(Param p);  // "intra.latency", "intra.beta", "network.latency", ...
// The topology file's field a parameter is written to ("intra_node.latency", "reduction.bandwidth",
// "call_overhead", "working_set_scale", ...).
// What a term is: its unit sets the floor it must stay above, the smallest step that moves it
// measurably, and how it prints.
//  Time:    seconds (latencies, overheads); floor 0; printed in us.
//  Beta:    seconds per byte (1 / a bandwidth); floor kMinBetaSPerByte; printed as GB/s.
//  Factor:  a latency factor (one-way, exchange); floor 0.02, capped at 10 by the file's limit.
//  Scale:   a curve's factor; floor 0.02 (a cache effect of 50x is beyond any machine).
//  Share:   a fraction from 0 to 1; floor 0.
enum class ParamUnit : std::uint8_t { Time, Beta, Factor, Scale, Share };

// One fitted term. `get` reads it from a topology (a beta as 1 / the bandwidth; a curve point the
// topology does not have reads 1); `set` writes it (a share is clamped to [0, 1], a factor to at
// most 10; a term the topology has no place for, such as a rendezvous latency without an
// eager_limit or a missing curve point, is left as it is).
struct ParamRow {
  Param param;
  std::string_view name;   // "intra.latency", "working_set_scale[1]", ...
  std::string_view field;  // the topology file's field: "intra_node.latency", "working_set_scale", ...
  ParamUnit unit;
  double (*get)(const Topology&);
  void (*set)(Topology&, double);
};
// Every term, in the order of Param.
std::span<const ParamRow> param_table();
const ParamRow& param_row(Param p);

std::string_view to_string(Param p);  // "intra.latency", "intra.beta", "network.latency", ...
// The topology file's field a parameter is written to ("intra_node.latency", "reduction.bandwidth",
// "call_overhead", "working_set_scale", ...).
std::string_view field_of(Param p);
// A parameter's value as `get_param` gives it, with its unit: latencies and overheads in us, a
// beta as the bandwidth it stands for (GB/s), factors and shares as plain numbers.
std::string param_text(Param p, double value);

// Reads / writes one parameter of a topology (beta parameters as 1/bandwidth; gamma as
// 1/reduce_bw_Bps; network beta as 1/nic_bw_Bps).
double get_param(const Topology& topo, Param p);
void set_param(Topology& topo, Param p, double value);
// The floor a parameter must stay above during a fit (0 for times and shares, kMinBetaSPerByte
// for betas, 0.02 for factors and curve points).
double param_floor(Param p);
// The smallest step that still changes a parameter measurably at `value`.
double param_step(Param p, double value);

// The physical range a collective fit keeps a term in, relative to its value where the fit starts
// (what the probe measured, or the base topology's value for a term the probe does not measure):
//  Time:   [0, 10x the start]; a term that starts at 0 (an overhead the probe did not see) up to
//          10x its tier's latency (network terms: the network's), at least 10 us;
//  Beta:   the bandwidth it stands for within [0.25x, 1.5x] the start's (beta in [start / 1.5,
//          4 x start]): a collective moves data no faster than the probe's own transfers, and a
//          rate 4x below them is another effect the term would only absorb;
//  Factor: [0.5x, 2x] the start (at most 10, the file's limit);
//  Scale:  [0.5x, 2x] the start (a curve's new points start at 1);
//  Share:  [0, 1].
struct ParamRange {
  double lo = 0, hi = 0;
};
ParamRange fit_range(Param p, const Topology& start);
// True when `value` sits at either end of `range` (within one part in 1e6): the data pushed the
// term as far as it may go, so they did not pin it down there.
bool at_range_end(const ParamRange& range, double value);
// What measurements pin a term down, for the report of a term the data do not determine
// ("sizes below 4 KiB, where the latency dominates").
std::string_view what_pins(Param p);

}  // namespace commsim
