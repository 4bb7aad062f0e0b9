// commsim: predicts and measures collective communication on GPU clusters.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "model/error.h"
#include "runtime/command.h"
#include "runtime/job/mpi_session.h"

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: commsim <command> [options]\n"
               "       commsim <command> --help\n"
               "       commsim --version\n\ncommands:\n");
  for (const auto& c : commsim::commands())
    std::fprintf(out, "  %-10s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                 c.summary.data());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    usage(stdout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::printf("%.*s\n", static_cast<int>(commsim::version_line().size()), commsim::version_line().data());
    return 0;
  }
  for (const auto& c : commsim::commands()) {
    if (c.name != first) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      // One rank's failure would leave the others waiting in MPI: abort_job ends the whole job
      // with this rank's message.
      if (c.needs_mpi) {
        commsim::abort_job(c.name, e.what());
      } else {
        std::fprintf(stderr, "commsim %s: error: %s\n", argv[1], e.what());
      }
      return 1;
    }
  }
  std::fprintf(stderr, "commsim: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
