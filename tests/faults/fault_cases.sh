#!/usr/bin/env bash
# Faults a cluster job meets, each a case: fault_cases.sh CASE NP
#   rank_failure  one rank of 4 fails mid-sweep: the job ends within --timeout + 10 s with that rank's
#                 message (rank, host, cause) and the file holds every point finished before
#   disk_full     rank 0's disk fills during `run` (a small tmpfs, else a file-size limit): the job
#                 ends promptly with the system's cause and the file keeps what was written
#   predict_full  `predict --out` on a full disk: an error, not a crash; a failed create leaves nothing
#   two_writers   a second writer (plain, --force, --resume, predict) of a file a live job writes is
#                 refused naming that job; the file is readable meanwhile; the first job ends intact
#   stale_lock    a lock left by a process that has gone is taken over
#   resume_check  --resume refuses a file of another topology, another backend or a probe file
#   ranges        values out of range are refused: --timeout, --sizes, plan --nodes, topology values
#   signals       SIGINT to every rank: the run stops cleanly, exit 130, status interrupted
# Environment (set by CTest): COMMSIM, READER (read_results_check), MPIEXEC, MPIEXEC_NUMPROC_FLAG,
# MPIEXEC_PREFLAGS, WORKDIR.
case_name=${1:?case}
np=${2:-2}
# shellcheck source=../mpi/case_lib.sh
source "$(dirname "$0")/../mpi/case_lib.sh"

# Seconds since the epoch, with a fraction.
now() { date +%s.%N; }
elapsed_below() { awk -v a="$1" -v b="$(now)" -v lim="$2" 'BEGIN { exit !(b - a <= lim) }'; }
# A small file system for a full disk: a tmpfs of $1 KiB mounted on ./small (root only); sets fs to
# "small", or to "" when none can be mounted.
small_fs() {
  mkdir -p small
  fs=""
  if mount -t tmpfs -o size="$1"k tmpfs small 2>/dev/null; then
    trap 'umount -l "$work/small" 2>/dev/null' EXIT
    fs=small
  fi
}
sweep=(--collectives allreduce --algorithms ring,recursive-doubling --warmup 0 --format csv)

