#!/usr/bin/env bash
# Every command of the README's ```sh blocks, run in order in one shell as a user types them, in a
# fresh folder that holds the repository's configs/, results/, analysis/, jobs/, tests/ and the
# build (as build/); then what each printed is checked for the answer it is there to give.
# Set-up commands are left out: `bash .ci/setup`, `cmake`, `ninja` (the build exists) and `bash
# .ci/run` (which runs this test). ```text blocks are output, or commands for a GPU cluster.
#   readme_commands.sh REPO BUILD_DIR WORKDIR
set -uo pipefail
repo=$1
build=$(cd "$2" && pwd)
work=$3
fail() { echo "readme_commands.sh: FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || fail "cannot make $work"
for d in configs results analysis jobs tests; do ln -s "$repo/$d" "$d"; done
ln -s "$build" build

# The commands: the lines of ```sh blocks, continuation lines joined, set-up parts dropped.
awk '
  /^```sh$/ { inblock = 1; next }
  /^```/ { inblock = 0; next }
  inblock {
    line = line $0
    if (line ~ /\\$/) { sub(/\\$/, "", line); next }
    n = split(line, parts, / && /)
    out = ""
    for (i = 1; i <= n; i++)
      if (parts[i] !~ /^(bash \.ci\/|cmake |ninja )/) out = out (out == "" ? "" : " && ") parts[i]
    if (out != "") print out
    line = ""
  }' "$repo/README.md" > commands.txt
[ -s commands.txt ] || fail "no command found in README.md"
echo "== the README's commands:"
cat commands.txt

{
  echo 'set -e'
  echo 'export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1'
  echo 'trap "tests/slurm/cluster.sh stop >/dev/null 2>&1 || true" EXIT'
  i=0
  while IFS= read -r cmd; do
    i=$((i + 1))
    printf 'echo %q\n' "== $i: $cmd"
    printf '{ %s ; } > out%d.txt 2> err%d.txt || { cat out%d.txt err%d.txt; echo "command %d failed: %s" >&2; exit 1; }\n' \
      "$cmd" "$i" "$i" "$i" "$i" "$i" "${cmd//%/%%}"
  done < commands.txt
} > session.sh
bash session.sh || fail "a README command failed (above)"

# What each command is there to answer.
expect() {  # PATTERN WHAT: some command's output has it
  grep -Eq -- "$1" out*.txt || fail "no README command printed $2 ($1)"
}
expect "ring vs tree" "the predict summary"
expect "NCCL picks, by size" "NCCL's choice"
expect "\(GB/s\)" "a table with units"
expect "^portrait:" "the probe's portrait"
expect "local disk +: " "the storage probe"
expect "^ +[0-9]+ +[0-9]+ +float32 +sum +-?[0-9]+ +ring" "a measured row"
expect "^# Out of bounds values : 0 OK$" "nccl-tests' closing line"
expect "median \|err\|" "the report's accuracy"
expect "^# [1-9][0-9]* layouts fit" "a plan that fits"
expect "checkpoint every" "the checkpoint cost"
[ -f mymachine.yaml ] || fail "calibrate wrote no mymachine.yaml"
[ -f report/report.md ] || fail "analysis/report.py wrote no report/report.md"
ls sweep/*merged*.h5 >/dev/null 2>&1 || fail "the Slurm sweep left no merged file in sweep/"
echo "readme_commands.sh: $(wc -l < commands.txt) README commands ran and answered"
