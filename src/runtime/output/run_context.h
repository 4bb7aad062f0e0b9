#pragma once
// Where and how a set of points was produced: the hosts, the ranks, the backend and libraries, the
// Slurm job, the environment and the topology. Every command that writes results stores one
// RunContext per run (the HDF5 group /runs/<NNNN>, see HDF5_SCHEMA.md) and reporters print it.
#include <optional>
#include <string>
#include <vector>

namespace commsim {

// The Slurm job a run belongs to; empty strings outside Slurm.
struct SlurmContext {
  std::string job_id;         // SLURM_JOB_ID
  std::string array_job_id;   // SLURM_ARRAY_JOB_ID
  std::string array_task_id;  // SLURM_ARRAY_TASK_ID
  std::string node_list;      // SLURM_JOB_NODELIST (compressed, e.g. "node[01-04]")
  std::string partition;      // SLURM_JOB_PARTITION
  std::string cluster;        // SLURM_CLUSTER_NAME
};

struct RunContext {
  std::string command_line;     // the whole command line, arguments quoted where needed
  std::string commsim_version;  // COMMSIM_VERSION of the binary that produced the run
  std::string started;          // ISO 8601 UTC, "2026-01-31T12:34:56Z"

  // Where it ran. hostnames has one entry per rank (rank order); predict stores the local host.
  std::vector<std::string> hostnames;
  int ranks = 1;
  int nodes = 1;
  // The CPUs each rank may run on ("0-3,8"; one entry per rank, rank order; empty for predict),
  // and in words how that binds the ranks (cpu_binding.h).
  std::vector<std::string> cpus;
  std::string cpu_binding;

  std::string backend = "model";  // "model" (predict), "host", "cuda"
  std::string transport;          // "mpi", "ucx", "ipc", "nccl"; "" for model runs
  // Library versions; empty when the library is absent or unused.
  std::string mpi_version;
  std::string nccl_version;
  std::string cuda_version;
  std::string ucx_version;
  std::vector<std::string> gpu_names;  // one per rank when GPUs are used; empty otherwise

  // "KEY=VALUE" for the variables that change what is measured: NCCL_*, UCX_*, OMPI_*, SLURM_*
  // (plus CUDA_VISIBLE_DEVICES), sorted by key.
  std::vector<std::string> environment;
  SlurmContext slurm;
  // NCCL's TUNING table as NCCL printed it (NCCL_DEBUG_SUBSYS=TUNING), one line each as after
  // "NCCL INFO " (model/nccl/logged_table.h); kept by `commsim import` where the log holds one.
  std::vector<std::string> nccl_tuning_table;

  std::string topology_name;  // the topology's `name`
  std::string topology_path;  // the file it was read from
  std::string topology_text;  // the YAML text as read
  // How `run` measured: "iters 20, warmup 5, dtypes float32, ops sum" (--resume refuses a file
  // measured otherwise); "" for predictions and files written before commsim recorded it.
  std::string measure_settings;
  // The piece the host executor cut transfers into, bytes (0: not cut; commsim run --piece-size),
  // which the predictions priced (Topology::piece_bytes); unset for other backends and in files
  // written before commsim recorded it (all of which ran with the default, kHostPieceBytes).
  std::optional<std::uint64_t> piece_bytes;

  // Read back from a results file (set by ResultsFile, ignored when writing a new run):
  int index = -1;        // N of /runs/<NNNN>
  std::string status;    // "running", "complete", "interrupted", "failed"
  std::string finished;  // ISO 8601 UTC; empty while running

  // Fills what this process can see by itself: command line (from argv as main() received it,
  // argv[0] being the binary, or as a command received it, argv[0] being the command's name:
  // "commsim " is then put in front), commsim version, start time, this host's name (ranks = nodes = 1),
  // the filtered environment and the Slurm variables. MPI-derived fields (hostnames of all
  // ranks, ranks, nodes, library versions, GPU names) are filled by the command that knows them.
  static RunContext collect_local(int argc, const char* const* argv);
};

// The current time as ISO 8601 UTC with seconds ("2026-01-31T12:34:56Z").
std::string iso8601_utc_now();
// argv joined by spaces; arguments with spaces or shell metacharacters single-quoted.
std::string join_command_line(int argc, const char* const* argv);
// This host's name (gethostname), "" when it cannot be read.
std::string local_hostname();
// The process environment filtered as RunContext::environment describes.
std::vector<std::string> selected_environment();
// The Slurm variables of this process (empty fields outside Slurm).
SlurmContext slurm_from_environment();

}  // namespace commsim
