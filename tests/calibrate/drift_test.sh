#!/usr/bin/env bash
# analysis/drift.sh on stored runs whose machine moved (try 32, 16 ranks: the reducing collectives
# from 64 KiB took about a fifth longer in run 2) and on runs whose machine did not (try 32, 8
# ranks), and on runs with no point in common; then its errors: a missing file, a bad limit, a
# wrong argument count, a missing binary.
#   drift_test.sh COMMSIM_BIN RESULTS_DIR
set -uo pipefail
export COMMSIM_BIN=$1
results=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
drift="$here/analysis/drift.sh"
fail() { echo "FAIL: $*"; exit 1; }

moved=$(bash "$drift" "$results/h200-host-16ranks-try32-bound/run1.h5" "$results/h200-host-16ranks-try32-bound/run2.h5") ||
  fail "drift.sh failed on try 32, 16 ranks"
echo "$moved"
# Ratios computed independently from `commsim report --format csv --table points` of both runs.
echo "$moved" | grep -Eq "^    allreduce +1[.]07 +1[.]24 +1[.]21$" || fail "allreduce's ratios"
echo "$moved" | grep -Eq "^    broadcast +1[.]05 +1[.]04 +1[.]07$" || fail "broadcast's ratios"
echo "$moved" | grep -q "^  moved by more than 10% between the runs: .*allreduce 64 KiB-16 MiB (1.24)" ||
  fail "allreduce 64 KiB-16 MiB not named as moved"
echo "$moved" | grep "^  moved" | grep -q "broadcast" && fail "broadcast named as moved"
# A higher limit: nothing moved by more than 30%.
bash "$drift" "$results/h200-host-16ranks-try32-bound/run1.h5" "$results/h200-host-16ranks-try32-bound/run2.h5" 30 |
  grep -q "^  no collective and size band moved by more than 30% between the runs$" || fail "limit 30%"

still=$(bash "$drift" "$results/h200-host-8ranks-try32-bound/run1.h5" "$results/h200-host-8ranks-try32-bound/run2.h5") ||
  fail "drift.sh failed on try 32, 8 ranks"
echo "$still" | grep -q "^  no collective and size band moved by more than 10% between the runs$" ||
  fail "8 ranks: a band named as moved: $still"

# Runs with no point in common (8 ranks against 16): nothing to compare, and it says so.
none=$(bash "$drift" "$results/h200-host-8ranks-try32-bound/run1.h5" "$results/h200-host-16ranks-try32-bound/run1.h5") ||
  fail "drift.sh failed on runs with no point in common"
[ "$none" = "  no point measured in both runs: nothing to compare" ] || fail "no common point: said '$none'"

expect_error() {  # expected message, then the arguments
  local want=$1; shift
  local err rc
  err=$(bash "$drift" "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "drift.sh $*: exit $rc, expected 2"
  echo "$err" | grep -q "$want" || fail "drift.sh $*: said '$err', expected '$want'"
}
expect_error "no such file: nothere.h5" "$results/h200-host-8ranks-try32-bound/run1.h5" nothere.h5
expect_error "LIMIT_PERCENT must be a number, got 'ten'" "$results/h200-host-8ranks-try32-bound/run1.h5" \
  "$results/h200-host-8ranks-try32-bound/run2.h5" ten
expect_error "usage: analysis/drift.sh" "$results/h200-host-8ranks-try32-bound/run1.h5"
err=$(COMMSIM_BIN=/nonexistent/commsim bash "$drift" a.h5 b.h5 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "$err" | grep -q "COMMSIM_BIN=/nonexistent/commsim is not an executable file" ||
  fail "a missing binary: exit $rc, said '$err'"
echo "drift.sh: moved and unmoved runs told apart; errors clear"
