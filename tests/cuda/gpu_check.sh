#!/usr/bin/env bash
# The CUDA backend's check on a GPU machine, in one call.
#
#   tests/cuda/gpu_check.sh --stage [BUILD_DIR]   on the build machine: configure and build for
#       Hopper (sm_90 + PTX, CUDA runtime linked statically) in BUILD_DIR (default build-gpu), then
#       copy commsim, the GPU test programs, and the shared libraries whose versions differ on
#       the GPU machine (Boost.Program_options 1.74, yaml-cpp 0.7, {fmt} 9) into .carry/ (git-ignored).
#   tests/cuda/gpu_check.sh [CARRY_DIR]           on the GPU machine, from the repository root:
#       runs everything from CARRY_DIR (default .carry) with LD_LIBRARY_PATH set to it only (the
#       machine's own Open MPI, HDF5 and NCCL are used; never carry those), writes logs and
#       results under $OUT (default out/gpu-check) and prints a short table last:
#         1. kernels     test_cuda_kernels: copy/reduce/fill against the host, every dtype and op
#         2. collectives 4 ranks sharing the GPU (--share-gpu): CUDA IPC between the ranks, and
#                        every hand-written algorithm of every collective through the executor
#            channels    the same 4 ranks: the multi-channel ring and tree schedules (2, 5 and 16
#                        channels), one block group per channel
#         3. nccl        1 rank (NCCL refuses two ranks on one GPU): the seven NCCL collectives,
#                        unforced and with algorithm/protocol forced
#         4. bench       reduce kernel vs device-to-device copy bandwidth (goal: >= 85%)
#         5. sweep       `commsim run --backend cuda`: 1 rank with NCCL baselines, then 4 ranks
#                        sharing the GPU with hand-written algorithms, then those with --graph
#         6. portrait    `nvidia-smi topo -m` and `commsim probe` in the same step: the GPU link
#                        matrix read through NVML beside nvidia-smi's, and --storage on the local
#                        disk (64 MiB per writer; the file is removed afterwards)
#         7. nccl2       with two GPUs or more only: 2 ranks, NCCL's own choice beside every forced
#                        algorithm x protocol, NCCL's TUNING log kept under $OUT/nccl-log
#                        (COMMSIM_NCCL_LOG_DIR), then `commsim report` on it (NCCL's choice per size)
#         8. nccltests   when .carry/nccl-tests was staged (tests/cuda/nccl_tests_compare.sh --stage):
#                        nccl-tests' all_reduce_perf beside `commsim run --timing nccl-tests`, per size
# NCCL_NVLS_ENABLE=0 stays set throughout (NVLink multicast must stay off on these machines).
set -u

if [[ "${1:-}" == "--stage" ]]; then
  set -e
  build=${2:-build-gpu}
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCOMMSIM_STATIC_CUDART=ON -DCOMMSIM_WITH_CUDA=ON -DCOMMSIM_WITH_NCCL=ON >/dev/null
  ninja -C "$build" -j2 commsim test_cuda_kernels cuda_collectives_check bench_reduce_copy
  rm -rf .carry && mkdir -p .carry
  cp "$build/src/runtime/commsim" "$build/tests/cuda/test_cuda_kernels" "$build/tests/cuda/cuda_collectives_check" \
    "$build/tests/cuda/bench_reduce_copy" .carry/
  for lib in libboost_program_options.so.1.74.0 libyaml-cpp.so.0.7 libfmt.so.9; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" .carry/
  done
  strip .carry/commsim .carry/test_cuda_kernels .carry/cuda_collectives_check .carry/bench_reduce_copy
  du -sh .carry
  exit 0
fi

carry=$(cd "${1:-.carry}" && pwd)
out=${OUT:-$PWD/out/gpu-check}
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 OMPI_MCA_btl=^openib
summary=$(mktemp)

