#include "runtime/sweep/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "collectives/predict.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/price.h"
#include "model/select.h"
#include "model/units.h"
#include "runtime/job/fault_inject.h"
#include "runtime/sweep/stats.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include "collectives/host/mpi_check.h"
#endif

namespace commsim {

std::string point_label(const Point& p) {
  return std::string(to_string(p.collective)) + " " + std::string(to_string(p.algorithm)) + " " +
         format_bytes(p.bytes) + (p.in_place ? " in-place" : "");
}

std::string_view to_string(Timing t) {
  return t == Timing::NcclTests ? "nccl-tests" : "per-iteration";
}

std::uint64_t element_count(Collective c, Bytes bytes, std::uint32_t elem_size, int nranks) {
  std::uint64_t count = bytes / elem_size;
  if (c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll)
    count = count / static_cast<std::uint64_t>(nranks) * static_cast<std::uint64_t>(nranks);
  return count;
}

namespace {

double predicted_busbw_gbps(Collective c, Bytes bytes, int nranks, double time_s) {
  if (!(time_s > 0)) return kNaN;
  return static_cast<double>(bytes) / time_s / 1e9 * busbw_factor(c, nranks);
}

// The model's fastest hand-written algorithm among `algs` for c at `bytes`: each schedule priced
// as `run` predicts it (model/price.h), with its own pipeline chunk on `topology` unless
// `chunk_override` is given. Algorithms that do not apply, or whose schedule cannot be built for
// this rank count, are skipped.
struct PricedChoice {
  Algorithm algorithm = Algorithm::Ring;
  Seconds time_s = 0;
};
std::optional<PricedChoice> fastest(const Topology& topology, Collective c, const Placement& placement,
                                    std::uint64_t count, std::uint32_t elem, int root,
                                    const std::vector<Algorithm>& algs, std::uint64_t chunk_override = 0,
                                    int channels = 0) {
  std::optional<PricedChoice> best;
  for (Algorithm a : algs) {
    if (!is_hand_written(a) || !applies(c, a)) continue;
    try {
      const Seconds t = build_and_price(topology, placement, c, a, count, elem, root, chunk_override, channels).time_s;
      if (!best || t < best->time_s) best = PricedChoice{a, t};
    } catch (const Error&) {
      continue;  // e.g. an algorithm that needs a power-of-two rank count
    }
  }
  return best;
}

std::uint32_t elem_size_of(const std::string& dtype) {
  const auto d = parse_dtype(dtype);
  return d ? dtype_size(*d) : 4;
}

}  // namespace

std::optional<PricedSchedule> predict_row(Point& row, const Topology& base_topology, const Placement& placement,
                                          std::uint64_t pipeline_chunk_bytes_override, const MpiLibrary& mpi_library,
                                          int channels) {
  // The transport is part of each tier's alpha and beta: a row is predicted with the topology's
  // values for the transport that carries it (the library baseline `mpi` always goes over MPI).
  const Topology topology = with_transport(base_topology, row.transport);
  const Collective c = row.collective;
  const Algorithm a = row.algorithm;
  const int nranks = placement.nranks;
  const CostQuery query{c, a, row.protocol, placement.nnodes, placement.max_ranks_per_node(), row.bytes, channels};
  row.predicted_us = kNaN;
  row.predicted_busbw_gbps = kNaN;
  if (is_hand_written(a)) {
    PricedSchedule built = build_and_price(topology, placement, c, a, row.count, elem_size_of(row.dtype), row.root,
                                           pipeline_chunk_bytes_override, channels);
    row.pipeline_chunk_bytes = is_pipelined(c, a) ? built.request.pipeline_chunk_bytes : 0;
    row.predicted_us = built.time_s * 1e6;
    row.predicted_busbw_gbps = predicted_busbw_gbps(c, row.bytes, nranks, built.time_s);
    return built;
  }
  if (a == Algorithm::Mpi) {
    // The library's own choice, its phases priced as the hand-written schedules are; when it is not
    // known, the algorithm the model would choose.
    const ScheduleRequest req{c, a, nranks, row.count, elem_size_of(row.dtype), row.root, &placement, 0};
    if (const auto library = library_choice(mpi_library, req)) {
      const Seconds t = price_library_choice(*library, topology, placement);
      row.predicted_us = t * 1e6;
      row.predicted_busbw_gbps = predicted_busbw_gbps(c, row.bytes, nranks, t);
      row.note = "predicted: " + library->describe();
      return std::nullopt;
    }
    const std::vector<Algorithm> all_hand_written(kHandWrittenAlgorithms.begin(), kHandWrittenAlgorithms.end());
    const auto choice = fastest(topology, c, placement, row.count, elem_size_of(row.dtype), row.root, all_hand_written);
    if (choice) {
      row.predicted_us = choice->time_s * 1e6;
      row.predicted_busbw_gbps = predicted_busbw_gbps(c, row.bytes, nranks, choice->time_s);
      const std::string why = nranks > 1 ? why_choice_unknown(mpi_library) : std::string();
      row.note = "predicted: " + std::string(to_string(choice->algorithm)) + ", the model's fastest schedule" +
                 (why.empty() ? std::string() : " (" + why + ")");
    }
  } else if (has_closed_form(topology, c, a, row.protocol)) {
    const Cost cost = closed_form(topology, query);
    row.predicted_us = cost.time_s * 1e6;
    row.predicted_busbw_gbps = predicted_busbw_gbps(c, row.bytes, nranks, cost.time_s);
    row.note = "predicted: NCCL's model, " + std::string(to_string(cost.algorithm)) + " " +
               std::string(to_string(cost.protocol));
  }
  return std::nullopt;
}

std::uint64_t pipeline_chunk_ran_with(const Point& p, const Topology* run_topology) {
  if (p.pipeline_chunk_bytes > 0) return p.pipeline_chunk_bytes;
  if (run_topology == nullptr || !is_pipelined(p.collective, p.algorithm) || p.nodes < 1 || p.ranks % p.nodes != 0)
    return 0;
  return pipeline_chunk_bytes(with_transport(*run_topology, p.transport),
                              {p.collective, p.algorithm, Protocol::None, p.nodes, p.ranks / p.nodes, p.bytes});
}

void repredict(std::vector<Point>& points, const Topology& topology, const std::vector<const Topology*>& run_topology,
               const std::vector<MpiLibrary>& mpi_library, const std::vector<std::optional<std::uint64_t>>& run_piece) {
  const MpiLibrary unknown;
  std::map<std::uint64_t, Topology> with_piece;  // `topology` with another run's piece, once per piece
  auto priced_on = [&](std::size_t i) -> const Topology& {
    if (i >= run_piece.size() || !run_piece[i] || *run_piece[i] == topology.piece()) return topology;
    auto [it, added] = with_piece.try_emplace(*run_piece[i], topology);
    if (added) it->second.piece_bytes = *run_piece[i];
    return it->second;
  };
  std::map<Collective, std::vector<Algorithm>> algs;  // the hand-written algorithms measured, per collective
  for (const Point& p : points) {
    auto& v = algs[p.collective];
    if (is_hand_written(p.algorithm) && std::find(v.begin(), v.end(), p.algorithm) == v.end()) v.push_back(p.algorithm);
  }
  std::map<std::tuple<Collective, int, int, std::uint64_t, std::string, int, std::string>, std::string> winners;
  for (std::size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    if (p.nodes < 1 || p.ranks % p.nodes != 0) continue;
    const Placement placement = Placement::uniform(p.nodes, p.ranks / p.nodes);
    p.rel_error = kNaN;
    try {
      // The pipelined algorithms: price the schedule with the chunk they ran with.
      const std::uint64_t chunk = pipeline_chunk_ran_with(p, i < run_topology.size() ? run_topology[i] : nullptr);
      const Topology& on = priced_on(i);
      predict_row(p, on, placement, chunk, i < mpi_library.size() ? mpi_library[i] : unknown);
      // The model's winner among the algorithms measured, each schedule priced on this topology.
      const auto key = std::make_tuple(p.collective, p.nodes, p.ranks, p.count, p.dtype, p.root, p.transport);
      auto w = winners.find(key);
      if (w == winners.end()) {
        const auto winner = fastest(with_transport(on, p.transport), p.collective, placement, p.count,
                                    elem_size_of(p.dtype), p.root, algs[p.collective]);
        w = winners.emplace(key, winner ? std::string(to_string(winner->algorithm)) : std::string()).first;
      }
      p.predicted_winner = w->second;
    } catch (const Error& e) {
      p.predicted_us = kNaN;
      p.note = e.what();
      continue;
    }
    derive_bandwidths(p);
  }
}

namespace {

// Memory the plan may hold in built schedules (per rank: every rank plans every point). A point
// whose schedule would take the plan past it keeps only its request, and is built again when it
// runs: a large job (many ranks, many chunks) must not hold all its schedules at once.
constexpr std::size_t kPlanScheduleBudgetBytes = std::size_t{256} << 20;

std::size_t bytes_of(const Schedule& s) {
  std::size_t n = sizeof(Schedule) + s.ranks.size() * sizeof(RankProgram);
  for (const RankProgram& r : s.ranks) {
    n += r.rounds.size() * sizeof(Round);
    for (const Round& round : r.rounds) n += round.ops.size() * sizeof(Op);
  }
  return n;
}

// One point of the plan: its row (the key, the prediction), its schedule built and priced once,
// and whether and with how much memory the backend can run it.
struct PointKind {
  Collective collective;
  Algorithm algorithm;
  Protocol protocol;
  DType dtype;
  RedOp op;
  bool in_place;
};
PlannedPoint plan_point(const PointKind& k, std::uint64_t count, const SweepSettings& settings,
                        const Topology& base_topology, const Placement& placement, const Backend& backend,
                        std::optional<Seconds>& priced_s) {
  const Collective c = k.collective;
  const Algorithm a = k.algorithm;
  const Protocol protocol = k.protocol;
  PlannedPoint pp;
  pp.dtype = k.dtype;
  pp.op = k.op;
  pp.in_place = k.in_place;
  Point& row = pp.row;
  row.collective = c;
  row.algorithm = a;
  row.backend = std::string(backend.name());
  row.transport = a == Algorithm::Mpi ? std::string("mpi") : std::string(backend.transport());
  row.protocol = protocol;
  row.dtype = std::string(to_string(k.dtype));
  row.redop = reduces(c) ? std::string(to_string(k.op)) : std::string("none");
  row.in_place = k.in_place ? 1 : 0;
  row.timing = std::string(to_string(settings.timing));
  row.nodes = placement.nnodes;
  row.ranks = placement.nranks;
  row.bytes = count * dtype_size(k.dtype);
  row.count = count;
  row.root = settings.root;
  row.iters = settings.iters;
  row.status = "skipped";

  PointSetup setup{c, a, count, k.dtype, k.op, settings.root, nullptr, -1, protocol, k.in_place};
  try {
    if (auto built = predict_row(row, base_topology, placement, settings.pipeline_chunk_bytes, settings.mpi_library,
                                 settings.channels)) {
      priced_s = built->time_s;
      pp.request = built->request;
      pp.schedule = std::make_shared<const Schedule>(std::move(built->schedule));
      setup.schedule = pp.schedule.get();
    }
  } catch (const Error& e) {
    row.note = e.what();
    pp.runnable = false;
  }
  if (pp.runnable) {
    if (std::string why = backend.unsupported(setup); !why.empty()) {
      row.note = why;
      pp.runnable = false;
    } else {
      pp.bytes_needed = backend.bytes_needed(setup);
    }
  }
  return pp;
}

}  // namespace

std::vector<PlannedPoint> plan_sweep(const std::vector<std::pair<Collective, std::vector<Algorithm>>>& pairs,
                                     const std::vector<Bytes>& sizes, const SweepSettings& settings,
                                     const Topology& base_topology, const Placement& placement,
                                     const Backend& backend) {
  std::vector<PlannedPoint> plan;
  std::size_t schedule_bytes = 0;
  for (const auto& [c, algs] : pairs)
    for (DType dtype : settings.dtypes)
      for (RedOp op : reduces(c) ? settings.ops : std::vector<RedOp>{settings.ops.front()}) {
        const std::uint32_t elem = dtype_size(dtype);
        std::set<std::uint64_t> seen_counts;
        for (Bytes requested : sizes) {
          const std::uint64_t count = element_count(c, requested, elem, placement.nranks);
          if (!seen_counts.insert(count).second) continue;
          // The model's winner among the hand-written algorithms at this size: the fastest of the
          // schedules just priced, the first of equals in the order asked.
          const std::size_t first = plan.size();
          std::optional<PricedChoice> winner;
          for (Algorithm a : algs) {
            for (Protocol protocol : is_nccl_algorithm(a) ? settings.protocols : std::vector<Protocol>{Protocol::None})
              for (bool in_place : settings.placements) {
                std::optional<Seconds> priced_s;
                plan.push_back(plan_point({c, a, protocol, dtype, op, in_place}, count, settings, base_topology,
                                          placement, backend, priced_s));
                if (priced_s && (!winner || *priced_s < winner->time_s)) winner = PricedChoice{a, *priced_s};
                if (auto& s = plan.back().schedule) {
                  const std::size_t n = bytes_of(*s);
                  if (schedule_bytes + n > kPlanScheduleBudgetBytes)
                    s.reset();
                  else
                    schedule_bytes += n;
                }
              }
          }
          if (winner)
            for (std::size_t i = first; i < plan.size(); ++i)
              plan[i].row.predicted_winner = std::string(to_string(winner->algorithm));
        }
      }
  return plan;
}

int iters_in_pass(int iters, int passes, int pass) {
  return iters / passes + (pass < iters % passes ? 1 : 0);
}

#ifdef COMMSIM_HAVE_MPI

void check_memory(const std::vector<PlannedPoint>& plan, const Backend& backend) {
  const unsigned long long available = backend.bytes_available();
  std::vector<unsigned long long> need(plan.size()), most(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) need[i] = plan[i].runnable ? plan[i].bytes_needed : 0;
  unsigned long long least_available = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(need.data(), most.data(), static_cast<int>(need.size()), MPI_UNSIGNED_LONG_LONG,
                                  MPI_MAX, MPI_COMM_WORLD));
  COMMSIM_MPI_CHECK(MPI_Allreduce(&available, &least_available, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
  std::string first_bad;
  Bytes largest_ok = 0;
  bool any_ok = false;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].runnable) continue;
    if (most[i] > least_available) {
      if (first_bad.empty())
        first_bad = point_label(plan[i].row) + " needs " + format_bytes(most[i]) + " of memory per rank";
    } else if (!any_ok || plan[i].row.bytes > largest_ok) {
      largest_ok = plan[i].row.bytes;
      any_ok = true;
    }
  }
  if (first_bad.empty()) return;
  throw Error(first_bad + ", but a rank has only " + format_bytes(least_available) +
              " available (its node's free memory shared by the ranks on it); ask for smaller --sizes" +
              (any_ok ? " (the largest point that fits is " + format_bytes(largest_ok) + ")" : std::string()));
}

