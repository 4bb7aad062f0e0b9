#!/usr/bin/env bash
# NCCL's TUNING table end to end: an nccl-tests log printed with NCCL_DEBUG_SUBSYS=TUNING
# (tests/collectives/data/nccl-2.28.9-tuning-table.log) is imported (the table kept with the runs,
# each row's logged algorithm in nccl_algo), calibrated on without a probe (the table written as
# nccl.tuning_table, the two fitted terms on top), and the written topology predicts AllReduce
# Ring/LL with the log's 12.0 us / 70.0 GB/s. A log without a table gives a topology without one.
# Usage: import_nccl_tuning_table.sh COMMSIM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
bin=$1
src=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() {  # expect TEXT FILE: FILE contains TEXT
  grep -qF -- "$1" "$2" || { cat "$2" >&2; fail "no '$1' in $2"; }
}

"$bin" import "$src/tests/collectives/data/nccl-2.28.9-tuning-table.log" --topology dgx-h100 --out run.h5 >import.txt
expect "14 rows, 8 ranks on 1 node, NCCL 2.28.9, NCCL's TUNING table kept" import.txt
"$bin" calibrate run.h5 --topology dgx-h100 --out fitted.yaml >calibrate.txt
expect "NCCL's TUNING table of run.h5, NCCL 2.28.9 (8 ranks on 1 node): written as nccl.tuning_table" calibrate.txt
expect "tuning_table:" fitted.yaml
expect "Ring: { LL: 12 us / 70 GB/s, LL128: 40.6 us / 189.3 GB/s, Simple: 56 us / 205.7 GB/s }" fitted.yaml
expect "NVLS: { LL: off, LL128: off, Simple: 25 us / 272 GB/s }" fitted.yaml

# predict on the written topology: 12 us + 1 MiB / (70 GB/s x bandwidth_scale) + latency_offset.
"$bin" predict --topology fitted.yaml --collectives allreduce --algorithms nccl-ring --protocols LL --sizes 1MiB \
  --nodes 1 --gpus-per-node 8 --format csv >predict.csv
predicted=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "predicted_us") c = i } NR == 2 { print $c }' predict.csv)
scale=$(awk '$1 == "bandwidth_scale:" { print $2 }' fitted.yaml)
offset=$(awk '$1 == "latency_offset:" { print ($3 == "us" ? $2 : $2 * 1e6) }' fitted.yaml)
awk -v p="$predicted" -v s="${scale:-1}" -v o="${offset:-0}" 'BEGIN {
  want = 12.0 + 1048576 / (70.0 * 1e3 * s) + o
  if (p - want > 1e-3 || want - p > 1e-3) { printf "predicted %s us, the log gives %.4f us\n", p, want; exit 1 }
}' || fail "predict did not use the log's Ring/LL numbers"

# A log without a table: no nccl.tuning_table.
"$bin" import "$src/tests/data/nccl-tests/raw/h100sxm_nvs_g4_sweep.txt" --topology dgx-h100 --nodes 1 \
  --gpus-per-node 4 --out plain.h5 >plain.txt
if grep -qF "TUNING table kept" plain.txt; then fail "a log without a table kept one"; fi
"$bin" calibrate plain.h5 --topology dgx-h100 --out plain.yaml >/dev/null
if grep -qF "tuning_table:" plain.yaml; then fail "plain.yaml has a tuning_table"; fi
echo "TUNING table end to end: ok"
