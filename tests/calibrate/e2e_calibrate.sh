#!/usr/bin/env bash
# End to end: probe with 2 ranks -> calibrate -> run on the calibrated topology -> report.
# Usage: e2e_calibrate.sh COMMSIM_BINARY WORKDIR. Exit 77 (skipped) when the build has no `run`.
set -euo pipefail
bin=$1
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpiexec --oversubscribe -np 2)

if "$bin" run --help 2>&1 | grep -q "not available in this build"; then
  echo "SKIPPED: this build has no run command"
  exit 77
fi

"${mpirun[@]}" "$bin" probe --sizes 8B:1MiB:x4 --iters 5 --warmup 1 --no-table --out portrait.h5 2>probe.err | tee probe.txt
cat probe.err >&2
grep -Eq "^commsim probe: cpus: (each rank bound|ranks bound|not bound)" probe.err
grep -q "machine portrait" probe.txt
grep -q "inside a node" probe.txt
grep -Eq "a ring shift of just-written data takes x[0-9.]+ the time of untouched data at [0-9]+[KMG]?i?B" probe.txt

"$bin" calibrate portrait.h5 --out fitted.yaml | tee calibrate.txt
grep -q "held-out check" calibrate.txt
grep -q "R^2" calibrate.txt
grep -q "^intra_node:" fitted.yaml
grep -q "fitted .* from ring-shift intra-node" fitted.yaml
# The probe file holds the intra-node ring shift of just-written data beside the untouched one, and
# calibrate reads it (whether it finds a written_scale curve depends on the machine).
grep -q "just-written data inside a node: ring-shift-written vs ring-shift-control intra-node, [1-9][0-9]* sizes" calibrate.txt
grep -q "written_scale:" calibrate.txt
# An existing output is refused without --force.
if "$bin" calibrate portrait.h5 --out fitted.yaml 2>err.txt; then echo "overwrote without --force"; exit 1; fi
grep -q -- "--force" err.txt

"${mpirun[@]}" "$bin" run --topology fitted.yaml --backend host --collectives allreduce \
  --algorithms ring,recursive-doubling,tree,mpi --sizes 1KiB:1MiB:x4 --iters 3 --warmup 1 --out run.h5 > run.txt
# MPI's own allreduce is predicted as the algorithm the library picks when it is Open MPI 4.1, and as
# the model's fastest schedule, with the reason, otherwise.
"$bin" report run.h5 --format csv --table points | grep "^allreduce,mpi," > mpi_points.csv
[ "$(wc -l < mpi_points.csv)" -eq 6 ]
if mpiexec --version 2>&1 | grep -Eq "\((Open MPI|OpenRTE)\) 4\.1\."; then
  [ "$(grep -c 'predicted: Open MPI 4.1 coll/tuned: allreduce ' mpi_points.csv)" -eq 6 ]
