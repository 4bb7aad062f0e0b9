#!/usr/bin/env bash
# Hand-written ring allreduce against the MPI library's MPI_Allreduce, host memory, measured in one
# `commsim run` (points interleaved: ring then mpi at each size), printed as a table.
#
#   tests/bench/bench_host.sh [NP] [extra commsim run options]
#
# Environment: COMMSIM (default: build/src/runtime/commsim), SIZES (default 16MiB,64MiB,256MiB),
# ITERS (default 20), MPIEXEC (default mpiexec). Run as root: OMPI_ALLOW_RUN_AS_ROOT=1 is set here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
np=${1:-2}
shift || true
commsim=${COMMSIM:-$here/../../build/src/runtime/commsim}
sizes=${SIZES:-16MiB,64MiB,256MiB}
iters=${ITERS:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
"${MPIEXEC:-mpiexec}" --oversubscribe -np "$np" "$commsim" run --collectives allreduce --algorithms ring,mpi \
    --sizes "$sizes" --iters "$iters" --warmup 3 --check --format csv "$@" >"$csv"

# CSV columns (reporter.h): 2 algorithm, 8 bytes, 11 measured_median_us, 13 algbw_gbps, 14 busbw_gbps, 16 wrong.
awk -F, -v np="$np" '
  NR == 1 { next }
  { key = $8; med[$2, key] = $11; bus[$2, key] = $14; wrong[$2, key] = $16; if (!(key in seen)) { seen[key] = 1; order[n++] = key } }
  END {
    printf "allreduce float32 sum, %d ranks, host memory (median of the per-iteration max over ranks)\n", np
    printf "%12s %14s %14s %16s %16s %10s %8s\n", "size", "ring time us", "mpi time us", "ring busbw GB/s", "mpi busbw GB/s", "ring/mpi", "#wrong"
    for (i = 0; i < n; i++) {
      k = order[i]
      printf "%12s %14.1f %14.1f %16.2f %16.2f %9.2fx %8s\n", k, med["ring", k], med["mpi", k], bus["ring", k], bus["mpi", k],
             med["mpi", k] / med["ring", k], wrong["ring", k] + wrong["mpi", k]
    }
  }' "$csv"
