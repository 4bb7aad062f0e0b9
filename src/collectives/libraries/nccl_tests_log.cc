#include "collectives/libraries/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "model/error.h"
#include "model/nccl/ids.h"

namespace commsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<long long> to_int(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string str(s);
  char* end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// nccl-tests' spelling of a collective from a tool name ("./build/all_reduce_perf"), nccl-tests'
// name, or commsim's ("allreduce").
std::string normalize_collective(std::string_view name) {
  std::string s = lower(trim(name));
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, "_perf") == 0) s.resize(s.size() - 5);
  static const std::map<std::string, std::string> commsim_names = {{"allreduce", "all_reduce"},
                                                                   {"allgather", "all_gather"},
                                                                   {"reducescatter", "reduce_scatter"},
                                                                   {"all_to_all", "alltoall"},
                                                                   {"send_recv", "sendrecv"}};
  if (auto it = commsim_names.find(s); it != commsim_names.end()) return it->second;
  return s;
}

// NCCL's version code (NCCL_VERSION_CODE) as "2.29.2": 22902 since 2.9, 2708 before.
std::string version_from_code(long long code) {
  if (code <= 0) return "";
  long long major = code >= 10000 ? code / 10000 : code / 1000;
  long long minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// Removes mpirun's "[1,0]<stdout>:" (--tag-output) and srun's "0: " (--label).
std::string_view strip_launcher_prefix(std::string_view line) {
  static const std::regex mpirun(R"(^\[\d+,\d+\]<std(out|err)>: ?)");
  static const std::regex srun(R"(^\s*\d+: )");
  std::match_results<std::string_view::const_iterator> m;
  if (!line.empty() && line.front() == '[' && std::regex_search(line.begin(), line.end(), m, mpirun))
    return line.substr(static_cast<std::size_t>(m.length(0)));
  if (std::regex_search(line.begin(), line.end(), m, srun)) return line.substr(static_cast<std::size_t>(m.length(0)));
  return line;
}

// Where NCCL's "host:pid:tid [dev] NCCL INFO ..." starts in `line`, and the row text printed
// before it on the same line (nccl-tests prints a row in pieces; NCCL's line can land between
// them, glued to the last number: "    -1node7:123:123 [0] NCCL INFO ..."). nullopt: no NCCL line.
struct NcclSplit {
  std::string_view before, message;
};
std::optional<NcclSplit> split_nccl_message(std::string_view line) {
  std::size_t at = std::string_view::npos;
  for (std::string_view tag : {"NCCL INFO", "NCCL WARN", "NCCL TRACE"}) at = std::min(at, line.find(tag));
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t bracket = line.rfind('[', at);
  std::size_t host_end = bracket == std::string_view::npos ? at : bracket;
  while (host_end > 0 && line[host_end - 1] == ' ') --host_end;
  std::size_t start = host_end;
  while (start > 0 && !std::isspace(static_cast<unsigned char>(line[start - 1]))) --start;
  std::string_view token = line.substr(start, host_end - start);
  std::size_t split = start;
  if (!trim(line.substr(0, start)).empty() ||
      (!token.empty() && (std::isdigit(static_cast<unsigned char>(token[0])) || token[0] == '-'))) {
    // A number glued to the host name: the longest number (or N/A) that leaves a host behind.
    static const std::regex glued(R"(^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|N/A)([^:\s]+:\d+:\d+)$)");
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_match(token.begin(), token.end(), m, glued)) split = start + static_cast<std::size_t>(m.length(1));
  }
  return NcclSplit{line.substr(0, split), line.substr(split)};
}

// A line whose first two fields are whole numbers (size and count): a row, or the start of one.
bool starts_like_row(std::string_view line) {
  std::vector<std::string> t = split_ws(line);
  return t.size() >= 2 && to_u64(t[0]) && to_u64(t[1]);
}

