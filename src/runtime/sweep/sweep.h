#pragma once
// The loop over points of `commsim run`: plan every (collective x algorithm x size) point with its
// prediction before anything runs, then run them one by one on a Backend under MPI.
//
// Per point, on every rank: prepare (buffers, inputs); `warmup` untimed iterations; `iters` timed
// iterations, each preceded by a barrier (an MPI_Allreduce of the stop flag, so every rank also
// agrees on whether a stop signal arrived); the iteration's time is the maximum over ranks; with
// check, one more iteration whose wrong elements are summed over ranks. Rank 0 gets the finished
// row (statistics, algbw/busbw, relative error, status) through a callback.
//
// With `passes` > 1 the sweep goes over every point that many times, each pass timing its share of
// the iterations (each after its own prepare and warmup; the check in the first), and the
// statistics are taken over all of a point's samples. A machine shared with other work is slower at some times than at
// others; spread over the whole sweep, a slow spell lands on a few samples of every point instead of on every sample of
// a few points, so points measured minutes apart (the algorithms compared at one size, or two runs) stay comparable.
// Benchmarking practice: randomize or interleave the order of measurements (Hoefler and Belli, SC'15, "Scientific
// benchmarking of parallel computing systems").
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/elements/dtype.h"
#include "collectives/generators.h"
#include "collectives/libraries/mpi_library.h"
#include "collectives/predict.h"
#include "model/placement.h"
#include "model/topology/topology.h"
#include "runtime/job/watchdog.h"
#include "runtime/sweep/backend.h"
#include "runtime/sweep/point.h"

