#pragma once
// What `commsim plan` prints: the layouts of a plan it shows (--top, --layout), the warnings that
// go with them, and the three formats: a ranked table (with --detail every collective, and the
// checkpoint cost), CSV (one line per layout shown) and JSON (the layouts with their collectives).
#include <cstddef>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"

namespace commsim {

// --layout tp=8,pp=12: (key, size) pairs with keys dp, tp, pp, ep, lower case.
using LayoutFilter = std::vector<std::pair<std::string, int>>;
// Throws Error naming the item it cannot read (or an empty filter).
LayoutFilter parse_layout_filter(const std::string& text);
// Whether a shape has every size the filter names (an empty filter matches all).
bool layout_matches(const LayoutFilter& filter, const Shape& shape);

// A plan and the part of it that is shown. Holds references: what it names must outlive it.
struct PlanReport {
  const LlmModel& model;
  const Topology& topo;
  const PlanOptions& opts;
  const PlanResult& result;
  std::vector<const LayoutPlan*> shown;  // into result.ranked, best first
  bool filtered = false;                 // shown was chosen by a --layout filter
  // The plan's warnings, then one per collective of a shown layout outside the calibrated range.
  std::vector<std::string> warnings;
};

// The first `top` ranked layouts that match `filter` (top 0: all that match), with their warnings.
PlanReport make_plan_report(const LlmModel& model, const Topology& topo, const PlanOptions& opts,
                            const PlanResult& result, const LayoutFilter& filter, int top);

// 1-based position of a shown layout among all ranked ones.
std::size_t plan_rank(const PlanResult& result, const LayoutPlan& layout);

// show_excluded lists the excluded layouts and why; detail lists every collective of each layout.
void print_plan_table(std::ostream& os, const PlanReport& report, bool show_excluded, bool detail);
void print_plan_csv(std::ostream& os, const PlanReport& report);
void print_plan_json(std::ostream& os, const PlanReport& report, bool show_excluded);

}  // namespace commsim