// The columns of a table, from its header line or guessed from a row's field count.
struct Layout {
  bool known = false;
  bool root = true;        // the `root` column (absent before nccl-tests 2.x)
  bool per_iter = false;   // i_min i_max i_p99 i_cv% after each half
  bool timestamp = false;  // date and time at the end of the row
  std::size_t fields() const { return 4 + (root ? 1 : 0) + 2 * (per_iter ? 8 : 4) + (timestamp ? 2 : 0); }
};

std::optional<Layout> layout_of_header(const std::vector<std::string>& t) {
  auto has = [&](std::string_view w) { return std::find(t.begin(), t.end(), w) != t.end(); };
  if (!has("size") || !has("count") || !has("algbw")) return std::nullopt;
  Layout l;
  l.known = true;
  l.root = has("root");
  l.per_iter = has("i_min");
  l.timestamp = has("timestamp");
  return l;
}

// Without a header: the layouts whose rows are numbers only (a timestamp comes with its header).
std::optional<Layout> layout_of_field_count(std::size_t n) {
  for (bool root : {true, false})
    for (bool per_iter : {false, true}) {
      Layout l{true, root, per_iter, false};
      if (l.fields() == n) return l;
    }
  return std::nullopt;
}

void add_setting(std::map<std::string, std::string>& env, const std::string& key, std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  env[key] = value;
}

// Every NCCL_X=value and NCCL's "NCCL_X set by environment to value" of a line that is not a row.
void scan_settings(std::string_view line, std::map<std::string, std::string>& env) {
  if (line.find("NCCL_") == std::string_view::npos) return;
  static const std::regex assign(R"((NCCL_[A-Z0-9_]+)=("[^"]*"|'[^']*'|[^\s;,'"]+))");
  static const std::regex by_env(R"((NCCL_[A-Z0-9_]+) set by environment to ([^\s.,]+))");
  for (const std::regex* re : {&assign, &by_env}) {
    for (std::regex_iterator<std::string_view::const_iterator> it(line.begin(), line.end(), *re), end; it != end; ++it)
      add_setting(env, (*it)[1].str(), (*it)[2].str());
  }
}

// The reader of the text output, one line at a time.
class TextReader {
 public:
  TextReader(NcclTestsLog& log, std::string_view name, std::string_view collective)
      : log_(log), name_(name), collective_(normalize_collective(collective)) {}

  // false once reading has stopped on an error.
  bool line(std::string_view raw, int number);
  void finish();

 private:
  std::string where(int line) const { return name_ + ":" + std::to_string(line) + ": "; }
  void fail(int line, const std::string& what) { log_.error = where(line) + what; }
  void nccl_message(std::string_view message);
  void table_line(std::string_view text);
  void comment(std::string_view content, int number);
  void other(std::string_view text);
  bool row_text(std::string_view text, int number, bool spliced);
  bool finish_row();
  bool timing(std::size_t& i, NcclTestsTiming& t, const char* half);

  NcclTestsLog& log_;
  std::string name_;
  std::string collective_;
  Layout layout_;
  std::vector<std::string> pending_;  // fields of a row not yet complete
  int pending_line_ = 0;
  std::vector<NcclTuningLine> tuning_;  // per-call lines since the last row
  bool in_table_ = false;               // inside NCCL's first TUNING table
  bool table_done_ = false;             // the first TUNING table is complete
  std::set<std::string> table_algorithms_;  // the algorithms its blocks named
  bool table_open_ = false;             // a header or a row seen since the last footer
  int table_line_ = 0;
  std::map<std::string, std::string> env_;
};

bool TextReader::line(std::string_view raw, int number) {
  if (!log_.error.empty()) return false;
  std::string_view text = strip_launcher_prefix(raw);
  // NCCL's lines start with the host name; a `#` line that quotes one is a comment.
  if (auto split = trim(text).rfind('#', 0) == 0 ? std::nullopt : split_nccl_message(text)) {
    nccl_message(split->message);
    // Before it: a piece of a row, or NCCL's own prefix (a timestamp), which is not.
    if (!pending_.empty() || starts_like_row(split->before)) return row_text(split->before, number, true);
    return true;
  }
  std::string_view t = trim(text);
  if (t.empty()) return true;
  if (t.rfind("@@collective=", 0) == 0) {
    collective_ = normalize_collective(t.substr(13));
    return true;
  }
  if (t.front() == '#') {
    if (!pending_.empty()) {
      fail(pending_line_, "the row is cut short (" + std::to_string(pending_.size()) + " of " +
                              std::to_string(layout_.fields()) + " fields) before line " + std::to_string(number));
      return false;
    }
    comment(trim(t.substr(1)), number);
    return true;
  }
  if (!pending_.empty() || starts_like_row(t)) return row_text(t, number, false);
  other(t);
  return true;
}

