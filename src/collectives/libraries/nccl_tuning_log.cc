#include "collectives/libraries/nccl_tuning_log.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <tuple>

namespace commsim {
namespace {

constexpr std::string_view kInfo = "NCCL INFO ";

// NCCL's names in the order of its indices (src/include/device.h: NCCL_ALGO_*, NCCL_PROTO_*).
constexpr std::string_view kAlgorithms[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::string_view kProtocols[] = {"LL", "LL128", "Simple"};

// Equal in any letter case and without underscores: the per-call lines of 2.24+ spell NCCL's
// algorithms NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN (collectives.cc, ncclAlgoToString).
bool iequal(std::string_view a, std::string_view b) {
  std::string x, y;
  for (char c : a)
    if (c != '_') x += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char c : b)
    if (c != '_') y += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return x == y;
}

template <typename T>
std::optional<T> to_number(std::string_view s) {
  T v{};
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// The next space-separated token of `s` from `at`, advancing `at` past it.
std::string_view token(std::string_view s, std::size_t& at) {
  while (at < s.size() && s[at] == ' ') ++at;
  const std::size_t begin = at;
  while (at < s.size() && s[at] != ' ') ++at;
  return s.substr(begin, at - begin);
}

// "channel{Lo..Hi}={0..3}" -> 4.
std::optional<int> channel_range(std::string_view t) {
  constexpr std::string_view head = "channel{Lo..Hi}={";
  if (t.substr(0, head.size()) != head || t.empty() || t.back() != '}') return std::nullopt;
  const std::string_view range = t.substr(head.size(), t.size() - head.size() - 1);
  const auto dots = range.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  const auto lo = to_number<int>(range.substr(0, dots)), hi = to_number<int>(range.substr(dots + 2));
  if (!lo || !hi || *lo < 0 || *hi < *lo) return std::nullopt;
  return *hi - *lo + 1;
}

// "Symmetric" kernels: "AllReduce [Symmetric]: 1048576 Bytes -> Kernel AllReduce_AGxLL_R nchannels 16 ...".
std::optional<NcclTuningLine> symmetric_line(std::string_view msg) {
  constexpr std::string_view tag = " [Symmetric]: ";
  const auto at = msg.find(tag);
  if (at == std::string_view::npos) return std::nullopt;
  NcclTuningLine t;
  t.function = std::string(msg.substr(0, at));
  if (!is_word(t.function)) return std::nullopt;
  std::size_t pos = at + tag.size();
  const auto bytes = to_number<std::uint64_t>(token(msg, pos));
  if (!bytes || token(msg, pos) != "Bytes" || token(msg, pos) != "->" || token(msg, pos) != "Kernel")
    return std::nullopt;
  t.bytes = *bytes;
  t.algorithm = "Symmetric";
  t.protocol = std::string(token(msg, pos));
  if (!is_word(t.protocol) || token(msg, pos) != "nchannels") return std::nullopt;
  const auto ch = to_number<int>(token(msg, pos));
  if (!ch || *ch < 1) return std::nullopt;
  t.channels = *ch;
  return t;
}

}  // namespace

std::string canonical_nccl_algorithm(std::string_view name) {
  for (std::string_view a : kAlgorithms)
    if (iequal(a, name)) return std::string(a);
  if (iequal(name, "Symmetric")) return "Symmetric";
  return std::string(name);
}

std::string canonical_nccl_protocol(std::string_view name) {
  for (std::string_view p : kProtocols)
    if (iequal(p, name)) return std::string(p);
  return std::string(name);
}

std::optional<NcclTuningLine> parse_nccl_tuning_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto info = line.find(kInfo);
  if (info == std::string_view::npos) return std::nullopt;
  const std::string_view msg = line.substr(info + kInfo.size());
  if (auto s = symmetric_line(msg)) return s;

  constexpr std::string_view arrow = " Bytes -> Algo ";
  const auto at = msg.find(arrow);
  if (at == std::string_view::npos) return std::nullopt;
  NcclTuningLine t;
  std::string_view head = msg.substr(0, at);  // "AllReduce: 4194304" or "4194304" (old format)
  if (const auto colon = head.find(": "); colon != std::string_view::npos) {
    t.function = std::string(head.substr(0, colon));
    if (!is_word(t.function)) return std::nullopt;
    head = head.substr(colon + 2);
  }
  const auto bytes = to_number<std::uint64_t>(head);
  if (!bytes) return std::nullopt;
  t.bytes = *bytes;
  std::size_t pos = at + arrow.size();
  const std::string_view algo = token(msg, pos);
  if (token(msg, pos) != "proto") return std::nullopt;
  const std::string_view proto = token(msg, pos);
  if (!is_word(algo) || !is_word(proto)) return std::nullopt;
  if (t.function.empty() || to_number<int>(algo)) {
    // NCCL's indices (2.20-2.23), then " time <us>".
    const auto a = to_number<int>(algo), p = to_number<int>(proto);
    if (!a || !p || *a < 0 || *a >= static_cast<int>(std::size(kAlgorithms)) || *p < 0 ||
        *p >= static_cast<int>(std::size(kProtocols)))
      return std::nullopt;
    t.algorithm = std::string(kAlgorithms[*a]);
    t.protocol = std::string(kProtocols[*p]);
    if (token(msg, pos) != "time" || !to_number<double>(token(msg, pos))) return std::nullopt;
    return t;
  }
  t.algorithm = canonical_nccl_algorithm(algo);
  t.protocol = canonical_nccl_protocol(proto);
  const std::string_view rest = token(msg, pos);
  if (rest.empty()) return t;  // a build that does not print the channels
  const auto ch = channel_range(rest);
  if (!ch) return std::nullopt;  // cut short or garbled
  t.channels = *ch;
  return t;
}

std::vector<NcclTuningLine> parse_nccl_tuning_log(std::string_view text) {
  std::vector<NcclTuningLine> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    if (auto t = parse_nccl_tuning_line(text.substr(at, end - at))) out.push_back(std::move(*t));
    at = end + 1;
  }
  return out;
}

NcclChoice nccl_choice(const std::vector<NcclTuningLine>& lines, std::string_view function) {
  std::map<std::tuple<std::string, std::string, int>, std::pair<int, std::size_t>> seen;  // -> (count, first index)
  int total = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const NcclTuningLine& l = lines[i];
    if (!l.function.empty() && l.function != function) continue;
    auto [it, added] = seen.try_emplace({l.algorithm, l.protocol, l.channels}, 0, i);
    ++it->second.first;
    ++total;
  }
  NcclChoice c;
  std::size_t first = 0;
  for (const auto& [key, v] : seen) {
    if (v.first > c.calls || (v.first == c.calls && v.second < first)) {
      std::tie(c.algorithm, c.protocol, c.channels) = key;
      c.calls = v.first;
      first = v.second;
    }
  }
  c.other = total - c.calls;
  return c;
}

}  // namespace commsim