else
  [ "$(grep -c "the model's fastest schedule (" mpi_points.csv)" -eq 6 ]
fi

# The run's collectives refine gamma; the refined file still loads (predict accepts it).
"$bin" calibrate portrait.h5 run.h5 --refine gamma --out refined.yaml | tee refine.txt
grep -q "gamma" refine.txt
"$bin" predict --topology refined.yaml --collectives allreduce --algorithms ring --sizes 1MiB > predict.txt

"$bin" report run.h5 | tee report.txt
grep -q "## Error per collective x algorithm x size band" report.txt
grep -q "## Winners" report.txt
"$bin" report run.h5 --format json > report.json
grep -q '"compared": [1-9]' report.json
"$bin" report run.h5 --format csv --table winners | head -1 | grep -q "^collective,backend,nodes,ranks,bytes"

# Every term refitted on the run, judged on the sizes it leaves out against the probe-only topology:
# the file written is the one that does better there.
"$bin" calibrate portrait.h5 run.h5 --refine all --out judged.yaml > judged.txt
grep -Eq "^  judged on data the refit did not see \(the held-out sizes" judged.txt
if grep -q "^  the refit is kept" judged.txt; then
  grep -q "^working_set_scale:" judged.yaml
else
  grep -q "^  the refit is not kept: .* the probe-only topology is written" judged.txt
  if grep -q "from .* collective points" judged.yaml; then echo "a refit written though not kept"; exit 1; fi
fi
# Written whatever the held-out data say (--keep-refit): the overheads and the working-set curve
# are written, the file loads.
"$bin" calibrate portrait.h5 run.h5 --refine all --keep-refit --out all.yaml | tee refine_all.txt
grep -q "call_overhead" refine_all.txt
grep -q "held-out check" refine_all.txt
grep -q "^working_set_scale:" all.yaml
# Two ranks never send one message to many: no one-to-many curve is written.
if grep -q "^fan_out_scale:" all.yaml; then echo "a one-to-many curve without such messages"; exit 1; fi
"$bin" predict --topology all.yaml --collectives allreduce --algorithms ring --sizes 1MiB > predict_all.txt
# The same fit on one thread; a thread count below 1 is refused.
"$bin" calibrate portrait.h5 run.h5 --refine all --keep-refit --threads 1 --out all1.yaml > refine_all1.txt
diff <(grep -v "^  .*all.yaml\|^# all\|^name:\|created:" refine_all.txt) <(grep -v "^  .*all1.yaml\|^# all1\|^name:\|created:" refine_all1.txt)
if "$bin" calibrate portrait.h5 run.h5 --refine all --threads -1 --out bad.yaml 2> threads.err; then exit 1; fi
grep -q "^commsim calibrate: error: --threads -1: give 1 or more" threads.err

# The node's working-set curve is fitted where the ranks fit the node's logical CPUs; with more
# ranks than that (4 here, on a machine of fewer CPUs) calibrate says why it is not. Both need a node
# bandwidth: the probe finds one only where all ranks at once stream clearly slower than a pair, so
# the base topology gives one (the probe's own replaces it when it finds one).
cpus=$(getconf _NPROCESSORS_ONLN)
grep -v "node_bandwidth:" fitted.yaml | sed '/^intra_node:/a\  node_bandwidth: 4 GB/s' > node_base.yaml
"$bin" calibrate portrait.h5 run.h5 --base node_base.yaml --refine all --keep-refit --out node.yaml > refine_node.txt
grep -q "node_bandwidth:" node.yaml
if [ "$cpus" -ge 2 ]; then grep -q "^node_working_set_scale:" node.yaml; fi
# The fitted topology allows as many ranks per node as the machine has logical CPUs; 4 ranks on
# fewer CPUs need a copy that allows them.
sed 's/^ranks_per_node: .*/ranks_per_node: 4/' fitted.yaml > four.yaml
mpiexec --oversubscribe -np 4 "$bin" run --topology four.yaml --backend host --collectives allgather \
  --algorithms ring,direct --sizes 64KiB:4MiB:x4 --iters 3 --warmup 1 --out run4.h5 > run4.txt
"$bin" calibrate portrait.h5 run4.h5 --base node_base.yaml --refine all --keep-refit --out node4.yaml > refine_node4.txt
if [ "$cpus" -lt 4 ]; then
  grep -q "node_working_set_scale: not fitted: 4 ranks on a node of $cpus logical CPUs" refine_node4.txt
  if grep -q "^node_working_set_scale:" node4.yaml; then echo "node curve fitted on oversubscribed ranks"; exit 1; fi
else
  grep -q "^node_working_set_scale:" node4.yaml
fi

# report --topology: predicted again on the topology of the run, every point's prediction is the one
# stored with it (MPI's too: the run's library is read back from the file); on the refitted topology
# they change.
"$bin" report run.h5 --format csv --table points | cut -d, -f1-9 > stored.csv
"$bin" report run.h5 --topology fitted.yaml --format csv --table points | cut -d, -f1-9 > again.csv
python3 - stored.csv again.csv <<'PY'
import csv, sys
a = list(csv.DictReader(open(sys.argv[1])))
b = list(csv.DictReader(open(sys.argv[2])))
assert len(a) == len(b) and a, (len(a), len(b))
for x, y in zip(a, b):
    p, q = float(x["predicted_us"]), float(y["predicted_us"])
    assert abs(p - q) <= 1e-6 * p, (x, y)
print(f"report --topology: {len(a)} predictions reproduced")
PY
"$bin" report run.h5 --topology all.yaml | tee report_all.txt
grep -q "predictions recomputed on topology 'all'" report_all.txt
if cmp -s <("$bin" report run.h5 --topology all.yaml --format csv --table points) \
          <("$bin" report run.h5 --format csv --table points); then
  echo "report --topology all.yaml changed nothing"; exit 1
fi
if "$bin" report run.h5 --topology no-such-topology 2>err.txt; then echo "accepted a missing topology"; exit 1; fi
grep -q "no-such-topology" err.txt
echo "e2e calibrate: passed"
