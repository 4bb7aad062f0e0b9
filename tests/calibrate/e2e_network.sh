#!/usr/bin/env bash
# End to end across a network: one rank on each of two emulated hosts (tests/slurm/cluster.sh, TCP
# between them): probe -> calibrate (the network's latency, bandwidth and rate by message size) ->
# run on the calibrated topology -> calibrate --refine all -> report, in one batch job. Stops the
# cluster whatever happens.
#
#   e2e_network.sh COMMSIM
#
# Exit 77 (CTest: skipped) when it cannot run here: not root, no cluster.sh, no Slurm.
set -u
commsim=${1:?usage: e2e_network.sh COMMSIM}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../slurm/cluster.sh

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL (probe and calibrate across a network): $*" >&2; exit 1; }

[ -f "$cluster" ] || skip "no tests/slurm/cluster.sh"
why=$(bash "$cluster" check 2>&1) || skip "${why#cluster.sh: error: }"
command -v mpiexec >/dev/null 2>&1 || skip "mpiexec not installed"
commsim=$(cd "$(dirname "$commsim")" && pwd)/$(basename "$commsim")

# The latency check below fails when the hosts' ranks share a busy core: first wait (up to 60 s)
# for ranks another test left running to end.
busy() { ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 == "commsim"' | wc -l; }
for _ in $(seq 1 60); do [ "$(busy)" -eq 0 ] && break; sleep 1; done

work=$(mktemp -d /tmp/commsim-network.XXXXXX)  # where every emulated host sees it
chmod 0755 "$work"
trap 'bash "$cluster" stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT  # CTest's timeout: still stop the cluster

export COMMSIM_SLURM_OWNER=$$ COMMSIM_SLURM_WAIT=${COMMSIM_SLURM_WAIT:-600}
env_lines=$(bash "$cluster" start --nodes 2 --cpus 2 2>"$work/start.err") || { cat "$work/start.err"; fail "cluster did not start"; }
eval "$env_lines"  # SLURM_CONF, and Open MPI unbound (the hosts share this machine's cores)

# pml ob1: Open MPI's TCP between the hosts (UCX would take them for one machine: one boot id).
cat >"$work/job.sh" <<JOB
#!/bin/bash
set -eu
cd $work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpiexec --mca pml ob1 -np 2)
"\${mpi[@]}" $commsim probe --sizes 8B:4MiB:x2 --iters 10 --warmup 2 --no-table --out portrait.h5 >probe.txt 2>&1
$commsim calibrate portrait.h5 --out fitted.yaml >calibrate.txt
"\${mpi[@]}" $commsim run --topology fitted.yaml --backend host --collectives allreduce,broadcast \\
    --algorithms ring,tree,recursive-doubling --sizes 1KiB:4MiB:x4 --iters 3 --warmup 1 --out run.h5 >run.txt
$commsim calibrate portrait.h5 run.h5 --refine all --keep-refit --out refined.yaml >refine.txt
$commsim report run.h5 --topology refined.yaml >report.txt
JOB
chmod +x "$work/job.sh"
job=$(sbatch --parsable -N 2 --ntasks-per-node=1 -t 10 -o "$work/job.out" -e "$work/job.err" "$work/job.sh") ||
  fail "sbatch failed"
if ! state=$(bash "$cluster" wait "$job" 600); then
  cat "$work/job.out" "$work/job.err" "$work"/*.txt 2>/dev/null | tail -40
  fail "job $job ended $state"
fi

cd "$work"
grep -q "2 ranks on 2 nodes" probe.txt || { cat probe.txt; fail "the probe did not see two hosts"; }
# One-way latency between the hosts, in us: tens at most (milliseconds would mean the two ranks
# take turns on one core).
lat=$(sed -n '/across the network: MPI between hosts/{n;s/.*latency \([0-9.]*\) us.*/\1/p}' probe.txt)
[ -n "$lat" ] || { cat probe.txt; fail "no network latency in the portrait"; }
awk -v l="$lat" 'BEGIN { exit !(l > 0 && l < 1000) }' ||
  { ps -eo pid,pcpu,etimes,comm --sort=-pcpu | head -6; fail "network latency $lat us (the busiest processes above)"; }
grep -q "across the network: alpha" calibrate.txt || { cat calibrate.txt; fail "no network fit"; }
grep -Eq "across the network, by message size: latency [0-9.]+ us \(sizes <= 1KiB\), 1/beta [0-9.]+ GB/s" calibrate.txt ||
  { cat calibrate.txt; fail "no fit by message size"; }
grep -Eq "network_message_scale: (none|[0-9]+ points)" calibrate.txt || fail "no verdict on network_message_scale"
grep -Eq "^  nic_bandwidth: .* # fitted .* from ring-shift network" fitted.yaml || { cat fitted.yaml; fail "nic_bandwidth not fitted"; }
grep -Eq "^  latency: .* # fitted .* from ring-shift network" fitted.yaml || fail "network latency not fitted"
if grep -q "points," calibrate.txt; then
  grep -q "^network_message_scale:  # measured" fitted.yaml || fail "the curve is not in the topology"
  # --refine all refits its points (every 4x from 4 KiB) with the other terms.
  grep -Eq "network_message_scale\[0\]: [0-9.]+ -> [0-9.]+" refine.txt || { cat refine.txt; fail "the curve is not refitted"; }
  grep -q "^network_message_scale:  # fitted" refined.yaml || fail "the refitted curve is not in the topology"
fi
# The refit moves the network's terms (the only tier these collectives cross).
grep -Eq "network.latency: [0-9.]+ us -> [0-9.]+ us" refine.txt || { cat refine.txt; fail "network latency not refitted"; }
grep -Eq "network.one_way_factor: 1 -> [0-9.]+" refine.txt || fail "network one-way factor not refitted"
grep -q "^  64 KiB and above" report.txt || { cat report.txt; fail "no accuracy table"; }
echo "PASS (network: latency $lat us; $(grep -o 'network_message_scale: [^(]*' calibrate.txt); $(grep '^  64 KiB and above' report.txt | head -1 | awk '{print "median |err| from 64 KiB", $9}'))"