void TextReader::nccl_message(std::string_view message) {
  if (auto tuning = parse_nccl_tuning_line(message)) tuning_.push_back(*tuning);
  static const std::regex version(R"(NCCL version (\d+\.\d+\.\d+))");
  static const std::regex placement(R"(\bnRanks (\d+) nNodes (\d+))");
  std::match_results<std::string_view::const_iterator> m;
  if (log_.nccl_version.empty() && std::regex_search(message.begin(), message.end(), m, version))
    log_.nccl_version = m[1].str();
  if (log_.nccl_ranks == 0 && std::regex_search(message.begin(), message.end(), m, placement)) {
    log_.nccl_ranks = std::stoi(m[1].str());
    log_.nccl_nodes = std::stoi(m[2].str());
  }
  std::size_t info = message.find("NCCL INFO ");
  if (info != std::string_view::npos) table_line(trim(message.substr(info + 10)));
  scan_settings(message, env_);
}

// The TUNING table (model/nccl/logged_table.h): "Algorithm |", "Protocol |", "Max NThreads |"
// and one "<Function> |" line per block of three algorithms, the blocks in a row. Only the first
// table is kept (each communicator prints one): it ends at the first result row, or at an
// Algorithm line naming an algorithm the table already has (the next communicator's). Other INFO
// lines may come between its lines (other ranks print too); "threadThresholds a/b/c | ..." is not
// one of its lines.
void TextReader::table_line(std::string_view text) {
  if (table_done_ || text.find('|') == std::string_view::npos) return;
  const std::string_view head = trim(text.substr(0, text.find('|')));
  if (head == "Algorithm") {
    std::vector<std::string> names = split_ws(text.substr(text.find('|')));
    std::erase(names, "|");
    for (std::string& n : names) {
      if (!n.empty() && n.back() == '|') n.pop_back();
      if (table_algorithms_.count(n)) table_done_ = true;
    }
    if (table_done_) return;
    table_algorithms_.insert(names.begin(), names.end());
    in_table_ = true;
  } else if (!in_table_ || (head != "Protocol" && head != "Max NThreads" &&
                            std::ranges::find(nccl::kFunctionNames, head) == nccl::kFunctionNames.end())) {
    return;
  }
  log_.nccl_tuning_table.emplace_back(text);
}

void TextReader::other(std::string_view text) {
  static const std::regex version(R"(^NCCL version (\d+\.\d+\.\d+))");
  static const std::regex tool(R"((^|[\s/])([a-z_0-9]+)_perf(\s|$))");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(text.begin(), text.end(), m, version)) {
    log_.nccl_version = m[1].str();
  } else if (std::regex_search(text.begin(), text.end(), m, tool)) {
    std::string_view command = text;  // without a shell prompt pasted with it
    if (!command.empty() && (command.front() == '$' || command.front() == '>')) command = trim(command.substr(1));
    if (log_.command_line.empty()) log_.command_line = std::string(command);
    collective_ = normalize_collective(m[2].str());
  }
  scan_settings(text, env_);
}

