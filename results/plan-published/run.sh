#!/usr/bin/env bash
# The planner against published training runs (tests/model/plan/published_runs.h, each with its
# source): builds bench_plan_published in BUILD_DIR (default ./build) and prints, per run, the
# published step time, the planner's for the published layout, the error, the layout's rank, and
# whether it is within 5 % of the planner's best; then the summary the README's table comes from.
#
#   results/plan-published/run.sh [BUILD_DIR]
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target bench_plan_published -- -j2 >/dev/null
"$build/tests/model/plan/bench_plan_published"
