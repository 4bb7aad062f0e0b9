// The planner against the published runs of published_runs.h: per run the published step time,
// the planner's for the published layout, the error, the layout's rank, and whether it is within
// 5 % of the planner's best; then the median |error| and the shares within 10 % and 20 %.
// results/plan-published/run.sh builds and runs it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "published_runs.h"

int main() {
  using namespace commsim;
  std::printf("%-34s %10s %10s %8s %9s %7s  %s\n", "run", "published", "planner", "error", "rank", "best5%",
              "planner's best");
  std::vector<double> errors;
  int within_best = 0, planned = 0;
  const std::vector<test::PublishedRun> runs = test::published_runs();
  for (const test::PublishedRun& run : runs) {
    const test::RunResult r = test::plan_run(run);
    if (r.rank == 0) {
      std::printf("%-34s %9.2fs %10s %8s %9s %7s  %s\n", run.name.c_str(), run.published_step_s, "-", "-", "not fit",
                  "no", r.layouts ? r.best.to_string().c_str() : "-");
      continue;
    }
    ++planned;
    errors.push_back(std::fabs(r.error()));
    within_best += r.within_5pct_of_best() ? 1 : 0;
    std::printf("%-34s %9.2fs %9.2fs %+7.1f%% %4d/%-4zu %7s  %s %.2fs%s\n", run.name.c_str(), run.published_step_s,
                r.predicted_s, 100 * r.error(), r.rank, r.layouts, r.within_5pct_of_best() ? "yes" : "no",
                r.best.to_string().c_str(), r.best_s, run.known_gap.empty() ? "" : "  (known gap)");
  }
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  const double median = n == 0 ? NAN : n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  auto within = [&](double tol) {
    return std::count_if(errors.begin(), errors.end(), [&](double e) { return e <= tol; });
  };
  std::printf(
      "\n%zu runs, %d planned: median |error| %.1f%%, %ld within 10%%, %ld within 20%%, %d within 5%% of the "
      "planner's best\n",
      runs.size(), planned, 100 * median, static_cast<long>(within(0.10)), static_cast<long>(within(0.20)),
      within_best);
  return 0;
}
