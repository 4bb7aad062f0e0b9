#include "runtime/output/predict_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "model/nccl/from_topology.h"
#include "model/units.h"

namespace commsim {
namespace {

// A size-dependent label (the winner at a size) as bands: each band's label and the first size of
// the next band (0 for the last), the change found by bisection to within 1% between grid sizes.
struct Band {
  std::string label;
  Bytes next = 0;
};
std::vector<Band> bands(const std::vector<Bytes>& sizes, const std::function<std::string(Bytes)>& label) {
  std::vector<Band> out;
  std::string prev = label(sizes.front());
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    std::string next = label(sizes[i + 1]);
    if (next == prev) continue;
    Bytes lo = sizes[i], hi = sizes[i + 1];
    while (hi - lo > 1 && static_cast<double>(hi) > 1.01 * static_cast<double>(lo)) {
      Bytes mid = static_cast<Bytes>(std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
      if (mid <= lo || mid >= hi) mid = lo + (hi - lo) / 2;
      (label(mid) == prev ? lo : hi) = mid;
    }
    out.push_back({prev, hi});
    prev = std::move(next);
  }
  out.push_back({prev, 0});
  return out;
}

std::string fixed(double v, const char* fmt) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string busbw_text(const PredictSettings& s, Collective c, int nodes, Bytes bytes, Seconds t) {
  if (t <= 0) return "-";
  const double gbps = static_cast<double>(bytes) / t / 1e9 * busbw_factor(c, nodes * s.gpus_per_node);
  return fixed(gbps, gbps < 10 ? "%.2f GB/s" : "%.0f GB/s");
}

std::string pad(std::string text, std::size_t width, bool right = false) {
  if (text.size() >= width) return text;
  return right ? std::string(width - text.size(), ' ') + text : text + std::string(width - text.size(), ' ');
}

// Sizes in the summary: two significant digits below 10 of a unit ("4.4MiB", "485KiB").
std::string short_bytes(Bytes bytes) { return format_bytes(bytes, 2); }

// "tree < 24KiB < ring": each label, and between two the size where the second takes over.
std::string band_text(const std::vector<Band>& bs) {
  std::string s;
  for (const Band& b : bs) {
    s += b.label;
    if (b.next) s += " < " + short_bytes(b.next) + " < ";
  }
  return s;
}

// NCCL's pick without the "nccl-" of the forced variants: "ring/LL128".
std::string nccl_pick_name(const Cost& c) {
  std::string a(to_string(c.algorithm));
  if (a.rfind("nccl-", 0) == 0) a = a.substr(5);
  return c.protocol == Protocol::None ? a : a + "/" + std::string(to_string(c.protocol));
}

// The summary: per collective, a table of our schedules and one of NCCL's own choice, one line per
// node count, then what the columns mean and where the full table is.
}  // namespace

void print_predict_summary(std::ostream& os, const PredictSettings& s, const std::vector<SweepCandidates>& priced,
                           std::size_t rows) {
  const Topology& t = s.topo;
  const Bytes small = s.sizes.front(), large = s.sizes.back();
  const std::string at_small = "time at " + short_bytes(small), at_large = "busbw at " + short_bytes(large);
  auto head = [&](const std::string& last) {
    return "# " + pad("nodes", 5, true) + "  " + pad("ranks", 5, true) + "  " + pad(at_small, 11, true) + "  " +
           pad(at_large, 14, true) + "  " + last + "\n";
  };
  auto row = [&](int nodes, Seconds t_small, Seconds t_large, Collective c, const std::string& rest) {
    return "  " + pad(std::to_string(nodes), 5, true) + "  " + pad(std::to_string(nodes * s.gpus_per_node), 5, true) +
           "  " + pad(format_time(t_small), 11, true) + "  " + pad(busbw_text(s, c, nodes, large, t_large), 14, true) +
           "  " + rest + "\n";
  };
  bool any_nccl = false, any_versus = false;
  for (const SweepCandidates& p : priced) {
    const Collective c = p.collective;
    os << "# " << to_string(c) << " on " << t.name << ": " << s.gpus_per_node
       << (t.gpu ? " x " + t.device_name : std::string(" ranks")) << " per node, " << to_string(s.dtype) << ", "
       << short_bytes(small) << " to " << short_bytes(large) << " (closed-form model)\n#\n";
    std::vector<Candidate> ring, tree;
    for (const Candidate& cand : p.ours) {
      if (cand.algorithm == Algorithm::Ring) ring.push_back(cand);
      if (cand.algorithm == Algorithm::Tree) tree.push_back(cand);
    }
    const bool versus = !ring.empty() && !tree.empty();
    any_versus = any_versus || versus;
    const std::vector<Candidate>& mine = p.contenders();
    // Per node count: ring vs tree (when both are there) and the fastest, by size.
    std::vector<std::string> versus_text, fastest_text;
    std::vector<Seconds> t_small, t_large;
    std::size_t versus_width = std::string("ring vs tree").size();
    for (int nodes : s.nodes) {
      auto best_of = [&](const std::vector<Candidate>& cands, Bytes b) {
        return best_candidate(t, c, nodes, s.gpus_per_node, b, cands, s.channels);
      };
      if (versus) {
        auto rb = bands(s.sizes, [&](Bytes b) {
          return best_of(ring, b).cost.time_s <= best_of(tree, b).cost.time_s ? "ring" : "tree";
        });
        versus_text.push_back(rb.size() == 1 ? rb.front().label + " at every size" : band_text(rb));
        versus_width = std::max(versus_width, versus_text.back().size());
      }
      fastest_text.push_back(band_text(bands(s.sizes, [&](Bytes b) { return candidate_name(best_of(mine, b).candidate); })));
      t_small.push_back(best_of(mine, small).cost.time_s);
      t_large.push_back(best_of(mine, large).cost.time_s);
    }
    os << (p.ours.empty() ? "# NCCL's algorithms named\n" : "# our schedules (what `commsim run` executes)\n")
       << head((versus ? pad("ring vs tree", versus_width) + "  " : "") + "fastest, by size");
    for (std::size_t i = 0; i < s.nodes.size(); ++i)
      os << row(s.nodes[i], t_small[i], t_large[i], c,
                (versus ? pad(versus_text[i], versus_width) + "  " : std::string()) + fastest_text[i]);
    if (!p.ours.empty() && !p.nccl.empty()) {
      any_nccl = true;
      const nccl::Version& v = nccl::topology_version(t);
      os << "#\n# NCCL's own choice (NCCL " << v.major << "." << v.minor << "." << v.patch
         << "'s tuning model, on the machine the topology's nccl: section describes)\n"
         << head("NCCL picks, by size");
      for (int nodes : s.nodes) {
        auto pick = [&](Bytes b) {
          return closed_form(t, CostQuery{c, Algorithm::Nccl, Protocol::None, nodes, s.gpus_per_node, b, s.channels});
        };
        os << row(nodes, pick(small).time_s, pick(large).time_s, c,
                  band_text(bands(s.sizes, [&](Bytes b) { return nccl_pick_name(pick(b)); })));
      }
    }
    os << "#\n";
  }
  os << "# fastest, by size: the fastest at each size and, between two, the size where the next takes over;\n"
        "#   the time at the smallest size and the busbw (nccl-tests definition) at the largest are the fastest's.\n";
  if (any_versus) os << "# ring vs tree: the faster of our ring and our tree at each size, and the size where that changes.\n";
  if (any_nccl)
    os << "# NCCL picks: the algorithm/protocol NCCL's own tuning model chooses; `commsim run --algorithms nccl`\n"
          "#   measures it.\n";
  os << "# every algorithm at every size (" << rows << " rows): add --format table; into a file: --out pred.h5\n";
}


}  // namespace commsim
