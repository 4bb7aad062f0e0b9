#!/usr/bin/env bash
# A real Slurm (slurmctld + slurmd + munge) on this one machine, for tests and for trying jobs/.
#
#   cluster.sh start [--nodes N] [--cpus C] [--partition NAME] [--dir DIR] [--subnet A.B.C]
#   cluster.sh stop [--keep] [--force]  cancel every job, stop the daemons, remove namespaces and links
#   cluster.sh status              daemons, nodes and jobs; exit 0 when the cluster answers
#   cluster.sh logs                print the daemon logs
#   cluster.sh check               exit 0 when a cluster can start here (root, the commands it needs),
#                                  else say what is missing and exit 1
#   cluster.sh wait JOBID [SECONDS]  wait for a job to end (default 600 s); prints its state, exit 0
#                                  only when it COMPLETED (`sbatch --wait` can return 0 for a job
#                                  cancelled while pending)
#
# Without --nodes: one node, the machine itself. With --nodes N: N emulated hosts node1..nodeN, each
# a slurmd in its own network, hostname and mount namespace, joined by a bridge on a private /24
# (default 10.213.47.0/24; no default route, no forwarding, so traffic stays between these hosts).
# A --nodes=2 job then really spans two hosts: different hostnames, TCP between them.
#
# Everything lives in a temporary folder (config, state, spool, logs, a private munged and its key);
# `start` prints `export SLURM_CONF=...` on stdout (messages go to stderr; with --nodes also
# `export OMPI_MCA_hwloc_base_binding_policy=none`: the emulated hosts share this machine's cores,
# and Open MPI's default binding would put the first rank of every host on the same core), so
#   eval "$(tests/slurm/cluster.sh start --nodes 3)"
# sets up the shell for sbatch/squeue/scontrol. Needs root and the Debian packages slurmctld,
# slurmd, slurm-client, munge, libpmix-dev and iproute2.
#
# One cluster at a time. It belongs to the script that started it (COMMSIM_SLURM_OWNER=PID says
# otherwise): while that script runs, another `start` waits for it to stop (COMMSIM_SLURM_WAIT
# seconds, default 900) and another caller's `stop` leaves it alone unless --force. A cluster whose
# owner is gone is left over: `start` stops it first. `stop` is safe to run any number of times.
set -euo pipefail

readonly RUN_DIR=/run/commsim-slurm          # where the running cluster is recorded
readonly STATE_FILE=$RUN_DIR/cluster.env
readonly NS_PREFIX=commsim-node              # network namespaces commsim-node1..N
readonly BRIDGE=commsim-br0
readonly VETH_PREFIX=commsim-v               # host ends of the veth pairs
readonly CTLD_PORT=16817                     # not Slurm's default, so a site Slurm is not disturbed
readonly SLURMD_PORT=16818
readonly START_TIMEOUT_S=30

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

need_root_and_tools() {
  [ "$(id -u)" = 0 ] || die "must run as root (it starts daemons and creates network namespaces)"
  local t missing=()
  for t in slurmctld slurmd sinfo squeue scancel sbatch scontrol munged munge unmunge runuser ip nsenter unshare; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing commands: ${missing[*]} (apt-get install slurmctld slurmd slurm-client munge libpmix-dev iproute2 util-linux)"
}

# --- the recorded cluster -------------------------------------------------------------------------