namespace commsim {

// How a point's time is measured (Point::timing).
enum class Timing {
  // Each timed iteration after a barrier; its time is the maximum over ranks; the statistics are over
  // the iterations (the median is the point's time).
  PerIteration,
  // nccl-tests' definition (src/common.cu, BenchTime): after a barrier each rank launches the timed
  // iterations back to back and divides their wall time by their count; the ranks' values are then
  // combined per RankCombine. One sample per pass.
  NcclTests,
};
std::string_view to_string(Timing t);  // "per-iteration", "nccl-tests"
// nccl-tests' -a: how the ranks' times combine under Timing::NcclTests.
enum class RankCombine { Rank0 = 0, Mean = 1, Min = 2, Max = 3 };

struct SweepSettings {
  // The sweep's element types and reductions, in the order they run (nccl-tests: for each type, for
  // each op, every size); collectives that do not reduce run once per type.
  std::vector<DType> dtypes{DType::Float32};
  std::vector<RedOp> ops{RedOp::Sum};
  // Out of place (false) and/or in place (true), per size in this order, as nccl-tests measures both.
  std::vector<bool> placements{false};
  Timing timing = Timing::PerIteration;
  RankCombine rank_combine = RankCombine::Mean;
  // nccl-tests' -z: with Timing::NcclTests, wait for each iteration to finish before launching the next.
  bool blocking = false;
  int root = 0;
  int iters = 20;  // timed iterations per point, over all passes
  int warmup = 5;  // untimed iterations per point and pass
  int passes = 1;  // sweeps over all points; each times iters_in_pass of the iterations
  bool check = false;
  // Chunk of the pipelined algorithms, bytes; 0: the one the model's closed form assumes
  // (pipeline_chunk_bytes in model/cost/cost.h), so the schedule run is the one predicted.
  std::uint64_t pipeline_chunk_bytes = 0;
  // Channels of ring and tree (ScheduleRequest::channels); 0: the topology's default
  // (default_channels in model/cost/cost.h), as the model prices them.
  int channels = 0;
  // Forced protocols of the NCCL baselines (one point per protocol; None = NCCL's choice). The other
  // algorithms run once, with Protocol::None.
  std::vector<Protocol> protocols{Protocol::None};
  // The MPI library the baseline `mpi` runs on: its own choice of algorithm is what is predicted
  // when it is known (collectives/libraries/mpi_library.h).
  MpiLibrary mpi_library;
  // Testing only (PointSetup::inject_error_rank).
  int inject_error_rank = -1;
  // Testing only: this rank never arrives at the second point (it sleeps), so the watchdog fires.
  int inject_hang_rank = -1;
};

// One point, decided before anything runs, identically on every rank.
struct PlannedPoint {
  Point row;  // key and prediction; a point that cannot run has status "skipped" and a note
  bool runnable = true;
  DType dtype = DType::Float32;  // row.dtype, row.redop and row.in_place as the backend takes them
  RedOp op = RedOp::Sum;
  bool in_place = false;
  // Hand-written algorithms: the schedule, built and priced once when planned and run as it is; the
  // request it was built from (a plan over its memory budget keeps only the request, plan_sweep).
  ScheduleRequest request;
  std::shared_ptr<const Schedule> schedule;
  std::uint64_t bytes_needed = 0;  // this rank's memory for the point (Backend::bytes_needed)
};

// "allreduce ring 1MiB": how points are named in progress lines and messages.
std::string point_label(const Point& p);

// Element count of a request of `bytes` (nccl-tests): bytes / element size, and for allgather,
// reducescatter and alltoall rounded down to a multiple of nranks.
std::uint64_t element_count(Collective c, Bytes bytes, std::uint32_t elem_size, int nranks);

// The model's prediction of one row, from its collective, algorithm, transport, protocol, dtype,
// bytes, count and root, on `topology` (the row's transport's values applied) with `placement`:
// sets predicted_us, predicted_busbw_gbps and, for baselines, the note saying what was predicted.
// Hand-written algorithms: the schedule built and priced once (collectives/predict.h; with the
// pipeline chunk of the closed form unless pipeline_chunk_bytes > 0; the row records the chunk of
// a pipelined one) and returned; nullopt for the baselines.
// The MPI baseline: the schedules of `mpi_library`'s own choice priced one after another when it
// is known (library_choice), the model's fastest hand-written schedule otherwise.
// Ring and tree are built with `channels` (0: the topology's default, channels_for in model/cost/cost.h).
// Throws Error when the schedule cannot be built.
std::optional<PricedSchedule> predict_row(Point& row, const Topology& topology, const Placement& placement,
                                          std::uint64_t pipeline_chunk_bytes, const MpiLibrary& mpi_library,
                                          int channels = 0);

// The chunk a pipelined hand-written point ran with: the one its file records, or in a file written
// before commsim recorded it, the one the closed form chooses on its run's topology (`run_topology`;
// null: not known, 0). 0 for the algorithms that are not pipelined.
std::uint64_t pipeline_chunk_ran_with(const Point& p, const Topology* run_topology);

// Every point predicted again on `topology` (a calibrated one, say): predicted_us,
// predicted_busbw_gbps, rel_error and predicted_winner (among the hand-written algorithms the
// points hold for that collective), with the ranks placed evenly on the point's nodes. The
// pipelined algorithms are priced with the chunk they ran with: the point's pipeline_chunk_bytes,
// or in a file that does not record it, the one the closed form chooses on the topology of the
// point's run (run_topology, parallel to points; null or missing: `topology`'s own choice). The MPI
// baseline is predicted for the library of the point's run (mpi_library, parallel to points;
// missing: not known). The host executor's piece is the one the point's run recorded (run_piece,
// parallel to points; unset or missing: `topology`'s own, Topology::piece). A point that cannot be
// predicted keeps no prediction and says why in its note.
void repredict(std::vector<Point>& points, const Topology& topology,
               const std::vector<const Topology*>& run_topology = {}, const std::vector<MpiLibrary>& mpi_library = {},
               const std::vector<std::optional<std::uint64_t>>& run_piece = {});

// The points of every (collective, algorithms) pair x dtype x op x sizes x algorithm x protocol x
// placement, in that order (sizes that give the same element count are kept once). Predictions: a hand-written
// algorithm's schedule built and priced once on the topology with the real placement (build_and_price), kept for the
// run; `mpi`: as predict_row, for settings.mpi_library (the choice named in the note); NCCL baselines: the model's NCCL
// closed form when the topology has NCCL constants. predicted_winner: the model's fastest among the hand-written
// algorithms asked for that collective. A point the backend cannot run, or whose schedule cannot be built, is planned
// as skipped with the reason.
std::vector<PlannedPoint> plan_sweep(const std::vector<std::pair<Collective, std::vector<Algorithm>>>& pairs,
                                     const std::vector<Bytes>& sizes, const SweepSettings& settings,
                                     const Topology& topology, const Placement& placement, const Backend& backend);

// Collective: throws Error (the same on every rank) when a runnable point needs more memory on
// some rank than that rank has available, naming the point and the sizes.
void check_memory(const std::vector<PlannedPoint>& plan, const Backend& backend);

struct SweepOutcome {
  int finished = 0;     // points run to the end (ok, wrong or error)
  int wrong = 0;        // points with status "wrong"
  int errors = 0;       // points with status "error"
  int skipped = 0;      // planned as skipped (reported, not run)
  int stop_signal = 0;  // the signal that stopped the sweep early, 0 when it ran to the end
};

// Timed iterations of pass `pass` (from 0) when `iters` are split over `passes` passes: as evenly as
// they go, the first passes taking one more.
int iters_in_pass(int iters, int passes, int pass);

struct SweepCallbacks {
  // Rank 0, before a point's pass runs: its 1-based ordinal among the runnable points times the
  // passes, their total, and the pass (1-based) of `passes`.
  std::function<void(const Point& p, int ordinal, int total, int pass, int passes)> progress;
  // Rank 0, for every finished or skipped point, in order.
  std::function<void(const Point& p)> point_done;
};

// Collective: runs the plan on every rank (all ranks pass the same plan), settings.passes times.
// Stops early, after the current iteration, when a stop signal reached any rank (watchdog.h): the
// iterations of the pass abandoned are not reported; a point with samples from earlier passes is
// reported with those (its iters says how many, its note that it stopped early).
SweepOutcome run_sweep(const std::vector<PlannedPoint>& plan, const SweepSettings& settings, Backend& backend,
                       Watchdog& watchdog, const SweepCallbacks& callbacks);

}  // namespace commsim
