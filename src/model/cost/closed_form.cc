// closed_form() and has_closed_form() (cost.h): the query checked against the table of
// model/algorithms.h, then priced by the row's closed form (closed_forms.h) or by NCCL's model.
#include <algorithm>
#include <climits>
#include <string>

#include "model/cost/closed_forms.h"
#include "model/error.h"
#include "model/schedule.h"

namespace commsim::closed_forms {
namespace {

// Why (c, a, proto) has no closed form on t, or nullptr.
const char* why_no_model(const Topology& t, Collective c, Algorithm a, Protocol proto) {
  const AlgorithmRow* row = find_algorithm(c, a);
  if (row == nullptr) return "the algorithm does not apply to this collective";
  if (!row->hand_written() && !row->nccl_model())
    return "the MPI library's own algorithm has no closed form (measure it with `commsim run`)";
  const bool nccl_model = row->nccl_model() || proto != Protocol::None;
  if (proto != Protocol::None && !row->protocols())
    return a == Algorithm::Tree ? "NCCL's tree (and so a protocol with tree) exists for allreduce only"
                                : "protocols LL/LL128/Simple apply only to ring, tree and NCCL's algorithms";
  if (nccl_model && !t.nccl.present)
    return "the topology has no `nccl` constants, needed for NCCL's model and protocols";
  if (row->nccl_model() && !t.gpu) return "NCCL's model needs GPU nodes (gpus_per_node)";
  return nullptr;
}

[[noreturn]] void throw_query(const Topology& t, const CostQuery& q, const std::string& why) {
  std::string what = std::string(to_string(q.collective)) + " " + std::string(to_string(q.algorithm));
  if (q.protocol != Protocol::None) what += "/" + std::string(to_string(q.protocol));
  throw Error("cannot price " + what + " on topology '" + t.name + "' with " + std::to_string(q.nodes) + " node(s) x " +
              std::to_string(q.ranks_per_node) + " rank(s): " + why);
}

// Messages, reductions and, for the unpipelined algorithms, the copies (the pipelines price theirs
// in their stages).
Parts hand_written(const Env& e, const AlgorithmRow& row, Bytes bytes) {
  const double n = static_cast<double>(bytes);
  Parts t = row.closed_form(e, n);
  if (row.copies != nullptr) t.copy += row.copies(e, n);
  return t;
}

}  // namespace

void check_query(const Topology& t, const CostQuery& q) {
  if (q.nodes < 1 || q.ranks_per_node < 1) throw_query(t, q, "nodes and ranks per node must be at least 1");
  if (static_cast<long long>(q.nodes) * q.ranks_per_node > INT_MAX) throw_query(t, q, "too many ranks");
  if (q.nodes > 1 && !t.network.present())
    throw_query(t, q, "the topology has no network (network.kind none), so it has a single node");
  if (t.max_nodes > 0 && q.nodes > t.max_nodes)
    throw_query(t, q, "the topology allows at most " + std::to_string(t.max_nodes) + " node(s) (max_nodes)");
  if (const char* why = why_no_model(t, q.collective, q.algorithm, q.protocol)) throw_query(t, q, why);
}

Cost to_cost(const Parts& x, Algorithm a, Protocol p, Seconds call_s) {
  Cost c;
  c.latency_s = x.lat + call_s;
  c.bandwidth_s = x.bw;
  c.reduction_s = x.red;
  c.copy_s = x.copy;
  c.time_s = c.latency_s + x.bw + x.red + x.copy;
  c.algorithm = a;
  c.protocol = p;
  return c;
}

}  // namespace commsim::closed_forms

namespace commsim {

using closed_forms::Env;
using closed_forms::Parts;
using closed_forms::to_cost;

bool has_closed_form(const Topology& topo, Collective c, Algorithm a, Protocol p) {
  return closed_forms::why_no_model(topo, c, a, p) == nullptr;
}

int default_channels(const Topology& topo, int nodes) {
  if (!topo.gpu || nodes <= 1 || !topo.network.present()) return 1;
  return std::min(kMaxChannels, 2 * topo.network.nics_per_node);
}

int channels_for(const Topology& topo, const CostQuery& q) {
  if (q.channels < 0 || q.channels > kMaxChannels)
    throw Error("channels must be 0 (the topology's default) or 1 to " + std::to_string(kMaxChannels) + ", got " +
                std::to_string(q.channels));
  if (!takes_channels(q.collective, q.algorithm)) return 1;
  return q.channels > 0 ? q.channels : default_channels(topo, q.nodes);
}

Cost closed_form(const Topology& topo, const CostQuery& q) {
  closed_forms::check_query(topo, q);
  Env e = closed_forms::make_env(topo, q.collective, q.nodes, q.ranks_per_node, q.bytes);
  e.C = channels_for(topo, q);
  const bool nccl_model = is_nccl_algorithm(q.algorithm) || q.protocol != Protocol::None;
  if (e.p == 1) {
    // One rank: nothing to communicate.
    Algorithm a = q.algorithm == Algorithm::Nccl ? Algorithm::NcclRing : q.algorithm;
    Protocol p = nccl_model && q.protocol == Protocol::None ? Protocol::Simple : q.protocol;
    return to_cost(Parts{}, a, p);
  }
  const Seconds call_s = topo.call_overhead_s;  // once per call of more than one rank
  if (!nccl_model)
    return to_cost(closed_forms::hand_written(e, *find_algorithm(q.collective, q.algorithm), q.bytes), q.algorithm,
                   q.protocol, call_s);
  if (closed_forms::uses_ported_nccl_model(topo, q)) return closed_forms::nccl_tuned_closed_form(topo, e, q, call_s);
  return closed_forms::nccl_closed_form(topo, e, q, call_s);
}

}  // namespace commsim
