# Sourced by the end-to-end case scripts that run `commsim run` under mpiexec, after they set
# case_name and np: a fresh work folder ($WORKDIR/CASE-npNP) as the current directory, and helpers.
# Environment (set by CTest): COMMSIM (the binary), MPIEXEC, MPIEXEC_NUMPROC_FLAG,
# MPIEXEC_PREFLAGS, WORKDIR.
work="${WORKDIR:?}/${case_name}-np${np}"
rm -rf "$work" && mkdir -p "$work"
cd "$work" || exit 1

fail() { echo "FAIL ($case_name, $np ranks): $*" >&2; exit 1; }
mpirun_commsim() { "$MPIEXEC" ${MPIEXEC_PREFLAGS:-} "$MPIEXEC_NUMPROC_FLAG" "$np" "$COMMSIM" run "$@"; }
# Data lines of a CSV (the header is the first line).
csv_points() { tail -n +2 "$1" 2>/dev/null | grep -c . || true; }  # 0 for an empty or missing file
# The commsim processes under a launcher (its children with Open MPI, grandchildren with MPICH's hydra).
rank_pids() {
  local p
  for p in $(pgrep -P "$1"); do
    if [ "$(cat /proc/$p/comm 2>/dev/null)" = commsim ]; then echo "$p"; else rank_pids "$p"; fi
  done
}
