// The collective fit cannot overfit: every term stays in its physical range (fit_range), and a term
// the points do not pin down (too few points, or collinear with another term) is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/calibrate/calibrate.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

Topology host() {
  return load_topology(resolve_topology_path("local-cpu"));
}

// Ring allreduce on 4 ranks of one node at `sizes`, timed on `truth`.
std::vector<CollectiveSample> ring_on(const Topology& truth, const std::vector<Bytes>& sizes) {
  std::vector<CollectiveSample> out;
  for (Bytes b : sizes) {
    CollectiveSample s{Collective::AllReduce, Algorithm::Ring, 1, 4, b, 0, out.size()};
    s.time_s = predict_closed_form(truth, s);
    out.push_back(s);
  }
  return out;
}

std::vector<Bytes> sizes_from_1k(int count) {
  std::vector<Bytes> v;
  for (Bytes b = 1024; static_cast<int>(v.size()) < count; b *= 2) v.push_back(b);
  return v;
}

TEST(FitRange, RelativeToTheStart) {
  Topology t = host();
  t.intra.bw_Bps = 10e9;
  t.intra.latency_s = 2e-6;
  const ParamRange beta = fit_range(Param::IntraBeta, t);
  EXPECT_NEAR(1 / beta.lo, 15e9, 1);   // 1.5x the bandwidth
  EXPECT_NEAR(1 / beta.hi, 2.5e9, 1);  // 0.25x
  EXPECT_DOUBLE_EQ(fit_range(Param::IntraLatency, t).lo, 0.0);
  EXPECT_DOUBLE_EQ(fit_range(Param::IntraLatency, t).hi, 20e-6);
  t.call_overhead_s = 0;  // an overhead not measured: up to 10x its tier's latency
  EXPECT_DOUBLE_EQ(fit_range(Param::CallOverhead, t).hi, 20e-6);
  t.message_scale = {{1024, 1.0}, {4096, 1.0}};
  EXPECT_DOUBLE_EQ(fit_range(Param::Message1, t).lo, 0.5);
  EXPECT_DOUBLE_EQ(fit_range(Param::Message1, t).hi, 2.0);
  EXPECT_DOUBLE_EQ(fit_range(Param::IntraSendShare, t).hi, 1.0);
  EXPECT_TRUE(at_range_end({0.5, 2.0}, 2.0));
  EXPECT_TRUE(at_range_end({0.5, 2.0}, 0.5));
  EXPECT_FALSE(at_range_end({0.5, 2.0}, 1.0));
}

TEST(BoundedFit, ABandwidthFiveTimesTheProbesStopsAtItsBound) {
  const Topology start = host();
  Topology truth = start;
  truth.intra.bw_Bps = 5 * start.intra.bw_Bps;  // the data want 5x: beyond the 1.5x a fit may claim
  const auto samples = ring_on(truth, sizes_from_1k(16));
  const ParamFit fit = refine_parameters(start, samples, {Param::IntraBeta});
  ASSERT_EQ(fit.fitted.size(), 1u);
  const ParamRange range = fit.range.at(Param::IntraBeta);
  const double beta = get_param(fit.topology, Param::IntraBeta);
  EXPECT_GE(beta, range.lo * (1 - 1e-12));
  EXPECT_LE(beta, range.hi * (1 + 1e-12));
  EXPECT_TRUE(at_range_end(range, beta));
  EXPECT_NEAR(fit.topology.intra.bw_Bps, 1.5 * start.intra.bw_Bps, 1e-6 * start.intra.bw_Bps);
}

TEST(BoundedFit, AValueInsideTheRangeIsFoundExactly) {
  const Topology start = host();
  Topology truth = start;
  truth.intra.bw_Bps = 1.2 * start.intra.bw_Bps;
  const ParamFit fit = refine_parameters(start, ring_on(truth, sizes_from_1k(16)), {Param::IntraBeta});
  EXPECT_NEAR(fit.topology.intra.bw_Bps, truth.intra.bw_Bps, 1e-3 * truth.intra.bw_Bps);
  EXPECT_FALSE(at_range_end(fit.range.at(Param::IntraBeta), get_param(fit.topology, Param::IntraBeta)));
}

TEST(RefusedTerms, CollinearTermsAreNotFitted) {
  // One algorithm at one rank count: the call overhead and the latency both add a constant to every
  // point, so the points cannot tell them apart.
  const Topology start = host();
  Topology truth = start;
  truth.intra.latency_s *= 1.5;
  const auto samples = ring_on(truth, sizes_from_1k(16));
  const ParamFit fit = refine_parameters(start, samples, {Param::IntraLatency, Param::CallOverhead});
  ASSERT_EQ(fit.refused.size(), 1u);
  EXPECT_EQ(fit.refused[0].param, Param::CallOverhead);
  EXPECT_NE(fit.refused[0].why.find("intra.latency"), std::string::npos) << fit.refused[0].why;
  EXPECT_EQ(get_param(fit.topology, Param::CallOverhead), get_param(start, Param::CallOverhead));
  EXPECT_EQ(fit.fitted, std::vector<Param>{Param::IntraLatency});
  EXPECT_FALSE(std::string(what_pins(Param::CallOverhead)).empty());
}

TEST(RefusedTerms, TooFewPointsForTheTerms) {
  // Four points pin down one term (kPointsPerTerm = 3): the latency, independent of the bandwidth
  // but asked for after it, is refused.
  const Topology start = host();
  Topology truth = start;
  truth.intra.bw_Bps *= 1.2;
  const auto samples = ring_on(truth, {1024, 65536, 1 << 20, 8 << 20});
  const ParamFit fit = refine_parameters(start, samples, {Param::IntraBeta, Param::IntraLatency});
  EXPECT_EQ(fit.fitted, std::vector<Param>{Param::IntraBeta});
  ASSERT_EQ(fit.refused.size(), 1u);
  EXPECT_EQ(fit.refused[0].param, Param::IntraLatency);
  EXPECT_NE(fit.refused[0].why.find("too few points"), std::string::npos) << fit.refused[0].why;
  // Six points pin down both.
  const ParamFit six =
      refine_parameters(start, ring_on(truth, sizes_from_1k(6)), {Param::IntraBeta, Param::IntraLatency});
  EXPECT_TRUE(six.refused.empty());
}

}  // namespace
}  // namespace commsim
