#include "model/config_dirs.h"

#include <cstdlib>
#include <system_error>

namespace commsim {

std::vector<std::filesystem::path> config_dirs(const std::string& kind) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("COMMSIM_CONFIG_DIR"); env && *env) candidates.push_back(fs::path(env));
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share" / "commsim" / "configs");
#ifdef COMMSIM_SOURCE_CONFIG_DIR
  candidates.push_back(fs::path(COMMSIM_SOURCE_CONFIG_DIR));
#endif
  std::vector<fs::path> dirs;
  for (const fs::path& c : candidates) {
    fs::path d = c / kind;
    if (fs::is_directory(d, ec)) dirs.push_back(d);
  }
  return dirs;
}

std::filesystem::path find_config(const std::string& kind, const std::string& name) {
  std::error_code ec;
  for (const auto& d : config_dirs(kind)) {
    auto candidate = d / (name + ".yaml");
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  return {};
}

}  // namespace commsim
