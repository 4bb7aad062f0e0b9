// commsim probe: under mpirun, measures the machine (runtime/probe/probe.h), prints the machine
// portrait and stores every measurement in HDF5 (/probe, see HDF5_SCHEMA.md).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "model/error.h"
#include "model/placement.h"
#include "runtime/command.h"
#include "runtime/commands/cli.h"
#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"
#include "runtime/job/cpu_binding.h"
#include "runtime/job/mpi_session.h"
#include "runtime/output/run_context.h"
#include "runtime/probe/portrait.h"
#include "runtime/probe/probe.h"

namespace commsim {

#ifndef COMMSIM_HAVE_MPI
int cmd_probe(int, char**) {
  throw Error("probe needs MPI, and this build has none; install an MPI (e.g. libopenmpi-dev) and rebuild");
}
#else

namespace {

struct Options {
  std::string sizes = "8B:64MiB";
  std::vector<Bytes> sizes_bytes;  // parsed
  int iters = 20;
  int warmup = 3;
  std::string out;
  bool force = false;
  bool gpu = true;
  bool table = true;
  std::vector<std::string> storage;  // --storage [KIND:][NAME=]PATH...
  std::string storage_size = "256MiB";
  double storage_time_s = 0.5;
  std::string format = "text";  // of the portrait table: text or markdown
};

// Parses the options into `o`; false after --help.
bool parse_options(int argc, char** argv, Options& o) {
  CommandLine cli("probe",
                  "Measure the machine under mpirun/srun: latency and bandwidth between ranks of one node and of "
                  "different nodes (ping-pong, streaming, and a ring shift with every rank at once, inside a node "
                  "also of data each rank has just written), host memory copies and reductions, GPU copies when "
                  "GPUs are present, the GPU link matrix (NVLink / PCIe path of every GPU pair, NUMA node and "
                  "nearest NIC of each GPU, read through NVML), and with --storage the disks and file systems. "
                  "Prints the machine portrait and stores every measurement in HDF5 (/probe) for "
                  "`commsim calibrate`.",
                  "mpirun -np 16 commsim probe --out portrait.h5\n"
                  "mpirun -np 8 commsim probe --storage nvme=/scratch lustre=/lustre/$USER --storage-size 1GiB \\\n    "
                  "--format markdown --out portrait.h5\n"
                  "mpirun -np 2 commsim probe --sizes 8B:1MiB:x4 --iters 5 --out quick.h5");
  cli.options().add_options()                                                                               //
      ("sizes", po::value(&o.sizes)->default_value(o.sizes)->value_name("SIZES"), "message sizes in bytes with units: range 8B:64MiB[:xF] or list")  //
      ("iters", po::value(&o.iters)->default_value(o.iters)->value_name("N"), "timed samples per size")                      //
      ("warmup", po::value(&o.warmup)->default_value(o.warmup)->value_name("N"), "untimed samples per size")                 //
      ("out", po::value(&o.out)->value_name("FILE.h5"), "HDF5 file to write (the portrait and every measurement)")                 //
      ("force", po::bool_switch(&o.force), "overwrite an existing --out file")                              //
      ("no-gpu", "do not probe GPUs even when present")                                                     //
      ("no-table", "print only the portrait, not every measurement")                                        //
      ("storage", po::value(&o.storage)->multitoken()->value_name("[KIND:][NAME=]PATH..."),
       "directories whose storage to measure (each rank writes its own file there): sequential write "
       "with O_DIRECT, sequential read, 4 KiB random reads at queue depths 1, 4, 16 and 32; first one "
       "writer per node, then all ranks at once. NAME names the tier (default local-<fs> or "
       "shared-<fs>); KIND, local or shared, overrides what the file system type says (nfs, lustre, "
       "gpfs, beegfs, cifs, ceph, ... count as shared). The files are removed afterwards")  //
      ("storage-size", po::value(&o.storage_size)->default_value(o.storage_size)->value_name("BYTES"),
       "the file each writer writes and reads under --storage (a multiple of 4 KiB); every rank of a node "
       "needs that much free space at once")  //
      ("storage-time", po::value(&o.storage_time_s)->default_value(o.storage_time_s)->value_name("S"),
       "seconds of random reads per queue depth under --storage")  //
      ("format", po::value(&o.format)->default_value(o.format)->value_name("FMT"),
       "the closing portrait table: text, or markdown (ready to paste)");
  if (!cli.parse(argc, argv)) return false;
  o.gpu = !cli.given("no-gpu");
  o.table = !cli.given("no-table");
  if (o.iters < 1) throw Error("--iters must be at least 1 (got " + std::to_string(o.iters) + ")");
  if (o.warmup < 0) throw Error("--warmup must be 0 or more (got " + std::to_string(o.warmup) + ")");
  if (o.format != "text" && o.format != "markdown") throw Error("--format '" + o.format + "': use text or markdown");
  if (!(o.storage_time_s > 0))
    throw Error("--storage-time must be above 0 s (got " + std::to_string(o.storage_time_s) + ")");
  if (const Bytes b = parse_bytes(o.storage_size); b < 4096 || b % 4096 != 0)
    throw Error("--storage-size " + o.storage_size + ": give a multiple of 4 KiB, at least 4KiB (e.g. 64MiB)");
  o.sizes_bytes = parse_sizes(o.sizes);
  if (!o.sizes_bytes.empty() && o.sizes_bytes.back() > (Bytes{1} << 31) - 1)
    throw Error("--sizes: the largest probe message is 2 GiB - 1 (MPI counts are int); got " +
                format_bytes(o.sizes_bytes.back()));
  return true;
}

// The run's context, as `commsim run` records it, for the results file and the console.
RunContext probe_context(int argc, char** argv, const MpiSession& mpi, const Placement& placement,
                         BindingSummary& binding) {
  RunContext ctx = RunContext::collect_local(argc, argv);
  ctx.hostnames = mpi.hostnames();
  binding = gather_binding(mpi.hostnames(), ctx.cpus);
  ctx.cpu_binding = binding.text;
  ctx.ranks = mpi.size();
  ctx.nodes = placement.nnodes;
  ctx.backend = "host";
  ctx.transport = "mpi";
  ctx.mpi_version = MpiSession::library_version();
  return ctx;
}

void print_error(const std::string& message) {
  std::fprintf(stderr, "commsim probe: error: %s\n", message.c_str());
}

// Rank 0: the portrait, the measurements and the closing table on stdout; the portrait and the
// table are stored with the measurements.
void print_portrait(const Options& o, const RunContext& ctx, ProbeOutcome& result) {
  ProbeData& d = result.data;
  d.portrait =
      format_portrait(d, result.ranks_per_host, ctx.mpi_version, result.host.network_devices, result.host.memory_total);
  std::cout << d.portrait;
  if (o.table) print_probe_rows(std::cout, d);
  print_storage_rows(std::cout, d.storage);
  std::ostringstream table;
  print_portrait_table(table, portrait_table(d, result.host.network_devices), o.format);
  std::cout << table.str();
  d.portrait += table.str();
  std::cout.flush();
}

}  // namespace

int cmd_probe(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 0;
  MpiSession mpi(MpiThreads::Single);
  const bool root = mpi.rank() == 0;
  const Placement placement = Placement::from_hostnames(mpi.hostnames());
  BindingSummary binding;
  RunContext ctx = probe_context(argc, argv, mpi, placement, binding);

  ProbeSettings settings;
  settings.sizes = o.sizes_bytes;
  settings.iters = o.iters;
  settings.warmup = o.warmup;
  settings.gpu = o.gpu;
  settings.storage = parse_storage_specs(o.storage);
  settings.storage_options.file_bytes = parse_bytes(o.storage_size);
  settings.storage_options.random_time_s = o.storage_time_s;
  // Storage paths are checked on every node before anything is measured or written.
  if (!settings.storage.empty()) {
    const std::string err = check_storage(mpi, settings.storage, settings.storage_options.file_bytes);
    if (!err.empty()) {
      if (root) print_error(err);
      return 1;
    }
  }

  // Open the output first: an existing file is an error before minutes of measuring.
  std::unique_ptr<ResultsFile> file;
  std::string open_error;
  if (root && !o.out.empty()) {
    try {
      file = std::make_unique<ResultsFile>(ResultsFile::create(o.out, o.force, ctx));
    } catch (const Error& e) {
      open_error = e.what();
    }
  }
  if (!mpi.first_error(open_error).empty()) {
    if (root) print_error(open_error);
    return 1;
  }

  if (root) {
    std::fprintf(stderr, "commsim probe: %d ranks on %d node%s, %zu sizes, %d iterations each\n", mpi.size(),
                 placement.nnodes, placement.nnodes == 1 ? "" : "s", settings.sizes.size(), o.iters);
    std::fprintf(stderr, "commsim probe: cpus: %s\n", ctx.cpu_binding.c_str());
    if (!binding.oversubscribed.empty())
      std::fprintf(stderr, "commsim probe: note: %s\n", binding.oversubscribed.c_str());
  }
  ProbeOutcome result = probe_machine(
      mpi, settings, [](const std::string& line) { std::fprintf(stderr, "commsim probe: %s\n", line.c_str()); });
  if (!result.error.empty()) {
    if (root) {
      print_error(result.error);
      if (file) {
        file.reset();  // closed as failed, under <out>.partial: nothing of a failed probe is kept
        std::filesystem::remove(o.out + ".partial");
      }
    }
    return 1;
  }
  if (!root) return 0;
  print_portrait(o, ctx, result);
  if (file) {
    file->finish(RunStatus::Complete);
    write_probe_group(o.out, result.data);
    std::fprintf(stderr, "commsim probe: wrote %s\n", o.out.c_str());
  }
  return 0;
}

#endif

}  // namespace commsim