void TextReader::comment(std::string_view c, int number) {
  std::vector<std::string> t = split_ws(c);
  if (t.empty()) return;
  static const std::regex rank_line(
      R"(^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$)");
  std::match_results<std::string_view::const_iterator> m;
  if (t[0] == "Rank" && std::regex_match(c.begin(), c.end(), m, rank_line)) {
    int rank = std::stoi(m[1].str());
    auto known = [&](const NcclTestsRank& r) { return r.rank == rank; };
    if (std::none_of(log_.ranks.begin(), log_.ranks.end(), known))
      log_.ranks.push_back({rank, m[2].str(), std::stoi(m[3].str()), std::string(trim(m[4].str()))});
    return;
  }
  if (auto header = layout_of_header(t)) {
    layout_ = *header;
    table_open_ = true;
    table_line_ = number;
    return;
  }
  if (t[0] == "nccl-tests" && t.size() >= 3 && t[1] == "version") {
    log_.nccl_tests_version = t[2];
    for (const std::string& w : t)
      if (w.rfind("nccl-library=", 0) == 0 && log_.nccl_version.empty())
        if (auto code = to_int(std::string_view(w).substr(13))) log_.nccl_version = version_from_code(*code);
    return;
  }
  if (t[0] == "nThread") {
    for (std::size_t i = 0; i + 1 < t.size(); ++i) {
      auto v = to_int(t[i + 1]);
      if (!v) continue;
      if (t[i] == "nThread") log_.threads = static_cast<int>(*v);
      if (t[i] == "nGpus") log_.gpus_per_thread = static_cast<int>(*v);
      if (t[i] == "graph:") log_.cuda_graphs = *v > 0;
      if (t[i] == "iters:" && i > 0 && t[i - 1] == "warmup") log_.warmup_iters = static_cast<int>(*v);
      if (t[i] == "iters:" && (i == 0 || (t[i - 1] != "warmup" && t[i - 1] != "agg")))
        log_.iters = static_cast<int>(*v);
    }
    return;
  }
  if (c.rfind("Collective test starting:", 0) == 0 && t.size() >= 4) {
    collective_ = normalize_collective(t[3]);
    return;
  }
  if (c.rfind("Collective test concluded:", 0) == 0) return;
  if (c.rfind("Avg bus bandwidth", 0) == 0) {
    std::size_t colon = c.find(':');
    const std::vector<std::string> value = split_ws(c.substr(colon == std::string_view::npos ? c.size() : colon + 1));
    auto v = value.empty() ? std::nullopt : to_double(value.front());
    log_.summaries.push_back({collective_, v ? *v : kNaN});
    table_open_ = false;
    return;
  }
  other(c);
}

bool TextReader::row_text(std::string_view text, int number, bool spliced) {
  std::vector<std::string> t = split_ws(text);
  if (pending_.empty()) {
    pending_line_ = number;
  }
  pending_.insert(pending_.end(), t.begin(), t.end());
  if (!layout_.known) {
    if (spliced || pending_.size() < 12) {
      if (pending_.size() < Layout{}.fields()) return true;  // nccl-tests 2.x layout until told otherwise
      layout_ = Layout{true};
    } else if (auto guess = layout_of_field_count(pending_.size())) {
      layout_ = *guess;
    } else {
      fail(pending_line_, "a row of " + std::to_string(pending_.size()) +
                              " fields: no nccl-tests layout has that many (and no header line names the columns)");
      return false;
    }
  }
  if (pending_.size() < layout_.fields()) return true;
  if (pending_.size() > layout_.fields()) {
    fail(pending_line_, "a row of " + std::to_string(pending_.size()) + " fields where the header gives " +
                            std::to_string(layout_.fields()));
    return false;
  }
  return finish_row();
}

bool TextReader::timing(std::size_t& i, NcclTestsTiming& t, const char* half) {
  const char* names[] = {"time", "algbw", "busbw"};
  double* values[] = {&t.time_us, &t.algbw_gbps, &t.busbw_gbps};
  for (int k = 0; k < 3; ++k, ++i) {
    if (pending_[i] == "N/A") continue;
    auto v = to_double(pending_[i]);
    if (!v) {
      fail(pending_line_, std::string("the ") + half + " " + names[k] + " '" + pending_[i] + "' is not a number");
      return false;
    }
    *values[k] = *v;
  }
  const std::string& w = pending_[i++];
  if (auto n = to_int(w)) {
    t.wrong = *n;
  } else if (auto e = to_double(w)) {
    t.max_error = *e;  // the old `error` column
  } else if (w != "N/A") {
    fail(pending_line_, std::string("the ") + half + " #wrong '" + w + "' is not a number");
    return false;
  }
  if (layout_.per_iter) i += 4;
  return true;
}

