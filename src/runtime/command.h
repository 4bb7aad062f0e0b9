#pragma once
// The subcommands of `commsim`. Each lives in its own cmd_<name>.cc, parses its own options with
// Boost.Program_options, and returns the process exit code. Library code throws commsim::Error;
// main() turns it into a message and a non-zero exit.
#include <string_view>
#include <vector>

namespace commsim {

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);  // argv[0] is the subcommand name
  // Runs under mpirun/srun (run, probe): the command starts its own MpiSession (probe after parsing
  // its options, so --help never starts MPI), and main aborts the job when it fails.
  bool needs_mpi;
};

// The registry, in the order `commsim --help` lists them.
const std::vector<Command>& commands();

int cmd_predict(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_merge(int argc, char** argv);
int cmd_probe(int argc, char** argv);
int cmd_calibrate(int argc, char** argv);
int cmd_import(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_plan(int argc, char** argv);

// "commsim 0.1.0 (backends: host, cuda; transports: mpi, ucx; NCCL 2.x; ...)".
std::string_view version_line();

}  // namespace commsim
