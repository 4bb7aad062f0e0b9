#include "runtime/commands/cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "collectives/elements/dtype.h"
#include "model/error.h"
#include "model/schedule.h"

namespace commsim {
namespace {

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  auto push = [&] {
    auto b = item.find_first_not_of(" \t");
    auto e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
    item.clear();
  };
  for (char ch : text) {
    if (ch == ',')
      push();
    else
      item += ch;
  }
  push();
  return out;
}

bool is_all(std::string_view text) {
  auto items = split_list(text);
  return items.size() == 1 && (items[0] == "all" || items[0] == "ALL");
}

template <typename T>
void push_unique(std::vector<T>& v, T x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

std::string list_text(const std::vector<Algorithm>& algs) {
  return algs.empty() ? "none" : join_names(algs);
}

}  // namespace

std::string join_names(const std::vector<Algorithm>& algs) {
  std::string s;
  for (Algorithm a : algs) s += (s.empty() ? "" : ", ") + std::string(to_string(a));
  return s;
}

std::string join_names(const std::vector<Collective>& colls) {
  std::string s;
  for (Collective c : colls) s += (s.empty() ? "" : ", ") + std::string(to_string(c));
  return s;
}

// ---- CommandLine

std::string wrap_text(const std::string& text, std::size_t width) {
  std::ostringstream out;
  std::istringstream lines(text);
  bool first = true;
  for (std::string line; std::getline(lines, line); first = false) {
    if (!first) out << "\n";
    // A line's leading spaces are its indent, kept on the lines it is wrapped into.
    const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
    std::size_t column = 0;
    std::istringstream words(line.substr(indent));
    for (std::string word; words >> word;) {
      if (column > indent && column + 1 + word.size() > width) {
        out << "\n";
        column = 0;
      }
      if (column == 0) {
        out << std::string(indent, ' ');
        column = indent;
      } else {
        out << ' ';
        ++column;
      }
      out << word;
      column += word.size();
    }
  }
  return out.str();
}

CommandLine::CommandLine(std::string command, std::string summary, std::string examples)
    : command_(std::move(command)), summary_(std::move(summary)), examples_(std::move(examples)),
      options_("options", kHelpWidth, kHelpWidth * 2 / 5) {
  options_.add_options()("help,h", "print this help and exit");
}

void CommandLine::positional(const std::string& name, std::string usage_placeholder) {
  positional_name_ = name;
  positional_usage_ = std::move(usage_placeholder);
}

std::string CommandLine::help() const {
  std::ostringstream s;
  s << "usage: commsim " << command_ << " [options]" << (positional_usage_.empty() ? "" : " " + positional_usage_)
    << "\n\n"
    << wrap_text(summary_, kHelpWidth) << "\n\n";
  // The positional argument under its placeholder, the options without it.
  po::options_description shown("options", kHelpWidth, kHelpWidth * 2 / 5);
  for (const auto& option : options_.options()) {
    if (option->long_name() != positional_name_ || positional_name_.empty()) {
      shown.add(option);
      continue;
    }
    s << "arguments:\n  " << positional_usage_ << "\n"
      << wrap_text("      " + option->description(), kHelpWidth) << "\n\n";
  }
  s << shown << "\n";
  if (!examples_.empty()) {
    s << "examples:\n";
    std::istringstream lines(examples_);
    for (std::string line; std::getline(lines, line);) s << "  " << line << "\n";
  }
  return s.str();
}

bool CommandLine::parse(int argc, char** argv) {
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(options_);
    po::positional_options_description pos;
    if (!positional_name_.empty()) pos.add(positional_name_.c_str(), -1);
    parser.positional(pos);
    po::store(parser.run(), vm_);
    if (vm_.count("help")) {
      std::cout << help();
      std::cout.flush();
      return false;
    }
    po::notify(vm_);
  } catch (const po::too_many_positional_options_error&) {
    // Name the stray word: parse again, keeping what matches no option.
    std::string stray;
    try {
      auto parsed = po::command_line_parser(argc, argv).options(options_).allow_unregistered().run();
      auto rest = po::collect_unrecognized(parsed.options, po::include_positional);
      if (!rest.empty()) stray = " '" + rest.front() + "'";
    } catch (const po::error&) {
    }
    throw Error("unexpected argument" + stray + "; commsim " + command_ + " takes options only (see commsim " +
                command_ + " --help)");
  } catch (const po::error& e) {
    throw Error(std::string(e.what()) + " (see commsim " + command_ + " --help)");
  }
  return true;
}

