#pragma once
// `commsim probe` as a library: measures latency and bandwidth between ranks on each tier (same
// node, other node; inside a node also of just-written data), host memory copies and reductions,
// GPU copies and the GPU link matrix when there are GPUs, and with storage specs the disks and file
// systems. Returns the measurements; prints nothing (progress goes to a callback). Collective over
// the session's MPI_COMM_WORLD: every rank calls each function with the same arguments.
#include <functional>
#include <string>
#include <vector>

#include "model/units.h"
#include "runtime/h5/probe_file.h"
#include "runtime/job/mpi_session.h"
#include "runtime/probe/machine.h"
#include "runtime/probe/storage.h"

namespace commsim {

// One --storage argument: [KIND:][NAME=]PATH. KIND (local or shared) says whether every node has
// its own or all share one, where the file system type does not tell (default: nfs, lustre, gpfs,
// beegfs, cifs, ceph, ... are shared); NAME names the tier (default: after its file system).
struct StorageSpec {
  std::string kind;  // "", "local", "shared"
  std::string name;
  std::string path;
  StorageTarget target;  // filled in by check_storage
};

// Parses [KIND:][NAME=]PATH arguments. Throws Error on one without a path.
std::vector<StorageSpec> parse_storage_specs(const std::vector<std::string>& args);

// Before any measurement: every path exists on every node, is writable, and has room for the
// all-ranks pass (each rank of a node its own file; on a shared file system every rank's file).
// Fills in each spec's target and its default name. Returns the first failing rank's error
// ("rank R (host): ..."), "" when all is well.
std::string check_storage(const MpiSession& mpi, std::vector<StorageSpec>& specs, Bytes file_bytes);

struct ProbeSettings {
  std::vector<Bytes> sizes;          // message sizes, ascending, each at most INT_MAX
  int iters = 20;                    // timed samples per size
  int warmup = 3;                    // untimed samples per size
  bool gpu = true;                   // probe GPUs when present
  std::vector<StorageSpec> storage;  // as check_storage left them; empty: no storage probe
  StorageOptions storage_options;
};

// A line of progress ("intra-node tier done"), given on rank 0 only.
using ProbeProgress = std::function<void(const std::string&)>;

struct ProbeOutcome {
  // Rank 0: every measurement, the GPU inventory and link matrix, the storage rows; the portrait
  // text is left to the caller (portrait.h).
  ProbeData data;
  std::vector<int> ranks_per_host;  // ranks on each of data.hosts
  HostFacts host;                   // rank 0's host
  std::string error;                // the first failing rank's storage error; "" when none
};

// Runs every measurement. Errors of a storage pass come back in `error` (on every rank); a failed
// MPI call throws.
ProbeOutcome probe_machine(const MpiSession& mpi, const ProbeSettings& settings, const ProbeProgress& progress);

}  // namespace commsim