# The machine's NCCL may sit outside the loader's default path: add the folder that holds it.
if ldd "$carry/cuda_collectives_check" | grep -q "libnccl.so.2 => not found"; then
  nccl=$( (ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}'; find / -xdev -name 'libnccl.so.2' 2>/dev/null) | head -1)
  [[ -n "$nccl" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nccl")"
fi
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$carry/commsim" | grep -E "not found|nccl|hdf5|mpi.so|boost|yaml" || true
} >"$out/environment.log" 2>&1

mpirun_=(mpirun --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE)

# step NAME TIMEOUT_S LOG COMMAND...: runs one step, appends its outcome to the summary.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$SECONDS
  echo "### $name: $*" >>"$log"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  printf "%-12s rc=%-4s %4ss  %s\n" "$name" "$rc" "$((SECONDS - t0))" "$(basename "$log")" >>"$summary"
  return $rc
}

step kernels 45 "$out/kernels.log" "$carry/test_cuda_kernels"
step bench 45 "$out/bench.log" "$carry/bench_reduce_copy" --bytes 2147483648 --reps 20
step nccl 60 "$out/collectives.log" "${mpirun_[@]}" -np 1 "$carry/cuda_collectives_check" --nccl --no-executor
step collectives 120 "$out/collectives.log" "${mpirun_[@]}" -np 4 "$carry/cuda_collectives_check" --share-gpu \
  --counts 7,1000,65539,1048576 --csv "$out/collectives.csv"
step channels 120 "$out/channels.log" "${mpirun_[@]}" -np 4 "$carry/cuda_collectives_check" --share-gpu \
  --counts 7,1000,65539,1048576 --channels 2,5,16 --csv "$out/channels.csv"

# One rank: hand-written ring (a local copy through the executor) beside NCCL unforced and forced.
step sweep1 90 "$out/sweep.log" "${mpirun_[@]}" -np 1 "$carry/commsim" run --backend cuda --topology h200-node \
  --collectives allreduce --algorithms ring,nccl,nccl-ring,nccl-tree --protocols none,LL,LL128,Simple \
  --sizes 64KiB,16MiB,256MiB --iters 10 --warmup 3 --check --out "$out/sweep_1rank.h5"
# Four ranks sharing the GPU: every hand-written allreduce through CUDA IPC (timings are time-sliced
# between the four processes, so only correctness and the path are meaningful); nccl is skipped.
step sweep4 90 "$out/sweep.log" "${mpirun_[@]}" -np 4 "$carry/commsim" run --backend cuda --share-gpu \
  --topology h200-node --collectives allreduce --algorithms ring,tree,recursive-doubling,rabenseifner,nccl \
  --sizes 64KiB,4MiB --iters 5 --warmup 1 --check --out "$out/sweep_4rank.h5"
# The 16-bit types as training sends them: hand-written kernels (four ranks sharing the GPU) and
# NCCL (one rank), every result checked exactly.
for dt in bfloat16 float16; do
  step "$dt" 90 "$out/sweep.log" "${mpirun_[@]}" -np 4 "$carry/commsim" run --backend cuda --share-gpu \
    --topology h200-node --dtype "$dt" --collectives allreduce,reducescatter,allgather,reduce,broadcast \
    --algorithms all --sizes 2B,4098B,1MiB,64MiB --iters 3 --warmup 1 --check \
    --out "$out/sweep_4rank_$dt.h5"
  step "nccl-$dt" 60 "$out/sweep.log" "${mpirun_[@]}" -np 1 "$carry/commsim" run --backend cuda \
    --topology h200-node --dtype "$dt" --collectives allreduce,allgather,reducescatter --algorithms nccl \
    --sizes 2B,1MiB,64MiB --iters 3 --warmup 1 --check --out "$out/sweep_1rank_$dt.h5"
done
# The same kernels captured in CUDA graphs and replayed (--graph).
step graph 45 "$out/sweep.log" "${mpirun_[@]}" -np 4 "$carry/commsim" run --backend cuda --share-gpu --graph \
  --topology h200-node --collectives allreduce --algorithms ring,tree --sizes 64KiB,1MiB --iters 5 --warmup 1 --check

# The link matrix through NVML right after nvidia-smi's view of the same machine, into one log.
step topo 15 "$out/portrait.log" nvidia-smi topo -m
step portrait 180 "$out/portrait.log" "${mpirun_[@]}" -np 1 "$carry/commsim" probe --sizes 1MiB:256MiB:x16 --iters 5 \
  --warmup 1 --no-table --storage local-disk="${TMPDIR:-/tmp}" --storage-size 64MiB --storage-time 0.2 \
  --format markdown --out "$out/portrait.h5" --force

# Two GPUs or more: what NCCL ran (its TUNING log, kept) against every variant it could have been
# forced to, and the report's NCCL sections on it.
if (( $(nvidia-smi -L 2>/dev/null | wc -l) >= 2 )); then
  mkdir -p "$out/nccl-log"
  step nccl2 300 "$out/sweep_nccl.log" env COMMSIM_NCCL_LOG_DIR="$out/nccl-log" "${mpirun_[@]}" -x COMMSIM_NCCL_LOG_DIR \
    -np 2 "$carry/commsim" run --backend cuda --topology h200-node \
    --collectives allreduce,allgather,reducescatter,broadcast --algorithms nccl,nccl-ring,nccl-tree \
    --protocols none,LL,LL128,Simple --sizes 1KiB:256MiB:x4 --iters 20 --warmup 5 --check \
    --out "$out/sweep_nccl_2rank.h5"
  step report2 60 "$out/report_nccl.txt" "$carry/commsim" report "$out/sweep_nccl_2rank.h5"
fi

# nccl-tests itself beside `commsim run --timing nccl-tests`, when its sources were staged
# (tests/cuda/nccl_tests_compare.sh --stage NCCL_TESTS_GIT_DIR).
if [[ -d "$carry/nccl-tests" ]]; then
  step nccltests 300 "$out/nccl_tests_compare.log" env OUT="$out/nccl-tests-compare" \
    bash tests/cuda/nccl_tests_compare.sh "$carry"
fi

{
  echo
  echo "== GPU"
  head -2 "$out/environment.log" | tail -1
  echo "== correctness"
  grep -hE "^cuda_collectives_check: [0-9]+ cases|^\[  (PASSED|FAILED)  \]|SKIPPED|^FAIL " \
    "$out/kernels.log" "$out/collectives.log" "$out/channels.log" | head -20
  echo "== reduce vs copy (bytes read + written)"
  grep -A12 "^variant" "$out/bench.log" || tail -3 "$out/bench.log"
  echo "== sweep (busbw GB/s; see sweep.log)"
  grep -E "^#.*commsim run|^# allreduce|^# +size" "$out/sweep.log" | cut -c1-160
  grep -E "^ +[0-9]+ +[0-9]+ +(float|bfloat|int)" "$out/sweep.log" | grep -E "^ +(65536|4194304|268435456) " | head -40
  echo "== portrait (nvidia-smi topo -m, then the probe's link matrix and table)"
  sed -n '/^### topo: /,/^### portrait: /p' "$out/portrait.log" | head -30
  sed -n '/GPU link matrix/,/MPI  /p' "$out/portrait.log" | head -30
  grep -E "^\| " "$out/portrait.log"
  if [[ -f "$out/report_nccl.txt" ]]; then
    echo "== NCCL's choice, 2 ranks (report_nccl.txt; TUNING log in nccl-log/)"
    sed -n "/^## NCCL's choice/,/^## Worst/p" "$out/report_nccl.txt" | grep -v "^## Worst" | head -40
  fi
  if [[ -f "$out/nccl-tests-compare/compare.txt" ]]; then
    echo "== nccl-tests vs commsim --timing nccl-tests, allreduce on one GPU (nccl-tests-compare/)"
    cat "$out/nccl-tests-compare/compare.txt"
  fi
  echo "== steps"
  cat "$summary"
} | tee -a "$out/environment.log"
