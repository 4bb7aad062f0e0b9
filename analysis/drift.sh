#!/usr/bin/env bash
# Did the machine move between two runs of the same sweep? The points measured in both runs (same
# collective, algorithm, backend, nodes, ranks and size), run2 / run1 per collective and size band
# (median), and the bands that moved by more than a limit: there a model fitted to one run cannot
# come within that limit of the other, however right its terms are.
#
#   analysis/drift.sh RUN1.h5 RUN2.h5 [LIMIT_PERCENT]     (default limit: 10)
#
# Environment: COMMSIM_BIN (default: build/src/runtime/commsim, else build-*/src/runtime/commsim).
# analysis/accuracy.sh runs it on its two runs (spread.txt).
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: analysis/drift.sh RUN1.h5 RUN2.h5 [LIMIT_PERCENT]" >&2
  exit 2
fi
run1=$1
run2=$2
limit=${3:-10}
[[ "$limit" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "drift.sh: LIMIT_PERCENT must be a number, got '$limit'" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${COMMSIM_BIN:-}
for b in "$here"/build/src/runtime/commsim "$here"/build-*/src/runtime/commsim; do
  if [ -z "$bin" ] && [ -x "$b" ]; then bin=$b; fi
done
[ -n "$bin" ] || { echo "drift.sh: no commsim binary; build it or set COMMSIM_BIN" >&2; exit 2; }
[ -x "$bin" ] || { echo "drift.sh: COMMSIM_BIN=$bin is not an executable file" >&2; exit 2; }
for f in "$run1" "$run2"; do
  [ -f "$f" ] || { echo "drift.sh: no such file: $f" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" report "$run1" --format csv --table points > "$tmp/1.csv"
"$bin" report "$run2" --format csv --table points > "$tmp/2.csv"

# One line per point measured in both runs: collective, band (0: < 64 KiB, 1: 64 KiB-16 MiB,
# 2: >= 16 MiB), log(run2 / run1). The columns are found by name in the header.
awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { if ($col["status"] != "ok" || !($col["measured_median_us"] > 0)) next
    k = $col["collective"] "," $col["algorithm"] "," $col["backend"] "," $col["nodes"] "," $col["ranks"] "," $col["bytes"]
    if (FILENAME == ARGV[1]) { t[k] = $col["measured_median_us"]; next }
    if (!(k in t)) next
    b = $col["bytes"] + 0; band = b < 65536 ? 0 : b < 16777216 ? 1 : 2
    print $col["collective"], band, log($col["measured_median_us"] / t[k]) }' "$tmp/1.csv" "$tmp/2.csv" |
  sort -k1,1 -k2,2n -k3,3g > "$tmp/ratios"

if [ ! -s "$tmp/ratios" ]; then
  echo "  no point measured in both runs: nothing to compare"
  exit 0
fi
awk -v limit="$limit" '
  function flush() {
    if (n == 0) return
    m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    r[coll, band] = exp(m)
    if (!(coll in seen)) { seen[coll] = 1; order[++ncoll] = coll }
    n = 0 }
  { if ($1 != coll || $2 != band) { flush(); coll = $1; band = $2 } v[++n] = $3 }
  END {
    flush()
    name[0] = "< 64 KiB"; name[1] = "64 KiB-16 MiB"; name[2] = ">= 16 MiB"
    print "  run2 / run1, median of the points measured in both (above 1: slower in run 2):"
    printf "    %-16s %10s %15s %11s\n", "collective", name[0], name[1], name[2]
    moved = ""
    for (i = 1; i <= ncoll; i++) {
      c = order[i]; line = sprintf("    %-16s", c)
      for (b = 0; b <= 2; b++) {
        w = b == 0 ? 10 : b == 1 ? 15 : 11
        if ((c, b) in r) {
          line = line sprintf(" %*.2f", w, r[c, b])
          if (r[c, b] > 1 + limit / 100 || r[c, b] < 1 / (1 + limit / 100))
            moved = moved (moved == "" ? "" : ", ") sprintf("%s %s (%.2f)", c, name[b], r[c, b])
        } else line = line sprintf(" %*s", w, "-")
      }
      print line
    }
    if (moved == "") printf "  no collective and size band moved by more than %g%% between the runs\n", limit
    else printf "  moved by more than %g%% between the runs: %s; a model fitted to one run cannot come within %g%% of the other there\n", limit, moved, limit
  }' "$tmp/ratios"
