#!/usr/bin/env bash
# The UCX transport across two emulated nodes: starts a 2-node Slurm cluster with
# tests/slurm/cluster.sh (each node its own hostname and network, TCP between them), runs
# `commsim run --backend host --transport ucx --check` on 2 nodes x 2 ranks in a batch job, and
# checks that every point is exact, that the rows say 2 nodes, that UCX reached the other node
# over tcp and its own node over shared memory, and that the MPI rows name the BTLs. Stops the
# cluster whatever happens.
#
#   test_ucx_nodes.sh COMMSIM
#
# Exit 77 (CTest: skipped) when it cannot run here: not root, no cluster.sh, no Slurm.
set -u
commsim=${1:?usage: test_ucx_nodes.sh COMMSIM}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../slurm/cluster.sh

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL (ucx across 2 nodes): $*" >&2; exit 1; }

[ -f "$cluster" ] || skip "no tests/slurm/cluster.sh"
why=$(bash "$cluster" check 2>&1) || skip "${why#cluster.sh: error: }"
commsim=$(cd "$(dirname "$commsim")" && pwd)/$(basename "$commsim")

# The job's files live where every emulated node sees them (the nodes share the file system).
work=$(mktemp -d /tmp/commsim-ucx-nodes.XXXXXX)
chmod 0755 "$work"
cleanup() {
  bash "$cluster" stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT  # CTest's timeout: still stop the cluster

# The cluster is this script's; a cluster another test is using is waited for (cluster.sh).
export COMMSIM_SLURM_OWNER=$$ COMMSIM_SLURM_WAIT=${COMMSIM_SLURM_WAIT:-600}
env_line=$(bash "$cluster" start --nodes 2 --cpus 2 2>"$work/start.err") || { cat "$work/start.err"; fail "cluster did not start"; }
eval "$env_line"

# Each emulated node has its own hostname and network but, being on one kernel, the same boot id,
# from which UCX decides whether two processes share a machine (and so may use shared memory).
# The job gives each node its own boot id inside the node's mount namespace, as separate machines
# would have, so UCX reaches the other node over tcp and its own node over shared memory.
cat >"$work/job.sh" <<EOF
#!/bin/bash
set -u
srun -N 2 -n 2 --ntasks-per-node=1 bash -c 'f=\$(mktemp $work/boot_id.XXXXXX) && cat /proc/sys/kernel/random/uuid >"\$f" &&
    mount --bind "\$f" /proc/sys/kernel/random/boot_id'
srun --mpi=pmix $commsim run --backend host --transport ucx --collectives allreduce,allgather,reducescatter,broadcast \\
    --algorithms all --sizes 0,12,4100,65540,1048580 --iters 2 --warmup 1 --check --format csv >$work/ucx.csv
EOF
chmod +x "$work/job.sh"
job=$(sbatch --parsable -N 2 --ntasks-per-node=2 -O -t 10 -o "$work/job.out" -e "$work/job.err" "$work/job.sh") ||
  fail "sbatch failed"

if ! state=$(bash "$cluster" wait "$job" 600); then
  cat "$work/job.out" "$work/job.err" 2>/dev/null
  fail "job $job ended $state"
fi

csv=$work/ucx.csv
[ -s "$csv" ] || { cat "$work/job.out" "$work/job.err"; fail "no results printed"; }
rows=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                { print $c["algorithm"], $c["transport"], $c["status"], $c["nodes"], $c["ranks"] }' "$csv")
[ -n "$rows" ] || fail "no points"
bad=$(echo "$rows" | awk '$3 != "ok" && $3 != "skipped"')
[ -z "$bad" ] || { echo "$bad"; cat "$work/job.out" "$work/job.err"; fail "points not ok"; }
bad=$(echo "$rows" | awk '$4 != 2 || $5 != 4')
[ -z "$bad" ] || { echo "$bad"; fail "rows not on 2 nodes x 2 ranks"; }
echo "$rows" | awk '$2 == "ucx" && $3 == "ok" { n++ } END { exit !(n > 0) }' || fail "no point ran ok over ucx"
# Rank 0 (node1) reaches rank 1 on its own node and ranks 2, 3 on the other node.
note=$(grep -m1 ',ucx,' "$csv")
echo "$note" | grep -Eq '(posix|sysv|cma|xpmem|knem)[^;]* to rank 1' || { echo "$note"; fail "UCX did not use shared memory inside the node"; }
echo "$note" | grep -Eq 'tcp[^;]* to ranks 2,3' || { echo "$note"; fail "UCX did not use tcp between the nodes"; }
grep ',mpi,' "$csv" | grep -q 'between nodes' || fail "the mpi rows do not say which BTL crossed the nodes"
echo "PASS (ucx across 2 nodes: $(echo "$rows" | awk '$3 == "ok"' | wc -l) points ok)"
