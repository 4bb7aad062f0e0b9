#!/usr/bin/env bash
# How well a machine repeats itself: two runs of the same sweep (analysis/accuracy.sh's run1.h5 and
# run2.h5) compared point by point and winner by winner, then per collective and size band
# (analysis/drift.sh). No model is involved: a model fitted to one run cannot be judged more closely
# than this on the other.
#
#   analysis/spread.sh RUN1.h5 RUN2.h5
#
# Prints the median |log(run2 / run1)| over the points measured in both, how often run1's fastest
# hand-written algorithm is again the fastest in run2 (and a clear winner of run1), and run2 / run1
# per collective and size band. The binary is $COMMSIM_BIN, else build/src/runtime/commsim.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: analysis/spread.sh RUN1.h5 RUN2.h5" >&2; exit 2; }
run1=$1
run2=$2
for f in "$run1" "$run2"; do [ -f "$f" ] || { echo "spread.sh: no such file: $f" >&2; exit 2; }; done
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${COMMSIM_BIN:-$here/build/src/runtime/commsim}
[ -x "$bin" ] || { echo "spread.sh: COMMSIM_BIN=$bin is not an executable file; build commsim or set COMMSIM_BIN" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Both runs' points, each line prefixed with its run (1 or 2), for the two summaries below.
# Round 1's winner cases follow (prefix W), with their verdict from the samples (column 13: clear).
{ "$bin" report "$run1" --format csv --table points | sed 's/^/1,/'
  "$bin" report "$run2" --format csv --table points | sed 's/^/2,/'
  "$bin" report "$run1" --format csv --table winners | sed 's/^/W,/'; } > "$tmp"
awk -F, '$1 != "W" && $2 != "collective" && $12 > 0 { k = $2 "," $3 "," $8 "," $9; if ($1 == 1) t[k] = $12; else if (k in t) print (log($12 / t[k]) < 0 ? -1 : 1) * log($12 / t[k]) }' "$tmp" |
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "  no point in both runs"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    printf "  %d points: median |log(run2 / run1)| %.1f%%\n", NR, 100 * m }'
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
      if (nclear > 0) printf "  %d cases where run1 names a clear winner (p < 0.05): it is the fastest of run2 in %d (%.1f%%)\n", nclear, sameclear, 100 * sameclear / nclear }' "$tmp"
# Whether the machine itself moved between the runs: run2 / run1 per collective and size band.
COMMSIM_BIN=$bin bash "$here/analysis/drift.sh" "$run1" "$run2"