bool TextReader::finish_row() {
  NcclTestsRow row;
  row.line = pending_line_;
  row.collective = collective_;
  std::size_t i = 0;
  auto size = to_u64(pending_[i++]);
  auto count = to_u64(pending_[i++]);
  if (!size || !count) {
    fail(pending_line_, "the count '" + pending_[1] + "' is not a whole number");
    return false;
  }
  row.size_B = *size;
  row.count = *count;
  row.type = pending_[i++];
  row.redop = pending_[i++];
  if (to_double(row.type) || to_double(row.redop)) {
    fail(pending_line_, "expected the type and reduction after the count, found '" + row.type + " " + row.redop +
                            "' (is the `root` column missing from the header?)");
    return false;
  }
  if (layout_.root) {
    auto root = to_int(pending_[i++]);
    if (!root) {
      fail(pending_line_, "the root '" + pending_[i - 1] + "' is not a whole number");
      return false;
    }
    row.root = static_cast<int>(*root);
  }
  if (!timing(i, row.out_of_place, "out-of-place") || !timing(i, row.in_place, "in-place")) return false;
  // The calls of this size (NCCL prints the bytes of one call): the warmup before the first row
  // and any other size's calls are left out where the log makes that possible.
  std::vector<NcclTuningLine> calls;
  for (const NcclTuningLine& l : tuning_)
    if (l.bytes == row.size_B) calls.push_back(l);
  NcclChoice choice = nccl_choice(calls.empty() ? tuning_ : calls, nccl_function_of(row.collective));
  if (!choice.empty()) {
    row.nccl_algo = choice.algorithm;
    row.nccl_proto = choice.protocol;
    row.nccl_channels = choice.channels;
  }
  log_.rows.push_back(std::move(row));
  pending_.clear();
  tuning_.clear();
  table_done_ = table_done_ || !log_.nccl_tuning_table.empty();
  if (!table_open_) table_line_ = pending_line_;
  table_open_ = true;
  return true;
}

void TextReader::finish() {
  if (log_.error.empty() && !pending_.empty())
    log_.warnings.push_back(where(pending_line_) + "the log ends inside a row (" + std::to_string(pending_.size()) +
                            " of " + std::to_string(layout_.fields()) + " fields); the rows before it are kept");
  else if (log_.error.empty() && table_open_ && !log_.summaries.empty())
    log_.warnings.push_back(where(table_line_) +
                            "the last table has no `Avg bus bandwidth` footer: the log may be cut short");
  for (const auto& [key, value] : env_) log_.environment.push_back(key + "=" + value);
  if (auto it = env_.find("NCCL_ALGO"); it != env_.end()) log_.forced_algo = it->second;
  if (auto it = env_.find("NCCL_PROTO"); it != env_.end()) log_.forced_proto = it->second;
}

int line_of_offset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

using nlohmann::json;

double json_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return to_double(trim(v.get<std::string>())).value_or(kNaN);  // "nan"
  return kNaN;
}

NcclTestsTiming json_timing(const json& half) {
  NcclTestsTiming t;
  if (!half.is_object()) return t;
  t.time_us = json_number(half.contains("time") ? half["time"] : half.value("cpu_time", json()));
  t.algbw_gbps = json_number(half.value("alg_bw", json()));
  t.busbw_gbps = json_number(half.value("bus_bw", json()));
  double wrong = json_number(half.value("nwrong", json()));
  if (std::isfinite(wrong)) t.wrong = static_cast<std::int64_t>(wrong);
  return t;
}

