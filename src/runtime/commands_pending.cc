// Subcommands not yet built in this version. Each is removed from here when its cmd_<name>.cc lands.
#include <cstdio>

#include "runtime/command.h"

namespace commsim {
namespace {
int pending(const char* name) {
  std::fprintf(stderr, "commsim %s: not available in this build\n", name);
  return 2;
}
}  // namespace

int cmd_run(int, char**) { return pending("run"); }

}  // namespace commsim
