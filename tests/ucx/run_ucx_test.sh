#!/usr/bin/env bash
# End-to-end tests of the UCX transport through `commsim run` under mpiexec.
#   run_ucx_test.sh CASE NP
# Cases: check (every hand-written algorithm of every collective exact over UCX, rows say which
# transport carried them), bad-tls (UCX that cannot start: a clear error, non-zero exit), version
# (--version lists ucx), not-built (a build without UCX refuses --transport ucx clearly).
# Environment (set by CTest): COMMSIM (the binary), MPIEXEC, MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS,
# WORKDIR (a scratch folder), READER (read_results_check; optional).
set -u
case_name=$1
np=${2:-2}
# shellcheck source=../mpi/case_lib.sh
source "$(dirname "$0")/../mpi/case_lib.sh"

# Prints "algorithm transport status" per row of a commsim CSV (columns found by name), then the
# whole line, so notes (the last column, possibly quoted) can be checked with grep.
csv_rows() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
           { print $col["collective"], $col["algorithm"], $col["transport"], $col["status"] }' "$1"
}

# Sizes: 0 bytes, one element, fewer elements than ranks, counts not divisible by the rank count,
# one the executor cuts into several messages, and one above UCX's rendezvous threshold.
SIZES=0,4,12,1000,4100,65540,1048580

case "$case_name" in
  check)
    mpirun_commsim --backend host --transport ucx --collectives all --algorithms all --sizes "$SIZES" --iters 2 \
        --warmup 1 --check --format csv --out ucx.h5 >ucx.csv 2>ucx.err || { cat ucx.err; fail "exit status (expected 0)"; }
    n=$(csv_points ucx.csv)
    [ "$n" -gt 0 ] || fail "no points printed"
    if [ -n "${READER:-}" ]; then
      "$READER" ucx.h5 --points "$n" --status complete --all-ok --unique || fail "ucx.h5 not as expected"
    fi
    csv_rows ucx.csv >rows.txt
    # Every point ran and was exact (skipped points say why in their note and are allowed).
    bad=$(awk '$4 != "ok" && $4 != "skipped"' rows.txt)
    [ -z "$bad" ] || { echo "$bad"; fail "points not ok"; }
    # Hand-written schedules went over UCX; the library's collective over MPI.
    bad=$(awk '($2 == "mpi" && $3 != "mpi") || ($2 != "mpi" && $3 != "ucx")' rows.txt)
    [ -z "$bad" ] || { echo "$bad"; fail "rows with the wrong transport"; }
    # Every hand-written algorithm ran somewhere, and with more than two ranks the ones that apply
    # to allreduce ran it.
    for alg in ring tree recursive-doubling recursive-halving rabenseifner bruck binomial pairwise direct hierarchical; do
      awk -v a="$alg" '$2 == a && $4 == "ok" { found = 1 } END { exit !found }' rows.txt || fail "$alg never ran ok"
    done
    for alg in ring tree recursive-doubling rabenseifner hierarchical; do
      awk -v a="$alg" '$1 == "allreduce" && $2 == a && $4 == "ok" { found = 1 } END { exit !found }' rows.txt ||
        fail "allreduce $alg never ran ok"
    done
    # Notes: what carried the bytes.
    grep ',ucx,' ucx.csv | grep -q ',"\{0,1\}UCX [0-9]' || fail "UCX rows do not name the UCX version in their note"
    grep ',mpi,' ucx.csv | grep -q 'pml' || fail "the mpi rows do not name the MPI PML in their note"
    ;;

  bad-tls)
    # UCX finds no transport it may use: one clear message, non-zero exit, no results file.
    UCX_TLS=bogus mpirun_commsim --backend host --transport ucx --algorithms ring --sizes 1KiB --out bad.h5 \
        >out.txt 2>err.txt
    rc=$?
    [ $rc -ne 0 ] || { cat err.txt; fail "exit status 0 with UCX_TLS=bogus"; }
    grep -q 'UCX ucp_init failed on rank [0-9]* (.*): ' err.txt || { cat err.txt; fail "message lacks the UCP call"; }
    grep -q 'UCX_TLS' err.txt || { cat err.txt; fail "message does not point at UCX_TLS"; }
    [ ! -e bad.h5 ] || fail "a results file was left"
    ;;

  version)
    "$COMMSIM" --version >version.txt 2>&1 || fail "--version failed"
    grep -q 'transports:.*ucx' version.txt || { cat version.txt; fail "--version does not list the ucx transport"; }
    ;;

  not-built)
    mpirun_commsim --backend host --transport ucx --algorithms ring --sizes 1KiB >out.txt 2>err.txt
    rc=$?
    [ $rc -ne 0 ] || fail "--transport ucx ran in a build without UCX"
    grep -q "this build found no UCX" err.txt || { cat err.txt; fail "message does not say the build has no UCX"; }
    ;;

  *) fail "unknown case" ;;
esac
echo "PASS ($case_name, $np ranks)"