// The JSON document, or one cut short (a killed run) closed after its last complete result.
std::optional<json> parse_json(std::string_view text, const std::string& name, NcclTestsLog& log) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::size_t end = text.size();
    for (int tries = 0; tries < 64; ++tries) {
      std::size_t brace = text.rfind('}', end);
      if (brace == std::string_view::npos || brace == 0) break;
      json j = json::parse(std::string(text.substr(0, brace + 1)) + "]}", nullptr, false);
      if (!j.is_discarded() && j.contains("results")) {
        log.warnings.push_back(name + ":" + std::to_string(line_of_offset(text, e.byte)) +
                               ": the JSON ends early; the results before it are kept");
        return j;
      }
      end = brace - 1;
    }
    log.error = name + ":" + std::to_string(line_of_offset(text, e.byte)) + ": not valid JSON (" + e.what() + ")";
    return std::nullopt;
  }
}

void read_json_document(std::string_view text, const std::string& name, std::string_view collective,
                        NcclTestsLog& log) {
  log.json = true;
  std::optional<json> doc = parse_json(text, name, log);
  if (!doc) return;
  const json& j = *doc;
  std::string coll = normalize_collective(collective);
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty()) {
    for (const json& a : j["args"]) log.command_line += (log.command_line.empty() ? "" : " ") + a.get<std::string>();
    coll = normalize_collective(j["args"][0].get<std::string>());
  }
  std::map<std::string, std::string> env;
  if (j.contains("env"))
    for (const json& e : j["env"])
      if (e.is_string() && e.get<std::string>().rfind("NCCL_", 0) == 0) scan_settings(e.get<std::string>(), env);
  for (const auto& [key, value] : env) log.environment.push_back(key + "=" + value);
  log.forced_algo = env.count("NCCL_ALGO") ? env["NCCL_ALGO"] : "";
  log.forced_proto = env.count("NCCL_PROTO") ? env["NCCL_PROTO"] : "";
  if (j.contains("nccl_version") && j["nccl_version"].is_number_integer())
    log.nccl_version = version_from_code(j["nccl_version"].get<long long>());
  const json config = j.value("config", json::object());
  log.threads = config.value("nthreads", 0);
  log.gpus_per_thread = config.value("ngpus", 0);
  log.iters = config.value("iterations", 0);
  log.warmup_iters = config.value("warmup_iters", 0);
  for (const json& d : config.value("devices", json::array()))
    log.ranks.push_back(
        {d.value("rank", 0), d.value("hostname", ""), d.value("device", 0), d.value("device_info", "")});
  for (const json& r : j.value("results", json::array())) {
    NcclTestsRow row;
    row.collective = coll;
    row.size_B = r.value("size", std::uint64_t{0});
    row.count = r.value("count", std::uint64_t{0});
    row.type = r.value("type", "");
    row.redop = r.value("redop", "");
    const json root = r.value("root", json());
    row.root = root.is_number()
                   ? root.get<int>()
                   : static_cast<int>(to_int(trim(root.is_string() ? root.get<std::string>() : "")).value_or(-1));
    row.out_of_place = json_timing(r.value("out_of_place", json()));
    row.in_place = json_timing(r.value("in_place", json()));
    log.rows.push_back(std::move(row));
  }
  if (j.contains("average_bus_bandwidth"))
    log.summaries.push_back({coll, json_number(j["average_bus_bandwidth"].value("bandwidth", json()))});
}

// A field of the wrong JSON type (a string where a number belongs) stops the reading like a bad row.
void read_json(std::string_view text, const std::string& name, std::string_view collective, NcclTestsLog& log) {
  try {
    read_json_document(text, name, collective, log);
  } catch (const json::exception& e) {
    log.error = name + ": " + e.what();
  }
}

}  // namespace

std::vector<std::string> NcclTestsLog::hosts() const {
  std::vector<std::string> out;
  for (const NcclTestsRank& r : ranks)
    if (std::find(out.begin(), out.end(), r.host) == out.end()) out.push_back(r.host);
  return out;
}