load_state() {  # sets DIR NODES BRIDGE_ADDR OWNER_PID OWNER_START from the state file; false when none
  [ -f "$STATE_FILE" ] || return 1
  DIR= NODES= BRIDGE_ADDR= OWNER_PID= OWNER_START=
  # shellcheck disable=SC1090
  . "$STATE_FILE"
  [ -n "$DIR" ]
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Field N (after the command name) of /proc/PID/stat: 2 = parent PID, 20 = start time.
proc_field() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$2"; }

# The process a cluster belongs to: COMMSIM_SLURM_OWNER, else the script that called this one
# (climbing out of the subshells of `x=$(cluster.sh start)`, which share their script's command line).
caller_owner() {
  if [ -n "${COMMSIM_SLURM_OWNER:-}" ]; then echo "$COMMSIM_SLURM_OWNER"; return; fi
  local p=$PPID pp
  while pp=$(proc_field "$p" 2) && [ -n "$pp" ] && [ "$pp" -gt 1 ] &&
        cmp -s "/proc/$p/cmdline" "/proc/$pp/cmdline"; do
    p=$pp
  done
  echo "$p"
}

# True when the recorded cluster's owner still runs (same PID and start time: not a reused PID).
owner_alive() {
  pid_alive "$OWNER_PID" && [ "$(proc_field "$OWNER_PID" 20)" = "$OWNER_START" ]
}
owner_text() { echo "PID $OWNER_PID ($(tr '\0' ' ' <"/proc/$OWNER_PID/cmdline" 2>/dev/null | cut -c1-100))"; }
pid_from() { [ -s "$1" ] && tr -dc '0-9' <"$1" || true; }

# --- subnet ---------------------------------------------------------------------------------------

ip_to_int() { local IFS=.; set -- $1; echo $(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 )); }

# True when A.B.C.0/24 overlaps a route or address this machine already has (default route aside).
subnet_in_use() {
  local net lo hi prefix pfx base mask rlo rhi
  lo=$(ip_to_int "$1.0"); hi=$((lo + 255))
  while read -r net _; do
    case "$net" in default|"") continue ;; esac
    prefix=${net%/*}; pfx=${net#*/}; [ "$pfx" = "$net" ] && pfx=32
    case "$prefix" in *.*.*.*) ;; *) continue ;; esac
    base=$(ip_to_int "$prefix"); mask=$(( (0xffffffff << (32 - pfx)) & 0xffffffff ))
    rlo=$((base & mask)); rhi=$((rlo + (1 << (32 - pfx)) - 1))
    [ "$rhi" -lt "$lo" ] || [ "$rlo" -gt "$hi" ] || return 0
  done < <(ip -4 route show table all 2>/dev/null | awk '$1 != "broadcast" && $1 != "local" {print $1} $1 == "local" || $1 == "broadcast" {print $2}')
  return 1
}

# --- start ----------------------------------------------------------------------------------------

start_munge() {
  local m=$DIR/munge
  mkdir -p "$m"
  head -c 1024 /dev/urandom >"$m/munge.key"
  chown -R munge: "$m" && chmod 0755 "$m" && chmod 0400 "$m/munge.key"
  runuser -u munge -- munged --socket="$m/munge.socket" --key-file="$m/munge.key" \
    --pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed" \
    || { cat "$m/munged.log" >&2 2>/dev/null; die "munged did not start"; }
  local i
  for ((i = 0; i < 100; i++)); do
    munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$m/munged.log" >&2 2>/dev/null
  die "munged does not answer on $m/munge.socket"
}

start_network() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns
  for ((i = 1; i <= NODES; i++)); do
    ns=$NS_PREFIX$i
    ip netns add "$ns"
    ip link add "$VETH_PREFIX$i" type veth peer name eth0 netns "$ns"
    ip link set "$VETH_PREFIX$i" master "$BRIDGE" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$SUBNET.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}

