#include "model/calibrate/params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "model/calibrate/calibrate.h"

namespace commsim {
namespace {

// Point `i` of one of the topology's curves: reads 1 and writes nothing when the curve has no
// such point.
template <auto Curve, std::size_t I>
double get_point(const Topology& t) {
  const auto& curve = t.*Curve;
  return I < curve.size() ? curve[I].scale : 1.0;
}
template <auto Curve, std::size_t I>
void set_point(Topology& t, double v) {
  auto& curve = t.*Curve;
  if (I < curve.size()) curve[I].scale = v;
}
#define COMMSIM_POINT(P, CURVE, I)                                                         \
  {                                                                                        \
    Param::P, #CURVE "[" #I "]", #CURVE, ParamUnit::Scale, get_point<&Topology::CURVE, I>, \
        set_point<&Topology::CURVE, I>                                                     \
  }

using U = ParamUnit;
using T = Topology;
// A latency factor's upper end: the topology file accepts at most 10.
constexpr double kMaxFactor = 10.0;

// One row per Param, in the enum's order (checked below).
constexpr ParamRow kParams[] = {
    {Param::IntraLatency, "intra.latency", "intra_node.latency", U::Time,  //
     [](const T& t) { return t.intra.latency_s; }, [](T& t, double v) { t.intra.latency_s = v; }},
    {Param::IntraBeta, "intra.beta", "intra_node.bandwidth", U::Beta,  //
     [](const T& t) { return 1.0 / t.intra.bw_Bps; }, [](T& t, double v) { t.intra.bw_Bps = 1.0 / v; }},
    {Param::NetLatency, "network.latency", "network.latency", U::Time,  //
     [](const T& t) { return t.network.latency_s; }, [](T& t, double v) { t.network.latency_s = v; }},
    {Param::NetBeta, "network.beta", "network.nic_bandwidth", U::Beta,  //
     [](const T& t) { return 1.0 / t.network.nic_bw_Bps; }, [](T& t, double v) { t.network.nic_bw_Bps = 1.0 / v; }},
    {Param::Gamma, "gamma", "reduction.bandwidth", U::Beta,  //
     [](const T& t) { return 1.0 / t.reduce_bw_Bps; }, [](T& t, double v) { t.reduce_bw_Bps = 1.0 / v; }},
    {Param::IntraRendezvousLatency, "intra.rendezvous_latency", "intra_node.rendezvous_latency", U::Time,
     [](const T& t) { return t.intra.msg.rendezvous_latency_s; },
     [](T& t, double v) {
       if (t.intra.msg.eager_limit_bytes > 0) t.intra.msg.rendezvous_latency_s = v;
     }},
    {Param::IntraMessageOverhead, "intra.message_overhead", "intra_node.message_overhead", U::Time,
     [](const T& t) { return t.intra.msg.message_overhead_s; },
     [](T& t, double v) { t.intra.msg.message_overhead_s = v; }},
    {Param::CallOverhead, "call_overhead", "call_overhead", U::Time,  //
     [](const T& t) { return t.call_overhead_s; }, [](T& t, double v) { t.call_overhead_s = v; }},
    COMMSIM_POINT(WorkingSet1, working_set_scale, 1),
    COMMSIM_POINT(WorkingSet2, working_set_scale, 2),
    COMMSIM_POINT(WorkingSet3, working_set_scale, 3),
    COMMSIM_POINT(WorkingSet4, working_set_scale, 4),
    COMMSIM_POINT(WorkingSet5, working_set_scale, 5),
    COMMSIM_POINT(WorkingSet6, working_set_scale, 6),
    {Param::IntraRendezvousOverhead, "intra.rendezvous_overhead", "intra_node.rendezvous_overhead", U::Time,
     [](const T& t) { return t.intra.msg.overhead_s(INFINITY); },
     [](T& t, double v) {
       if (t.intra.msg.eager_limit_bytes > 0) t.intra.msg.rendezvous_overhead_s = v;
     }},
    COMMSIM_POINT(LocalOp1, local_op_scale, 1),
    COMMSIM_POINT(LocalOp2, local_op_scale, 2),
    COMMSIM_POINT(LocalOp3, local_op_scale, 3),
    COMMSIM_POINT(LocalOp4, local_op_scale, 4),
    COMMSIM_POINT(LocalOp5, local_op_scale, 5),
    {Param::MemoryBeta, "memory.beta", "device.memory_bandwidth", U::Beta,  //
     [](const T& t) { return 1.0 / t.memory_bw_Bps; }, [](T& t, double v) { t.memory_bw_Bps = 1.0 / v; }},
    COMMSIM_POINT(Message1, message_scale, 1),
    COMMSIM_POINT(Message2, message_scale, 2),
    COMMSIM_POINT(Message3, message_scale, 3),
    COMMSIM_POINT(Message4, message_scale, 4),
    COMMSIM_POINT(Message5, message_scale, 5),
    COMMSIM_POINT(Message6, message_scale, 6),
    COMMSIM_POINT(Message7, message_scale, 7),
    {Param::IntraInlineLatency, "intra.inline_latency", "intra_node.inline_latency", U::Time,
     [](const T& t) { return t.intra.msg.inline_latency_s; },
     [](T& t, double v) {
       if (t.intra.msg.inline_limit_bytes > 0) t.intra.msg.inline_latency_s = v;
     }},
    {Param::IntraInlineOverhead, "intra.inline_overhead", "intra_node.inline_overhead", U::Time,
     [](const T& t) { return t.intra.msg.overhead_s(0); },
     [](T& t, double v) {
       if (t.intra.msg.inline_limit_bytes > 0) t.intra.msg.inline_overhead_s = v;
     }},
    {Param::IntraOneWay, "intra.one_way_factor", "intra_node.one_way_factor", U::Factor,
     [](const T& t) { return t.intra.msg.one_way_factor; },
     [](T& t, double v) { t.intra.msg.one_way_factor = std::min(v, kMaxFactor); }},
    {Param::IntraReceiveShare, "intra.overhead_receive_share", "intra_node.overhead_receive_share", U::Share,
     [](const T& t) { return t.intra.msg.overhead_receive_share; },
     [](T& t, double v) { t.intra.msg.overhead_receive_share = std::clamp(v, 0.0, 1.0); }},
    {Param::IntraExchange, "intra.exchange_factor", "intra_node.exchange_factor", U::Factor,
     [](const T& t) { return t.intra.msg.exchange_factor; },
     [](T& t, double v) { t.intra.msg.exchange_factor = std::min(v, kMaxFactor); }},
    {Param::NetOneWay, "network.one_way_factor", "network.one_way_factor", U::Factor,
     [](const T& t) { return t.network.msg.one_way_factor; },
     [](T& t, double v) { t.network.msg.one_way_factor = std::min(v, kMaxFactor); }},
    // The network's curve and the one-to-many curve are counted from their first point: neither
    // holds a point at 1 at the start.
    COMMSIM_POINT(NetMessage1, network_message_scale, 0),
    COMMSIM_POINT(NetMessage2, network_message_scale, 1),
    COMMSIM_POINT(NetMessage3, network_message_scale, 2),
    COMMSIM_POINT(NetMessage4, network_message_scale, 3),
    COMMSIM_POINT(NetMessage5, network_message_scale, 4),
    COMMSIM_POINT(NetMessage6, network_message_scale, 5),
    {Param::IntraSendShare, "intra.send_share", "intra_node.send_share", U::Share,
     [](const T& t) { return t.intra.send_share; },
     [](T& t, double v) { t.intra.send_share = std::clamp(v, 0.0, 1.0); }},
    COMMSIM_POINT(NodeWorkingSet1, node_working_set_scale, 1),
    COMMSIM_POINT(NodeWorkingSet2, node_working_set_scale, 2),
    COMMSIM_POINT(NodeWorkingSet3, node_working_set_scale, 3),
    COMMSIM_POINT(NodeWorkingSet4, node_working_set_scale, 4),
    COMMSIM_POINT(NodeWorkingSet5, node_working_set_scale, 5),
    COMMSIM_POINT(NodeWorkingSet6, node_working_set_scale, 6),
    COMMSIM_POINT(FanOut1, fan_out_scale, 0),
    COMMSIM_POINT(FanOut2, fan_out_scale, 1),
    COMMSIM_POINT(FanOut3, fan_out_scale, 2),
    COMMSIM_POINT(FanOut4, fan_out_scale, 3),
    COMMSIM_POINT(FanOut5, fan_out_scale, 4),
    COMMSIM_POINT(FanOut6, fan_out_scale, 5),
};
#undef COMMSIM_POINT

constexpr bool rows_in_enum_order() {
  int i = 0;
  for (const ParamRow& r : kParams)
    if (static_cast<int>(r.param) != i++) return false;
  return i == kParamCount;
}
static_assert(rows_in_enum_order(), "kParams must hold one row per Param, in the enum's order");

}  // namespace

std::span<const ParamRow> param_table() {
  return kParams;
}
const ParamRow& param_row(Param p) {
  return kParams[static_cast<std::size_t>(p)];
}

std::string_view to_string(Param p) {
  return param_row(p).name;
}
std::string_view field_of(Param p) {
  return param_row(p).field;
}
double get_param(const Topology& topo, Param p) {
  return param_row(p).get(topo);
}
void set_param(Topology& topo, Param p, double value) {
  param_row(p).set(topo, value);
}

std::string param_text(Param p, double value) {
  char buf[48];
  switch (param_row(p).unit) {
    case ParamUnit::Time: std::snprintf(buf, sizeof buf, "%.4g us", value * 1e6); break;
    case ParamUnit::Beta:
      if (!(value > 0)) return "unlimited";
      std::snprintf(buf, sizeof buf, "%.4g GB/s", 1e-9 / value);
      break;
    default: std::snprintf(buf, sizeof buf, "%.4g", value);
  }
  return buf;
}

double param_floor(Param p) {
  switch (param_row(p).unit) {
    case ParamUnit::Time:
    case ParamUnit::Share: return 0.0;
    case ParamUnit::Factor:
    case ParamUnit::Scale: return 0.02;  // a cache effect of 50x is beyond any machine
    case ParamUnit::Beta: break;
  }
  return kMinBetaSPerByte;
}

double param_step(Param p, double value) {
  const ParamUnit unit = param_row(p).unit;
  const double typical = unit == ParamUnit::Time ? 1e-7 : unit == ParamUnit::Beta ? 1e-12 : 1.0;
  return std::max(std::fabs(value) * 1e-3, typical * 1e-3);
}

namespace {
bool is_network_term(Param p) {
  return p == Param::NetLatency || p == Param::NetBeta || p == Param::NetOneWay ||
         (p >= Param::NetMessage1 && p <= Param::NetMessage6);
}
}  // namespace

ParamRange fit_range(Param p, const Topology& start) {
  const double v = get_param(start, p);
  switch (param_row(p).unit) {
    case ParamUnit::Time: {
      // An overhead the probe did not see starts at 0: up to 10x its tier's latency.
      const Seconds tier = is_network_term(p) ? start.network.latency_s : start.intra.latency_s;
      const Seconds reference = v > 0 ? v : std::max(tier, 1e-6);
      return {0.0, 10 * reference};
    }
    case ParamUnit::Beta:
      if (!(v > 0) || !std::isfinite(v)) return {kMinBetaSPerByte, INFINITY};
      return {std::max(v / 1.5, kMinBetaSPerByte), 4 * v};
    case ParamUnit::Factor: {
      const double reference = v > 0 ? v : 1.0;
      return {std::max(0.5 * reference, param_floor(p)), std::min(2 * reference, kMaxFactor)};
    }
    case ParamUnit::Scale: {
      const double reference = v > 0 ? v : 1.0;
      return {std::max(0.5 * reference, param_floor(p)), 2 * reference};
    }
    case ParamUnit::Share: break;
  }
  return {0.0, 1.0};
}

bool at_range_end(const ParamRange& range, double value) {
  const auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)); };
  return near(value, range.lo) || (std::isfinite(range.hi) && near(value, range.hi));
}

