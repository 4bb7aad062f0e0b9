#include "runtime/command.h"

namespace commsim {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"predict", "predict collective times on a topology (closed-form model, no MPI needed)", cmd_predict, false},
      {"run", "measure collectives under mpirun/srun, beside the model's prediction", cmd_run, true},
      {"merge", "merge HDF5 result files of several runs into one", cmd_merge, false},
      {"probe", "measure latency and bandwidth per tier under mpirun: the machine portrait", cmd_probe, true},
      {"calibrate", "fit alpha, beta, gamma per tier to measurements; write a topology file", cmd_calibrate, false},
      {"import", "read nccl-tests output (text or JSON) into a results file of measured rows", cmd_import, false},
      {"report", "error tables, winners and crossovers of measured vs predicted", cmd_report, false},
      {"plan", "rank data/tensor/pipeline/expert-parallel layouts by communication time", cmd_plan, false},
  };
  return table;
}

}  // namespace commsim
