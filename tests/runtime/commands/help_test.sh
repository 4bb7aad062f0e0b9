#!/usr/bin/env bash
# Every command's --help: metavars instead of Boost's `arg` placeholder, lines of at most 100
# characters, positional arguments under "arguments:", every algorithm name in predict's.
# Usage: help_test.sh COMMSIM
set -u
commsim=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
commands=$("$commsim" --help | awk '/^commands:/ {on = 1; next} on && NF {print $1}')
[ -n "$commands" ] || fail "commsim --help lists no commands"
for c in $commands; do
  help=$("$commsim" "$c" --help 2>&1) || fail "commsim $c --help: exit status $?"
  grep -Eq '^usage: commsim '"$c"' ' <<<"$help" || fail "commsim $c --help has no usage line"
  bad=$(grep -E ' arg( |$)|\[ *arg *\]' <<<"$help") && fail "commsim $c --help shows Boost's 'arg' placeholder: $bad"
  long=$(awk 'length > 100' <<<"$help") && [ -n "$long" ] && fail "commsim $c --help has lines over 100 characters: $long"
  if grep -Eq '^usage: .*\.\.\.$' <<<"$help"; then
    grep -q '^arguments:' <<<"$help" || fail "commsim $c takes positional arguments but --help has no 'arguments:'"
  fi
done
predict=$("$commsim" predict --help)
for a in ring tree rabenseifner nccl nccl-ring nccl-tree nccl-nvls nccl-nvlstree nccl-collnet-direct nccl-pat mpi; do
  grep -Eq "(^|[ ,:(])$a([,;. )]|$)" <<<"$predict" || fail "commsim predict --help does not list algorithm $a"
done
echo "ok: $(wc -w <<<"$commands") commands"