std::string_view what_pins(Param p) {
  switch (p) {
    case Param::IntraLatency:
    case Param::NetLatency:
      return "sizes below 4 KiB, where the latency dominates, from algorithms of different step counts";
    case Param::IntraBeta:
    case Param::NetBeta: return "sizes of 1 MiB and more, where the bandwidth dominates";
    case Param::Gamma:
      return "reducing collectives (allreduce, reducescatter) beside allgather at the same large sizes";
    case Param::MemoryBeta: return "large sizes of algorithms that copy locally beside ones that do not";
    case Param::CallOverhead:
      return "small sizes of algorithms with different step counts (ring beside recursive doubling)";
    case Param::IntraRendezvousLatency:
    case Param::IntraRendezvousOverhead: return "sizes on both sides of the eager limit";
    case Param::IntraInlineLatency:
    case Param::IntraInlineOverhead: return "sizes on both sides of the inline limit";
    case Param::IntraMessageOverhead: return "small sizes of algorithms that post several messages at once (direct)";
    case Param::IntraOneWay:
    case Param::NetOneWay: return "small sizes of one-way schedules (broadcast, tree) beside exchanges (ring)";
    case Param::IntraExchange: return "small sizes of exchanges (recursive doubling) beside one-way schedules";
    case Param::IntraReceiveShare:
    case Param::IntraSendShare: return "more ranks per node, with algorithms whose ranks send more than they receive";
    default: break;
  }
  return "sizes around the curve point's own size, from two or more algorithms";
}