std::string nccl_function_of(std::string_view collective) {
  static const std::map<std::string, std::string, std::less<>> names = {
      {"all_reduce", "AllReduce"}, {"all_gather", "AllGather"}, {"reduce_scatter", "ReduceScatter"},
      {"broadcast", "Broadcast"},  {"reduce", "Reduce"},        {"sendrecv", "SendRecv"},
      {"alltoall", "AllToAll"}};
  auto it = names.find(normalize_collective(collective));
  return it == names.end() ? "" : it->second;
}

NcclTestsLog parse_nccl_tests_log(std::string_view text, std::string_view name, std::string_view collective) {
  NcclTestsLog log;
  if (!trim(text).empty() && trim(text).front() == '{') {
    read_json(text, std::string(name), collective, log);
    return log;
  }
  TextReader reader(log, name, collective);
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!reader.line(line, ++number)) break;
    start = end + 1;
  }
  reader.finish();
  return log;
}

int ranks_from_bandwidths(const NcclTestsLog& log) {
  const NcclTestsRow* best = nullptr;
  for (const NcclTestsRow& r : log.rows) {
    const std::string c = normalize_collective(r.collective);
    if (c != "all_reduce" && c != "all_gather" && c != "reduce_scatter" && c != "alltoall") continue;
    if (!(r.out_of_place.algbw_gbps > 1.0) || !(r.out_of_place.busbw_gbps > 0)) continue;
    if (!best || r.out_of_place.algbw_gbps > best->out_of_place.algbw_gbps) best = &r;
  }
  if (!best) return 0;
  const bool allreduce = normalize_collective(best->collective) == "all_reduce";
  const double alg = best->out_of_place.algbw_gbps, bus = best->out_of_place.busbw_gbps;
  auto factor = [&](int n) { return (allreduce ? 2.0 : 1.0) * (n - 1) / n; };
  // Both bandwidths are printed with two decimals: a rank count fits when its factor reproduces
  // busbw within that rounding; it is the answer only when its neighbours do not also fit.
  auto fits = [&](int n) { return n >= 2 && std::fabs(factor(n) * alg - bus) <= 0.005 + 0.005 * factor(n) + 1e-9; };
  const double ratio = bus / alg;
  const double denom = allreduce ? 2.0 - ratio : 1.0 - ratio;
  if (!(denom > 0)) return 0;
  const int n = static_cast<int>(std::lround((allreduce ? 2.0 : 1.0) / denom));
  if (!fits(n) || fits(n - 1) || fits(n + 1)) return 0;
  return n;
}

NcclTestsPlacement placement_of(const NcclTestsLog& log, std::string_view name, int nodes_given,
                                int gpus_per_node_given) {
  const std::string log_name(name);
  if (!log.ranks.empty() || (log.nccl_ranks > 0 && log.nccl_nodes > 0)) {
    NcclTestsPlacement p{log.nccl_ranks, log.nccl_nodes, ""};
    if (!log.ranks.empty()) p = {static_cast<int>(log.ranks.size()), static_cast<int>(log.hosts().size()), ""};
    if (nodes_given > 0 && nodes_given != p.nodes)
      p.note = log_name + " shows " + std::to_string(p.nodes) + " nodes; the " + std::to_string(nodes_given) +
               " given are not used for it";
    return p;
  }
  int ranks =
      nodes_given > 0 && gpus_per_node_given > 0 ? nodes_given * gpus_per_node_given : ranks_from_bandwidths(log);
  const int per_process = log.threads * log.gpus_per_thread;  // GPUs of one process (-t x -g)
  if (ranks == 0) ranks = per_process;
  if (ranks == 0)
    throw Error(log_name + ": the log does not say how many ranks ran (no `#  Rank` lines, no NCCL INIT line)");
  if (nodes_given > 0) return {ranks, nodes_given, ""};
  if (gpus_per_node_given > 0) return {ranks, (ranks + gpus_per_node_given - 1) / gpus_per_node_given, ""};
  if (ranks == per_process || ranks == 1) return {ranks, 1, ""};  // one process: one node
  throw Error(log_name + ": the log does not say how many nodes its " + std::to_string(ranks) +
              " ranks ran on (no `#  Rank` lines)");
}

}  // namespace commsim
