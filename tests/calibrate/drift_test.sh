#!/usr/bin/env bash
# analysis/drift.sh on stored runs whose machine moved (results/host-cpu-16ranks-moved: run 2 was
# 6-26% faster than run 1 in most bands) and on runs whose machine did not (results/host-cpu-8ranks),
# and on runs with no point in common; then its errors: a missing file, a bad limit, a wrong
# argument count, a missing binary.
#   drift_test.sh COMMSIM_BIN RESULTS_DIR
set -uo pipefail
export COMMSIM_BIN=$1
results=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
drift="$here/analysis/drift.sh"
fail() { echo "FAIL: $*"; exit 1; }

moved=$(bash "$drift" "$results/host-cpu-16ranks-moved/run1.h5" "$results/host-cpu-16ranks-moved/run2.h5") ||
  fail "drift.sh failed on the 16-rank runs"
echo "$moved"
# Ratios computed independently from `commsim report --format csv --table points` of both runs.
echo "$moved" | grep -Eq "^    allreduce +0[.]91 +0[.]84 +0[.]82$" || fail "allreduce's ratios"
echo "$moved" | grep -Eq "^    broadcast +0[.]91 +0[.]94 +0[.]92$" || fail "broadcast's ratios"
echo "$moved" | grep -q "^  moved by more than 10% between the runs: .*allreduce 64 KiB-16 MiB (0.84)" ||
  fail "allreduce 64 KiB-16 MiB not named as moved"
echo "$moved" | grep "^  moved" | grep -q "broadcast" && fail "broadcast named as moved"
# A higher limit: only allgather's largest messages moved by more than 30%.
bash "$drift" "$results/host-cpu-16ranks-moved/run1.h5" "$results/host-cpu-16ranks-moved/run2.h5" 30 |
  grep -q "^  moved by more than 30% between the runs: allgather >= 16 MiB (0.74);" || fail "limit 30%"

still=$(bash "$drift" "$results/host-cpu-8ranks/run1.h5" "$results/host-cpu-8ranks/run2.h5") ||
  fail "drift.sh failed on the 8-rank runs"
echo "$still" | grep -q "^  no collective and size band moved by more than 10% between the runs$" ||
  fail "8 ranks: a band named as moved: $still"

# Runs with no point in common (8 ranks against 16): nothing to compare, and it says so.
none=$(bash "$drift" "$results/host-cpu-8ranks/run1.h5" "$results/host-cpu-16ranks-moved/run1.h5") ||
  fail "drift.sh failed on runs with no point in common"
[ "$none" = "  no point measured in both runs: nothing to compare" ] || fail "no common point: said '$none'"

expect_error() {  # expected message, then the arguments
  local want=$1; shift
  local err rc
  err=$(bash "$drift" "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "drift.sh $*: exit $rc, expected 2"
  echo "$err" | grep -q "$want" || fail "drift.sh $*: said '$err', expected '$want'"
}
expect_error "no such file: nothere.h5" "$results/host-cpu-8ranks/run1.h5" nothere.h5
expect_error "LIMIT_PERCENT must be a number, got 'ten'" "$results/host-cpu-8ranks/run1.h5" \
  "$results/host-cpu-8ranks/run2.h5" ten
expect_error "usage: analysis/drift.sh" "$results/host-cpu-8ranks/run1.h5"
err=$(COMMSIM_BIN=/nonexistent/commsim bash "$drift" a.h5 b.h5 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "$err" | grep -q "COMMSIM_BIN=/nonexistent/commsim is not an executable file" ||
  fail "a missing binary: exit $rc, said '$err'"
# analysis/spread.sh: the same two runs point by point and winner by winner (the numbers of
# results/host-cpu-8ranks/README.md).
spread=$(bash "$here/analysis/spread.sh" "$results/host-cpu-8ranks/run1.h5" "$results/host-cpu-8ranks/run2.h5") ||
  fail "spread.sh failed on the 8-rank runs"
echo "$spread" | grep -q "^  408 points: median |log(run2 / run1)| 2.5%$" || fail "spread: points: $spread"
echo "$spread" | grep -q "fastest of run2 in 59 (86.8%)" || fail "spread: winners: $spread"
echo "$spread" | grep -q "^  no collective and size band moved by more than 10% between the runs$" || fail "spread: drift"
err=$(bash "$here/analysis/spread.sh" "$results/host-cpu-8ranks/run1.h5" 2>&1); rc=$?
[ "$rc" -eq 2 ] && echo "$err" | grep -q "usage: analysis/spread.sh" || fail "spread.sh with one file: exit $rc, said '$err'"
echo "drift.sh: moved and unmoved runs told apart; errors clear; spread.sh as stored"