namespace {
// A curve to fit: unless it has points, points at `first`, 4x, 16x, ... up to `largest` (at most
// max_free + 1), each factor 1. Returns the parameters of the points after the first
// (first_param, first_param + 1, ...), which the fit adjusts; the first stays at 1.
template <typename Point>
std::vector<Param> add_curve_points(std::vector<Point>& curve, Bytes first, double largest, int max_free,
                                    Param first_param) {
  if (curve.empty()) {
    Bytes at = first;
    curve.push_back({at, 1.0});
    while (static_cast<double>(at) * 4 <= largest && curve.size() < static_cast<std::size_t>(max_free) + 1) {
      at *= 4;
      curve.push_back({at, 1.0});
    }
  }
  std::vector<Param> params;
  for (std::size_t i = 1; i < curve.size() && i <= static_cast<std::size_t>(max_free); ++i)
    params.push_back(static_cast<Param>(static_cast<int>(first_param) + static_cast<int>(i) - 1));
  return params;
}
}  // namespace

std::vector<Param> add_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples)
    largest = std::max(largest, working_set_bytes(s.collective, s.bytes, s.nodes * s.ranks_per_node));
  return add_curve_points(topo.working_set_scale, 256 * 1024, largest, 6, Param::WorkingSet1);
}

std::vector<Param> add_node_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  if (!(topo.intra.node_bw_Bps > 0)) return {};
  double largest = 0;
  for (const auto& s : samples)
    largest = std::max(largest, working_set_bytes(s.collective, s.bytes, s.nodes * s.ranks_per_node) *
                                    static_cast<double>(s.ranks_per_node));
  return add_curve_points(topo.node_working_set_scale, 1024 * 1024, largest, 6, Param::NodeWorkingSet1);
}

