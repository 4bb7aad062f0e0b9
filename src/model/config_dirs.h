#pragma once
// Where commsim finds its presets (configs/topologies/*.yaml) and model files
// (configs/models/*.yaml), first match wins:
//  1. $COMMSIM_CONFIG_DIR;
//  2. <prefix>/share/commsim/configs, where the binary is <prefix>/bin/commsim (an installed
//     commsim: `cmake --install`, Spack);
//  3. the source tree's configs/, compiled in (a binary run from its build folder).
#include <filesystem>
#include <string>
#include <vector>

namespace commsim {

// The config folders in the order above, those that exist; `kind` is the subfolder
// ("topologies", "models") appended to each.
std::vector<std::filesystem::path> config_dirs(const std::string& kind);

// <dir>/<name>.yaml from the first of config_dirs(kind) that has it; "" when none does.
std::filesystem::path find_config(const std::string& kind, const std::string& name);

}  // namespace commsim
