// The refit judged on a run it never saw: on two stored runs of one sweep (results/ci-vm-2ranks:
// a 2-core VM, 2 host ranks, run1.h5 and run2.h5 are two runs of the same sweep), the topology
// `commsim calibrate --refine all --holdout` writes is never worse on the other run than the
// probe-only topology, both ways round, and no fitted value leaves its range.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/calibrate/procedure.h"
#include "model/topology/topology.h"
#include "runtime/commands/calibrate_inputs.h"

namespace commsim {
namespace {

const std::string kRuns = std::string(COMMSIM_SOURCE_DIR) + "/results/ci-vm-2ranks/";

CalibrationOptions options(const std::string& refine) {
  CalibrationOptions o;
  o.name = "fitted";
  o.created = "2026-01-01T00:00:00Z";
  o.refine = refine;
  return o;
}

// The median |relative error| of a written topology on the held-out samples.
double error_on(const std::string& text, const CalibrationInput& in) {
  const Topology topo = parse_topology(text, "written");
  std::vector<double> errs;
  for (const CollectiveSample& s : in.holdout)
    if (const double t = in.predict(topo, s); std::isfinite(t)) errs.push_back((t - s.time_s) / s.time_s);
  EXPECT_GT(errs.size(), 100u);
  return median_abs(errs);
}

void judge_one_way(const std::string& fit_on, const std::string& judge_on) {
  SCOPED_TRACE("fitted on " + fit_on + ", judged on " + judge_on);
  CalibrateFiles files = read_calibrate_files({kRuns + "portrait.h5", kRuns + fit_on});
  add_holdout_files(files, {kRuns + judge_on});
  const Topology base = load_topology(resolve_topology_path("local-cpu"));
  const CalibrationInput in = calibration_input(files, base, "test", "2026-01-01");
  ASSERT_FALSE(in.holdout.empty());
  ASSERT_FALSE(in.collectives.empty());

  const CalibrationResult refit = calibrate(in, options("all"));
  CalibrationInput probe_in = in;
  probe_in.collectives.clear();
  const CalibrationResult probe_only = calibrate(probe_in, options("none"));

  // Never worse on the run it did not see than the probe-only topology.
  const double refit_error = error_on(refit.text, in), probe_error = error_on(probe_only.text, in);
  EXPECT_LE(refit_error, probe_error);
  ASSERT_TRUE(refit.collectives.has_value());
  const CollectiveStep& c = *refit.collectives;
  EXPECT_TRUE(c.judged);
  EXPECT_NEAR(c.probe_held_out, probe_error, 1e-9);
  if (c.kept) {
    EXPECT_NEAR(c.refit_held_out, refit_error, 1e-6);
  }

  // Every fitted value inside its range, in the fit and in the written file.
  const Topology written = parse_topology(refit.text, "written");
  for (Param p : c.fit.fitted) {
    const ParamRange& r = c.fit.range.at(p);
    for (double v : {get_param(c.fit.topology, p), c.kept ? get_param(written, p) : get_param(c.fit.topology, p)}) {
      EXPECT_GE(v, r.lo * (1 - 1e-6)) << to_string(p);
      EXPECT_LE(v, r.hi * (1 + 1e-6)) << to_string(p);
    }
  }
  // The file describes this machine: 2 logical CPUs, its memory, not the preset's 64 ranks.
  EXPECT_EQ(written.ranks_per_node, 2);
  EXPECT_NE(written.device_memory_bytes, base.device_memory_bytes);
  EXPECT_NE(refit.text.find("# preset local-cpu: not measured on this machine"), std::string::npos);
}

TEST(CalibrateHoldout, RefitNeverWorseThanProbeOnlyOnTheOtherRun) {
  judge_one_way("run1.h5", "run2.h5");
  judge_one_way("run2.h5", "run1.h5");
}

}  // namespace
}  // namespace commsim
