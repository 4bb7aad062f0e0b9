// Algorithm selection and crossover sizes on the closed-form model (see select.h).
#include "model/select.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/error.h"

namespace commsim {
namespace {

bool usable(const Topology& topo, Collective c, const Candidate& cand) {
  return has_closed_form(topo, c, cand.algorithm, cand.protocol);
}

Seconds time_of(const Topology& topo, Collective c, int nodes, int ranks_per_node, const Candidate& cand, Bytes bytes,
                int channels) {
  return closed_form(topo, CostQuery{c, cand.algorithm, cand.protocol, nodes, ranks_per_node, bytes, channels}).time_s;
}

// The sign of t(a) - t(b), with differences within a relative 1e-12 counted as a tie (0): two
// algorithms that are the same on this topology (hierarchical and ring on one node) never cross.
int sign_of(double ta, double tb) {
  double d = ta - tb, scale = std::max(std::abs(ta), std::abs(tb));
  if (std::abs(d) <= 1e-12 * scale) return 0;
  return d < 0 ? -1 : 1;
}

// Sizes per doubling of the scan grid: sign changes narrower than a quarter of an octave can be
// missed, which the cost curves (sums of a few linear pieces) do not produce in practice.
constexpr double kGridStep = 1.189207115002721;  // 2^(1/4)

}  // namespace

Choice best_candidate(const Topology& topo, Collective c, int nodes, int ranks_per_node, Bytes bytes,
                      const std::vector<Candidate>& candidates, int channels) {
  Choice best;
  bool found = false;
  for (const Candidate& cand : candidates) {
    if (!usable(topo, c, cand)) continue;
    Cost cost;
    try {
      cost = closed_form(topo, CostQuery{c, cand.algorithm, cand.protocol, nodes, ranks_per_node, bytes, channels});
    } catch (const Error&) {
      // A forced NCCL algorithm that NCCL cannot run on this many nodes (NVLS across nodes
      // without CollNet, PAT with several GPUs per node) is no candidate here.
      if (is_nccl_algorithm(cand.algorithm) && cand.algorithm != Algorithm::Nccl) continue;
      throw;
    }
    if (!found || cost.time_s < best.cost.time_s) {
      best.candidate = cand;
      best.cost = cost;
      found = true;
    }
  }
  if (!found)
    throw Error(
        "no candidate algorithm can be priced for " + std::string(to_string(c)) + " on topology '" + topo.name +
        "' (none applies to the collective, or NCCL protocols were asked of a topology without `nccl` constants)");
  return best;
}

// Scans lo..hi on a geometric grid (factor 2^(1/4), plus hi itself); for each pair of neighbouring
// grid sizes where the faster of a and b differs, bisects (geometrically) until the bracket is
// within 1% (or 1 byte) and reports the upper end: the smallest size found at which `above` wins.
std::vector<Crossover> crossovers(const Topology& topo, Collective c, int nodes, int ranks_per_node, const Candidate& a,
                                  const Candidate& b, Bytes lo, Bytes hi, int channels) {
  std::vector<Crossover> out;
  if (!usable(topo, c, a) || !usable(topo, c, b)) return out;
  if (hi < lo) std::swap(lo, hi);
  lo = std::max<Bytes>(lo, 1);
  if (hi < lo) return out;
  auto sign_at = [&](Bytes n) {
    return sign_of(time_of(topo, c, nodes, ranks_per_node, a, n, channels),
                   time_of(topo, c, nodes, ranks_per_node, b, n, channels));
  };
  Bytes prev = lo;
  int prev_sign = sign_at(lo);
  double x = static_cast<double>(lo);
  while (prev < hi) {
    x *= kGridStep;
    Bytes cur = x >= static_cast<double>(hi) ? hi : std::max<Bytes>(prev + 1, static_cast<Bytes>(x));
    int cur_sign = sign_at(cur);
    if (cur_sign != 0 && prev_sign != 0 && cur_sign != prev_sign) {
      // Bisect [l, h]: sign(l) = prev_sign, sign(h) = cur_sign (a tie inside counts with h).
      Bytes l = prev, h = cur;
      while (h - l > 1 && static_cast<double>(h) > 1.01 * static_cast<double>(l)) {
        Bytes mid = static_cast<Bytes>(std::sqrt(static_cast<double>(l) * static_cast<double>(h)));
        mid = std::clamp<Bytes>(mid, l + 1, h - 1);
        if (sign_at(mid) == prev_sign)
          l = mid;
        else
          h = mid;
      }
      Crossover co;
      co.bytes = h;
      co.below = prev_sign < 0 ? a : b;
      co.above = prev_sign < 0 ? b : a;
      out.push_back(co);
    }
    if (cur_sign != 0) prev_sign = cur_sign;
    prev = cur;
  }
  return out;
}

}  // namespace commsim
