#!/usr/bin/env bash
# `commsim probe --storage` on real file systems made for the test: a tmpfs, a ramfs (which refuses
# O_DIRECT), an ext4 file system on a loop device, a full one and a read-only one. Checks the rows against the sizes written and the
# times taken, the portrait table (--format markdown), calibrate's storage: section, and that a bad
# path, a full disk and a read-only mount are clear errors that leave no file behind.
# Usage: storage_probe_test.sh COMMSIM_BINARY WORKDIR. Needs root (mount, losetup), as CI has;
# everything it mounts and attaches is undone on exit, failures included.
set -euo pipefail
bin=$(realpath "$1")
work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root to mount a tmpfs and loop devices (CI runs as root); run as root"
for tool in mount umount losetup mkfs.ext4 truncate mpiexec; do
  command -v "$tool" >/dev/null || fail "needs $tool (Debian: mount, e2fsprogs, openmpi-bin)"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mounts=()
loops=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true; done
  for l in "${loops[@]}"; do losetup -d "$l" || true; done
}
trap cleanup EXIT

# A fresh work folder; mounts left by a killed earlier run are undone first.
if [[ -d "$work/mnt" ]]; then
  for m in "$work"/mnt/*; do mountpoint -q "$m" && umount -l "$m"; done
fi
rm -rf "$work" && mkdir -p "$work"/mnt/{tmpfs,ramfs,ext4,full,ro} && cd "$work"

mount -t tmpfs -o size=64m commsim-test-tmpfs mnt/tmpfs && mounts+=("$work/mnt/tmpfs")
mount -t ramfs commsim-test-ramfs mnt/ramfs && mounts+=("$work/mnt/ramfs")
ext4_loop() {  # ext4_loop IMAGE SIZE MOUNTPOINT: an ext4 file system on a loop device, in $dev
  truncate -s "$2" "$1"
  dev=$(losetup -f --show "$1") || fail "no free loop device (losetup -f)"
  loops+=("$dev")
  mkfs.ext4 -q -F "$dev" >/dev/null
  mount "$dev" "$3"
  mounts+=("$work/$3")
}
ext4_loop ext4.img 64M mnt/ext4
ext4_dev=$dev
ext4_loop full.img 8M mnt/full
ext4_loop ro.img 8M mnt/ro
dd if=/dev/zero of=mnt/full/filler bs=1M 2>/dev/null || true  # until the disk is full
mount -o remount,ro mnt/ro

no_probe_files() {
  local left
  left=$(find mnt -name '.commsim-probe-*' 2>/dev/null | head -3)
  [[ -z "$left" ]] || fail "probe files left behind: $left"
}
probe() { mpiexec --oversubscribe -np 2 "$bin" probe --sizes 8B:64B:x8 --iters 2 --warmup 0 --no-table "$@"; }

# 1. tmpfs and the loop device, both ranks of the node; 8 MiB per writer.
probe --storage ram="$work/mnt/tmpfs" "$work/mnt/ext4" "$work/mnt/ramfs" shared:team="$work/mnt/ext4" --storage-size 8MiB --storage-time 0.05 --format markdown \
  --out portrait.h5 >probe.txt 2>probe.err || { cat probe.err >&2; fail "the storage probe failed"; }
no_probe_files
# Storage rows: tier mode host op QD writers MiB seconds MB/s IOPS mean_us p99_us how...
rows() { awk -v t="$1" -v m="$2" -v o="$3" '$1 == t && $2 == m && $4 == o' probe.txt; }
for tier in ram local-ext4 local-ramfs team; do
  for mode in one-per-node all-ranks; do
    writers=$([[ $mode == all-ranks ]] && echo 2 || echo 1)
    for op in write read; do
      line=$(rows "$tier" "$mode" "$op")
      [[ -n "$line" ]] || fail "no $tier $mode $op row in the output"
      # The bytes are the files written: 8 MiB per writer; MB/s is those bytes over the seconds shown.
      echo "$line" | awk -v w="$writers" '{
        if ($6 != w) { print "writers " $6 " not " w; exit 1 }
        if ($7 != 8 * w ".0") { print "MiB " $7 " not " 8 * w; exit 1 }
        if (!($8 > 0)) { print "seconds " $8; exit 1 }
        mbps = $7 * 1.048576 / $8
        if ($9 < 0.98 * mbps || $9 > 1.02 * mbps) { print "MB/s " $9 " is not " $7 " MiB / " $8 " s = " mbps; exit 1 }
      }' || fail "$tier $mode $op: $line"
    done
    for qd in 1 4 16 32; do
      line=$(rows "$tier" "$mode" randread | awk -v q=$qd '$5 == q')
      [[ -n "$line" ]] || fail "no $tier $mode randread QD$qd row"
      # 4 KiB reads: IOPS x 4 KiB is the MB/s shown; each queue depth reads for about 0.05 s.
      echo "$line" | awk '{
        if (!($10 > 0) || !($11 > 0)) { print "no IOPS / latency"; exit 1 }
        mbps = $10 * 4096 / 1e6
        if ($9 < 0.97 * mbps - 0.2 || $9 > 1.03 * mbps + 0.2) { print "MB/s " $9 " vs IOPS x 4 KiB " mbps; exit 1 }
        if ($8 < 0.049 || $8 > 5) { print "seconds " $8 " for a 0.05 s pass"; exit 1 }
      }' || fail "$tier $mode randread QD$qd: $line"
    done
  done
done
# The loop device is named, and written with O_DIRECT; tmpfs says how it was measured.
rows local-ext4 one-per-node write | grep -q "ext4 $ext4_dev, O_DIRECT" || fail "the ext4 row does not name $ext4_dev with O_DIRECT"
tmpfs_row=$(rows ram one-per-node write)
echo "$tmpfs_row" | grep -Eq "tmpfs commsim-test-tmpfs(, O_DIRECT|; O_DIRECT unsupported on tmpfs: buffered write \+ fdatasync)" ||
  fail "the tmpfs row says neither O_DIRECT nor the buffered fallback: $tmpfs_row"
# ramfs refuses O_DIRECT: buffered write + fdatasync, and the row says so.
rows local-ramfs one-per-node write | grep -q "ramfs commsim-test-ramfs; O_DIRECT unsupported on ramfs: buffered write + fdatasync, buffered reads" ||
  fail "the ramfs row does not say that it fell back to buffered I/O: $(rows local-ramfs one-per-node write)"
# The portrait table, in markdown.
grep -q "^| part | this machine |$" probe.txt || fail "no markdown portrait table"
for part in GPUs interconnect "intra-node bandwidth" "network bandwidth" "local disk" "shared storage"; do
  grep -q "^| $part | " probe.txt || fail "portrait table without '$part'"
done
grep "^| local disk | " probe.txt | grep -q "ram: tmpfs on commsim-test-tmpfs" || fail "local disk row lacks the tmpfs tier"
grep "^| local disk | " probe.txt | grep -q "local-ext4: ext4 on $ext4_dev" || fail "local disk row lacks the loop device"
grep "^| shared storage | " probe.txt | grep -q "team: ext4 on $ext4_dev" || fail "shared storage row lacks the tier given as shared:team"
grep "^| local disk | " probe.txt | grep -q "team:" && fail "the shared tier is listed as a local disk"
# The table is stored with the portrait (/probe portrait attribute).
grep -aq "^| local disk | local-ext4: ext4 on $ext4_dev" portrait.h5 || fail "the portrait table is not in portrait.h5"
grep -q "GPU link matrix  : " probe.txt || fail "the portrait does not say what became of the GPU link matrix"

# 2. calibrate writes the storage: section, and the topology loads.
"$bin" calibrate portrait.h5 --out fitted.yaml >calibrate.txt || fail "calibrate failed"
grep -q '^storage:$' fitted.yaml || fail "no storage: section in the calibrated topology"
grep -Eq '^  - \{ name: "ram", kind: local, read_bandwidth: [0-9.e+]+ GB/s, write_bandwidth: [0-9.e+]+ GB/s, latency: [0-9.e+]+ us \}$' fitted.yaml ||
  fail "no ram tier in fitted.yaml"
grep -Eq '^  - \{ name: "team", kind: shared, .*, aggregate_read_bandwidth: [0-9.e+]+ GB/s, aggregate_write_bandwidth: [0-9.e+]+ GB/s \}$' fitted.yaml ||
  fail "no shared tier with aggregate rates in fitted.yaml"
grep -q '^  # measured .* by commsim probe --storage (portrait.h5): ext4 on '"$ext4_dev" fitted.yaml || fail "the ext4 tier's comment does not name its source"
grep -q '^  # measured .*: ramfs on commsim-test-ramfs .*; O_DIRECT unsupported on ramfs' fitted.yaml ||
  fail "the ramfs tier's comment does not say how it was measured"
"$bin" predict --topology fitted.yaml --collectives allreduce --algorithms ring --sizes 1MiB >/dev/null ||
  fail "the calibrated topology with storage does not load"

# 3. Errors: clear, before anything is written, no file left.
expect_error() {  # expect_error PATTERN ARGS...: the probe fails and says PATTERN
  local pattern=$1
  shift
  rm -f err.h5 err.h5.partial
  if probe "$@" --storage-time 0.05 --out err.h5 >err.txt 2>&1; then fail "probe $* succeeded"; fi
  grep -q "$pattern" err.txt || { cat err.txt >&2; fail "probe $*: no '$pattern' in the error"; }
  [[ ! -e err.h5 && ! -e err.h5.partial ]] || fail "probe $* left its --out file behind"
  no_probe_files
}
expect_error "no such directory" --storage "$work/mnt/missing"
expect_error "not a directory" --storage "$work/ext4.img"
expect_error "are free on $work/mnt/full (ext4); free space, or lower --storage-size" --storage "$work/mnt/full" --storage-size 1MiB
expect_error "is mounted read-only; give a writable path" --storage "$work/mnt/ro" --storage-size 1MiB
# Room for one writer but not for both ranks of the node at once.
expect_error "the probe writes 2 file(s) of 40MiB (80MiB) but only" --storage "$work/mnt/tmpfs" --storage-size 40MiB
expect_error "storage-size 5000: give a multiple of 4 KiB" --storage "$work/mnt/tmpfs" --storage-size 5000
echo "storage probe: tmpfs, ramfs, loop device ($ext4_dev), full disk, read-only mount, bad paths: all checks passed"