bool CommandLine::given(const std::string& name) const {
  return vm_.count(name) && !vm_[name].defaulted();
}

// ---- option groups

namespace {
// Every algorithm name, from the table: the hand-written schedules and the library baselines.
std::string algorithms_help() {
  std::vector<Algorithm> nccl;
  for (Algorithm a : kAllAlgorithms)
    if (is_nccl_algorithm(a)) nccl.push_back(a);
  return "algorithms, comma-separated, or 'all' (every hand-written one that applies to each collective): " +
         join_names(hand_written_algorithms()) +
         "; the libraries' own: mpi (run on the host backend: what the MPI library picks), " + join_names(nccl) +
         " (NCCL's choice, or one NCCL algorithm forced: its tuning model in predict, NCCL itself in run "
         "--backend cuda). Each command's error lists what it accepts";
}
}  // namespace

void add_sweep_options(po::options_description& desc, SweepOptions& o, bool with_nodes) {
  desc.add_options()
      ("collectives", po::value(&o.collectives)->default_value(o.collectives)->value_name("LIST"),
       "collectives, comma-separated, or 'all': allreduce, allgather, reducescatter, broadcast, reduce, "
       "sendrecv, alltoall")
      ("algorithms", po::value(&o.algorithms)->default_value(o.algorithms)->value_name("LIST"),
       algorithms_help().c_str())
      ("sizes", po::value(&o.sizes)->default_value(o.sizes)->value_name("SIZES"),
       "message sizes in bytes as nccl-tests counts them, with units: a range MIN:MAX (factor 2), "
       "MIN:MAX:xF (factor F), or a list (1KiB,1MiB); units B, KiB, MiB, GiB (1024) or KB, MB, GB (1000): 8GB is 8e9 "
       "bytes (run's nccl-tests option -e 8G is 8 GiB)");
  if (with_nodes)
    desc.add_options()("nodes", po::value(&o.nodes)->default_value(o.nodes)->value_name("LIST"),
                       "node counts: a list (1,2,4) or a range 1:1024 (powers of two) or 1:64:x4");
  desc.add_options()("protocols", po::value(&o.protocols)->default_value(o.protocols)->value_name("LIST"),
                     "NCCL-style protocols to price: 'none' (plain alpha-beta-gamma), a list of LL, LL128, "
                     "Simple, or 'all' (needs a topology with NCCL constants)");
  desc.add_options()("channels", po::value(&o.channels)->value_name("N")->notifier([](int n) {
    if (n < 1 || n > kMaxChannels)
      throw Error("--channels " + std::to_string(n) + ": give 1 to " + std::to_string(kMaxChannels) + " channels");
  }),
                     "channels of the ring, tree and hierarchical allreduce/allgather algorithms, 1 to 64: the "
                     "data split over N rings (or trees), each leaving every node through its own NIC (default: "
                     "NCCL's count, two per NIC across nodes on a GPU topology, else 1)");
}

void add_output_options(po::options_description& desc, OutputOptions& o, bool with_resume) {
  desc.add_options()(
      "format", po::value(&o.format)->default_value(o.format)->value_name("FMT"),
      o.format_help ? o.format_help
                    : "what to print on stdout: table (nccl-tests-like), csv (header + one line per point) or json")(
      "out", po::value(&o.out)->value_name("FILE.h5"),
      "also write every point to this HDF5 results file (written as FILE.h5.partial, renamed when done)")(
      "force", po::bool_switch(&o.force), "overwrite --out FILE.h5 if it exists");
  if (with_resume)
    desc.add_options()("resume", po::value(&o.resume)->value_name("FILE.h5"),
                       "continue FILE.h5 (or FILE.h5.partial): skip the points it already holds");
}

// ---- list parsers

std::vector<Collective> parse_collectives(std::string_view text) {
  std::vector<Collective> all(kAllCollectives.begin(), kAllCollectives.end());
  if (is_all(text)) return all;
  std::vector<Collective> out;
  for (const std::string& name : split_list(text)) {
    auto c = parse_collective(name);
    if (name.empty() || !c)
      throw Error("--collectives: unknown collective '" + name + "'; valid: " + join_names(all) + ", or all");
    push_unique(out, *c);
  }
  return out;
}