std::string why_no_node_curve(const Topology& topo, const std::vector<CollectiveSample>& samples, int logical_cpus) {
  if (!(topo.intra.node_bw_Bps > 0)) return "the topology has no intra_node.node_bandwidth";
  int most_ranks = 0;
  for (const CollectiveSample& s : samples) most_ranks = std::max(most_ranks, s.ranks_per_node);
  if (logical_cpus > 0 && most_ranks > logical_cpus)
    return std::to_string(most_ranks) + " ranks on a node of " + std::to_string(logical_cpus) +
           " logical CPUs take turns on its cores, which sets their shared rate, not its caches";
  return "";
}

std::vector<Param> add_local_op_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples) largest = std::max(largest, static_cast<double>(s.bytes));
  return add_curve_points(topo.local_op_scale, 64 * 1024, largest, 5, Param::LocalOp1);
}

std::vector<Param> add_message_points(Topology& topo, const std::vector<CollectiveSample>& samples) {
  double largest = 0;
  for (const auto& s : samples) largest = std::max(largest, static_cast<double>(s.bytes) / 2);
  return add_curve_points(topo.message_scale, 1024, largest, 7, Param::Message1);
}

std::vector<Param> add_network_message_points(Topology& topo) {
  const std::vector<MessageScale>& measured = topo.network_message_scale;
  if (measured.empty()) return {};
  std::vector<MessageScale> grid;
  for (Bytes b = 4096; b < measured.back().bytes && grid.size() < 6; b *= 4)
    grid.push_back({b, topo.network_message_scale_at(static_cast<double>(b))});
  grid.push_back(measured.back());
  topo.network_message_scale = grid;
  std::vector<Param> params;
  for (std::size_t i = 0; i + 1 < grid.size(); ++i)
    params.push_back(static_cast<Param>(static_cast<int>(Param::NetMessage1) + static_cast<int>(i)));
  return params;
}

std::vector<Param> add_fan_out_points(Topology& topo) {
  if (topo.fan_out_scale.empty())
    for (Bytes b = 4096; b <= (Bytes{16} << 20); b *= 4) topo.fan_out_scale.push_back({b, 1.0});
  std::vector<Param> params;
  for (std::size_t i = 0; i + 1 < topo.fan_out_scale.size() && i < 6; ++i)
    params.push_back(static_cast<Param>(static_cast<int>(Param::FanOut1) + static_cast<int>(i)));
  return params;
}

}  // namespace commsim