namespace {

// The barrier before an iteration, which is also where all ranks agree to stop.
bool barrier_and_agree_stop(MPI_Comm comm) {
  int local = stop_signal() != 0 ? 1 : 0, any = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm));
  return any != 0;
}

enum class PointEnd { Done, Abandoned };

// nccl-tests' Allreduce(args, &deltaSec, average) (src/common.cu): this rank's time combined with the
// others' as -a asks; the result is rank 0's.
double combine_over_ranks(double local_s, RankCombine how, MPI_Comm comm) {
  int nranks = 1;
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  if (how == RankCombine::Rank0) return local_s;
  const MPI_Op op = how == RankCombine::Min ? MPI_MIN : how == RankCombine::Max ? MPI_MAX : MPI_SUM;
  double out = 0;
  COMMSIM_MPI_CHECK(MPI_Reduce(&local_s, &out, 1, MPI_DOUBLE, op, 0, comm));
  return how == RankCombine::Mean ? out / nranks : out;
}

// One pass over one point on every rank: prepare, `warmup` untimed iterations, `iters` timed ones,
// and with `check` one more whose wrong elements are counted. Rank 0 appends the pass's samples
// (the maximum over ranks of each iteration) to row.samples_us; a failure to prepare sets status
// "error" on every rank. The statistics are computed once the point's last pass is in
// (finish_row).
PointEnd run_pass(const PlannedPoint& pp, int index, int iters, bool check, const SweepSettings& settings,
                  Backend& backend, Watchdog& watchdog, MPI_Comm comm, int rank, Point& row) {
  std::shared_ptr<const Schedule> schedule = pp.schedule;
  PointSetup setup{row.collective, row.algorithm, row.count, pp.dtype,
                   pp.op,          settings.root, nullptr,   settings.inject_error_rank,
                   row.protocol,   pp.in_place};
  watchdog.begin_point(index, point_label(row));

  // A failure to prepare on one rank (e.g. out of memory) must not leave the others waiting.
  std::string error;
  try {
    // Built when planned; a plan over its memory budget built some again here (plan_sweep).
    if (is_hand_written(row.algorithm) && !schedule)
      schedule = std::make_shared<const Schedule>(make_schedule(pp.request));
    setup.schedule = schedule.get();
    backend.prepare(setup);
  } catch (const std::exception& e) {
    error = e.what();
    std::fprintf(stderr, "commsim run: rank %d: %s: %s\n", rank, point_label(row).c_str(), error.c_str());
  }
  int bad = error.empty() ? 0 : 1, any_bad = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm));
  if (any_bad) {
    backend.release();
    watchdog.end_point(index);
    row.status = "error";
    row.note = error.empty() ? "failed on another rank (see its message)" : error;
    return PointEnd::Done;
  }

  for (int i = 0; i < settings.warmup; ++i) {
    if (barrier_and_agree_stop(comm)) {
      backend.release();
      watchdog.end_point(index);
      return PointEnd::Abandoned;
    }
    backend.run_once();
  }
  std::vector<double> max_s;
  if (settings.timing == Timing::NcclTests) {
    if (barrier_and_agree_stop(comm)) {
      backend.release();
      watchdog.end_point(index);
      return PointEnd::Abandoned;
    }
    max_s.push_back(
        combine_over_ranks(backend.run_back_to_back(iters, settings.blocking) / iters, settings.rank_combine, comm));
  } else {
    std::vector<double> local_s(static_cast<std::size_t>(iters));
    max_s.resize(local_s.size());
    for (int i = 0; i < iters; ++i) {
      if (barrier_and_agree_stop(comm)) {
        backend.release();
        watchdog.end_point(index);
        return PointEnd::Abandoned;
      }
      local_s[static_cast<std::size_t>(i)] = backend.run_once();
    }
    COMMSIM_MPI_CHECK(MPI_Reduce(local_s.data(), max_s.data(), iters, MPI_DOUBLE, MPI_MAX, 0, comm));
  }

  long long wrong = -1;
  if (check) {
    long long local_wrong = static_cast<long long>(backend.check());
    COMMSIM_MPI_CHECK(MPI_Reduce(&local_wrong, &wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, comm));
  }
  const std::string backend_note = rank == 0 ? backend.note() : std::string();
  const Backend::NcclRan ran = rank == 0 ? backend.nccl_ran() : Backend::NcclRan{};
  backend.release();
  watchdog.end_point(index);
  if (rank != 0) return PointEnd::Done;
  if (!backend_note.empty() && row.note.find(backend_note) == std::string::npos)
    row.note = row.note.empty() ? backend_note : row.note + "; " + backend_note;
  if (!ran.algorithm.empty()) {
    row.nccl_algo = ran.algorithm;
    row.nccl_proto = ran.protocol;
    row.nccl_channels = ran.channels;
  }
  for (double s : max_s) row.samples_us.push_back(s * 1e6);
  if (check) row.wrong = wrong;
  return PointEnd::Done;
}