AlgorithmSelection parse_algorithms(std::string_view text, const std::vector<Algorithm>& allowed) {
  AlgorithmSelection sel;
  if (is_all(text)) {
    sel.all = true;
    return sel;
  }
  for (const std::string& name : split_list(text)) {
    auto a = parse_algorithm(name);
    if (name.empty() || !a || std::find(allowed.begin(), allowed.end(), *a) == allowed.end())
      throw Error("--algorithms: unknown algorithm '" + name + "'; valid: " + join_names(allowed) + ", or all");
    push_unique(sel.named, *a);
  }
  return sel;
}

std::vector<std::pair<Collective, std::vector<Algorithm>>> pair_algorithms(const std::vector<Collective>& collectives,
                                                                           const AlgorithmSelection& sel,
                                                                           const std::vector<Algorithm>& allowed,
                                                                           std::vector<std::string>* skipped) {
  auto applicable = [&](Collective c) {
    std::vector<Algorithm> v;
    for (Algorithm a : allowed)
      if (applies(c, a)) v.push_back(a);
    return v;
  };
  std::vector<std::pair<Collective, std::vector<Algorithm>>> out;
  if (sel.all) {
    for (Collective c : collectives) {
      auto v = applicable(c);
      if (v.empty()) throw Error("no algorithm of this command applies to " + std::string(to_string(c)));
      out.emplace_back(c, std::move(v));
    }
    return out;
  }
  for (Algorithm a : sel.named) {
    bool any = std::any_of(collectives.begin(), collectives.end(), [&](Collective c) { return applies(c, a); });
    if (any) continue;
    std::string msg = "algorithm " + std::string(to_string(a)) + " does not apply to " + join_names(collectives) + " (";
    for (std::size_t i = 0; i < collectives.size(); ++i)
      msg += (i ? "; " : "") + std::string(to_string(collectives[i])) + ": " + list_text(applicable(collectives[i]));
    throw Error(msg + ")");
  }
  for (Collective c : collectives) {
    std::vector<Algorithm> v;
    for (Algorithm a : sel.named) {
      if (applies(c, a))
        v.push_back(a);
      else if (skipped)
        skipped->push_back(std::string(to_string(a)) + " does not apply to " + std::string(to_string(c)) + " (" +
                           std::string(to_string(c)) + ": " + list_text(applicable(c)) + ")");
    }
    if (v.empty())
      throw Error("none of the algorithms asked for (" + join_names(sel.named) + ") applies to " +
                  std::string(to_string(c)) + " (" + std::string(to_string(c)) + ": " + list_text(applicable(c)) + ")");
    out.emplace_back(c, std::move(v));
  }
  return out;
}

std::vector<Protocol> parse_protocols(std::string_view text) {
  if (is_all(text)) return std::vector<Protocol>(kNcclProtocols.begin(), kNcclProtocols.end());
  std::vector<Protocol> out;
  for (const std::string& name : split_list(text)) {
    auto p = name.empty() ? std::nullopt : parse_protocol(name);
    if (!p) throw Error("--protocols: unknown protocol '" + name + "'; valid: none, LL, LL128, Simple, or all");
    push_unique(out, *p);
  }
  return out;
}

std::vector<Bytes> parse_sizes(std::string_view text) {
  try {
    return parse_size_list(text);
  } catch (const Error& e) {
    throw Error(std::string("--sizes: ") + e.what());
  }
}

std::vector<int> parse_nodes(std::string_view text) {
  std::vector<int> v;
  try {
    v = parse_int_list(text);
  } catch (const Error& e) {
    throw Error(std::string("--nodes: ") + e.what());
  }
  for (int n : v)
    if (n < 1) throw Error("--nodes: node count " + std::to_string(n) + " is not positive");
  return v;
}

// ---- nccl-tests' options

bool NcclTestsOptions::any() const {
  for (const std::string* v : {&b, &e, &i, &f, &n, &w, &c, &d, &o, &r, &a, &z, &G, &N, &t, &g})
    if (!v->empty()) return true;
  return false;
}

