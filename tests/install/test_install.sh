#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then:
#  1. the installed commsim finds its presets and models from its own location (a preset that exists
#     only under the prefix resolves, with COMMSIM_CONFIG_DIR unset) and its answer is the build's;
#  2. a project outside the repository builds against the installed package (find_package(commsim))
#     and prices the same allreduce as `commsim predict`.
#   test_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_install.sh: FAIL: $*" >&2; exit 1; }
unset COMMSIM_CONFIG_DIR

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
bin=$work/prefix/bin/commsim
[ -x "$bin" ] || fail "no bin/commsim under the prefix"
for f in share/commsim/configs/topologies/dgx-h100.yaml share/commsim/configs/models/llama3-8b.yaml \
         lib/cmake/commsim/commsimConfig.cmake include/commsim/model/cost/cost.h; do
  [ -f "$work/prefix/$f" ] || fail "the prefix lacks $f"
done

# 1. A preset only the prefix has: found from the binary's own location.
sed 's/^name: .*/name: installed-only/' "$work/prefix/share/commsim/configs/topologies/dgx-h100.yaml" \
  >"$work/prefix/share/commsim/configs/topologies/installed-only.yaml"
(cd "$work" && "$bin" predict --topology installed-only --nodes 2 --algorithms ring --sizes 1GiB --format csv) \
  >"$work/installed.csv" || fail "the installed binary did not find a preset under its prefix"
"$build/src/runtime/commsim" predict --topology dgx-h100 --nodes 2 --algorithms ring --sizes 1GiB --format csv \
  >"$work/build.csv"
cut -d, -f1-12 "$work/installed.csv" | sed 's/installed-only/dgx-h100/g' >"$work/a"
cut -d, -f1-12 "$work/build.csv" >"$work/b"
diff "$work/a" "$work/b" >/dev/null || { diff "$work/a" "$work/b"; fail "the installed binary answers differently"; }
(cd "$work" && "$bin" plan --topology installed-only --nodes 8 --model llama3-8b --global-batch 64 --seq 2048 --format csv 2>/dev/null) \
  >/dev/null || fail "the installed binary did not find a model file under its prefix"

# 2. An outside project against the installed package.
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "configuring the outside project"; }
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; fail "building the outside project"; }
read -r time_us busbw < <("$work/consumer/price_allreduce" "$work/prefix/share/commsim/configs/topologies/dgx-h100.yaml" 2 1073741824)
predicted_us=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "predicted_us") c = i } NR == 2 { print $c }' "$work/build.csv")
[ -n "$predicted_us" ] || fail "no predicted_us column in predict's CSV"
awk -v a="$time_us" -v b="$predicted_us" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b) }' ||
  fail "the outside project priced $time_us us, commsim predict $predicted_us us"
echo "test_install.sh: installed to a prefix; preset and model found from the binary's location; outside project priced ${time_us} us (${busbw} GB/s busbw), predict ${predicted_us} us"
