#!/usr/bin/env bash
# `commsim calibrate` on two stored runs of one sweep (results/ci-vm-2ranks: a 2-core VM, 2 host
# ranks): the refit is judged on the run it did not see against the probe-only topology, prints
# every term against its range, and writes a file that describes this machine with each value's
# source. It never writes over an input (also through a link) and refuses a GPU preset as the base
# of a host probe.
# Usage: holdout_cli_test.sh COMMSIM_BINARY RESULTS_DIR WORKDIR
set -euo pipefail
bin=$1
runs=$2
work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"

for way in "run1.h5 run2.h5" "run2.h5 run1.h5"; do
  set -- $way
  "$bin" calibrate "$runs/portrait.h5" "$runs/$1" --holdout "$runs/$2" --refine all --out "fit_$1.yaml" > "calibrate_$1.txt"
  grep -q "^  judged on data the refit did not see ($2 (never fitted), [0-9]* points):" "calibrate_$1.txt"
  grep -Eq "^  the refit is (kept|not kept)" "calibrate_$1.txt"
  # Refit and probe-only rows (in-sample, held-out median |error|): the refit is kept exactly when its
  # held-out error is the lower, so the written topology is never the worse of the two there.
  awk '/^      refit / { sub("%", "", $3); refit = $3 } /^      probe only / { sub("%", "", $4); probe = $4 }
       /^  the refit is kept/ { kept = 1 } /^  the refit is not kept/ { kept = 0 }
       END { if (refit == "" || probe == "" || kept == "") exit 1; exit ((refit + 0 < probe + 0) == kept) ? 0 : 1 }' \
    "calibrate_$1.txt"
  grep -Eq "^  [0-9]+ term\(s\) fitted to [0-9]+ points \(at most one term per 3 points; condition number" "calibrate_$1.txt"
  grep -Eq "^  intra.beta: .* range \[" "calibrate_$1.txt"
  # This machine: its CPUs and memory from the probe, the rest labelled as the preset's.
  grep -Eq "^ranks_per_node: 2 +# probe: 2 logical CPUs" "fit_$1.yaml"
  grep -Eq "^  memory: [0-9.]+GiB +# probe: rank 0's host memory" "fit_$1.yaml"
  grep -Eq "^  nic_bandwidth: .*# preset local-cpu: not measured on this machine" "fit_$1.yaml"
  "$bin" predict --topology "fit_$1.yaml" --collectives allreduce --algorithms ring --sizes 1MiB > /dev/null
done

# Never over an input, --force or not, also through a symbolic link.
cp "$runs/portrait.h5" probe.h5
ln -s probe.h5 link.h5
for out in probe.h5 link.h5; do
  if "$bin" calibrate probe.h5 --out "$out" --force 2> err.txt; then echo "wrote over its input"; exit 1; fi
  grep -q "calibrate never writes over its input" err.txt
done
cmp probe.h5 "$runs/portrait.h5"
# A holdout run that is also fitted is refused.
if "$bin" calibrate probe.h5 "$runs/run1.h5" --holdout "$runs/run1.h5" --out x.yaml 2> err.txt; then exit 1; fi
grep -q "is also an input" err.txt
# A GPU preset is not this machine's: refused, nothing written.
if "$bin" calibrate probe.h5 --base dgx-h100 --out gpu.yaml 2> err.txt; then echo "wrote a GPU preset"; exit 1; fi
grep -q "not this machine's" err.txt
[ ! -e gpu.yaml ]
echo "OK"