void add_nccl_tests_options(po::options_description& desc, NcclTestsOptions& o) {
  auto add = [&desc](const char* name, std::string* value, const char* meta, const char* help) {
    desc.add_options()(name, po::value(value)->value_name(meta), help);
  };
  add(",b", &o.b, "SIZE",
      "nccl-tests: smallest size, bytes; K, M, G = 2^10, 2^20, 2^30 (-b 8 -e 8G: 8 B to 8 GiB; "
      "--sizes reads KB, MB, GB as 10^3, 10^6, 10^9 and KiB, MiB, GiB as powers of 2) (default 32M)");
  add(",e", &o.e, "SIZE", "nccl-tests: largest size, bytes, suffixes as -b (default 32M)");
  add(",i", &o.i, "SIZE", "nccl-tests: step between sizes when -f is 1, bytes (default 1M)");
  add(",f", &o.f, "N", "nccl-tests: factor between sizes; 1 steps by -i (default 1)");
  add(",n", &o.n, "N", "nccl-tests: timed iterations per point, as --iters (default 20)");
  add(",w", &o.w, "N", "nccl-tests: untimed iterations before them, as --warmup (default 1)");
  add(",c", &o.c, "0|1", "nccl-tests: check the results, 1 (default) or 0 (as --no-check)");
  add(",d", &o.d, "TYPE", "nccl-tests: element type (float, double, half, bfloat16, int32, ... or all), as --dtype");
  add(",o", &o.o, "OP", "nccl-tests: reduction (sum, min, max or all), as --op");
  add(",r", &o.r, "RANK", "nccl-tests: root of broadcast and reduce, as --root (default 0)");
  add(",a", &o.a, "0-3",
      "nccl-tests: how the ranks' times combine under --timing nccl-tests: 0 rank 0's, 1 their "
      "mean (default), 2 minimum, 3 maximum");
  add(",z", &o.z, "0|1", "nccl-tests: 1 waits for each iteration before launching the next (default 0: back to back)");
  add(",G", &o.G, "N",
      "nccl-tests: N > 0 captures each iteration in a CUDA graph, as --graph (nccl-tests captures "
      "all --iters in one graph and launches it N times)");
  add(",N", &o.N, "1", "nccl-tests: cycles over the sweep; commsim runs one (repeat with --passes)");
  add(",t", &o.t, "1", "nccl-tests: threads per process; commsim runs one (start more ranks instead)");
  add(",g", &o.g, "1", "nccl-tests: GPUs per thread; commsim runs one per rank (start one rank per GPU)");
}

namespace {

// strtol(text, nullptr, 0) as nccl-tests reads its integers, but a value that is not wholly a number
// is an error instead of 0.
long nccl_tests_int(const std::string& text, std::string_view option) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    throw Error(std::string(option) + ": '" + text + "' is not an integer");
  return v;
}

// nccl-tests' type names (src/common.cu test_typenames) and the C names it also prints, as commsim names them.
std::string nccl_tests_dtype(const std::string& name) {
  if (name == "all") return name;
  for (auto [nt, ours] : {std::pair{"float", "float32"},
                          {"double", "float64"},
                          {"half", "float16"},
                          {"bfloat16", "bfloat16"},
                          {"int32", "int32"},
                          {"int", "int32"}})
    if (name == nt) return ours;
  if (parse_dtype(name)) return name;
  throw Error("-d: commsim has no type '" + name +
              "' (its types: float, double, half, bfloat16, int32, or all; nccl-tests' int8, uint8, uint32, int64, "
              "uint64 and fp8 types are not implemented)");
}

}  // namespace

