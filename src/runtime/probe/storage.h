#pragma once
// The storage part of `commsim probe --storage PATH`: what one process gets from a directory's
// file system, measured the way dd and fio measure it. A sequential write of one file with
// O_DIRECT (dd oflag=direct; where the file system refuses O_DIRECT, as tmpfs does, a buffered
// write ended by fdatasync, and the row says so), a sequential read of it (O_DIRECT, or buffered
// after dropping its cached pages), and 4 KiB reads at random offsets with 1, 4, 16 and 32 reads in
// flight (fio --rw=randread --bs=4k --iodepth=N, here N threads issuing pread). The file is removed
// afterwards on every path, errors included. No MPI here: probe.cc runs one writer per node and all
// ranks at once and sums the nodes' rows (combine_storage_rows).
#include <string>
#include <vector>

#include "model/units.h"

namespace commsim {

struct StorageOptions {
  Bytes file_bytes = Bytes{256} << 20;  // size of the file each writer writes and reads
  Bytes block_bytes = Bytes{1} << 20;   // one write / read call of the sequential passes
  std::vector<int> queue_depths = {1, 4, 16, 32};
  Seconds random_time_s = 0.5;        // how long each queue depth reads
  long long random_max_ops = 200000;  // and at most this many reads per queue depth
};

// Where a path lives: its mount, file system and device (from /proc/self/mountinfo).
struct StorageTarget {
  std::string path;         // as given
  std::string mount_point;  // "/mnt/scratch"
  std::string fs_type;      // "ext4", "tmpfs", "nfs4", "lustre", ...
  std::string device;       // "/dev/nvme0n1p1", "tmpfs", "server:/export"
  bool shared = false;      // a network or parallel file system every node may mount
  bool read_only = false;   // mounted read-only
  Bytes free_bytes = 0;     // available to this user (statvfs f_bavail)
  bool size_known = true;   // false where the file system reports no size (ramfs): no room check
};

// Looks up `path`. Throws Error when the path does not exist or is not a directory.
StorageTarget describe_storage(const std::string& path);
// Throws a clear Error when `writers` files of `file_bytes` each cannot be written in `t`: a
// read-only mount or directory, or less free space than they need (naming both sizes and
// --storage-size).
void check_storage_room(const StorageTarget& t, Bytes file_bytes, int writers);

// One measured operation of one writer, or of several writers summed (combine_storage_rows).
//  op: "write" (sequential), "read" (sequential), "randread" (4 KiB at random offsets, queue_depth
//      in flight).
struct StorageRow {
  std::string tier;  // the tier's name (--storage NAME=PATH, else from the file system)
  std::string path;
  std::string mode;  // "one-per-node" (each node's first rank), "all-ranks"
  std::string host;  // the node
  std::string op;
  int queue_depth = 1;         // reads in flight (1 for the sequential passes)
  int writers = 1;             // processes that took part on this node
  Bytes bytes = 0;             // moved by all of them
  long long ops = 0;           // calls (writes, reads) by all of them
  double seconds = 0;          // wall time, the slowest of them
  double latency_mean_us = 0;  // per call (randread only; 0 otherwise)
  double latency_p99_us = 0;   // randread only; the largest of the writers' p99
  std::string fs_type, device, mount_point;
  bool shared = false;
  bool direct = false;  // O_DIRECT was used
  std::string note;     // how it was measured when not as asked ("O_DIRECT unsupported on tmpfs: ...")
  double bw_Bps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0; }
  double iops() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
};

// Writes, reads and randomly reads one file of o.file_bytes in `t.path` (named after `tag`, which
// makes it unique among the writers), then removes it. Returns one row per operation (writers 1,
// host, mode and tier left for the caller). Throws Error, with the file removed, when a call
// fails: disk full (ENOSPC), read-only (EROFS), permission, I/O error.
std::vector<StorageRow> measure_storage(const StorageTarget& t, const StorageOptions& o, const std::string& tag);

// Rows of several writers of one node, tier, mode and op summed: bytes and ops added, the slowest
// wall time kept, the mean latency weighted by calls, the largest p99.
std::vector<StorageRow> combine_storage_rows(const std::vector<StorageRow>& rows);

// One line of text per row and back (what the ranks send to rank 0). Throws Error on a bad line.
std::string serialize_storage_row(const StorageRow& r);
StorageRow parse_storage_row(const std::string& line);

}  // namespace commsim
