#!/usr/bin/env bash
# A 200-point sweep under mpiexec: rank 0's progress, with the time left, goes to stderr in a few
# lines (not one per point); stdout holds the table and nothing else; --quiet silences the progress.
# Usage: progress_test.sh NP. Environment as run_cli_test.sh.
set -u
case_name=progress
np=$1
# shellcheck source=case_lib.sh
source "$(dirname "$0")/case_lib.sh"

sizes=$(seq -s, 8 8 400)  # 50 sizes x 2 collectives x 2 algorithms = 200 points
mpirun_commsim --collectives allreduce,allgather --algorithms ring,recursive-doubling --sizes "$sizes" \
    --iters 2 --warmup 1 >table.txt 2>progress.txt || { cat progress.txt; fail "exit status (expected 0)"; }

# stderr: progress lines with an ETA, a few of them, and the last one says all points ran.
grep -Eq '^progress: [0-9]+/200 points \([0-9]+%\), .* elapsed, ETA [0-9.]+ (ms|s|min)' progress.txt ||
  { cat progress.txt; fail "no progress line with an ETA on stderr"; }
grep -Eq '^progress: 200/200 points in ' progress.txt || { cat progress.txt; fail "no final progress line"; }
lines=$(grep -c '^progress:' progress.txt)
[ "$lines" -ge 3 ] && [ "$lines" -le 60 ] || { cat progress.txt; fail "$lines progress lines for 200 points"; }

# stdout: '#' header and closing lines, and 200 rows that each start with the size; no progress.
grep -q 'progress' table.txt && fail "progress inside the table on stdout"
rows=$(grep -Ec '^ +[0-9]+ +[0-9]+ ' table.txt)
[ "$rows" -eq 200 ] || { cat table.txt; fail "$rows table rows (expected 200)"; }
stray=$(grep -Ev '^#|^ +[0-9]+ +[0-9]+ |^$' table.txt | head -3)
[ -z "$stray" ] || fail "lines in the table that are neither rows nor '#' lines: $stray"

# --quiet: no progress at all.
mpirun_commsim --collectives allreduce --algorithms ring --sizes 8,16 --iters 2 --warmup 1 --quiet \
    >quiet.txt 2>quiet.err || { cat quiet.err; fail "--quiet: exit status (expected 0)"; }
grep -q 'progress' quiet.err && fail "--quiet still shows progress"
echo "ok ($case_name, $np ranks)"
