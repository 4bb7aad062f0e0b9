#!/usr/bin/env bash
# Benchmark of `commsim plan`: builds bench_plan and the commsim binary in BUILD_DIR (default
# ./build), prints the planning-time table (up to 16,384 GPUs; the budget is 1 s per plan), the
# comparison with published Megatron-LM runs, and the wall time of the full command for 16,384
# GPUs, end to end.
#
#   tests/plan/bench_plan.sh [BUILD_DIR]
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target bench_plan commsim -- -j2 >/dev/null

"$build/tests/plan/bench_plan" --repeat 5 --budget-s 1.0

echo
echo "end to end (process start, YAML, plan, table), 2048 x dgx-h100 = 16,384 GPUs, Mixtral 8x7B:"
start=$(date +%s.%N)
"$build/src/runtime/commsim" plan --topology dgx-h100 --nodes 2048 --model mixtral-8x7b --global-batch 8192 \
  --seq 4096 --sequence-parallel --recompute selective --zero 1 --top 5 >/dev/null
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "  commsim plan: %.3f s wall\n", b - a }'