write_config() {
  local ctl_host ctl_addr nodes_line i conf=$DIR/slurm.conf
  ctl_host=$(hostname -s)
  mkdir -p "$DIR/state" "$DIR/log"
  if [ "$NODES" = 0 ]; then
    ctl_addr=127.0.0.1
    mkdir -p "$DIR/spool/$ctl_host" "$DIR/tmp/$ctl_host"
    nodes_line="NodeName=$ctl_host NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN"
  else
    ctl_addr=$BRIDGE_ADDR
    nodes_line=""
    {
      echo "127.0.0.1 localhost"
      echo "$BRIDGE_ADDR $ctl_host"
      for ((i = 1; i <= NODES; i++)); do echo "$SUBNET.$((10 + i)) node$i"; done
    } >"$DIR/hosts"
    for ((i = 1; i <= NODES; i++)); do
      mkdir -p "$DIR/spool/node$i" "$DIR/tmp/node$i"
      nodes_line+="NodeName=node$i NodeAddr=$SUBNET.$((10 + i)) CPUs=$CPUS State=UNKNOWN"$'\n'
    done
  fi
  cat >"$conf" <<EOF
# Written by tests/slurm/cluster.sh: a throw-away Slurm on one machine, no cgroups, no accounting.
ClusterName=commsim
SlurmctldHost=$ctl_host($ctl_addr)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
# Without it a job asking for more than the partition has stays PENDING forever.
EnforcePartLimits=ALL
# Finished jobs stay visible to scontrol this long (there is no sacct without slurmdbd).
MinJobAge=300
# Time limit: SIGTERM, then SIGKILL this many seconds later (tests want it short).
KillWait=5
OverTimeLimit=0
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmdLogFile=$DIR/log/slurmd-%n.log
# One folder per node: with one shared /tmp every multi-node PMIx step fails (appdir exists).
TmpFS=$DIR/tmp/%n
$nodes_line
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start_daemons() {
  export SLURM_CONF=$DIR/slurm.conf
  slurmctld -c -f "$SLURM_CONF" || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
  if [ "$NODES" = 0 ]; then
    slurmd -f "$SLURM_CONF" -N "$(hostname -s)" || die "slurmd did not start"
    return
  fi
  local i
  for ((i = 1; i <= NODES; i++)); do
    # Not `ip netns exec`: it remounts /sys, and slurmd 22.05 then dies initialising its cgroup
    # plugin. nsenter keeps /sys; the private mount namespace lets each node see its own /etc/hosts.
    nsenter --net="/run/netns/$NS_PREFIX$i" unshare --uts --mount --propagation private sh -c \
      'mount --bind "$1" /etc/hosts && hostname "$2" && exec slurmd -f "$3" -N "$2"' \
      sh "$DIR/hosts" "node$i" "$SLURM_CONF" || die "slurmd on node$i did not start"
  done
}

wait_idle() {
  local want=$(( NODES == 0 ? 1 : NODES )) deadline=$((SECONDS + START_TIMEOUT_S)) idle
  while :; do
    idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
    [ "$idle" -ge "$want" ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      log "only $idle of $want nodes idle after ${START_TIMEOUT_S} s:"
      sinfo -N -l >&2 2>&1 || true
      print_logs
      return 1
    fi
    sleep 0.1
  done
}

cmd_start() {
  NODES=0 CPUS=2 PARTITION=debug DIR= SUBNET=${COMMSIM_SLURM_SUBNET:-10.213.47}
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) NODES=$2; shift 2 ;;
      --cpus) CPUS=$2; shift 2 ;;
      --partition) PARTITION=$2; shift 2 ;;
      --dir) DIR=$2; shift 2 ;;
      --subnet) SUBNET=$2; shift 2 ;;
      *) die "start: unknown option '$1' (see --help)" ;;
    esac
  done
  [[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -le 200 ] || die "--nodes must be 1..200, got '$NODES'"
  [[ "$CPUS" =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive integer, got '$CPUS'"
  [[ "$SUBNET" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--subnet takes the first three numbers of a /24, e.g. 10.213.47"
  need_root_and_tools

  # One cluster at a time (one bridge, fixed namespace names). A cluster whose owner still runs is
  # waited for (another test using it); one whose owner is gone is left over, and stopped.
  mkdir -p "$RUN_DIR"
  exec 8>"$RUN_DIR/lock"
  local me waited=0 wait_s=${COMMSIM_SLURM_WAIT:-900}
  me=$(caller_owner)
  while :; do
    flock 8
    if ! ( load_state && owner_alive && [ "$OWNER_PID" != "$me" ] ); then break; fi
    flock -u 8
    # (load_state only in subshells here: it would overwrite this start's own DIR and NODES)
    [ $waited = 0 ] && log "the cluster of $(load_state; owner_text) is in use; waiting up to $wait_s s for it to stop"
    [ $waited -lt "$wait_s" ] || die "the cluster of $(load_state; owner_text) is still in use after $wait_s s"
    sleep 1
    waited=$((waited + 1))
  done
  if [ -f "$STATE_FILE" ]; then
    log "stopping the cluster recorded by an earlier start (its owner is gone or is this caller)"
    (cmd_stop --force)  # a subshell: it loads the old cluster's settings
  fi
  cleanup_network  # links or namespaces left by a run that died before recording itself
  kill_orphans
  local port
  for port in $CTLD_PORT $SLURMD_PORT; do
    if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
      die "TCP port $port is in use ($(ss -Hltnp "sport = :$port" | grep -o 'users:.*' | head -n 1)); stop that first"
    fi
  done

  BRIDGE_ADDR=$SUBNET.1
  if [ "$NODES" -gt 0 ] && subnet_in_use "$SUBNET"; then
    die "$SUBNET.0/24 overlaps a network this machine already uses; pick another with --subnet or COMMSIM_SLURM_SUBNET"
  fi
  if [ -z "$DIR" ]; then DIR=$(mktemp -d /tmp/commsim-slurm.XXXXXX); else mkdir -p "$DIR"; fi
  DIR=$(cd "$DIR" && pwd)
  chmod 0755 "$DIR"
  printf 'DIR=%q\nNODES=%q\nBRIDGE_ADDR=%q\nOWNER_PID=%q\nOWNER_START=%q\n' "$DIR" "$NODES" "$BRIDGE_ADDR" \
    "$me" "$(proc_field "$me" 20)" >"$STATE_FILE"

  # Anything failing from here on leaves nothing running behind (the folder stays, for its logs).
  trap 'log "start failed; stopping what was started"; cmd_stop --keep --force 2>/dev/null || true; log "logs kept in $DIR"' EXIT
  local t0=$SECONDS
  start_munge
  if [ "$NODES" -gt 0 ]; then start_network; fi
  write_config
  start_daemons
  wait_idle || die "Slurm did not come up within ${START_TIMEOUT_S} s"
  trap - EXIT
  log "up in $((SECONDS - t0)) s: $( [ "$NODES" = 0 ] && echo "1 node ($(hostname -s))" || echo "$NODES nodes (node1..node$NODES, $SUBNET.0/24)"), partition $PARTITION, $CPUS CPUs per node; folder $DIR"
  echo "export SLURM_CONF=$DIR/slurm.conf"
  # The emulated hosts share this machine's cores: Open MPI's default binding would put the first
  # rank of every host on core 0, where they take turns (4 ms a message between hosts, not 5 us).
  if [ "$NODES" -gt 0 ]; then echo "export OMPI_MCA_hwloc_base_binding_policy=none"; fi
}

# --- stop -----------------------------------------------------------------------------------------

# SIGTERM the given PIDs, SIGKILL those still alive after $1 seconds.
terminate() {
  local grace=$1 p i left; shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    left=0
    for p in "$@"; do pid_alive "$p" && left=1; done
    [ $left = 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}

cancel_jobs() {
  local ids i
  ids=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ') || return 0
  [ -n "${ids// /}" ] || return 0
  log "cancelling jobs: $ids"
  # shellcheck disable=SC2086
  scancel $ids 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do  # up to 15 s; stopping slurmd under running jobs leaves orphans
    [ -z "$(squeue -h -o %A 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  log "jobs still listed after 15 s: $(squeue -h -o '%A %T' 2>/dev/null | tr '\n' ' ')"
}

# Daemons of a cluster whose record was lost (its folder is named commsim-slurm.*): they would hold
# the ports. Only called when no recorded cluster runs, so every such daemon is left over.
kill_orphans() {
  local pid args orphans=()
  for pid in $(pgrep -x slurmctld; pgrep -x slurmd; pgrep -x munged); do
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    case "$args" in *"/commsim-slurm."*) orphans+=("$pid") ;; esac
  done
  [ ${#orphans[@]} -gt 0 ] || return 0
  log "stopping daemons left over by an earlier cluster: pids ${orphans[*]}"
  terminate 10 "${orphans[@]}"
}

cleanup_network() {
  local ns p pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$NS_PREFIX[0-9]*$" || true); do
    # Whatever still runs in a node (a job's orphans, a slurmd that ignored SIGTERM) started there.
    pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -n "${pids// /}" ] && terminate 5 $pids
    ip netns delete "$ns" 2>/dev/null || true
  done
  for p in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^$VETH_PREFIX[0-9]*$" || true); do
    ip link delete "$p" 2>/dev/null || true
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE" 2>/dev/null || true
}

cmd_stop() {
  local keep=0 force=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --keep) keep=1 ;;
      --force) force=1 ;;
      *) die "stop: unknown option '$1'" ;;
    esac
    shift
  done
  [ "$(id -u)" = 0 ] || die "must run as root"
  if load_state && [ $force = 0 ] && owner_alive && [ "$OWNER_PID" != "$(caller_owner)" ]; then
    log "the cluster belongs to $(owner_text), which still runs; not stopping it (--force stops it anyway)"
    return 1
  fi
  if load_state; then
    export SLURM_CONF=$DIR/slurm.conf
    local ctld pids=() f
    ctld=$(pid_from "$DIR/slurmctld.pid")
    pid_alive "$ctld" && [ -f "$SLURM_CONF" ] && cancel_jobs
    for f in "$DIR"/slurmd-*.pid; do
      [ -e "$f" ] || continue
      p=$(pid_from "$f"); pid_alive "$p" && pids+=("$p")
    done
    pid_alive "$ctld" && pids+=("$ctld")
    [ ${#pids[@]} -gt 0 ] && terminate 10 "${pids[@]}"
    p=$(pid_from "$DIR/munge/munged.pid")
    pid_alive "$p" && terminate 10 "$p"
    rm -f "$STATE_FILE"
    cleanup_network
    if [ $keep = 0 ] && [[ "$DIR" == /tmp/commsim-slurm.* ]]; then rm -rf "$DIR"; fi
    log "stopped"
  else
    cleanup_network
    log "no cluster recorded; nothing running"
  fi
}

# --- status / logs --------------------------------------------------------------------------------

print_logs() {
  local f
  for f in "$DIR"/munge/munged.log "$DIR"/log/*.log; do
    [ -f "$f" ] || continue
    printf '==== %s (last 40 lines)\n' "$f" >&2
    tail -n 40 "$f" >&2
  done
}

cmd_status() {
  load_state || { log "no cluster recorded"; return 1; }
  export SLURM_CONF=$DIR/slurm.conf
  echo "folder: $DIR"
  echo "export SLURM_CONF=$SLURM_CONF"
  local f p
  for f in "$DIR/munge/munged.pid" "$DIR/slurmctld.pid" "$DIR"/slurmd-*.pid; do
    [ -e "$f" ] || continue
    p=$(pid_from "$f")
    printf '%-16s pid %-8s %s\n' "$(basename "$f" .pid)" "${p:-?}" "$(pid_alive "$p" && echo running || echo STOPPED)"
  done
  sinfo -N -o '%N %P %t %c' || return 1
  squeue -o '%A %j %T %D %N %R' || return 1
}

cmd_logs() { load_state || die "no cluster recorded"; print_logs; }

cmd_wait() {
  local job=${1:?usage: cluster.sh wait JOBID [SECONDS]} limit=${2:-600} state= i
  [ -n "${SLURM_CONF:-}" ] || { load_state || die "no cluster recorded"; export SLURM_CONF=$DIR/slurm.conf; }
  for ((i = 0; i < limit * 5; i++)); do
    state=$(scontrol show job -o "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) break ;;
    esac
    sleep 0.2
  done
  echo "${state:-UNKNOWN}"
  [ "$state" = COMPLETED ]
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status ;;
  logs) shift; cmd_logs ;;
  wait) shift; cmd_wait "$@" ;;
  check) need_root_and_tools ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
