#!/usr/bin/env bash
# End-to-end tests of `commsim run` under mpiexec. Usage: run_cli_test.sh CASE NP
# Environment (set by CTest): COMMSIM (the binary), READER (read_results_check), MPIEXEC,
# MPIEXEC_NUMPROC_FLAG, MPIEXEC_PREFLAGS, WORKDIR (a scratch folder for this test).
set -u
case_name=$1
np=$2
# shellcheck source=case_lib.sh
source "$(dirname "$0")/case_lib.sh"
# Points stored in a results file.
points_in() { "$READER" "$1" | sed -n 's/.*: \([0-9]*\) points in .*/\1/p'; }

# Sizes: 0 bytes, one element, fewer elements than ranks, counts not divisible by the rank count,
# and one that the executor cuts into several messages.
SIZES=0,4,12,1000,4100,65540,1048580

case "$case_name" in
  check)
    # Every hand-written algorithm and mpi, every collective, exact results, file read back.
    mpirun_commsim --collectives all --algorithms all --sizes "$SIZES" --iters 3 --warmup 1 --check \
        --format csv --out all.h5 >all.csv 2>all.err || { cat all.err; fail "exit status $? (expected 0)"; }
    n=$(csv_points all.csv)
    [ "$n" -gt 0 ] || fail "no points printed"
    "$READER" all.h5 --points "$n" --status complete --all-ok --unique --samples 3 --cpus || fail "all.h5 not as expected"
    # The table's header says how the ranks are bound to CPUs.
    mpirun_commsim --collectives allreduce --algorithms ring --sizes 1KiB --iters 2 >table.txt 2>table.err ||
      { cat table.err; fail "table run: exit status (expected 0)"; }
    grep -Eq "^# cpus: (each rank bound|ranks bound|not bound)" table.txt || { cat table.txt; fail "no '# cpus:' line"; }
    # Other element types and operators.
    for spec in "float64 max" "int32 min" "bfloat16 sum" "float16 sum" "bfloat16 max"; do
      set -- $spec
      mpirun_commsim --collectives allreduce,reducescatter,reduce,allgather --algorithms all --sizes 0,12,4100,65540 \
          --dtype "$1" --op "$2" --root $((np - 1)) --iters 2 --warmup 1 --check --format csv --out "$1-$2.h5" \
          >"$1-$2.csv" 2>"$1-$2.err" || { cat "$1-$2.err"; fail "$spec: exit status (expected 0)"; }
      "$READER" "$1-$2.h5" --points "$(csv_points "$1-$2.csv")" --status complete --all-ok --unique || fail "$spec: file"
    done
    ;;

  sigterm)
    # SIGTERM in the middle of a sweep leaves a valid file with every finished point, and --resume
    # completes it with no point lost or stored twice. Twice: the signal sent to mpiexec (which
    # forwards it to the ranks and kills them 1 s later, so the file may be left as .partial),
    # and sent to every rank as Slurm does at a job's time limit (the file is closed cleanly).
    args=(--collectives allreduce,allgather --algorithms ring,recursive-doubling,mpi --sizes 4:4MiB --iters 30
          --warmup 2 --check --format csv)
    for target in mpiexec ranks; do
      out="sweep-$target.h5"
      # mpiexec itself in the background (not a function, whose subshell would take the signal).
      "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" run "${args[@]}" --out "$out" \
          >"first-$target.csv" 2>"first-$target.err" &
      pid=$!
      started=0
      for _ in $(seq 1 1200); do
        # finished points: the CSV rows on stdout (progress on stderr comes in a few lines only)
        started=$(( $(grep -c . "first-$target.csv" 2>/dev/null || echo 1) - 1 ))
        [ "${started:-0}" -ge 6 ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
      done
      [ "${started:-0}" -ge 6 ] || { cat "first-$target.err"; fail "the sweep did not get to its 6th point"; }
      if [ $target = mpiexec ]; then kill -TERM $pid; else kill -TERM $(rank_pids $pid); fi
      wait $pid
      rc=$?
      [ $rc -ne 0 ] || fail "$target: an interrupted run exited 0"
      total=$(sed -n 's/^progress: [0-9]*\/\([0-9]*\) points.*/\1/p' "first-$target.err" | head -1)
      for _ in $(seq 1 100); do [ -f "$out" ] && break; sleep 0.1; done  # rank 0 may still be closing it
      if [ $target = ranks ]; then
        [ -f "$out" ] || { cat "first-$target.err"; fail "ranks: no $out after SIGTERM"; }
        grep -q "stopped by signal 15" "first-$target.err" || { cat "first-$target.err"; fail "no message"; }
        "$READER" "$out" --status interrupted || fail "ranks: status"
      fi
      file="$out"
      [ -f "$file" ] || file="$out.partial"
      [ -f "$file" ] || { ls -la; fail "$target: neither $out nor $out.partial after SIGTERM"; }
      "$READER" "$file" --unique --all-ok || fail "$target: interrupted file"
      done_points=$(points_in "$file")
      [ "$done_points" -ge 5 ] && [ "$done_points" -lt "$total" ] || fail "$target: $done_points of $total points"
      mpirun_commsim "${args[@]}" --resume "$out" >"second-$target.csv" 2>"second-$target.err" ||
          { cat "second-$target.err"; fail "$target: resume failed"; }
      grep -q "$done_points of $total points already there" "second-$target.err" ||
          { cat "second-$target.err"; fail "$target: resume message"; }
      [ $(( done_points + $(csv_points "second-$target.csv") )) -eq "$total" ] || fail "$target: resume ran too many"
      "$READER" "$out" --points "$total" --status complete --all-ok --unique || fail "$target: resumed file"
    done
    ;;

  passes)
    # --passes: each point gets all of its timed iterations, spread over the passes.
    mpirun_commsim --collectives allreduce,broadcast --algorithms ring,mpi --sizes 1KiB,64KiB --iters 7 --passes 3 \
        --warmup 1 --check --format csv --out passes.h5 >passes.csv 2>passes.err || { cat passes.err; fail "exit status"; }
    grep -q "(pass 3 of 3)" passes.err || { cat passes.err; fail "no progress line of pass 3"; }
    [ "$(csv_points passes.csv)" -eq 8 ] || fail "expected 8 points printed"
    "$READER" passes.h5 --points 8 --status complete --all-ok --unique --samples 7 || fail "passes.h5"
    mpirun_commsim --iters 2 --passes 3 --out bad.h5 >out.txt 2>err.txt && fail "--passes 3 --iters 2 was accepted"
    grep -q -- "--passes 3 is more than --iters 2" err.txt || { cat err.txt; fail "no message for --passes > --iters"; }
    # Stopped in the second pass: every point keeps what the first pass measured.
    "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" run --collectives allreduce,allgather \
        --algorithms ring,recursive-doubling,mpi --sizes 4:4MiB --iters 60 --passes 2 --warmup 1 --check --format csv \
        --out stopped.h5 >stopped.csv 2>stopped.err &
    pid=$!
    for _ in $(seq 1 1200); do
      grep -q "(pass 2 of 2)" stopped.err 2>/dev/null && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.1
    done
    grep -q "(pass 2 of 2)" stopped.err || { cat stopped.err; fail "the sweep did not get to its second pass"; }
    kill -TERM $(rank_pids $pid)
    wait $pid
    [ $? -eq 143 ] || { cat stopped.err; fail "a run stopped by SIGTERM did not exit 143"; }
    total=$(sed -n 's/^progress: [0-9]*\/\([0-9]*\) points.*/\1/p' stopped.err | head -1)
    "$READER" stopped.h5 --points $(( total / 2 )) --status interrupted --all-ok --unique --has-note "stopped early" ||
        fail "stopped.h5: every point, with the samples of the first pass"
    ;;

  errors)
    # Bad input is an error before anything runs: a message, exit status 2, no file.
    expect_error() {
      local pattern=$1; shift
      mpirun_commsim "$@" --out bad.h5 >out.txt 2>err.txt
      local rc=$?
      [ $rc -eq 2 ] || { cat err.txt; fail "'$*' exited $rc (expected 2)"; }
      grep -q -- "$pattern" err.txt || { cat err.txt; fail "'$*': message lacks '$pattern'"; }
      [ "$(grep -c 'error:' err.txt)" -eq 1 ] || { cat err.txt; fail "'$*': expected one message, not one per rank"; }
      [ ! -e bad.h5 ] && [ ! -e bad.h5.partial ] || fail "'$*' left a results file"
    }
    expect_error "unknown algorithm 'ringg'" --algorithms ringg --sizes 1KiB
    expect_error "tree does not apply to allgather" --collectives allgather --algorithms ring,tree --sizes 1KiB
    expect_error "sizes" --sizes 1MiB:1KiB
    expect_error "dtype" --dtype complex64 --sizes 1KiB
    sed -E 's/^(ranks_per_node:).*/\1 1/' "${COMMSIM_CONFIG_DIR:?}/topologies/local-cpu.yaml" >one-per-node.yaml
    expect_error "ranks per node" --topology one-per-node.yaml --sizes 1KiB
    expect_error "needs .* of memory per rank" --sizes 64TiB --algorithms ring --collectives allreduce
    ;;

  inject)
    # A corrupted result is marked wrong, the sweep goes on, everything is written, exit status 1.
    mpirun_commsim --collectives allreduce --algorithms ring,mpi --sizes 1KiB,64KiB --iters 2 --warmup 1 --check \
        --inject-error $((np - 1)) --format csv --out wrong.h5 >wrong.csv 2>wrong.err
    rc=$?
    [ $rc -eq 1 ] || { cat wrong.err; fail "exit status $rc (expected 1)"; }
    [ "$(csv_points wrong.csv)" -eq 4 ] || fail "expected 4 points printed"
    "$READER" wrong.h5 --points 4 --status complete --has-status wrong || fail "wrong.h5"
    grep -q "wrong results" wrong.err || fail "no summary of wrong points"
    # The exact check sees a corrupted element in a 16-bit type too.
    mpirun_commsim --collectives allreduce --algorithms ring --sizes 64KiB --dtype float16 --iters 2 --warmup 1 \
        --check --inject-error $((np - 1)) --format csv --out wrong16.h5 >wrong16.csv 2>wrong16.err
    rc=$?
    [ $rc -eq 1 ] || { cat wrong16.err; fail "float16: exit status $rc (expected 1)"; }
    "$READER" wrong16.h5 --points 1 --status complete --has-status wrong || fail "wrong16.h5"
    ;;

  timeout)
    # A rank that never arrives: the watchdog names it, the file keeps the finished point, the job ends.
    mpirun_commsim --collectives allreduce --algorithms ring --sizes 1KiB,2KiB,4KiB --iters 2 --warmup 1 \
        --timeout 3 --inject-hang $((np - 1)) --format csv --out hang.h5 >hang.csv 2>hang.err
    rc=$?
    [ $rc -ne 0 ] || fail "a hung run exited 0"
    grep -q "point allreduce ring 2KiB timed out after 3 s; ranks that did not arrive: $((np - 1))" hang.err ||
        { cat hang.err; fail "no message naming the point and the rank"; }
    "$READER" hang.h5 --points 2 --status failed --has-status timeout || fail "hang.h5"
    ;;

  nccltests)
    # An nccl-tests command line with `commsim run` in front: its sizes (K, M = 2^10, 2^20), the library's
    # own collective out of place and in place, timed as nccl-tests times it, every result checked, the
    # table ending with nccl-tests' two closing lines.
    mpirun_commsim -b 8 -e 1M -f 2 -n 5 -w 2 -c 1 --out nt.h5 >nt.txt 2>nt.err || { cat nt.err; fail "exit status (expected 0)"; }
    rows=$(grep -cE "^ +[0-9]+ +[0-9]+ +float32 +sum +-1 +mpi " nt.txt)
    [ "$rows" -eq 36 ] || { cat nt.txt; fail "$rows rows (expected 36: 8 B to 1 MiB by factors of 2, twice)"; }
    [ "$(grep -cE " ok in-place$" nt.txt)" -eq 18 ] || { cat nt.txt; fail "expected 18 in-place rows"; }
    grep -qE "^ +1048576 +262144 +float32 " nt.txt || { cat nt.txt; fail "no 1M (1048576 B) row"; }
    [ "$(tail -n 2 nt.txt | head -n 1)" = "# Out of bounds values : 0 OK" ] || { cat nt.txt; fail "no out-of-bounds line"; }
    tail -n 1 nt.txt | grep -Eq '^# Avg bus bandwidth    : [0-9.e+-]+ $' || { cat nt.txt; fail "no avg busbw line"; }
    "$READER" nt.h5 --points 36 --status complete --all-ok --unique --samples 1 || fail "nt.h5 not as expected"
    # In place, every collective of the MPI library, checked exactly, over ranks that do not divide the sizes.
    mpirun_commsim --collectives all --algorithms mpi --placement in-place --sizes 0,4,12,1000,65540 --iters 2 \
        --warmup 1 --root $((np - 1)) --out ip.h5 >ip.txt 2>ip.err || { cat ip.err ip.txt; fail "in-place run"; }
    "$READER" ip.h5 --status complete --all-ok --unique || { cat ip.txt; fail "ip.h5 not as expected"; }
    # -c 0 says the results were not checked; -d all -o all give every type and reduction.
    mpirun_commsim -b 1K -e 2K -f 2 -c 0 -d all -o all >all.txt 2>all.err || { cat all.err; fail "-d all -o all"; }
    [ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +(sum|min|max) +-1 +mpi ' all.txt)" -eq 60 ] ||
        { cat all.txt; fail "expected 60 rows (5 types x 3 reductions x 2 sizes x 2 placements)"; }
    grep -qx "# Out of bounds values : N/A (not checked)" all.txt || { cat all.txt; fail "-c 0 not said"; }
    # Saying the same thing twice is an error before anything runs.
    mpirun_commsim -n 5 --iters 5 >dup.txt 2>dup.err && fail "-n with --iters accepted"
    grep -q -- "-n and --iters say the same thing" dup.err || { cat dup.err; fail "no message for -n with --iters"; }
    ;;

  verdict)
    # First runs say what they are: the local-cpu preset has no calibrated: section, a topology
    # that `calibrate` wrote has one. The table shows each row's spread; two runs of one sweep give
    # the machine against itself in the report.
    sweep=(--collectives allreduce --algorithms ring,rabenseifner,recursive-doubling --sizes 1KiB,64KiB --iters 10)
    mpirun_commsim --topology local-cpu "${sweep[@]}" --out run1.h5 >run1.txt 2>run1.err ||
        { cat run1.err; fail "run1: exit status (expected 0)"; }
    grep -q "commsim run: note: topology 'local-cpu' is not calibrated for this machine" run1.err ||
        { cat run1.err; fail "an uncalibrated preset run does not say so"; }
    grep -q "p95/med" run1.txt || { cat run1.txt; fail "no spread column"; }
    grep -Eq "^ +1024 .* [0-9.]+x .*(predicted|fastest)" run1.txt || { cat run1.txt; fail "no winner marks"; }
    mpirun_commsim --topology local-cpu "${sweep[@]}" --out run2.h5 >run2.txt 2>run2.err ||
        { cat run2.err; fail "run2: exit status (expected 0)"; }
    "$COMMSIM" report run1.h5 run2.h5 >report.txt 2>report.err || { cat report.err; fail "report: exit status"; }
    grep -Eq "the machine differs from itself by [0-9.]+% at the median .* the model's [0-9.]+% is (within|beyond)" \
        report.txt || { cat report.txt; fail "report run1 run2: no machine-against-itself figure"; }
    grep -q "note: topology 'local-cpu' is not calibrated" report.txt || { cat report.txt; fail "report: no note"; }
    if [ "$np" -eq 2 ]; then
      grep -q "rabenseifner=ring" report.txt || { cat report.txt; fail "ring = rabenseifner at 2 ranks not one contender"; }
    fi
    # A calibrated topology says nothing of the kind, in run and in report.
    "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" probe --sizes 8B:64KiB:x8 --out portrait.h5 \
        >probe.txt 2>&1 || { cat probe.txt; fail "probe: exit status"; }
    "$COMMSIM" calibrate portrait.h5 --out mine.yaml >calibrate.txt 2>&1 || { cat calibrate.txt; fail "calibrate"; }
    grep -q "^calibrated:" mine.yaml || fail "mine.yaml has no calibrated: section"
    mpirun_commsim --topology mine.yaml "${sweep[@]}" --out run3.h5 >run3.txt 2>run3.err ||
        { cat run3.err; fail "run3: exit status (expected 0)"; }
    if grep -q "not calibrated" run3.err; then cat run3.err; fail "a calibrated topology called uncalibrated"; fi
    "$COMMSIM" report run1.h5 --topology mine.yaml >report3.txt 2>&1 || { cat report3.txt; fail "report3"; }
    if grep -q "not calibrated" report3.txt; then cat report3.txt; fail "report --topology mine.yaml: note"; fi
    ;;

  *) fail "unknown case" ;;
esac
echo "PASS ($case_name, $np ranks)"
