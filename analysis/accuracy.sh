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
"$bin" calibrate portrait.h5 run1.h5 "${base[@]}" --refine "${REFINE:-all}" --out refined.yaml --force | sed -n '/## Collectives/,/## Written/p'
echo "== run on the refined topology"
run_sweep refined.yaml run2.h5
echo "== report, round 2 (new measurements)"
"$bin" report run2.h5 | tee report2.txt | sed -n '1,/^## Error per/p'
grep -E "model picked|winner clear|beyond the noise" report2.txt || true
# The refit the other way: every term refitted on round 2's collectives, judged on round 1's. A
# machine that drifts between the runs (large sizes slower in one of them) shows here as a
# different verdict.
echo "== the refit the other way: refitted on run2, judged on run1"
"$bin" calibrate portrait.h5 run2.h5 "${base[@]}" --refine "${REFINE:-all}" --out refined_on_run2.yaml --force > /dev/null
"$bin" report run1.h5 --topology refined_on_run2.yaml | tee report2r.txt | sed -n '/^## Accuracy/,/^## Error per/p' |
  grep -E "below 64 KiB|64 KiB and above" | head -2
grep -E "model picked|winner clear" report2r.txt || true
# How well the machine repeats itself: the same points measured in round 1 and round 2 (the model
# cannot be judged more closely than this).
echo "== the machine's own spread: the same points and winners in run1 and run2"
# Both runs' points, each line prefixed with its run (1 or 2), for the two summaries below.
# Round 1's winner cases follow (prefix W), with their verdict from the samples (column 13: clear).
{ "$bin" report run1.h5 --format csv --table points | sed 's/^/1,/'
  "$bin" report run2.h5 --format csv --table points | sed 's/^/2,/'
  "$bin" report run1.h5 --format csv --table winners | sed 's/^/W,/'; } > points12.csv
awk -F, '$1 != "W" && $2 != "collective" && $12 > 0 { k = $2 "," $3 "," $8 "," $9; if ($1 == 1) t[k] = $12; else if (k in t) print (log($12 / t[k]) < 0 ? -1 : 1) * log($12 / t[k]) }' points12.csv |
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "  no point in both runs"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    printf "  %d points: median |log(run2 / run1)| %.1f%%\n", NR, 100 * m }' | tee spread.txt
# The same for the winners: how often the fastest hand-written algorithm of run1 is again the
# fastest in run2 (what the model's "picked the measured winner" can be held to on this machine).
# As `commsim report` does for the model's pick, algorithms whose predicted times are equal (the
# same schedule, e.g. ring and hierarchical on one node) count as one.
awk -F, '$1 == "W" && $2 != "collective" { if ($13 == 1) clear[$2 "," $4 "," $5 "," $6] = 1; next }
    $2 != "collective" && $3 != "mpi" && $3 != "nccl" && $18 == "ok" && $12 > 0 {
      k = $2 "," $7 "," $8 "," $9; t[$1, k, $3] = $12; keys[k] = 1
      if ($1 == 2) { pred[k, $3] = $10; algs[k] = algs[k] " " $3 }
      if (!(($1, k) in best) || $12 < best[$1, k]) { best[$1, k] = $12; win[$1, k] = $3 } }
    function tied(k, a, b) { return a == b || ((k, a) in pred && (k, b) in pred && pred[k, a] > 0 &&
                               (pred[k, a] - pred[k, b])^2 <= (1e-6 * pred[k, a])^2) }
    END { n = 0; same = 0; near = 0; nclear = 0; sameclear = 0
      for (k in keys) if ((1, k) in win && (2, k) in win) {
        n++; w1 = win[1, k]; if (tied(k, w1, win[2, k])) same++
        if (k in clear) { nclear++; if (tied(k, w1, win[2, k])) sameclear++ }
        m = split(algs[k], list, " "); fastest = -1   # run2 time of w1 or an algorithm tied with it
        for (i = 1; i <= m; i++) if (tied(k, w1, list[i]) && (fastest < 0 || t[2, k, list[i]] < fastest)) fastest = t[2, k, list[i]]
        if (fastest > 0 && fastest <= 1.05 * best[2, k]) near++ }
      if (n == 0) { print "  no case in both runs"; exit }
      printf "  %d cases: the fastest hand-written algorithm of run1 is the fastest of run2 in %d (%.1f%%); measured within 5%% of the best in run2 in %d\n", n, same, 100 * same / n, near
      if (nclear > 0) printf "  %d cases where run1 names a clear winner (p < 0.05): it is the fastest of run2 in %d (%.1f%%)\n", nclear, sameclear, 100 * sameclear / nclear }' points12.csv |
  tee -a spread.txt
rm -f points12.csv
# Whether the machine itself moved between the runs: run2 / run1 per collective and size band.
COMMSIM_BIN=$bin bash "$here/analysis/drift.sh" run1.h5 run2.h5 | tee -a spread.txt
echo "== full reports: $out/report1.txt, $out/report2.txt"
