#pragma once
// The output of NVIDIA's nccl-tests (`all_reduce_perf` and every other `*_perf` tool) read back
// into rows and metadata. Pure text parsing: no NCCL, MPI or HDF5, so it is tested on published
// logs (tests/data/nccl-tests).
//
// What it reads:
//  - the result table, one row per size: `size count type redop root`, then time (us), algbw and
//    busbw (GB/s) and `#wrong` out-of-place, then the same in-place. The column layout comes from
//    the header line ("#  size  count  type  redop  root  time  algbw  busbw  #wrong ..."): old
//    versions have no `root` and an `error` column (the largest error) instead of `#wrong`; -R/-a
//    builds add the per-iteration columns (i_min i_max i_p99 i_cv%) and a timestamp. Without a
//    header the layout is guessed from the first row's field count. `N/A` is read as "not checked";
//  - launcher prefixes, removed first: mpirun's `[1,0]<stdout>:` (--tag-output) and srun's
//    `0: ` (--label);
//  - NCCL's own lines (`host:pid:tid [dev] NCCL INFO ...`), also where NCCL printed them in the
//    middle of a row (the row goes on after them); among them the per-call TUNING lines
//    (nccl_tuning_log.h), which give the algorithm and protocol of each row's calls (the lines of
//    the row's size printed since the previous row), and NCCL's TUNING table;
//  - the metadata: `# nccl-tests version`, the parameter line (`# nThread 1 nGpus 8 ... iters: 20`),
//    the `#  Rank  N Group  G Pid P on HOST device D [BUS] NAME` lines (ranks, hosts, GPUs),
//    `NCCL version 2.x.y`, `# Collective test starting: all_reduce_perf`, the command line when it
//    is printed (a line naming a `*_perf` binary), `NCCL_ALGO=` / `NCCL_PROTO=` (and every other
//    `NCCL_*=` setting) on any line that is not a row, NCCL's "NCCL_X set by environment to Y",
//    and the `# Avg bus bandwidth` footer;
//  - `@@collective=NAME`: a line that names the collective of the rows after it, for logs of
//    several tools pasted into one file;
//  - the JSON file of recent nccl-tests (-J FILE, format version 2): the same rows and metadata.
//
// Problems: a line that starts like a row but is not one (a field that does not parse, a field
// count that matches no layout) stops the reading; `error` then names the line and what is wrong
// and `rows` holds the rows before it. A log that ends in the middle of a row, or a table without
// its footer, is read up to there with a warning.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/libraries/nccl_tuning_log.h"

namespace commsim {

// One half of a row: out-of-place or in-place.
struct NcclTestsTiming {
  double time_us = std::numeric_limits<double>::quiet_NaN();     // average per iteration, us
  double algbw_gbps = std::numeric_limits<double>::quiet_NaN();  // GB/s (1e9 B/s), as printed
  double busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  std::int64_t wrong = -1;  // #wrong elements; -1 when not checked (N/A) or in the old format
  double max_error = std::numeric_limits<double>::quiet_NaN();  // old format's `error` column
  bool present() const { return time_us == time_us; }           // false when the tool skipped this half
};

struct NcclTestsRow {
  std::string collective;  // nccl-tests' name: "all_reduce", "alltoall", ...; "" when not said
  std::uint64_t size_B = 0;
  std::uint64_t count = 0;  // elements
  std::string type;         // "float", "half", "bfloat16", "int32", ...
  std::string redop;        // "sum", "prod", "min", "max", "avg", "none"
  int root = -1;            // -1 when the collective has none or the column is absent
  NcclTestsTiming out_of_place, in_place;
  // What NCCL ran for this size, from the per-call TUNING lines printed with the row (empty when
  // none were logged): NCCL's algorithm and protocol names, the channel count (0: not printed).
  std::string nccl_algo, nccl_proto;
  int nccl_channels = 0;
  int line = 0;  // the log line the row starts on, from 1
};

// A `#  Rank ...` line.
struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string gpu;  // "NVIDIA H100 80GB HBM3"
};

