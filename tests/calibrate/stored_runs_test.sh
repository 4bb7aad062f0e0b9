#!/usr/bin/env bash
# The refit judged on measurements kept in results/: refit on one run of the 16-core machine at 16
# ranks (results/host-cpu-16ranks), judged on the other run, which the refit never saw. Its probe shows two steps
# below the eager limit (32 B and 256 B); the model has one inline step, and the collectives must
# choose 256 B (Open MPI's inline send), where the messages of 8 and 16 KiB collectives step up.
# Usage: stored_runs_test.sh COMMSIM_BINARY RESULTS_DIR WORKDIR
set -euo pipefail
bin=$1
runs=$2
work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"

"$bin" calibrate "$runs/portrait.h5" "$runs/run1.h5" --refine all --out fit.yaml > calibrate.txt
grep "inline_limit: the probe's steps" calibrate.txt
grep -q "intra.inline_limit: the probe's steps at 32B and 256B both fitted: .*; 256B kept" calibrate.txt
grep -Eq "^  inline_limit: 256B +# the other of the probe's two steps" fit.yaml
# The run has direct and tree broadcasts: one sender's messages to many receivers, whose own rate
# by message size is fitted and written.
grep -Eq "^  fan_out_scale\[1\]: [0-9.]+ -> [0-9.]+" calibrate.txt
grep -q "^fan_out_scale:" fit.yaml

"$bin" report "$runs/run2.h5" --topology fit.yaml > report.txt
# The goals on a run the fit did not see: median |error| <= 25% below 64 KiB, <= 10% above.
awk '/^  below 64 KiB/ { sub("%", "", $8); if ($8 + 0 > 25) bad = 1; print; n++ }
     /^  64 KiB and above/ { sub("%", "", $9); if ($9 + 0 > 10) bad = 1; print; n++ }
     END { exit (n == 2 && !bad) ? 0 : 1 }' report.txt
grep "the model picked it in" report.txt
echo "OK"
