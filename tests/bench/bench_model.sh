#!/usr/bin/env bash
# Runs the cost-model benchmark of an existing build and prints a table. Builds nothing.
#
#   tests/bench/bench_model.sh BUILD_DIR [TOPOLOGY] [SECONDS] [RANKS]
#
# BUILD_DIR is a configured and built commsim build folder (it must contain
# tests/bench/bench_model: `ninja -C BUILD_DIR bench_model`). TOPOLOGY is a preset name or a path
# (default dgx-h100); SECONDS is the time spent per throughput measurement (default 0.5); RANKS
# the ranks of one node on which the closed forms are compared with the priced schedules (default
# the topology's ranks per node, at most 16).
# The benchmark runs on one core (taskset pins it when available). The largest gaps between the
# closed forms and the priced schedules are printed on stderr.
set -euo pipefail

if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit $([[ $# -lt 1 ]] && echo 2 || echo 0)
fi
build_dir=$1
topology=${2:-dgx-h100}
seconds=${3:-0.5}
ranks=${4:-}
bin="$build_dir/tests/bench/bench_model"
if [[ ! -x "$bin" ]]; then
  echo "bench_model.sh: $bin not found; build it first: ninja -C $build_dir bench_model" >&2
  exit 2
fi
if [[ -z "${COMMSIM_CONFIG_DIR:-}" ]]; then
  export COMMSIM_CONFIG_DIR="$(cd "$(dirname "$0")/../.." && pwd)/configs"
fi

pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c 0); fi

out=$("${pin[@]}" "$bin" "$topology" "$seconds" $ranks)
printf '%-92s %12s %-5s %-8s %s\n' "measurement" "value" "unit" "goal" "verdict"
printf '%-92s %12s %-5s %-8s %s\n' "-----------" "-----" "----" "----" "-------"
while IFS=$'\t' read -r name value unit goal verdict; do
  printf '%-92s %12s %-5s %-8s %s\n' "$name" "$value" "$unit" "$goal" "$verdict"
done <<<"$out"
