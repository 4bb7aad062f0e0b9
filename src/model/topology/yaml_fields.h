#pragma once
// The field readers behind the topology reader (read_yaml.cc, read_nccl.cc): a strict map reader
// and scalar readers whose errors name the file, the line and the field as a dotted path
// ("FILE:LINE: network.nic_bandwidth: what is wrong"). Internal to model/topology.
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim::yaml_fields {

// Where we are in the file, for messages.
struct Ctx {
  std::string origin;  // file name (or what the text came from)
};

// Throws Error("ORIGIN:LINE: FIELD: WHAT"); an empty field reads "(top level)".
[[noreturn]] void fail(const Ctx& ctx, const YAML::Mark& mark, const std::string& field, const std::string& what);

std::string join(std::initializer_list<const char*> names);                 // "a, b, c"
std::string child_path(const std::string& parent, const std::string& key);  // "parent.key"
std::string node_kind(const YAML::Node& n);                                 // "a map", "a list", "'text'", ...

// A YAML map at a dotted path: rejects unknown and duplicate keys on construction, then hands out
// its values by key.
class MapReader {
 public:
  MapReader(const Ctx& ctx, const YAML::Node& node, std::string path, std::initializer_list<const char*> allowed);

  const std::string& path() const { return path_; }
  const Ctx& ctx() const { return ctx_; }
  bool has(const char* key) const { return find(key) != nullptr; }
  // The value of `key`, or fails with "missing required field" (and the hint, if any).
  YAML::Node require(const char* key, const char* hint = nullptr) const;
  // The value of `key`, or nullopt when absent; a key without a value fails.
  std::optional<YAML::Node> optional(const char* key) const;
  YAML::Mark mark() const { return node_.Mark(); }

 private:
  struct Entry {
    std::string name;
    YAML::Mark mark;
    YAML::Node value;
  };
  const Entry* find(const char* key) const;
  const Ctx& ctx_;
  YAML::Node node_;
  std::string path_;
  std::vector<Entry> entries_;
};

// Scalar readers. `field` is the dotted path of the value.
std::string scalar(const Ctx& ctx, const YAML::Node& n, const std::string& field);
long long read_int(const Ctx& ctx, const YAML::Node& n, const std::string& field, long long lo, long long hi);
double read_number(const Ctx& ctx, const YAML::Node& n, const std::string& field);
// yes/no, true/false, on/off.
bool read_bool(const Ctx& ctx, const YAML::Node& n, const std::string& field);

// Unit-carrying values go through units.h; its message (unknown unit, not positive, ...) is kept.
template <class Parse>
auto read_unit(const Ctx& ctx, const YAML::Node& n, const std::string& field, Parse parse) {
  std::string s = scalar(ctx, n, field);
  try {
    return parse(s);
  } catch (const Error& e) {
    fail(ctx, n.Mark(), field, e.what());
  }
}
BytesPerSecond read_bandwidth(const Ctx& ctx, const YAML::Node& n, const std::string& field);
Seconds read_time(const Ctx& ctx, const YAML::Node& n, const std::string& field);
Bytes read_bytes(const Ctx& ctx, const YAML::Node& n, const std::string& field);
std::string read_choice(const Ctx& ctx, const YAML::Node& n, const std::string& field,
                        std::initializer_list<const char*> choices);

// An optional number of a map in (lo, hi], or [lo, hi] when `lo_included`; `what` ends the error.
void read_in_range(const Ctx& ctx, const MapReader& r, const std::string& path, const char* key, double lo,
                   bool lo_included, double hi, const std::string& what, double& out);

// The `nccl:` section (read_nccl.cc): NCCL's protocol constants and what its tuning model reads.
void read_nccl_section(const Ctx& ctx, const YAML::Node& node, NcclConstants& out);

}  // namespace commsim::yaml_fields
