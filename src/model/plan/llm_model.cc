#include "model/plan/llm_model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "model/config_dirs.h"
#include "model/error.h"

namespace commsim {
namespace {

// Every message says where: "FILE:LINE: FIELD: what is wrong".
[[noreturn]] void fail(const std::string& origin, int line0, const std::string& field, const std::string& what) {
  std::string where = origin + ":" + std::to_string(line0 < 0 ? 1 : line0 + 1) + ": ";
  throw Error(where + (field.empty() ? "" : field + ": ") + what);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class Fields {
 public:
  Fields(const YAML::Node& map, const std::string& origin) : map_(map), origin_(origin) {}

  // Rejects keys that are not in `known` (a typo must not silently fall back to a default).
  void check_known(const std::set<std::string>& known) const {
    std::set<std::string> seen;
    for (const auto& kv : map_) {
      if (!kv.first.IsScalar()) fail(origin_, kv.first.Mark().line, "", "keys must be plain names");
      std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) fail(origin_, kv.first.Mark().line, key, "field given twice");
      if (!known.count(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(origin_, kv.first.Mark().line, key, "unknown field (valid fields: " + list + ")");
      }
    }
  }

  bool has(const std::string& key) const { return static_cast<bool>(map_[key]); }

  YAML::Node scalar(const std::string& key) const {
    YAML::Node n = map_[key];
    if (!n) fail(origin_, map_.Mark().line, key, "missing field");
    if (!n.IsScalar()) fail(origin_, n.Mark().line, key, "expected a single value, not a list or mapping");
    return n;
  }

  std::string string(const std::string& key) const {
    YAML::Node n = scalar(key);
    if (n.Scalar().empty()) fail(origin_, n.Mark().line, key, "must not be empty");
    return n.Scalar();
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? string(key) : fallback;
  }

  // A whole number >= min_value ("8192", "128_256" is not accepted: YAML has no digit separators).
  int integer(const std::string& key, int min_value) const {
    YAML::Node n = scalar(key);
    const std::string& s = n.Scalar();
    long long v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
      fail(origin_, n.Mark().line, key, "expected a whole number, got '" + s + "'");
    if (v < min_value)
      fail(origin_, n.Mark().line, key,
           min_value == 1 ? "must be positive, got " + s : "must be >= " + std::to_string(min_value) + ", got " + s);
    if (v > std::numeric_limits<int>::max()) fail(origin_, n.Mark().line, key, "is too large: " + s);
    return static_cast<int>(v);
  }
  int integer_or(const std::string& key, int min_value, int fallback) const {
    return has(key) ? integer(key, min_value) : fallback;
  }

  // A number >= 0 ("1.25").
  double number_or(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    YAML::Node n = scalar(key);
    const std::string& s = n.Scalar();
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
      fail(origin_, n.Mark().line, key, "expected a number, got '" + s + "'");
    if (!(v >= 0)) fail(origin_, n.Mark().line, key, "must not be negative, got " + s);
    return v;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    YAML::Node n = scalar(key);
    std::string s = lower(n.Scalar());
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(origin_, n.Mark().line, key, "expected true or false, got '" + n.Scalar() + "'");
  }

  int line(const std::string& key) const { return has(key) ? map_[key].Mark().line : map_.Mark().line; }

 private:
  YAML::Node map_;
  const std::string& origin_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open model file '" + path + "' (give a path or a name from configs/models/)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_file(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

}  // namespace

int dtype_bytes(const std::string& dtype) {
  std::string d = lower(dtype);
  if (d == "fp32" || d == "float32") return 4;
  if (d == "bf16" || d == "bfloat16" || d == "fp16" || d == "float16") return 2;
  if (d == "fp8" || d == "float8") return 1;
  throw Error("unknown dtype '" + dtype + "' (use fp32, bf16, fp16 or fp8)");
}

double LlmModel::attention_params_per_layer() const {
  double h = hidden, kv = static_cast<double>(kv_heads) * head_dim();
  return 2 * h * h + 2 * h * kv;  // Q and O are h x h; K and V are h x (kv_heads * head_dim)
}

double LlmModel::expert_params() const {
  return static_cast<double>(ffn_matrices()) * hidden * ffn_hidden;
}

double LlmModel::dense_params_per_layer() const {
  double norms = 2.0 * hidden;  // one norm scale before attention, one before the MLP
  double mlp =
      moe() ? static_cast<double>(hidden) * experts /* router */ + shared_experts * expert_params() : expert_params();
  return attention_params_per_layer() + norms + mlp;
}

double LlmModel::expert_params_per_layer() const {
  return moe() ? experts * expert_params() : 0.0;
}

double LlmModel::embedding_params() const {
  return static_cast<double>(vocab) * hidden + static_cast<double>(position_embeddings) * hidden;
}

double LlmModel::output_params() const {
  return (tied_embeddings ? 0.0 : static_cast<double>(vocab) * hidden) + hidden /* final norm */;
}

double LlmModel::total_params() const {
  return layers * (dense_params_per_layer() + expert_params_per_layer()) + embedding_params() + output_params();
}

double LlmModel::active_params() const {
  double experts_active = moe() ? top_k * expert_params() : 0.0;
  return layers * (dense_params_per_layer() + experts_active) + embedding_params() + output_params();
}

LlmModel parse_llm_model(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    fail(origin, e.mark.line, "", "not valid YAML: " + e.msg);
  }
  if (root.IsNull() || !root.IsDefined()) fail(origin, 0, "", "the model file is empty");
  if (!root.IsMap())
    fail(origin, root.Mark().line, "", "expected a mapping of model fields (layers: 80, hidden: 8192, ...)");

  Fields f(root, origin);
  f.check_known({"name", "description", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "ffn", "vocab",
                 "tied_embeddings", "position_embeddings", "experts", "top_k", "shared_experts", "capacity_factor",
                 "param_dtype", "dropout"});

  LlmModel m;
  m.source_path = origin;
  m.text = yaml_text;
  m.name = f.string("name");
  m.description = f.string_or("description", "");
  m.layers = f.integer("layers", 1);
  m.hidden = f.integer("hidden", 1);
  m.heads = f.integer("heads", 1);
  m.kv_heads = f.integer_or("kv_heads", 1, m.heads);
  m.ffn_hidden = f.integer("ffn_hidden", 1);
  m.vocab = f.integer("vocab", 1);
  m.tied_embeddings = f.boolean_or("tied_embeddings", false);
  m.position_embeddings = f.integer_or("position_embeddings", 0, 0);
  m.experts = f.integer_or("experts", 1, 1);
  m.top_k = f.integer_or("top_k", 1, 1);
  m.shared_experts = f.integer_or("shared_experts", 0, 0);
  m.capacity_factor = f.number_or("capacity_factor", 0);
  m.dropout = f.boolean_or("dropout", true);

  std::string ffn = lower(f.string_or("ffn", "gelu"));
  if (ffn == "gelu") {
    m.ffn = FfnKind::Gelu;
  } else if (ffn == "swiglu") {
    m.ffn = FfnKind::SwiGlu;
  } else {
    fail(origin, f.line("ffn"), "ffn", "unknown MLP kind '" + ffn + "' (use gelu: 2 matrices, or swiglu: 3)");
  }

  m.param_dtype = f.string_or("param_dtype", "bf16");
  try {
    m.param_bytes = dtype_bytes(m.param_dtype);
  } catch (const Error& e) {
    fail(origin, f.line("param_dtype"), "param_dtype", e.what());
  }

  if (m.hidden % m.heads != 0)
    fail(origin, f.line("heads"), "heads",
         std::to_string(m.heads) + " heads do not divide hidden size " + std::to_string(m.hidden));
  if (m.heads % m.kv_heads != 0)
    fail(origin, f.line("kv_heads"), "kv_heads",
         std::to_string(m.kv_heads) + " KV heads do not divide " + std::to_string(m.heads) + " heads");
  if (m.top_k > m.experts)
    fail(origin, f.line("top_k"), "top_k",
         "top_k " + std::to_string(m.top_k) + " exceeds the " + std::to_string(m.experts) + " experts");
  if (m.shared_experts > 0 && !m.moe())
    fail(origin, f.line("shared_experts"), "shared_experts", "needs a mixture of experts (experts > 1)");
  if (m.capacity_factor > 0 && !m.moe())
    fail(origin, f.line("capacity_factor"), "capacity_factor", "needs a mixture of experts (experts > 1)");
  return m;
}

LlmModel load_llm_model(const std::string& path) {
  return parse_llm_model(read_file(path), path);
}

std::string resolve_model_path(const std::string& name_or_path) {
  bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                         (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".yaml");
  if (looks_like_path || is_file(name_or_path)) return name_or_path;

  if (auto found = find_config("models", name_or_path); !found.empty()) return found.string();
  std::string tried;
  for (const auto& d : config_dirs("models"))
    tried += (tried.empty() ? "" : ", ") + (d / (name_or_path + ".yaml")).string();
  if (tried.empty()) tried = "no models/ folder found; set COMMSIM_CONFIG_DIR";
  throw Error("no model named '" + name_or_path + "' (looked for " + tried + "); give a path to a model file");
}

}  // namespace commsim
