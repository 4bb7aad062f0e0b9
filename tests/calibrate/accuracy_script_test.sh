#!/usr/bin/env bash
# analysis/accuracy.sh end to end on 2 ranks with a short sweep: both rounds' reports, the refitted
# topology, the refit the other way (on run2, judged on run1) and the machine's own spread (points,
# winners, and run2 / run1 per collective and size band) are written, with numbers in them.
#   accuracy_script_test.sh COMMSIM_BIN OUTDIR
set -euo pipefail
bin=$1
out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
COMMSIM_BIN=$bin SIZES=1KiB:256KiB:x4 PROBE_SIZES=8B:1MiB ITERS=3 PASSES=2 COLLECTIVES=allreduce,allgather \
  bash "$here/analysis/accuracy.sh" 2 "$out" > "$out.log" 2>&1 || { cat "$out.log"; echo "FAIL: accuracy.sh failed"; exit 1; }
fail() { cat "$out.log"; echo "FAIL: $*"; exit 1; }
for f in portrait.h5 calibrated.yaml run1.h5 refined.yaml run2.h5 report1.txt report2.txt refined_on_run2.yaml \
  report2r.txt spread.txt; do
  [ -s "$out/$f" ] || fail "$f missing or empty"
done
for r in 1 2 2r; do
  grep -Eq "^  64 KiB and above +[0-9]+ points +median \|err\| +[0-9.]+%" "$out/report$r.txt" || fail "report$r.txt: no accuracy line"
  grep -Eq "model picked the measured winner in [0-9]+ of [0-9]+ cases" "$out/report$r.txt" || fail "report$r.txt: no winners line"
done
grep -q "fitted .* from .* collective points" "$out/refined.yaml" || fail "refined.yaml: not refitted on the collectives"
grep -q "fitted .* from .* collective points" "$out/refined_on_run2.yaml" || fail "refined_on_run2.yaml: not refitted"
grep -q "^#   run1.h5" "$out/report2r.txt" || fail "report2r.txt: not the verdict on run1"
grep -q "recomputed on topology .*refined_on_run2.yaml" "$out/report2r.txt" || fail "report2r.txt: not on the refit of run2"
grep -Eq "^  [0-9]+ points: median \|log\(run2 / run1\)\| [0-9.]+%" "$out/spread.txt" || fail "spread.txt: no point spread"
grep -Eq "^  [0-9]+ cases: the fastest hand-written algorithm of run1 is the fastest of run2 in [0-9]+ \([0-9.]+%\)" \
  "$out/spread.txt" || fail "spread.txt: no winner agreement"
# The drift table (analysis/drift.sh): both collectives, with a ratio in each band measured.
for c in allgather allreduce; do
  grep -Eq "^    $c +[0-9]+[.][0-9]{2} +[0-9]+[.][0-9]{2} +-$" "$out/spread.txt" || fail "spread.txt: no drift line for $c"
done
grep -Eq "^  (no collective and size band moved|moved by more than 10% between the runs: )" "$out/spread.txt" ||
  fail "spread.txt: no drift verdict"
# 2 collectives x 5 sizes (1, 4, 16, 64, 256 KiB), every case measured in both runs.
grep -q "^  10 cases:" "$out/spread.txt" || fail "spread.txt: expected 10 cases: $(cat "$out/spread.txt")"
echo "accuracy.sh: $(tail -1 "$out/spread.txt")"
