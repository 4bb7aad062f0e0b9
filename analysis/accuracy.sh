#!/usr/bin/env bash
# How accurate is the calibrated model on this machine? probe -> calibrate -> run -> report, then a
# second round where every term of the model is refitted on the first run's collectives
# (`calibrate --refine all`) and checked on a new run (the refit never sees the points it is
# judged on); then the same refit the other way (on the second run, judged on the first).
#
#   analysis/accuracy.sh [NRANKS] [OUTDIR]
#
# Environment: COMMSIM_BIN (default: build/src/runtime/commsim, else build-*/src/runtime/commsim),
# SIZES (run sizes, default 1KiB:64MiB:x4), PROBE_SIZES (default 8B:64MiB), ITERS (timed
# iterations per point, default 10), PASSES (the sweeps they are spread over, `run --passes`;
# default 5), WARMUP (untimed iterations per point and pass, default 1),
# COLLECTIVES (default allreduce,allgather,reducescatter,broadcast), MPIEXEC_ARGS (extra mpiexec
# arguments, e.g. "--bind-to core"), REFINE (what round 2 refits: all, the default, or gamma),
# BACKEND (host, the default, or cuda: one GPU per rank), BASE (the topology calibrate starts
# from, e.g. h200-node for GPU ranks; default: calibrate's own choice), PROTOCOLS (`run
# --protocols`: with cuda, default none,LL,LL128,Simple, so that NCCL's algorithm and protocol are
# also forced, calibrate fits NCCL's constants and report compares NCCL's choice with every forced
# variant; none with host).
# Prints the accuracy table of `commsim report` for each round, and in spread.txt how far the
# machine's own measurements moved between the two runs (analysis/drift.sh).
set -euo pipefail
np=${1:-2}
out=${2:-accuracy-out}
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${COMMSIM_BIN:-}
if [ -z "$bin" ]; then
  for b in "$here"/build/src/runtime/commsim "$here"/build-*/src/runtime/commsim; do
    if [ -x "$b" ]; then bin=$b; break; fi
  done
fi
[ -x "$bin" ] || { echo "accuracy.sh: no commsim binary; build it or set COMMSIM_BIN" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")  # the runs below work in OUTDIR
sizes=${SIZES:-1KiB:64MiB:x4}
probe_sizes=${PROBE_SIZES:-8B:64MiB}
iters=${ITERS:-10}
passes=${PASSES:-5}
warmup=${WARMUP:-1}
collectives=${COLLECTIVES:-allreduce,allgather,reducescatter,broadcast}
backend=${BACKEND:-host}
default_protocols=none
[ "$backend" = cuda ] && default_protocols=none,LL,LL128,Simple
protocols=${PROTOCOLS:-$default_protocols}
base=()
[ -n "${BASE:-}" ] && base=(--base "$BASE")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2206
mpirun=(mpiexec --oversubscribe -np "$np" ${MPIEXEC_ARGS:-})
mkdir -p "$out"
cd "$out"

echo "== probe ($np ranks)"
"${mpirun[@]}" "$bin" probe --sizes "$probe_sizes" --iters 20 --warmup 3 --no-table --out portrait.h5 --force
echo "== calibrate (probe only)"
"$bin" calibrate portrait.h5 "${base[@]}" --out calibrated.yaml --force
run_sweep() {  # topology output
  "${mpirun[@]}" "$bin" run --topology "$1" --backend "$backend" --collectives "$collectives" --algorithms all \
    --protocols "$protocols" --sizes "$sizes" --iters "$iters" --passes "$passes" --warmup "$warmup" --out "$2" --force > "${2%.h5}.txt"
}
echo "== run on the calibrated topology"
run_sweep calibrated.yaml run1.h5
echo "== report, round 1 (alpha/beta/gamma from the probe alone)"
"$bin" report run1.h5 | tee report1.txt | sed -n '1,/^## Error per/p'
grep -E "model picked|winner clear|beyond the noise" report1.txt || true

echo "== calibrate again: every term refitted on run1's collectives"
# --keep-refit: the refit is judged here, on a new run, whatever calibrate's own held-out check says.
"$bin" calibrate portrait.h5 run1.h5 "${base[@]}" --refine "${REFINE:-all}" --keep-refit --out refined.yaml --force | sed -n '/## Collectives/,/## Written/p'
echo "== run on the refined topology"
run_sweep refined.yaml run2.h5
echo "== report, round 2 (new measurements)"
"$bin" report run2.h5 | tee report2.txt | sed -n '1,/^## Error per/p'
grep -E "model picked|winner clear|beyond the noise" report2.txt || true
# The refit the other way: every term refitted on round 2's collectives, judged on round 1's. A
# machine that drifts between the runs (large sizes slower in one of them) shows here as a
# different verdict.
echo "== the refit the other way: refitted on run2, judged on run1"
"$bin" calibrate portrait.h5 run2.h5 "${base[@]}" --refine "${REFINE:-all}" --keep-refit --out refined_on_run2.yaml --force > /dev/null
"$bin" report run1.h5 --topology refined_on_run2.yaml | tee report2r.txt | sed -n '/^## Accuracy/,/^## Error per/p' |
  grep -E "below 64 KiB|64 KiB and above" | head -2
grep -E "model picked|winner clear" report2r.txt || true
# How well the machine repeats itself (the model cannot be judged more closely than this).
echo "== the machine's own spread: the same points and winners in run1 and run2"
COMMSIM_BIN=$bin bash "$here/analysis/spread.sh" run1.h5 run2.h5 | tee spread.txt
echo "== full reports: $out/report1.txt, $out/report2.txt"
