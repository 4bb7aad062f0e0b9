#include "runtime/commands/cli.h"

#include <algorithm>
#include <iostream>
#include <sstream>

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

std::string list_text(const std::vector<Algorithm>& algs) { return algs.empty() ? "none" : join_names(algs); }

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

bool CommandLine::given(const std::string& name) const { return vm_.count(name) && !vm_[name].defaulted(); }

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
       "MIN:MAX:xF (factor F), or a list (1KiB,1MiB); units B, KiB, MiB, GiB (1024) or KB, MB, GB (1000)");
  if (with_nodes)
    desc.add_options()("nodes", po::value(&o.nodes)->default_value(o.nodes)->value_name("LIST"),
                       "node counts: a list (1,2,4) or a range 1:1024 (powers of two) or 1:64:x4");
  desc.add_options()("protocols", po::value(&o.protocols)->default_value(o.protocols)->value_name("LIST"),
                     "NCCL-style protocols to price: 'none' (plain alpha-beta-gamma), a list of LL, LL128, "
                     "Simple, or 'all' (needs a topology with NCCL constants)");
  desc.add_options()("channels",
                     po::value(&o.channels)->value_name("N")->notifier([](int n) {
                       if (n < 1 || n > kMaxChannels)
                         throw Error("--channels " + std::to_string(n) + ": give 1 to " +
                                     std::to_string(kMaxChannels) + " channels");
                     }),
                     "channels of the ring, tree and hierarchical allreduce/allgather algorithms, 1 to 64: the "
                     "data split over N rings (or trees), each leaving every node through its own NIC (default: "
                     "NCCL's count, two per NIC across nodes on a GPU topology, else 1)");
}

void add_output_options(po::options_description& desc, OutputOptions& o, bool with_resume) {
  desc.add_options()
      ("format", po::value(&o.format)->default_value(o.format)->value_name("FMT"),
       o.format_help ? o.format_help
                     : "what to print on stdout: table (nccl-tests-like), csv (header + one line per point) or json")
      ("out", po::value(&o.out)->value_name("FILE.h5"),
       "also write every point to this HDF5 results file (written as FILE.h5.partial, renamed when done)")
      ("force", po::bool_switch(&o.force), "overwrite --out FILE.h5 if it exists");
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

OutputFormat parse_format(std::string_view text) {
  for (OutputFormat f : {OutputFormat::Table, OutputFormat::Csv, OutputFormat::Json})
    if (text == to_string(f)) return f;
  throw Error("--format: unknown format '" + std::string(text) + "'; valid: table, csv, json");
}

}  // namespace commsim
