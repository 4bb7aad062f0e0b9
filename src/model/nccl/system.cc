#include "model/nccl/system.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "model/error.h"
#include "model/nccl/versions.h"

namespace commsim::nccl {
namespace {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// strtok_r semantics: empty tokens are skipped.
std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    auto at = text.find(separator);
    std::string_view part = text.substr(0, at);
    if (!part.empty()) parts.push_back(part);
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

// The element list of one entry ("ring,tree" or "^nvls") applied to one function's row.
template <std::size_t N>
void apply_elements(std::string_view elements, const std::array<std::string_view, N>& names, int* row, int count,
                    bool strict, std::string_view whole) {
  int set = 1, unset = 0;
  if (!elements.empty() && elements.front() == '^') {
    set = 0, unset = 1;
    elements.remove_prefix(1);
  }
  for (int e = 0; e < count; ++e) row[e] = unset;
  for (std::string_view element : split(elements, ',')) {
    int e = 0;
    while (e < count && !same_name(element, names[static_cast<std::size_t>(e)])) ++e;
    if (e < count) {
      row[e] = set;
    } else if (strict) {
      throw Error(fmt::format("Unrecognized element token \"{}\" when parsing \"{}\"", element, whole));
    }
  }
}

// parseList (graph/tuning.cc:53-131 at v2.28.9) for one of NCCL_ALGO / NCCL_PROTO.
template <std::size_t N>
void parse_list(std::string_view text, const std::array<std::string_view, N>& names, int count, int (*rows)[N],
                bool per_function) {
  if (!per_function) {  // parseList before 2.24: one list for all functions
    for (int f = 0; f < kNumFunctions; ++f) apply_elements(text, names, rows[f], count, false, text);
    return;
  }
  bool first = true;
  for (std::string_view entry : split(text, ';')) {
    std::vector<std::string_view> fields = split(entry, ':');
    std::string_view prefix, elements;
    if (fields.size() >= 2) {
      prefix = fields[0], elements = fields[1];
    } else {
      if (!first) throw Error(fmt::format("All entries except the first must have a prefix: \"{}\"", text));
      elements = fields.empty() ? std::string_view() : fields[0];
    }
    first = false;
    bool found = false;
    for (int f = 0; f < kNumFunctions; ++f) {
      if (!prefix.empty() && !same_name(prefix, kFunctionNames[static_cast<std::size_t>(f)])) continue;
      found = true;
      apply_elements(elements, names, rows[f], count, true, text);
    }
    if (!found) throw Error(fmt::format("Unrecognized prefix token \"{}\" when parsing \"{}\"", prefix, text));
  }
}

}  // namespace

EnableMasks::EnableMasks() {
  for (int f = 0; f < kNumFunctions; ++f) {
    for (int p = 0; p < kNumProtocols; ++p) proto[f][p] = p == kLL128 ? 2 : 1;
    for (int a = 0; a < kNumAlgorithms; ++a) algo[f][a] = 1;
  }
}

EnableMasks parse_enable_masks(std::string_view algo, std::string_view proto, const Version& version) {
  EnableMasks masks;
  if (!proto.empty()) parse_list(proto, kProtocolNames, kNumProtocols, masks.proto, version.perFunctionMasks);
  if (!algo.empty()) parse_list(algo, kAlgorithmNames, version.numAlgorithms, masks.algo, version.perFunctionMasks);
  return masks;
}

bool nvls_supports(const Call& call) {
  if (call.function == kAllGather) return true;  // enqueue.cc:384
  // ncclAvg becomes PreMulSum / SumPostDiv on the device, which NVLS does not implement.
  bool sum = call.op == kSum;
  bool min_max = call.op == kMin || call.op == kMax;
  switch (call.dataType) {
    case kInt32:
    case kUint32:
    case kInt64:
    case kUint64:
    case kFloat16:
    case kBfloat16: return sum || min_max;
    case kFloat32:
    case kFloat64: return sum;
    default: return false;
  }
}

}  // namespace commsim::nccl
