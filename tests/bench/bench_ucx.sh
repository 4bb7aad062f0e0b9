#!/usr/bin/env bash
# Hand-written ring allreduce over UCX vs the same schedule over MPI point-to-point vs the MPI
# library's MPI_Allreduce, host memory. One MPI job runs the three interleaved, iteration by
# iteration, so the ratios come from one run under the same load (tests/ucx/bench_ucx.cc); then
# `commsim run --transport ucx` measures the ring and MPI_Allreduce the way users see them.
#
#   tests/bench/bench_ucx.sh [NP] [extra bench_ucx options, e.g. --iters 50]
#
# NP defaults to 2; on a 16-core machine run it with 16. Environment: BUILD (default build; the
# folder with tests/ucx/bench_ucx and src/runtime/commsim), SIZES (default 1KiB,1MiB,64MiB),
# MPIEXEC (default mpiexec), MPIEXEC_FLAGS (default --oversubscribe --bind-to none). Run as root:
# OMPI_ALLOW_RUN_AS_ROOT=1 is set here. Open MPI's UCX PML: OMPI_MCA_pml=ucx (see the README).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
np=${1:-2}
shift || true
build=${BUILD:-$here/../../build}
sizes=${SIZES:-1KiB,1MiB,64MiB}
bench=$build/tests/ucx/bench_ucx
commsim=$build/src/runtime/commsim
[ -x "$bench" ] || { echo "bench_ucx.sh: $bench not built (a build with UCX: ninja -C $build bench_ucx commsim)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2086
launch() { "${MPIEXEC:-mpiexec}" ${MPIEXEC_FLAGS:---oversubscribe --bind-to none} -np "$np" "$@"; }

echo "== interleaved in one job (bench_ucx)"
launch "$bench" --sizes "$sizes" "$@"

if [ -x "$commsim" ]; then
  echo
  echo "== commsim run --transport ucx (ring over UCX, mpi = MPI_Allreduce; median us)"
  csv=$(mktemp)
  trap 'rm -f "$csv"' EXIT
  launch "$commsim" run --backend host --transport ucx --collectives allreduce --algorithms ring,mpi \
      --sizes "$sizes" --iters 20 --warmup 3 --check --format csv >"$csv"
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
           { t[$c["algorithm"], $c["bytes"]] = $c["measured_median_us"]; if (!($c["bytes"] in seen)) { seen[$c["bytes"]] = 1; order[n++] = $c["bytes"] } }
           END { printf "%12s %14s %14s %10s\n", "bytes", "ring/ucx us", "mpi us", "ucx/mpi"
                 for (i = 0; i < n; i++) { b = order[i]; printf "%12s %14.1f %14.1f %10.2f\n", b, t["ring", b], t["mpi", b], t["ring", b] / t["mpi", b] } }' "$csv"
fi
