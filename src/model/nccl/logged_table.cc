#include "model/nccl/logged_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "model/error.h"
#include "model/units.h"

namespace commsim::nccl {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// The '|'-separated cells of a line, trimmed; the empty cell after the last '|' is dropped.
std::vector<std::string_view> cells(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at <= line.size()) {
    std::size_t bar = line.find('|', at);
    if (bar == std::string_view::npos) bar = line.size();
    out.push_back(trim(line.substr(at, bar - at)));
    at = bar + 1;
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

template <std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

std::optional<double> number(std::string_view s) {
  s = trim(s);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

[[noreturn]] void bad(std::size_t line, const std::string& what) {
  throw Error(fmt::format("NCCL's TUNING table, line {}: {}", line + 1, what));
}

}  // namespace

NcclTuningTable parse_tuning_table(const std::vector<std::string>& lines, int ranks, int nodes, bool forced) {
  NcclTuningTable out;
  out.ranks = ranks;
  out.nodes = nodes;
  std::vector<int> block;  // the algorithms of the current block, from its "Algorithm" line
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string_view> c = cells(lines[i]);
    if (c.empty() || c.front().empty()) bad(i, fmt::format("'{}' is not a line of the table", lines[i]));
    const std::string_view head = c.front();
    if (head == "Algorithm") {
      block.clear();
      for (std::size_t k = 1; k < c.size(); ++k) {
        const int a = index_of(kAlgorithmNames, c[k]);
        if (a < 0) bad(i, fmt::format("'{}' is not one of NCCL's algorithms (Tree, Ring, ... PAT)", c[k]));
        block.push_back(a);
      }
      if (block.empty()) bad(i, "the Algorithm line names no algorithm");
      continue;
    }
    if (block.empty()) bad(i, fmt::format("'{}' before the first Algorithm line", head));
    if (head == "Protocol") {
      for (std::size_t k = 1; k < c.size(); ++k)
        if (c[k] != kProtocolNames[(k - 1) % kNumProtocols])
          bad(i, "the protocols are not NCCL's LL, LL128, Simple in order");
      continue;
    }
    if (head == "Max NThreads") continue;  // the kernels' threads: not a cost
    const int f = index_of(kFunctionNames, head);
    if (f < 0) bad(i, fmt::format("'{}' is not one of NCCL's functions (Broadcast ... AllReduce)", head));
    if (c.size() != 1 + block.size() * kNumProtocols)
      bad(i, fmt::format("{} entries where the block's {} algorithms need {}", c.size() - 1, block.size(),
                         block.size() * kNumProtocols));
    for (std::size_t k = 1; k < c.size(); ++k) {
      const std::size_t slash = c[k].find('/');
      const auto lat = number(c[k].substr(0, slash)),
                 bw = slash == std::string_view::npos ? std::nullopt : number(c[k].substr(slash + 1));
      if (!lat || !bw || *lat < 0 || *bw < 0)
        bad(i, fmt::format("'{}' is not latency/bandwidth (two numbers, e.g. 7.2/141.0)", c[k]));
      if (forced && *bw == 0) continue;
      out.entries.push_back({f, block[(k - 1) / kNumProtocols], static_cast<int>((k - 1) % kNumProtocols), *lat, *bw});
    }
  }
  if (out.entries.empty() && !forced) throw Error("NCCL's TUNING table: no function row (Broadcast ... AllReduce)");
  return out;
}

std::string tuning_entry_text(double latency_us, double bandwidth_GBps) {
  if (bandwidth_GBps <= 0) return "off";
  return fmt::format("{:g} us / {:g} GB/s", latency_us, bandwidth_GBps);
}

void parse_tuning_entry(const std::string& text, double& latency_us, double& bandwidth_GBps) {
  if (text == "off") {
    latency_us = bandwidth_GBps = 0;
    return;
  }
  const std::size_t slash = text.find(" / ");
  if (slash == std::string::npos)
    throw Error(fmt::format("'{}' is not 'LATENCY / BANDWIDTH' (e.g. 7.2 us / 141 GB/s) or off", text));
  latency_us = parse_time(text.substr(0, slash)) * 1e6;
  bandwidth_GBps = parse_bandwidth(text.substr(slash + 3)) / 1e9;
}

std::string tuning_table_yaml(const NcclTuningTable& logged) {
  if (!logged.given()) return {};
  std::string y = fmt::format(
      "  # NCCL's own TUNING table, {}: for {} ranks on {} node{}, base\n"
      "  # latency / algorithm bandwidth per function, algorithm and protocol as NCCL computed them\n"
      "  # (not fitted); other rank or node counts use NCCL's model.\n",
      logged.source.empty() ? "from a log" : "from " + logged.source, logged.ranks, logged.nodes,
      logged.nodes == 1 ? "" : "s");
  y += "  tuning_table:\n";
  y += fmt::format("    ranks: {}\n    nodes: {}\n", logged.ranks, logged.nodes);
  if (!logged.source.empty()) {
    std::string quoted;
    for (char ch : logged.source) quoted += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    y += "    source: \"" + quoted + "\"\n";
  }
  for (int f = 0; f < kNumFunctions; ++f) {
    bool named = false;
    for (int a = 0; a < kNumAlgorithms; ++a) {
      std::string row;
      for (int p = 0; p < kNumProtocols; ++p)
        for (const NcclTuningEntry& e : logged.entries)
          if (e.function == f && e.algorithm == a && e.protocol == p)
            row += fmt::format("{}{}: {}", row.empty() ? "" : ", ", kProtocolNames[p],
                               tuning_entry_text(e.latency_us, e.bandwidth_GBps));
      if (row.empty()) continue;
      if (!named) y += fmt::format("    {}:\n", kFunctionNames[f]);
      named = true;
      y += fmt::format("      {}: {{ {} }}\n", kAlgorithmNames[a], row);
    }
  }
  return y;
}

bool apply_tuning_table(TuningTable& table, const NcclTuningTable& logged, int nodes, int ranks,
                        double bandwidth_scale) {
  if (!logged.given() || logged.nodes != nodes || logged.ranks != ranks) return false;
  for (const NcclTuningEntry& e : logged.entries) {
    table.latencies[e.function][e.algorithm][e.protocol] = static_cast<float>(e.latency_us);
    table.bandwidths[e.function][e.algorithm][e.protocol] = static_cast<float>(e.bandwidth_GBps * bandwidth_scale);
  }
  return true;
}

}  // namespace commsim::nccl
