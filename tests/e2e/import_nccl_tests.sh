#!/usr/bin/env bash
# `commsim import` end to end, as a user runs it: two published nccl-tests logs (one with `#  Rank`
# lines and five collectives; one of the old format under mpirun's tags, without them) into one
# results file, then `commsim report` on it, with the predictions made at import and again on
# another topology. Also: a log with a bad row writes no file and names the line; calibrate on an
# import alone, and on one whose log holds NCCL's TUNING table.
# Usage: import_nccl_tests.sh COMMSIM_BINARY DATA_DIR WORK_DIR
set -euo pipefail
bin=$1
data=$2
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

"$bin" import "$data/raw/rjun_h100_10n_g8.txt" "$data/raw/aws_p4d_efa_a100_2n_ring.txt" \
  --nodes 2 --collective allreduce --topology dgx-h100 --out run.h5 >import.txt 2>import.err
expect "80 ranks on 10 nodes, NCCL 2.29.2" import.txt
expect "56 rows, 16 ranks on 2 nodes" import.txt
expect "wrote run.h5 (156 points in 4 runs" import.txt
[[ -f run.h5 && ! -e run.h5.partial ]] || fail "run.h5 not written"

"$bin" report run.h5 >report.txt
expect "156 points read, 156 measured, 156 with a prediction to compare" report.txt
expect "alltoall       nccl" report.txt
"$bin" report run.h5 --topology dgx-a100 >report_a100.txt
expect "predictions recomputed on topology 'dgx-a100'" report_a100.txt

# The same file again needs --force; in-place rows only, and the verdict printed by import itself.
if "$bin" import "$data/raw/oci_tut_a100_1n.txt" --out run.h5 >/dev/null 2>again.err; then fail "overwrote run.h5"; fi
expect "exists" again.err
"$bin" import "$data/raw/oci_tut_a100_1n.txt" --out run.h5 --force --placement in-place --topology dgx-a100 \
  --report >tut.txt
expect "28 rows, 8 ranks on 1 node" tut.txt
expect "28 points read, 28 measured" tut.txt

# A bad row: the error names the file and line, and nothing is written.
sed '5s/ 31.75 / 3x.75 /' "$data/raw/oci_tut_a100_1n.txt" >bad.log
if "$bin" import bad.log --out bad.h5 >/dev/null 2>bad.err; then fail "imported a bad log"; fi
expect "bad.log:5:" bad.err
[[ ! -e bad.h5 && ! -e bad.h5.partial ]] || fail "a bad log left a file"
"$bin" import bad.log --out bad.h5 --keep-partial >partial.txt 2>partial.err
expect "4 rows" partial.txt
# An imported file alone (no probe): calibrate fits NCCL's model to it, and report uses the fit.
"$bin" import "$data/raw/h100sxm_nvs_g4_sweep.txt" --topology dgx-h100 --nodes 1 --gpus-per-node 4 \
  --placement out-of-place --out sweep.h5 >/dev/null
"$bin" calibrate sweep.h5 --topology dgx-h100 --out fitted.yaml >calibrate.txt
expect "no probe file: fitting NCCL's model alone" calibrate.txt
expect "held-out allreduce" calibrate.txt
grep -q "bandwidth_scale:" fitted.yaml || fail "fitted.yaml has no nccl.bandwidth_scale"
grep -q "gpus_per_thread: 4" fitted.yaml || fail "fitted.yaml lost how the run drove its GPUs (-g 4)"
"$bin" report sweep.h5 --topology fitted.yaml >fitted_report.txt
expect "predictions recomputed on topology 'fitted'" fitted_report.txt
# Imported without a topology: calibrate asks for one.
"$bin" import "$data/raw/oci_tut_a100_1n.txt" --out notopo.h5 >/dev/null
if "$bin" calibrate notopo.h5 --out nofit.yaml >/dev/null 2>nofit.err; then fail "fitted without a topology"; fi
expect "pass --topology NAME" nofit.err
# NCCL's TUNING table (tests/collectives/data/nccl-2.28.9-tuning-table.log, printed with
# NCCL_DEBUG_SUBSYS=TUNING): kept by import, written by calibrate as nccl.tuning_table (the two
# fitted terms on top), and the written topology predicts AllReduce Ring/LL with the log's
# 12.0 us / 70.0 GB/s.
"$bin" import "$data/../../collectives/data/nccl-2.28.9-tuning-table.log" --topology dgx-h100 --out tuned.h5 >tuned_import.txt
expect "14 rows, 8 ranks on 1 node, NCCL 2.28.9, NCCL's TUNING table kept" tuned_import.txt
"$bin" calibrate tuned.h5 --topology dgx-h100 --out tuned.yaml >tuned_calibrate.txt
expect "NCCL's TUNING table of tuned.h5, NCCL 2.28.9 (8 ranks on 1 node): written as nccl.tuning_table" tuned_calibrate.txt
expect "tuning_table:" tuned.yaml
expect "Ring: { LL: 12 us / 70 GB/s, LL128: 40.6 us / 189.3 GB/s, Simple: 56 us / 205.7 GB/s }" tuned.yaml
expect "NVLS: { LL: off, LL128: off, Simple: 25 us / 272 GB/s }" tuned.yaml
# predict on the written topology: 12 us + 1 MiB / (70 GB/s x bandwidth_scale) + latency_offset.
"$bin" predict --topology tuned.yaml --collectives allreduce --algorithms nccl-ring --protocols LL --sizes 1MiB \
  --nodes 1 --gpus-per-node 8 --format csv >tuned_predict.csv
predicted=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "predicted_us") c = i } NR == 2 { print $c }' tuned_predict.csv)
scale=$(awk '$1 == "bandwidth_scale:" { print $2 }' tuned.yaml)
offset=$(awk '$1 == "latency_offset:" { print ($3 == "us" ? $2 : $2 * 1e6) }' tuned.yaml)
awk -v p="$predicted" -v s="${scale:-1}" -v o="${offset:-0}" 'BEGIN {
  want = 12.0 + 1048576 / (70.0 * 1e3 * s) + o
  if (p - want > 1e-3 || want - p > 1e-3) { printf "predicted %s us, the log gives %.4f us\n", p, want; exit 1 }
}' || fail "predict did not use the log's Ring/LL numbers"

# The sweep's log has no table: fitted.yaml has none.
if grep -qF "tuning_table:" fitted.yaml; then fail "fitted.yaml has a tuning_table"; fi
echo "import end to end: ok"
