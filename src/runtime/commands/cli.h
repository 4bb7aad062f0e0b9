#pragma once
// Command-line pieces shared by every subcommand: one way to build the Boost.Program_options
// parser (so every `commsim <cmd> --help` reads the same), and the parsers of the lists users type
// (--collectives, --algorithms, --protocols, --sizes, --nodes, --format). Every parse error is a
// commsim::Error that names the bad value and lists the valid ones.
#include <boost/program_options.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/collective.h"
#include "model/units.h"
#include "runtime/output/reporter.h"

namespace commsim {

namespace po = boost::program_options;

// Help lines are at most this wide (options, their descriptions, the summary paragraphs).
inline constexpr unsigned kHelpWidth = 100;
// `text` with every line longer than `width` broken at spaces (keeping the line's indent);
// existing line breaks and blank lines stay.
std::string wrap_text(const std::string& text, std::size_t width);

// One subcommand's options and help text:
//
//   CommandLine cli("predict", "predict collective times on a topology", "commsim predict --nodes 1,2 ...");
//   std::string topology;
//   cli.options().add_options()("topology", po::value(&topology)->default_value("dgx-h100"), "...");
//   SweepOptions sweep; add_sweep_options(cli.options(), sweep);
//   if (!cli.parse(argc, argv)) return 0;  // --help was printed
class CommandLine {
 public:
  // `examples`: one or more example command lines, printed under "examples:".
  CommandLine(std::string command, std::string summary, std::string examples);
  po::options_description& options() { return options_; }
  // Parses argv (argv[0] = the subcommand name). Returns false after printing help to stdout when
  // --help/-h was given. Throws Error for unknown options, missing values, stray positional
  // arguments (unless positional() was set), and bad values.
  bool parse(int argc, char** argv);
  // Accepts positional arguments (e.g. input files of merge) into `name`, which must be an option
  // of type std::vector<std::string>. Help shows it under "arguments:" as `usage_placeholder`
  // with the option's description, not among the options.
  void positional(const std::string& name, std::string usage_placeholder);
  const po::variables_map& values() const { return vm_; }
  bool given(const std::string& name) const;  // set on the command line, not by default
  std::string help() const;

 private:
  std::string command_, summary_, examples_, positional_name_, positional_usage_;
  po::options_description options_;
  po::variables_map vm_;
};

// What to sweep, as typed; parse with the functions below.
struct SweepOptions {
  std::string collectives = "allreduce";
  std::string algorithms = "all";
  std::string sizes = "8B:128MiB";
  std::string nodes = "1";
  std::string protocols = "none";
  int channels = 0;  // --channels; 0: the topology's default (default_channels in model/cost/cost.h)
};
// --collectives, --algorithms, --sizes, --protocols, --channels; --nodes only when with_nodes.
// Defaults are the current values of `o`.
void add_sweep_options(po::options_description& desc, SweepOptions& o, bool with_nodes);

// Where points go, as typed.
struct OutputOptions {
  std::string format = "table";
  std::string out;  // "" = no HDF5 file
  bool force = false;
  std::string resume;                 // only with_resume
  const char* format_help = nullptr;  // the --format help line, when a command has formats of its own
};
// --format, --out, --force and (with_resume) --resume FILE.h5.
void add_output_options(po::options_description& desc, OutputOptions& o, bool with_resume);

// "allreduce,allgather" or "all". Error lists the valid names.
std::vector<Collective> parse_collectives(std::string_view text);
// The algorithms as typed. "all" sets `all` and leaves `named` empty: each collective then gets
// the algorithms in `allowed` that apply to it. Names outside `allowed` are errors listing it.
struct AlgorithmSelection {
  bool all = false;
  std::vector<Algorithm> named;
};
AlgorithmSelection parse_algorithms(std::string_view text, const std::vector<Algorithm>& allowed);
// Which algorithms to use for each collective, in the order asked for. A named algorithm that
// applies to none of the collectives is an Error that says, for each collective, which
// algorithms do apply; one that applies to some only is dropped for the others, with a line in
// `skipped` ("rabenseifner does not apply to allgather (allgather: ring, ...)").
std::vector<std::pair<Collective, std::vector<Algorithm>>> pair_algorithms(const std::vector<Collective>& collectives,
                                                                           const AlgorithmSelection& sel,
                                                                           const std::vector<Algorithm>& allowed,
                                                                           std::vector<std::string>* skipped);
// "none" -> {None}; "LL,LL128,Simple"; "all" -> LL, LL128, Simple.
std::vector<Protocol> parse_protocols(std::string_view text);
// units.h parse_size_list, with the option name in errors.
std::vector<Bytes> parse_sizes(std::string_view text);
// "1,2,4" or "1:1024" (powers of two) or "1:64:x4"; every value >= 1.
std::vector<int> parse_nodes(std::string_view text);
// "table", "csv", "json".
OutputFormat parse_format(std::string_view text);

// nccl-tests' short options, as typed ("" when not given): -b minbytes, -e maxbytes, -i stepbytes,
// -f stepfactor, -n iters, -w warmup iters, -c check, -d datatype, -o op, -r root, -a average,
// -z blocking, -G cuda graph launches, -N run cycles, -t threads and -g GPUs per thread (1: one GPU per
// rank, as commsim runs) (NVIDIA/nccl-tests src/common.cu).
struct NcclTestsOptions {
  std::string b, e, i, f, n, w, c, d, o, r, a, z, G, N, t, g;
  bool any() const;  // an nccl-tests-style command line
};
void add_nccl_tests_options(po::options_description& desc, NcclTestsOptions& o);

// The same options read as nccl-tests reads them, its defaults where one was not given (-b and -e
// 32M, -i 1M, -f 1, -n 20, -w 1, -c 1, -d float, -o sum, -r 0, -a 1, -z 0, -G 0, -N 1). Throws Error
// naming the option for a value nccl-tests would refuse or commsim cannot run.
struct NcclTestsSettings {
  std::vector<Bytes> sizes;  // -b to -e, times -f when it is above 1, else plus -i
  int iters = 20, warmup = 1;
  bool check = true;
  std::string dtype = "float32", op = "sum";  // commsim's names ("all" kept)
  int root = 0;
  int average = 1;  // 0 rank 0, 1 mean, 2 min, 3 max over ranks
  bool blocking = false;
  int graph_launches = 0;
};
NcclTestsSettings resolve_nccl_tests(const NcclTestsOptions& o);

// A size as nccl-tests' parsesize reads it: a number (fractions allowed) and an optional K, M or G
// (either case) for 2^10, 2^20, 2^30: "8", "1M", "0.5G", "8G" = 8 GiB. Throws Error naming `option`.
Bytes parse_nccl_tests_size(std::string_view text, std::string_view option);
// nccl-tests' sizes: min, then times `factor` while factor > 1, else plus `step`, while <= max.
std::vector<Bytes> nccl_tests_sizes(Bytes min, Bytes max, Bytes step, std::uint64_t factor);

// "a, b, c" of names.
std::string join_names(const std::vector<Algorithm>& algs);
std::string join_names(const std::vector<Collective>& colls);

}  // namespace commsim