// Rank 0: the statistics of a point's samples, gathered over the passes that ran.
void finish_row(Point& row) {
  const SampleStats st = summarize(row.samples_us);
  // Per-iteration timing has a sample per iteration; nccl-tests timing one per pass, iters as planned.
  if (row.timing != to_string(Timing::NcclTests)) row.iters = static_cast<int>(row.samples_us.size());
  row.measured_min_us = st.min;
  row.measured_median_us = st.median;
  row.measured_mean_us = st.mean;
  row.measured_p95_us = st.p95;
  row.measured_max_us = st.max;
  derive_bandwidths(row);
  row.status = row.wrong > 0 ? "wrong" : "ok";
}

}  // namespace

SweepOutcome run_sweep(const std::vector<PlannedPoint>& plan, const SweepSettings& settings, Backend& backend,
                       Watchdog& watchdog, const SweepCallbacks& callbacks) {
  MPI_Comm comm = MPI_COMM_NULL;
  COMMSIM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  int rank = 0;
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SweepOutcome out;
  const int passes = std::max(1, settings.passes);
  const int runnable =
      static_cast<int>(std::count_if(plan.begin(), plan.end(), [](const auto& p) { return p.runnable; }));
  const int total = runnable * passes;
  // Every point's row, gathered over the passes (samples on rank 0); reported after its last pass,
  // or at once when it failed.
  std::vector<Point> rows(plan.size());
  std::vector<char> reported(plan.size(), 0);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    rows[i] = plan[i].row;
    rows[i].samples_us.clear();
    rows[i].wrong = -1;
  }
  auto report = [&](std::size_t i) {
    reported[i] = 1;
    if (rank == 0 && callbacks.point_done) callbacks.point_done(rows[i]);
  };
  int ordinal = 0;
  bool stopped = false;
  for (int pass = 0; pass < passes && !stopped; ++pass) {
    const bool last = pass + 1 == passes;
    const int iters = iters_in_pass(settings.iters, passes, pass);
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const PlannedPoint& pp = plan[i];
      if (reported[i]) continue;
      if (!pp.runnable) {
        if (last) {
          ++out.skipped;
          report(i);
        }
        continue;
      }
      ++ordinal;
      if (rank == 0 && callbacks.progress) callbacks.progress(rows[i], ordinal, total, pass + 1, passes);
      if (ordinal == 2 && rank == settings.inject_hang_rank)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      inject_fault_if_asked(rank, ordinal);
      Point& row = rows[i];
      if (run_pass(pp, static_cast<int>(i), iters, settings.check && pass == 0, settings, backend, watchdog, comm, rank,
                   row) == PointEnd::Abandoned) {
        out.stop_signal = std::max(stop_signal(), 1);
        stopped = true;
        break;
      }
      // Every rank counts the same statuses: "error" is agreed; "wrong" only rank 0 knows.
      if (row.status == "error") {
        ++out.finished;
        ++out.errors;
        report(i);
      } else if (last) {
        ++out.finished;
        if (rank == 0) {
          finish_row(row);
          if (row.status == "wrong") ++out.wrong;
        }
        report(i);
      }
      if (rank == 0 && (row.status == "error" || last)) watchdog.drain();
    }
  }
  // Stopped before the last pass: the points measured in the passes that ended keep those samples.
  if (stopped && passes > 1) {
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (reported[i] || !plan[i].runnable) continue;
      if (rank == 0 && rows[i].samples_us.empty()) continue;
      ++out.finished;
      if (rank == 0) {
        finish_row(rows[i]);
        const std::string note = "stopped early: " + std::to_string(rows[i].iters) + " of " +
                                 std::to_string(settings.iters) + " timed iterations";
        rows[i].note = rows[i].note.empty() ? note : rows[i].note + "; " + note;
      }
      report(i);
    }
  }
  COMMSIM_MPI_CHECK(MPI_Comm_free(&comm));
  return out;
}

#else

void check_memory(const std::vector<PlannedPoint>&, const Backend&) {}
SweepOutcome run_sweep(const std::vector<PlannedPoint>&, const SweepSettings&, Backend&, Watchdog&,
                       const SweepCallbacks&) {
  throw Error("this build has no MPI: commsim run is not available");
}

#endif

}  // namespace commsim
