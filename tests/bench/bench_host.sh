#!/usr/bin/env bash
# Hand-written ring allreduce against the MPI library's MPI_Allreduce, host memory, measured in one
# `commsim run` (points interleaved: ring then mpi at each size), printed as a table.
#
#   tests/bench/bench_host.sh [NP] [extra commsim run options]
#
# Environment: COMMSIM (default: build/src/runtime/commsim), SIZES (default 16MiB,64MiB,256MiB),
# ITERS (default 20), MPIEXEC (default mpiexec), MPIEXEC_FLAGS (extra launcher flags, e.g.
# "--bind-to core -x LD_LIBRARY_PATH"). EXPLAIN=1 adds two tables that say where the difference
# comes from: the ring at several --piece-size values (how long transfers are cut so reductions run
# on data still in cache), and Open MPI's allreduce algorithms forced one by one (coll/tuned).
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

# run ALGORITHMS [options]: one commsim run, CSV into $csv.
run() {
  local algs=$1
  shift
  # shellcheck disable=SC2086
  "${MPIEXEC:-mpiexec}" --oversubscribe ${MPIEXEC_FLAGS:-} -np "$np" "$commsim" run --collectives allreduce \
      --algorithms "$algs" --sizes "$sizes" --iters "$iters" --warmup 3 --check --format csv --timeout 0 "$@" >"$csv"
}

# CSV columns (reporter.h): 2 algorithm, 8 bytes, 11 measured_median_us, 14 busbw_gbps, 16 wrong.
# Prints "bytes median_us busbw wrong" per line for one algorithm.
rows() { awk -F, -v a="$1" 'NR > 1 && $2 == a { print $8, $11, $14, $16 }' "$csv"; }

run ring,mpi "$@"
echo "allreduce float32 sum, $np ranks, host memory (median over iterations of the max over ranks)"
printf "%10s %14s %14s %16s %16s %10s %7s\n" size "ring time us" "mpi time us" "ring busbw GB/s" "mpi busbw GB/s" \
    ring/mpi "#wrong"
awk -F, 'NR > 1 { t[$2, $8] = $11; b[$2, $8] = $14; w[$2, $8] = $16; if ($2 == "ring") s[n++] = $8 }
  END { for (i = 0; i < n; i++) { k = s[i]
    printf "%6.0f MiB %14.1f %14.1f %16.2f %16.2f %9.2fx %7d\n", k / 1048576, t["ring", k], t["mpi", k], b["ring", k],
           b["mpi", k], t["mpi", k] / t["ring", k], w["ring", k] + w["mpi", k] } }' "$csv"

[ "${EXPLAIN:-0}" = 1 ] || exit 0

echo
echo "ring allreduce busbw GB/s by --piece-size (0: transfers not cut)"
pieces="0 64KiB 256KiB 512KiB 2MiB 8MiB"
declare -A bw
for p in $pieces; do
  run ring --piece-size "$p" "$@"
  while read -r bytes _ busbw _; do bw[$p,$bytes]=$busbw; done < <(rows ring)
done
printf "%10s" size; for p in $pieces; do printf " %9s" "$p"; done; echo
for s in $(rows ring | awk '{ print $1 }'); do
  printf "%6.0f MiB" "$(awk -v s="$s" 'BEGIN { print s / 1048576 }')"
  for p in $pieces; do printf " %9.2f" "${bw[$p,$s]}"; done; echo
done

echo
echo "MPI_Allreduce busbw GB/s with Open MPI's coll/tuned algorithm forced (default: its own choice)"
names=(default basic_linear nonoverlapping recursive_doubling ring segmented_ring rabenseifner)
declare -A mbw
for alg in 0 1 2 3 4 5 6; do
  if [ $alg = 0 ]; then
    run mpi "$@"
  else
    OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=$alg run mpi "$@"
  fi
  while read -r bytes _ busbw _; do mbw[$alg,$bytes]=$busbw; done < <(rows mpi)
done
printf "%10s" size; for alg in 0 1 2 3 4 5 6; do printf " %18s" "${names[$alg]}"; done; echo
for s in $(rows mpi | awk '{ print $1 }'); do
  printf "%6.0f MiB" "$(awk -v s="$s" 'BEGIN { print s / 1048576 }')"
  for alg in 0 1 2 3 4 5 6; do printf " %18.2f" "${mbw[$alg,$s]}"; done; echo
done
