#!/usr/bin/env bash
# Submits a commsim sweep across node counts to Slurm: one job per node count (or one job array),
# each writing its own HDF5 file, then a final job that merges them and writes the report.
#
#   jobs/sweep.sh --nodes 1,2,4,8 --gpus-per-node 8 --partition gpu --time 00:30:00 \
#       --results results/h100 -- --backend cuda --collectives allreduce,allgather \
#       --algorithms ring,tree,nccl --sizes 8B:4GiB
#
# options:
#   --nodes LIST          node counts, comma-separated (required)
#   --gpus-per-node G     GPUs to request per node (sbatch --gpus-per-node); 0 (default) asks for none
#   --ranks-per-node R    MPI ranks per node (default: G, or 2 when G is 0: a one-node job still
#                         measures communication)
#   --partition P         the partition (default: the cluster's default partition)
#   --time T              time limit of each measuring job (default 00:30:00)
#   --results DIR         where the files go (default: results); DIR/nodes<N>-job<ID>.h5 per job,
#                         DIR/merged.h5 and DIR/report.txt from the final job, DIR/logs/ the job logs
#   --launcher L          srun (srun --mpi=pmix, default) or mpirun
#   --array               one job array (one task per node count) instead of one job per node count
#   --resume              continue the newest DIR/nodes<N>-job*.h5 of each node count (a job killed at
#                         its time limit keeps its finished points): only the missing points run
#   --binary PATH         the commsim binary (default: commsim on PATH, else build/src/runtime/commsim)
#   --overcommit          sbatch --overcommit (more ranks than CPUs: small test clusters)
#   --sbatch-arg ARG      one more sbatch option for every job, e.g. --sbatch-arg=--account=proj (repeatable)
#   --wait                wait until every job has ended, print how each ended, exit 0 only when all
#                         completed
#   --poll SECONDS        how often --wait asks Slurm (default 5)
#   --dry-run             validate and print the sbatch commands without submitting
#   -h, --help            this text
# Everything after `--` goes to `commsim run` (not --out/--resume: each job names its own file).
#
# Before submitting it checks that the partition exists and is up, that it has enough nodes for
# the largest node count (and GPUs when asked for), and that the binary exists and runs. The
# binary and DIR must be on a file system the compute nodes share.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { printf 'sweep.sh: %s\n' "$*"; }
die() { printf 'sweep.sh: error: %s\n' "$*" >&2; exit 2; }
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

nodes_list= gpus=0 ranks_per_node= partition= time_limit=00:30:00 results=results launcher=srun
array=0 resume=0 binary= overcommit=0 wait=0 poll=5 dry_run=0
sbatch_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes_list=${2:-}; shift 2 ;;
    --gpus-per-node) gpus=${2:-}; shift 2 ;;
    --ranks-per-node) ranks_per_node=${2:-}; shift 2 ;;
    --partition) partition=${2:-}; shift 2 ;;
    --time) time_limit=${2:-}; shift 2 ;;
    --results) results=${2:-}; shift 2 ;;
    --launcher) launcher=${2:-}; shift 2 ;;
    --array) array=1; shift ;;
    --resume) resume=1; shift ;;
    --binary) binary=${2:-}; shift 2 ;;
    --overcommit) overcommit=1; shift ;;
    --sbatch-arg) sbatch_extra+=("${2:-}"); shift 2 ;;
    --sbatch-arg=*) sbatch_extra+=("${1#--sbatch-arg=}"); shift ;;
    --wait) wait=1; shift ;;
    --poll) poll=${2:-}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (commsim run options go after --; see --help)" ;;
  esac
done
run_args=("$@")