case "$case_name" in
  rank_failure)
    start=$(now)
    # The launcher passes its environment on to the ranks it starts on this host.
    COMMSIM_FAULT_INJECT=2:4 mpirun_commsim "${sweep[@]}" --sizes 1KiB:8KiB --iters 3 --timeout 5 --out inj.h5 >inj.csv 2>inj.err
    rc=$?
    [ $rc -ne 0 ] || fail "a run with a failing rank exited 0"
    elapsed_below "$start" 15 || fail "the job took longer than --timeout + 10 s to end"
    grep -q "error: rank 2 (.*): injected fault (COMMSIM_FAULT_INJECT) at point 4" inj.err ||
        { cat inj.err; fail "no message naming rank 2, its host and the cause"; }
    "$READER" inj.h5.partial --points 3 --status running --unique || fail "inj.h5.partial: the 3 finished points"
    ;;

  disk_full)
    small_fs 160
    start=$(now)
    if [ -n "$fs" ]; then
      mpirun_commsim "${sweep[@]}" --sizes 8B:64KiB --iters 200 --timeout 5 --out small/r.h5 >full.csv 2>full.err
    else
      # No tmpfs (not root): a file-size limit, its signal ignored so that the write fails instead.
      (trap '' XFSZ; ulimit -f 160
       mpirun_commsim "${sweep[@]}" --sizes 8B:64KiB --iters 200 --timeout 5 --out small/r.h5 >full.csv 2>full.err)
    fi
    rc=$?
    [ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat full.err; fail "exit status $rc (expected an error, not a signal)"; }
    elapsed_below "$start" 15 || fail "the job took longer than --timeout + 10 s to end"
    grep -Eq "error: rank 0 \(.*\): .*(No space left on device|File too large)" full.err ||
        { cat full.err; fail "no message naming rank 0 and the cause"; }
    "$READER" small/r.h5.partial --unique || fail "small/r.h5.partial cannot be read"
    ;;

  predict_full)
    small_fs 100
    [ -n "$fs" ] || { echo "SKIP: no tmpfs can be mounted here (not root)"; exit 0; }
    "$COMMSIM" predict --sizes 8B:4GiB --nodes 1:64 --out small/p.h5 >/dev/null 2>p.err
    rc=$?
    [ $rc -eq 1 ] || { cat p.err; fail "predict on a full disk: exit $rc (expected 1)"; }
    grep -q "No space left on device" p.err || { head -3 p.err; fail "no cause in the message"; }
    rm -f small/*
    head -c 102400 /dev/zero >small/fill 2>/dev/null
    "$COMMSIM" predict --sizes 8B:1MiB --out small/q.h5 >/dev/null 2>q.err
    [ $? -eq 1 ] || { cat q.err; fail "a failed create did not exit 1"; }
    [ ! -e small/q.h5.partial ] && [ ! -e small/q.h5.lock ] || { ls -la small; fail "a failed create left files"; }
    ;;

  two_writers)
    "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" run "${sweep[@]}" --sizes 8B:4MiB \
        --iters 1500 --out live.h5 >first.csv 2>first.err &
    first=$!
    for _ in $(seq 1 600); do [ -f live.h5.partial ] && [ "$(csv_points first.csv)" -ge 1 ] && break; sleep 0.1; done
    [ -f live.h5.partial ] || fail "the first job did not start its file"
    for extra in "--force" "" ; do
      mpirun_commsim "${sweep[@]}" --sizes 1KiB --iters 1 --out live.h5 $extra >/dev/null 2>second.err &&
          fail "a second writer ($extra) was not refused"
      grep -q "live.h5 is being written by another job: process [0-9]* on host" second.err ||
          { cat second.err; fail "the refusal ($extra) does not name the other job"; }
      grep -q -- "--force" second.err && fail "the refusal points at --force while the file is live"
    done
    mpirun_commsim "${sweep[@]}" --sizes 1KiB --iters 1 --resume live.h5 >/dev/null 2>resume.err &&
        fail "a --resume of a live file was not refused"
    "$COMMSIM" predict --sizes 1KiB --out live.h5 --force >/dev/null 2>predict.err && fail "predict --force was not refused"
    "$COMMSIM" report live.h5.partial >report.txt 2>report.err || { cat report.err; fail "a live file cannot be read"; }
    wait $first || { cat first.err; fail "the first job failed"; }
    "$READER" live.h5 --points "$(csv_points first.csv)" --status complete --unique || fail "live.h5 after the first job"
    [ ! -e live.h5.lock ] || fail "the lock stayed after the job ended"
    ;;

  stale_lock)
    echo "$(hostname) 999999999 2026-01-01T00:00:00Z" >old.h5.lock  # no such process
    mpirun_commsim "${sweep[@]}" --sizes 1KiB --iters 1 --out old.h5 >old.csv 2>old.err ||
        { cat old.err; fail "a stale lock was not taken over"; }
    "$READER" old.h5 --points "$(csv_points old.csv)" --status complete || fail "old.h5"
    ;;

  resume_check)
    mpirun_commsim "${sweep[@]}" --sizes 1KiB --iters 1 --out base.h5 >/dev/null 2>base.err || { cat base.err; fail "base"; }
    cp base.h5 other.h5
    mpirun_commsim "${sweep[@]}" --sizes 1KiB,2KiB --iters 1 --topology dgx-h100 --resume other.h5 >/dev/null 2>topo.err &&
        fail "--resume took a file of another topology"
    grep -q "topology" topo.err || { cat topo.err; fail "the refusal does not name the topology"; }
    "$COMMSIM" predict --sizes 1KiB --topology local-cpu --out pred.h5 >/dev/null 2>&1 || fail "predict"
    mpirun_commsim "${sweep[@]}" --sizes 1KiB --iters 1 --resume pred.h5 >/dev/null 2>pred.err &&
        fail "--resume took a file of predictions"
    grep -q "backend" pred.err || { cat pred.err; fail "the refusal does not name the backend"; }
    # Other element types or reductions: each refused, naming them. Other iterations are taken
    # (each row records its own): a preempted sweep may be finished with fewer.
    # (base.h5: --iters 1 --warmup 0, float32, sum)
    measure=(--collectives allreduce --algorithms ring,recursive-doubling --format csv)
    cp base.h5 iters.h5
    mpirun_commsim "${measure[@]}" --sizes 1KiB,2KiB --warmup 1 --iters 2 --resume iters.h5 >/dev/null 2>iters.err ||
        { cat iters.err; fail "--resume with other --iters refused"; }
    for opt in "--warmup 0 --iters 1 --dtype float64" "--warmup 0 --iters 1 --op max"; do
      cp base.h5 opts.h5
      # shellcheck disable=SC2086
      mpirun_commsim "${measure[@]}" --sizes 1KiB,2KiB $opt --resume opts.h5 >/dev/null 2>opts.err &&
          fail "--resume took a file measured without $opt"
      grep -q -- "--dtype/--op" opts.err || { cat opts.err; fail "$opt: the refusal does not name it"; }
    done
    mpirun_commsim "${sweep[@]}" --sizes 1KiB,2KiB --iters 1 --resume base.h5 >/dev/null 2>same.err ||
        { cat same.err; fail "--resume of its own file"; }
    ;;

  ranges)
    for t in inf nan 4.6e9 -1; do
      mpirun_commsim --sizes 1KiB --iters 1 --timeout "$t" >/dev/null 2>t.err && fail "--timeout $t accepted"
      grep -q -- "--timeout .* is outside 0 to 1e+06 s" t.err || { cat t.err; fail "--timeout $t: message"; }
    done
    "$COMMSIM" predict --sizes 1e19 >/dev/null 2>s.err && fail "--sizes 1e19 accepted"
    grep -q "8 PiB" s.err || { cat s.err; fail "--sizes: message"; }
    "$COMMSIM" plan --topology dgx-h100 --model llama3-8b --global-batch 64 --seq 4096 --nodes 1000000000 >/dev/null 2>n.err &&
        fail "plan --nodes 1000000000 accepted"
    grep -q -- "--nodes 1000000000 is outside 1 to" n.err || { cat n.err; fail "plan --nodes: message"; }
    for sub in 's/bandwidth: 5 GB\/s/bandwidth: 1e300 TB\/s/' 's/bandwidth: 5 GB\/s/bandwidth: 5e-324 B\/s/' \
               's/latency: 0.5 us/latency: 1e303 s/' 's/oversubscription: 1/oversubscription: 1e300/'; do
      sed "$sub" "$COMMSIM_CONFIG_DIR/topologies/local-cpu.yaml" >t.yaml
      "$COMMSIM" predict --topology t.yaml --sizes 1KiB --nodes 2 >/dev/null 2>y.err && fail "topology ($sub) accepted"
      grep -q "t.yaml:[0-9]*: " y.err || { cat y.err; fail "topology ($sub): no line in the message"; }
    done
    ;;

  signals)
    "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" run "${sweep[@]}" --sizes 8B:4MiB \
        --iters 400 --out sig.h5 >sig.csv 2>sig.err &
    job=$!
    for _ in $(seq 1 600); do [ "$(csv_points sig.csv 2>/dev/null)" -ge 1 ] && break; sleep 0.1; done
    kill -INT $(rank_pids $job)
    wait $job
    rc=$?
    [ $rc -eq 130 ] || { cat sig.err; fail "exit $rc after SIGINT (expected 130)"; }
    "$READER" sig.h5 --points "$(csv_points sig.csv)" --status interrupted --unique || fail "sig.h5"
    ;;

  *) fail "unknown case" ;;
esac
echo "PASS ($case_name, $np ranks)"
