#!/usr/bin/env bash
# commsim's nccl-tests timing against nccl-tests itself, on one GPU.
#
#   tests/cuda/nccl_tests_compare.sh --stage NCCL_TESTS_GIT_DIR [BUILD_DIR]   on the build machine:
#       stages commsim and its libraries into .carry/ (tests/cuda/gpu_check.sh --stage BUILD_DIR), and
#       the sources of NVIDIA/nccl-tests (HEAD of the git directory NCCL_TESTS_GIT_DIR, a clone or a
#       bare mirror) into .carry/nccl-tests (git-ignored).
#   tests/cuda/nccl_tests_compare.sh [CARRY_DIR]   on the GPU machine, from the repository root:
#       builds nccl-tests from CARRY_DIR/nccl-tests against the machine's CUDA and NCCL (sm_90, no MPI),
#       runs `all_reduce_perf -b 8 -e 256M -f 2 -g 1` and `commsim run --backend cuda --algorithms nccl
#       --timing nccl-tests` with the same sizes, iterations and warm-up on one rank, and prints per size
#       both out-of-place times, their ratio and whether they agree within 3%. Logs under $OUT (default
#       out/nccl-tests-compare). Exit status 0 when every size agrees within 3%, 1 otherwise.
#
# Both time the same way (nccl-tests src/common.cu, BenchTime): the iterations launched back to back,
# the host's clock around them and the wait for the last, divided by their count.
set -u

if [[ "${1:-}" == "--stage" ]]; then
  set -e
  src=${2:?give the git directory of NVIDIA/nccl-tests}
  tests/cuda/gpu_check.sh --stage "${3:-build-gpu}"
  mkdir -p .carry/nccl-tests
  git --git-dir="$src" archive HEAD | tar -x -C .carry/nccl-tests
  echo "staged nccl-tests $(git --git-dir="$src" log -1 --format='%h %s') into .carry/nccl-tests"
  exit 0
fi

carry=$(cd "${1:-.carry}" && pwd)
out=${OUT:-$PWD/out/nccl-tests-compare}
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 OMPI_MCA_btl=^openib
# The presets of this checkout (the binary was built elsewhere).
export COMMSIM_CONFIG_DIR=${COMMSIM_CONFIG_DIR:-$PWD/configs}
iters=${ITERS:-100}
warmup=${WARMUP:-10}

# The machine's NCCL: its headers for nccl-tests' build, its library for both programs.
nccl_lib=$( (ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}'; find / -xdev -name 'libnccl.so.2' 2>/dev/null) | head -1)
[[ -n "$nccl_lib" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nccl_lib")"
nccl_h=$( (ls /usr/include/nccl.h 2>/dev/null; find / -xdev -name nccl.h -path '*include*' 2>/dev/null) | head -1)
make_args=(MPI=0 NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90")
nvcc_path=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
[[ -n "$nvcc_path" ]] && make_args+=(CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$nvcc_path")")")")
[[ -n "$nccl_h" && "$nccl_h" != /usr/include/nccl.h ]] && make_args+=(NCCL_HOME="$(dirname "$(dirname "$nccl_h")")")
# The linker finds -lnccl as libnccl.so, which a runtime-only install lacks: point it at libnccl.so.2.
mkdir -p "$out/lib"
ln -sf "$nccl_lib" "$out/lib/libnccl.so"
export LIBRARY_PATH="$out/lib:${LIBRARY_PATH:-}"

build=$carry/nccl-tests/build
if ! make -C "$carry/nccl-tests/src" -j"$(nproc)" "${make_args[@]}" BUILDDIR="$build" "$build/all_reduce_perf" \
  >"$out/build.log" 2>&1; then
  tail -20 "$out/build.log"
  echo "nccl_tests_compare: building nccl-tests failed (log: $out/build.log)"
  exit 2
fi

sizes=(-b 8 -e 256M -f 2)
"$build/all_reduce_perf" "${sizes[@]}" -g 1 -n "$iters" -w "$warmup" >"$out/nccl-tests.log" 2>&1
mpirun --oversubscribe -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x COMMSIM_CONFIG_DIR -np 1 "$carry/commsim" run --backend cuda \
  --topology h200-node --algorithms nccl --timing nccl-tests "${sizes[@]}" -n "$iters" -w "$warmup" \
  --out "$out/commsim.h5" --force >"$out/commsim.log" 2>"$out/commsim.err"

# nccl-tests: size count type redop root time algbw busbw #wrong (out-of-place) ...;
# commsim: size count type redop root algorithm proto time ...
awk '
  FNR == 1 { file++ }
  /^#/ || NF < 9 { next }
  file == 1 && $1 ~ /^[0-9]+$/ { nt[$1] = $6; order[++n] = $1 }
  file == 2 && $1 ~ /^[0-9]+$/ && $6 == "nccl" { cs[$1] = $8 }
  END {
    printf "%12s %14s %14s %8s %s\n", "size(B)", "nccl-tests(us)", "commsim(us)", "ratio", "within 3%"
    bad = 0
    for (i = 1; i <= n; i++) {
      s = order[i]
      if (!(s in cs)) { printf "%12s %14s %14s %8s %s\n", s, nt[s], "-", "-", "missing"; bad++; continue }
      r = cs[s] / nt[s]
      ok = (r >= 0.97 && r <= 1.03)
      if (!ok) bad++
      printf "%12s %14.2f %14.2f %8.3f %s\n", s, nt[s], cs[s], r, ok ? "yes" : "NO"
    }
    printf "%d of %d sizes within 3%%\n", n - bad, n
    exit bad > 0
  }' "$out/nccl-tests.log" "$out/commsim.log" | tee "$out/compare.txt"
