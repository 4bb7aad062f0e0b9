#include "runtime/sweep/predictions.h"

#include "runtime/sweep/point.h"

namespace commsim {
namespace {

Point make_point(const PredictSettings& s, const PredictedPoint& pp) {
  Point p;
  p.collective = pp.collective;
  p.algorithm = pp.candidate.algorithm;
  p.protocol = pp.candidate.protocol;
  p.backend = "model";
  p.transport = "";
  p.dtype = std::string(to_string(s.dtype));
  p.redop = reduces(pp.collective) ? "sum" : "none";
  p.nodes = pp.nodes;
  p.ranks = pp.ranks;
  p.bytes = pp.bytes;
  p.count = pp.bytes / dtype_size(s.dtype);
  const Seconds t = pp.cost.time_s;
  p.predicted_us = t * 1e6;
  p.predicted_busbw_gbps =
      t > 0 ? static_cast<double>(pp.bytes) / t / 1e9 * busbw_factor(pp.collective, p.ranks) : kNaN;
  p.status = "predicted";
  if (pp.candidate.algorithm == Algorithm::Nccl)
    p.note = "NCCL's model picks " + candidate_name({pp.cost.algorithm, pp.cost.protocol});
  p.predicted_winner = candidate_name(pp.winner);
  return p;
}

}  // namespace

std::vector<std::string> predict_points(const PredictSettings& s, const std::vector<SweepCandidates>& priced,
                                        Reporter& out, std::vector<std::string>& skipped) {
  PredictedRows rows = predict_sweep(s, priced);
  for (const PredictedPoint& pp : rows.points) out.point(make_point(s, pp));
  skipped.insert(skipped.end(), rows.skipped.begin(), rows.skipped.end());
  return rows.crossovers;
}

}  // namespace commsim