# --- the options themselves ----------------------------------------------------------------------
[ -n "$nodes_list" ] || die "--nodes is required, e.g. --nodes 1,2,4,8"
IFS=, read -r -a node_counts <<<"$nodes_list"
for n in "${node_counts[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--nodes: '$n' is not a positive whole number (in '$nodes_list')"
done
if [ "$(printf '%s\n' "${node_counts[@]}" | sort | uniq -d)" != "" ]; then die "--nodes: '$nodes_list' repeats a node count"; fi
[[ "$gpus" =~ ^[0-9]+$ ]] || die "--gpus-per-node must be a whole number, got '$gpus'"
[ -n "$ranks_per_node" ] || ranks_per_node=$(( gpus > 0 ? gpus : 2 ))
[[ "$ranks_per_node" =~ ^[1-9][0-9]*$ ]] || die "--ranks-per-node must be a positive whole number, got '$ranks_per_node'"
case "$launcher" in srun|mpirun) ;; *) die "--launcher must be srun or mpirun, not '$launcher'" ;; esac
[[ "$poll" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--poll takes seconds, got '$poll'"
for a in "${run_args[@]}"; do
  case "$a" in --out|--out=*|--resume|--resume=*|--force)
    die "'$a' after --: each job names its own results file (DIR/nodes<N>-job<ID>.h5); use --results and --resume of sweep.sh" ;;
  esac
done
max_nodes=0
for n in "${node_counts[@]}"; do [ "$n" -gt "$max_nodes" ] && max_nodes=$n; done

# The topology the jobs predict on (commsim run's default: local-cpu): an uncalibrated one (no
# `calibrated:` section) describes the machine its preset was written for, not these nodes.
topology=local-cpu
prev=
for a in "${run_args[@]}"; do
  case "$a" in --topology=*) topology=${a#--topology=} ;; esac
  [ "$prev" = --topology ] && topology=$a
  prev=$a
done
topology_file=$topology
[ -f "$topology_file" ] || topology_file=$here/../configs/topologies/$topology.yaml
uncalibrated=0
if [ -f "$topology_file" ] && ! grep -q '^calibrated:' "$topology_file"; then uncalibrated=1; fi

# --- Slurm and the partition ---------------------------------------------------------------------
for t in sbatch scontrol sinfo; do
  command -v "$t" >/dev/null 2>&1 || die "'$t' not found: run this on a Slurm login node (or load the Slurm module)"
done
if ! out=$(sinfo -h -o '%P' 2>&1); then die "cannot reach Slurm: $out"; fi
partitions=$(tr -d '*' <<<"$out" | sort -u | paste -sd, | sed 's/,/, /g')
if [ -z "$partition" ]; then
  partition=$(grep '\*$' <<<"$out" | tr -d '*' | head -n 1)
  [ -n "$partition" ] || die "this cluster has no default partition; pass --partition (one of: $partitions)"
fi
if ! part_line=$(scontrol -o show partition "$partition" 2>/dev/null) || [ -z "$part_line" ]; then
  die "partition '$partition' does not exist; this cluster has: $partitions"
fi
field() { grep -o " $1=[^ ]*" <<<" $part_line" | head -n 1 | cut -d= -f2-; }
total_nodes=$(field TotalNodes)
part_max=$(field MaxNodes)
part_state=$(field State)
[ "$part_state" = UP ] || die "partition '$partition' is $part_state, not UP: jobs would wait forever"
if [ "$max_nodes" -gt "${total_nodes:-0}" ]; then
  die "--nodes asks for $max_nodes nodes, but partition '$partition' has only ${total_nodes:-0} nodes"
fi
if [[ "$part_max" =~ ^[0-9]+$ ]] && [ "$max_nodes" -gt "$part_max" ]; then
  die "--nodes asks for $max_nodes nodes, but partition '$partition' allows at most $part_max nodes per job (MaxNodes)"
fi
if [ "$gpus" -gt 0 ] && ! sinfo -h -p "$partition" -o '%G' | grep -q 'gpu'; then
  die "--gpus-per-node $gpus, but the nodes of partition '$partition' have no GPUs (gres: $(sinfo -h -p "$partition" -o '%G' | sort -u | tr '\n' ' '))"
fi

# --- the binary and the results folder -----------------------------------------------------------
if [ -z "$binary" ]; then
  binary=$(command -v commsim 2>/dev/null || true)
  [ -n "$binary" ] || binary=$here/../build/src/runtime/commsim
fi
[ -e "$binary" ] || die "commsim binary '$binary' does not exist (build it, or pass --binary PATH)"
[ -x "$binary" ] && [ -f "$binary" ] || die "commsim binary '$binary' is not an executable file"
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
version=$("$binary" --version 2>&1)
rc=$?
[ $rc = 0 ] || die "commsim binary '$binary' does not run (\`$binary --version\` exits with $rc${version:+: $(head -n 3 <<<"$version")})"
mkdir -p "$results/logs" 2>/dev/null || die "cannot create results folder '$results/logs'"
results=$(cd "$results" && pwd)
[ -w "$results" ] || die "results folder '$results' is not writable"

# --- resume: the newest file of each node count --------------------------------------------------
declare -A resume_file=()
if [ $resume = 1 ]; then
  for n in "${node_counts[@]}"; do
    newest=$(ls -t "$results"/nodes"$n"-job*.h5 "$results"/nodes"$n"-job*.h5.partial 2>/dev/null | head -n 1)
    [ -n "$newest" ] && resume_file[$n]=${newest%.partial}
  done
fi

# --- submit ---------------------------------------------------------------------------------------
sbatch_common=(--parsable --partition="$partition" --time="$time_limit" --ntasks-per-node="$ranks_per_node")
[ "$gpus" -gt 0 ] && sbatch_common+=(--gpus-per-node="$gpus")
[ $overcommit = 1 ] && sbatch_common+=(--overcommit)
sbatch_common+=("${sbatch_extra[@]}")
job_args=(--launcher "$launcher" --results "$results" --binary "$binary" --ranks-per-node "$ranks_per_node")
for n in "${!resume_file[@]}"; do job_args+=(--resume-for "$n:${resume_file[$n]}"); done
export COMMSIM_JOBS_DIR=$here

submitted=()  # job ids to cancel if a later submission fails
submit() {  # prints the job id
  local id
  if [ $dry_run = 1 ]; then
    printf 'sweep.sh: would run: sbatch' >&2; printf ' %q' "$@" >&2; echo >&2
    echo "DRYRUN$((${#submitted[@]} + 1))"
    return 0
  fi
  if ! id=$(sbatch "$@" 2>&1); then
    printf 'sweep.sh: error: sbatch refused: %s\n' "$id" >&2
    return 1
  fi
  id=${id%%;*}  # --parsable prints "id" or "id;cluster"
  echo "$id"
}
abort() {
  if [ ${#submitted[@]} -gt 0 ] && [ $dry_run = 0 ]; then
    say "cancelling the jobs already submitted: ${submitted[*]}" >&2
    scancel "${submitted[@]}" 2>/dev/null
  fi
  die "$1"
}

declare -a job_ids=() job_files=() job_logs=()
if [ $array = 0 ]; then
  for n in "${node_counts[@]}"; do
    id=$(submit "${sbatch_common[@]}" --job-name="commsim-n$n" --nodes="$n" \
      --output="$results/logs/nodes$n-job%j.out" "$here/commsim.sbatch" "${job_args[@]}" -- "${run_args[@]}") \
      || abort "submitting the $n-node job failed"
    submitted+=("$id")
    job_ids+=("$id")
    job_files+=("${resume_file[$n]:-$results/nodes$n-job$id.h5}")
    job_logs+=("$results/logs/nodes$n-job$id.out")
  done
  depend=$(IFS=:; echo "${job_ids[*]}")
else
  # An array's tasks share one resource request: submit it held with the smallest node count, give
  # every other task its own node count, then release it. (Growing a pending task works; shrinking
  # one leaves it pending forever with BadConstraints: its CPU count stays.)
  last=$((${#node_counts[@]} - 1))
  min_nodes=$(printf '%s\n' "${node_counts[@]}" | sort -n | head -n 1)
  array_id=$(submit "${sbatch_common[@]}" --hold --array="0-$last" --job-name=commsim-sweep --nodes="$min_nodes" \
    --output="$results/logs/array-job%A_%a.out" "$here/commsim.sbatch" "${job_args[@]}" -- "${run_args[@]}") \
    || abort "submitting the job array failed"
  submitted+=("$array_id")
  for i in $(seq 0 "$last"); do
    n=${node_counts[$i]}
    if [ "$n" != "$min_nodes" ] && [ $dry_run = 0 ]; then
      msg=$(scontrol update JobId="${array_id}_$i" NumNodes="$n-$n" NumTasks=$((n * ranks_per_node)) 2>&1) \
        || abort "setting array task $i to $n nodes failed: $msg"
    fi
    job_ids+=("${array_id}_$i")
    job_files+=("${resume_file[$n]:-$results/nodes$n-job${array_id}_$i.h5}")
    job_logs+=("$results/logs/array-job${array_id}_$i.out")
  done
  if [ $dry_run = 0 ]; then
    msg=$(scontrol release "$array_id" 2>&1) || abort "releasing the job array failed: $msg"
  fi
  depend=$array_id
fi

merge_args=(--results "$results" --binary "$binary")
for i in "${!job_ids[@]}"; do merge_args+=(--job "${node_counts[$i]}:${job_ids[$i]}:${job_files[$i]}"); done
merge_id=$(submit --parsable --partition="$partition" --time=00:15:00 --job-name=commsim-merge \
  --dependency="afterany:$depend" --output="$results/logs/merge-job%j.out" "${sbatch_extra[@]}" \
  "$here/merge.sbatch" "${merge_args[@]}") || abort "submitting the merge job failed"
submitted+=("$merge_id")

say "$version"
say "partition $partition, $ranks_per_node ranks per node$( [ "$gpus" -gt 0 ] && echo ", $gpus GPUs per node"), launcher $launcher, time limit $time_limit"
for i in "${!job_ids[@]}"; do
  printf 'sweep.sh:   nodes=%-4s job %-12s -> %s%s\n' "${node_counts[$i]}" "${job_ids[$i]}" "${job_files[$i]}" \
    "$( [ -n "${resume_file[${node_counts[$i]}]:-}" ] && echo ' (resumed)')"
done
say "  merge     job $merge_id (after all of them) -> $results/merged.h5, $results/report.txt"
say "logs: $results/logs/"
if [ $uncalibrated = 1 ]; then
  say "note: topology '$topology' is not calibrated for these nodes (no calibrated: section): the predictions are the"
  say "  preset's, and report.txt says how far off that usually is. Calibrate on one allocation first:"
  say "  srun -N 2 commsim probe --out portrait.h5; commsim calibrate portrait.h5 --out cluster.yaml; then -- --topology cluster.yaml"
fi
say "jobs: ${job_ids[*]} $merge_id"
[ $dry_run = 1 ] && { say "dry run: nothing submitted"; exit 0; }
say "watch: squeue -j $(printf '%s\n' "${job_ids[@]%%_*}" "$merge_id" | awk '!seen[$0]++' | paste -sd,)"
[ $wait = 1 ] || exit 0

# --- wait -----------------------------------------------------------------------------------------
# Polls `scontrol show job` (not `sbatch --wait`, which polls slowly and can report success for a
# job cancelled while pending). A job that can never start is reported instead of waited for.
terminal='^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|PREEMPTED|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE)$'
hopeless='^(BadConstraints|PartitionNodeLimit|PartitionConfig|PartitionTimeLimit|InvalidAccount|InvalidQOS|DependencyNeverSatisfied|JobHeldAdmin)$'
state_of() {  # "STATE REASON EXITCODE" of a job id or array task, "GONE" when Slurm forgot it
  local line
  line=$(scontrol show job -o "$1" 2>/dev/null | head -n 1)
  [ -n "$line" ] || { echo GONE; return; }
  echo "$(grep -o 'JobState=[A-Z_]*' <<<"$line" | cut -d= -f2) $(grep -o ' Reason=[^ ]*' <<<"$line" | cut -d= -f2) $(grep -o ' ExitCode=[0-9:]*' <<<"$line" | cut -d= -f2)"
}
all_ids=("${job_ids[@]}" "$merge_id")
while :; do
  pending=0
  for id in "${all_ids[@]}"; do
    read -r st reason _ < <(state_of "$id")
    [[ "$st" =~ $terminal ]] || [ "$st" = GONE ] && continue
    if [[ "$reason" =~ $hopeless ]]; then
      say "error: job $id cannot start ($st, reason $reason); cancel the sweep with: scancel ${all_ids[*]%%_*}" >&2
      exit 1
    fi
    pending=1
  done
  [ $pending = 0 ] && break
  sleep "$poll"
done
failed=0
for i in "${!all_ids[@]}"; do
  id=${all_ids[$i]}
  read -r st reason code < <(state_of "$id")
  if [ "$id" = "$merge_id" ]; then what="merge"; log=$results/logs/merge-job$id.out
  else what="nodes=${node_counts[$i]}"; log=${job_logs[$i]}; fi
  printf 'sweep.sh:   %-10s job %-12s %s (exit %s)\n' "$what" "$id" "$st" "${code:-?}"
  if [ "$st" != COMPLETED ]; then
    failed=1
    if [ -f "$log" ]; then
      echo "sweep.sh:     last lines of $log:"
      tail -n 5 "$log" | sed 's/^/sweep.sh:       /'
    fi
  fi
done
[ -f "$results/report.txt" ] && say "report: $results/report.txt"
if [ $failed = 1 ]; then say "error: not every job completed (see above)" >&2; exit 1; fi
say "all jobs completed; merged results: $results/merged.h5"