// One table's footer.
struct NcclTestsSummary {
  std::string collective;
  double avg_busbw_gbps = std::numeric_limits<double>::quiet_NaN();
};

struct NcclTestsLog {
  std::string nccl_tests_version;  // "2.18.3"; "" when not printed
  std::string nccl_version;        // "2.29.2" from "NCCL version" or nccl-library=; "" when not printed
  int threads = 0;                 // nThread (0: not printed)
  int gpus_per_thread = 0;         // nGpus (-g)
  bool cuda_graphs = false;        // "graph: N" with N > 0 (-G N: the iterations launched as CUDA graphs)
  int iters = 0;                   // timed iterations per size (0: not printed)
  int warmup_iters = 0;
  std::vector<NcclTestsRank> ranks;       // in rank order, each rank once
  std::string command_line;               // as printed, "" when not printed
  std::string forced_algo, forced_proto;  // NCCL_ALGO / NCCL_PROTO as set ("" when not set)
  std::vector<std::string> environment;   // "NCCL_X=value" settings seen, sorted, each key once
  // From NCCL's own line "comm 0x... rank 0 nRanks 16 nNodes 2 localRanks 8 ..." (NCCL_DEBUG=INFO,
  // NCCL 2.12 and later); 0 when not logged.
  int nccl_ranks = 0, nccl_nodes = 0;
  // NCCL's TUNING table (NCCL_DEBUG_SUBSYS=TUNING, printed by rank 0 of each communicator at init:
  // per block of three algorithms an "Algorithm |" line, a "Protocol |" line, a "Max NThreads |"
  // line and one line per function; model/nccl/logged_table.h reads it), the first table logged,
  // every block, each line as printed after "NCCL INFO"; empty when not logged.
  std::vector<std::string> nccl_tuning_table;
  std::vector<NcclTestsSummary> summaries;
  std::vector<NcclTestsRow> rows;
  bool json = false;                  // read from nccl-tests' JSON output
  std::vector<std::string> warnings;  // "run.log:412: the log ends inside a row; ..."
  std::string error;                  // "run.log:57: ..." when reading stopped early

  // Distinct hosts of the rank lines, in order of first appearance.
  std::vector<std::string> hosts() const;
};

// Reads `text` (a text log or a JSON file). `name` is used in messages ("run.log:12: ...").
// `collective` names the rows' collective where the log does not (nccl-tests' or commsim's
// spelling; "" leaves such rows' collective empty). Never throws for bad input: see `error`.
NcclTestsLog parse_nccl_tests_log(std::string_view text, std::string_view name = "log",
                                  std::string_view collective = "");

// The number of ranks the bandwidths of a row imply: busbw / algbw is 2(n-1)/n for all_reduce and
// (n-1)/n for all_gather, reduce_scatter and alltoall (nccl-tests' busbw factors). Taken from the
// row with the largest algbw of those collectives; 0 when no row tells (too small to read, other
// collectives, or inconsistent).
int ranks_from_bandwidths(const NcclTestsLog& log);

// How many ranks ran, on how many nodes. Read from the log where it says: the `#  Rank` lines
// (ranks, distinct hosts), else NCCL's INIT line. Else the ranks are nodes_given x
// gpus_per_node_given when both are given, else what the bandwidths imply (ranks_from_bandwidths),
// else one process's nThread x nGpus; the nodes are nodes_given, else the ranks over
// gpus_per_node_given (rounded up), else 1 when the ranks are as many as one process drives.
// `note` says where a given value was not used (the log says otherwise). Throws Error, naming the
// log and what is missing, when the ranks or the nodes cannot be told.
struct NcclTestsPlacement {
  int ranks = 0;
  int nodes = 0;
  std::string note;
};
NcclTestsPlacement placement_of(const NcclTestsLog& log, std::string_view name, int nodes_given = 0,
                                int gpus_per_node_given = 0);

// NCCL's function name for an nccl-tests collective ("all_reduce" -> "AllReduce"); "" if none.
std::string nccl_function_of(std::string_view collective);

}  // namespace commsim