Bytes parse_nccl_tests_size(std::string_view text, std::string_view option) {
  const std::string t(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  std::string rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.erase(0, 1);
  double unit = 1;
  if (rest == "K" || rest == "k")
    unit = 1024.0;
  else if (rest == "M" || rest == "m")
    unit = 1024.0 * 1024;
  else if (rest == "G" || rest == "g")
    unit = 1024.0 * 1024 * 1024;
  else if (!rest.empty())
    throw Error(std::string(option) + ": '" + t +
                "' is not a size (a number of bytes with K, M or G for 2^10, 2^20, 2^30)");
  if (end == t.c_str() || !(v >= 0) || !std::isfinite(v))
    throw Error(std::string(option) + ": '" + t +
                "' is not a size (a number of bytes with K, M or G for 2^10, 2^20, 2^30)");
  return static_cast<Bytes>(v * unit);
}

std::vector<Bytes> nccl_tests_sizes(Bytes min, Bytes max, Bytes step, std::uint64_t factor) {
  if (min > max)
    throw Error("-b " + std::to_string(min) + " is larger than -e " + std::to_string(max) +
                " (nccl-tests: invalid sizes)");
  if (factor <= 1 && step == 0 && min < max) throw Error("-i 0 with -f 1 never reaches -e: give -i or -f 2");
  if (factor > 1 && min == 0 && max > 0) throw Error("-b 0 with -f never grows: give -b 1 or more");
  std::vector<Bytes> out;
  for (Bytes size = min; size <= max;) {
    out.push_back(size);
    const Bytes next = factor > 1 ? size * factor : size + step;
    if (next <= size) break;  // overflow, or -b = -e
    size = next;
  }
  return out;
}

NcclTestsSettings resolve_nccl_tests(const NcclTestsOptions& o) {
  NcclTestsSettings s;
  const Bytes min = o.b.empty() ? Bytes{32} << 20 : parse_nccl_tests_size(o.b, "-b");
  const Bytes max = o.e.empty() ? Bytes{32} << 20 : parse_nccl_tests_size(o.e, "-e");
  const Bytes step = o.i.empty() ? Bytes{1} << 20 : parse_nccl_tests_size(o.i, "-i");
  const long factor = o.f.empty() ? 1 : nccl_tests_int(o.f, "-f");
  if (factor < 1) throw Error("-f " + o.f + ": the factor must be at least 1");
  s.sizes = nccl_tests_sizes(min, max, step, static_cast<std::uint64_t>(factor));
  if (!o.n.empty()) s.iters = static_cast<int>(nccl_tests_int(o.n, "-n"));
  if (!o.w.empty()) s.warmup = static_cast<int>(nccl_tests_int(o.w, "-w"));
  if (!o.c.empty()) s.check = nccl_tests_int(o.c, "-c") != 0;
  if (!o.d.empty()) s.dtype = nccl_tests_dtype(o.d);
  if (!o.o.empty()) {
    if (o.o == "prod" || o.o == "avg" || o.o == "mulsum")
      throw Error("-o " + o.o + ": commsim's kernels and exact checks implement sum, min and max (or all of them)");
    s.op = o.o;
  }
  if (!o.r.empty()) s.root = static_cast<int>(nccl_tests_int(o.r, "-r"));
  if (!o.a.empty()) {
    s.average = static_cast<int>(nccl_tests_int(o.a, "-a"));
    if (s.average < 0 || s.average > 3) throw Error("-a " + o.a + ": give 0 (rank 0), 1 (mean), 2 (min) or 3 (max)");
  }
  if (!o.z.empty()) {
    const long z = nccl_tests_int(o.z, "-z");
    if (z != 0 && z != 1) throw Error("-z " + o.z + ": commsim runs 0 (back to back) or 1 (each iteration waited for)");
    s.blocking = z == 1;
  }
  if (!o.G.empty()) {
    s.graph_launches = static_cast<int>(nccl_tests_int(o.G, "-G"));
    if (s.graph_launches < 0) throw Error("-G " + o.G + " must not be negative");
  }
  if (!o.t.empty() && nccl_tests_int(o.t, "-t") != 1)
    throw Error("-t " + o.t + ": commsim runs one thread per rank; start one rank per GPU (mpirun -np N)");
  if (!o.g.empty() && nccl_tests_int(o.g, "-g") != 1)
    throw Error("-g " + o.g + ": commsim runs one GPU per rank; start one rank per GPU (mpirun -np N)");
  if (!o.N.empty() && nccl_tests_int(o.N, "-N") != 1)
    throw Error("-N " + o.N + ": commsim runs the sweep once; measure each point several times with --passes N");
  return s;
}

OutputFormat parse_format(std::string_view text) {
  for (OutputFormat f : {OutputFormat::Table, OutputFormat::Csv, OutputFormat::Json})
    if (text == to_string(f)) return f;
  throw Error("--format: unknown format '" + std::string(text) + "'; valid: table, csv, json");
}

}  // namespace commsim
