// The field readers of yaml_fields.h.
#include "model/topology/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace commsim::yaml_fields {

[[noreturn]] void fail(const Ctx& ctx, const YAML::Mark& mark, const std::string& field, const std::string& what) {
  int line = mark.is_null() ? 1 : mark.line + 1;
  throw Error(ctx.origin + ":" + std::to_string(line) + ": " + (field.empty() ? std::string("(top level)") : field) +
              ": " + what);
}

std::string join(std::initializer_list<const char*> names) {
  std::string s;
  for (const char* n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string node_kind(const YAML::Node& n) {
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "empty";
  return "'" + n.Scalar() + "'";
}

MapReader::MapReader(const Ctx& ctx, const YAML::Node& node, std::string path,
                     std::initializer_list<const char*> allowed)
    : ctx_(ctx), node_(node), path_(std::move(path)) {
  if (!node.IsMap())
    fail(ctx, node.Mark(), path_, "expected a map of keys (" + join(allowed) + "), got " + node_kind(node));
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;  // a copy: the iterator hands out a temporary pair
    if (!key.IsScalar()) fail(ctx, key.Mark(), path_, "keys must be plain names");
    const std::string& name = key.Scalar();
    bool known = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return name == a; });
    if (!known) fail(ctx, key.Mark(), child_path(path_, name), "unknown key (allowed here: " + join(allowed) + ")");
    if (!seen.insert(name).second) fail(ctx, key.Mark(), child_path(path_, name), "key given twice");
    entries_.push_back({name, key.Mark(), YAML::Node(it->second)});
  }
}

YAML::Node MapReader::require(const char* key, const char* hint) const {
  const Entry* e = find(key);
  if (!e)
    fail(ctx_, node_.Mark(), child_path(path_, key),
         std::string("missing required field") + (hint ? std::string(" (") + hint + ")" : std::string()));
  if (e->value.IsNull()) fail(ctx_, e->mark, child_path(path_, key), "has no value");
  return e->value;
}

std::optional<YAML::Node> MapReader::optional(const char* key) const {
  const Entry* e = find(key);
  if (!e) return std::nullopt;
  if (e->value.IsNull()) fail(ctx_, e->mark, child_path(path_, key), "has no value");
  return e->value;
}

const MapReader::Entry* MapReader::find(const char* key) const {
  for (const Entry& e : entries_)
    if (e.name == key) return &e;
  return nullptr;
}

// Scalar readers. `field` is the dotted path of the value.
std::string scalar(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) fail(ctx, n.Mark(), field, "expected a single value, got " + node_kind(n));
  return n.Scalar();
}

long long read_int(const Ctx& ctx, const YAML::Node& n, const std::string& field, long long lo, long long hi) {
  std::string s = scalar(ctx, n, field);
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    fail(ctx, n.Mark(), field, "'" + s + "' is not a whole number");
  if (v < lo || v > hi)
    fail(ctx, n.Mark(), field,
         std::to_string(v) + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return v;
}

bool read_bool(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(ctx, n, field);
  for (const char* t : {"yes", "true", "on", "Yes", "True", "On"})
    if (s == t) return true;
  for (const char* f : {"no", "false", "off", "No", "False", "Off"})
    if (s == f) return false;
  fail(ctx, n.Mark(), field, "'" + s + "' is not yes or no");
}

double read_number(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  std::string s = scalar(ctx, n, field);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v))
    fail(ctx, n.Mark(), field, "'" + s + "' is not a number");
  return v;
}

BytesPerSecond read_bandwidth(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  return read_unit(ctx, n, field, [](const std::string& s) { return parse_bandwidth(s); });
}
Seconds read_time(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  return read_unit(ctx, n, field, [](const std::string& s) { return parse_time(s); });
}
Bytes read_bytes(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  return read_unit(ctx, n, field, [](const std::string& s) { return parse_bytes(s); });
}

std::string read_choice(const Ctx& ctx, const YAML::Node& n, const std::string& field,
                        std::initializer_list<const char*> choices) {
  std::string s = scalar(ctx, n, field);
  for (const char* c : choices)
    if (s == c) return s;
  fail(ctx, n.Mark(), field, "'" + s + "' is not one of: " + join(choices));
}

// An optional number of a tier in (lo, hi], or [lo, hi] when `lo_included`; `what` ends the error.
void read_in_range(const Ctx& ctx, const MapReader& r, const std::string& path, const char* key, double lo,
                   bool lo_included, double hi, const std::string& what, double& out) {
  auto v = r.optional(key);
  if (!v) return;
  const double x = read_number(ctx, *v, child_path(path, key));
  if (!(lo_included ? x >= lo : x > lo) || !(x <= hi)) fail(ctx, v->Mark(), child_path(path, key), what);
  out = x;
}

}  // namespace commsim::yaml_fields
