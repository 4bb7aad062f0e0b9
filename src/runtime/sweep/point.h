#pragma once
// One row of results: a (collective, algorithm, backend, protocol, dtype, nodes, ranks, bytes)
// point with its prediction and, when measured, its measurement. The same row type is printed by
// every command (table, CSV, JSON) and stored in the HDF5 `points` table.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/collective.h"
#include "model/units.h"

namespace commsim {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Point {
  // The key
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::string backend = "model";   // "model" (predict only), "host", "cuda"
  std::string transport = "";      // "mpi", "ucx", "ipc", "nccl", "" for model rows
  Protocol protocol = Protocol::None;  // forced / priced protocol ("" when none)
  std::string dtype = "float32";
  std::string redop = "sum";
  int nodes = 1;
  int ranks = 1;
  Bytes bytes = 0;                 // nccl-tests size
  std::uint64_t count = 0;         // elements
  int root = 0;
  // The chunk a pipelined hand-written schedule (ring and tree broadcast and reduce, the double
  // tree's allreduce) ran with, bytes; 0 when the algorithm is not pipelined, or when the file was
  // written before commsim recorded it (readers then recompute it from the run's topology).
  std::uint64_t pipeline_chunk_bytes = 0;

  // The prediction
  double predicted_us = kNaN;
  double predicted_busbw_gbps = kNaN;
  std::string predicted_winner;    // algorithm name the model picks among those asked for

  // The measurement (NaN when not measured)
  int iters = 0;
  double measured_min_us = kNaN;
  double measured_median_us = kNaN;
  double measured_mean_us = kNaN;
  double measured_p95_us = kNaN;
  double measured_max_us = kNaN;
  double algbw_gbps = kNaN;        // bytes / median time, GB/s (1e9)
  double busbw_gbps = kNaN;        // algbw * busbw_factor
  double rel_error = kNaN;         // (predicted - measured_median) / measured_median
  std::int64_t wrong = -1;         // wrong elements summed over ranks; -1 = not checked
  std::string status = "predicted";  // "predicted", "ok", "wrong", "timeout", "error", "skipped"
  std::string note;                // e.g. the algorithm/protocol NCCL picked, an error message
  // What NCCL ran (NCCL baselines, from NCCL's TUNING log on rank 0): its algorithm ("Ring",
  // "Tree", "NVLS", ...), protocol ("LL", "LL128", "Simple") and channel count; "" and 0 for
  // other rows and where NCCL logged no choice (one rank, point-to-point collectives).
  std::string nccl_algo;
  std::string nccl_proto;
  int nccl_channels = 0;

  std::vector<double> samples_us;  // per-iteration times (max over ranks), us

  bool measured() const { return !std::isnan(measured_median_us); }
};

// Fills algbw, busbw and rel_error from the median and prediction (nccl-tests definitions).
void derive_bandwidths(Point& p);

}  // namespace commsim
