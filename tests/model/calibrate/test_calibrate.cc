// The calibration fit: recovers known parameters from data the model generates (with noise), the
// held-out check sees a bad fit, and a written topology reads back to the fitted values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "collectives/generators.h"
#include "model/calibrate/calibrate.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/price.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

const char* kHostTopology = R"(
name: test-host
ranks_per_node: 8
device: { name: CPU, memory_bandwidth: 20 GB/s }
intra_node: { fabric: shared-memory, bandwidth: 5 GB/s, latency: 0.5 us }
network: { kind: tcp, fabric: single-switch, nics_per_node: 1, nic_bandwidth: 1.25 GB/s, latency: 30 us }
reduction: { bandwidth: 4 GB/s }
)";

std::vector<TimedSize> line_samples(double alpha, double beta, double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<TimedSize> out;
  for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 2)
    for (int rep = 0; rep < 3; ++rep) out.push_back({b, (alpha + b * beta) * (1.0 + n(rng))});
  return out;
}

TEST(FitLine, RecoversAlphaBetaFromNoisyData) {
  const double alpha = 2.5e-6, beta = 1.0 / 7e9;
  for (unsigned seed : {1u, 2u, 3u}) {
    LineFit f = fit_line(line_samples(alpha, beta, 0.03, seed));
    EXPECT_NEAR(f.alpha_s, alpha, 0.05 * alpha) << "seed " << seed;
    EXPECT_NEAR(f.beta_s_per_byte, beta, 0.03 * beta) << "seed " << seed;
    EXPECT_GT(f.r2, 0.99);
    EXPECT_LT(f.median_abs_rel_residual, 0.05);
    EXPECT_EQ(f.residual_s.size(), f.samples);
  }
}

TEST(FitLine, AbsoluteWeightingFitsLargeMessagesAndLosesAlpha) {
  // Ordinary least squares is dominated by the largest messages: beta is right, alpha is not
  // determined to better than the noise of the large sizes.
  const double alpha = 2.5e-6, beta = 1.0 / 7e9;
  LineFit f = fit_line(line_samples(alpha, beta, 0.02, 7), FitWeighting::Absolute);
  EXPECT_NEAR(f.beta_s_per_byte, beta, 0.03 * beta);
  LineFit exact = fit_line(line_samples(alpha, beta, 0.0, 7), FitWeighting::Absolute);
  EXPECT_NEAR(exact.alpha_s, alpha, 1e-3 * alpha);
  EXPECT_NEAR(exact.r2, 1.0, 1e-12);
}

TEST(FitLine, ClampsNegativeLatencyAndRejectsTooFewSizes) {
  // Times that extrapolate below zero at 0 bytes: alpha would be negative.
  std::vector<TimedSize> s = {{1000, 0.5e-6}, {2000, 1.6e-6}, {4000, 3.8e-6}};
  LineFit f = fit_line(s);
  EXPECT_TRUE(f.alpha_clamped);
  EXPECT_EQ(f.alpha_s, 0.0);
  EXPECT_GT(f.beta_s_per_byte, 0.0);
  EXPECT_THROW(fit_line({{64, 1e-6}, {64, 1.1e-6}}), Error);
  EXPECT_THROW(fit_line({{64, 1e-6}, {128, 0.0}}), Error);
}

TEST(HeldOut, SmallErrorOnALineLargeErrorAcrossAProtocolSwitch) {
  const double alpha = 1e-6, beta = 1.0 / 5e9;
  HeldOutCheck good = held_out_check(line_samples(alpha, beta, 0.0, 1));
  EXPECT_LT(good.median_abs_rel_error, 1e-9);
  EXPECT_GT(good.held_out, 0u);
  // A rendezvous-like knee: above 64 KiB every message pays 20 us more.
  std::vector<TimedSize> knee;
  for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 2) knee.push_back({b, alpha + b * beta + (b > 65536 ? 20e-6 : 0.0)});
  HeldOutCheck bad = held_out_check(knee);
  EXPECT_GT(bad.max_abs_rel_error, 0.2);
  EXPECT_THROW(held_out_check({{8, 1e-6}, {16, 1e-6}, {32, 1e-6}}), Error);
}

std::vector<CollectiveSample> collective_data(const Topology& truth, double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<CollectiveSample> out;
  struct Case {
    Collective c;
    Algorithm a;
  };
  const Case cases[] = {{Collective::AllReduce, Algorithm::Ring},       {Collective::AllReduce, Algorithm::Rabenseifner},
                        {Collective::AllReduce, Algorithm::RecursiveDoubling}, {Collective::AllGather, Algorithm::Ring},
                        {Collective::Broadcast, Algorithm::Binomial},    {Collective::ReduceScatter, Algorithm::Ring}};
  for (int ranks : {2, 4, 8})
    for (const Case& k : cases)
      for (Bytes b = 1024; b <= (Bytes{64} << 20); b *= 4) {
        CostQuery q{k.c, k.a, Protocol::None, 1, ranks, b};
        out.push_back({k.c, k.a, 1, ranks, b, closed_form(truth, q).time_s * (1.0 + n(rng))});
      }
  return out;
}

// The parameters `base`, then a curve's points (add_*_points).
std::vector<Param> with_curve(std::vector<Param> base, const std::vector<Param>& curve) {
  base.insert(base.end(), curve.begin(), curve.end());
  return base;
}

// A fitted curve of `t` (working_set_scale, local_op_scale, message_scale) comes back the same from
// the topology file calibrate writes.
template <typename Point>
void expect_curve_written_back(const Topology& t, std::vector<Point> Topology::*curve, Bytes Point::*x) {
  const Topology back = parse_topology(topology_yaml(t, {}, {}, nullptr, false), "written");
  ASSERT_EQ((back.*curve).size(), (t.*curve).size());
  for (std::size_t i = 0; i < (t.*curve).size(); ++i) {
    EXPECT_EQ((back.*curve)[i].*x, (t.*curve)[i].*x) << i;
    EXPECT_NEAR((back.*curve)[i].scale, (t.*curve)[i].scale, 1e-8) << i;
  }
}

// The samples' times as `truth` predicts them (closed forms, no noise).
void time_on(const Topology& truth, std::vector<CollectiveSample>& samples) {
  for (CollectiveSample& s : samples) s.time_s = predict_closed_form(truth, s);
}

TEST(FitGamma, RecoversTheReductionRate) {
  Topology truth = parse_topology(kHostTopology, "test");
  Topology start = truth;
  start.reduce_bw_Bps = 1.4 * truth.reduce_bw_Bps;  // 40% off: inside the fit's range
  ParamFit f = fit_gamma(start, collective_data(truth, 0.0, 1));
  ASSERT_EQ(f.fitted.size(), 1u);
  EXPECT_NEAR(f.topology.reduce_bw_Bps, truth.reduce_bw_Bps, 1e-3 * truth.reduce_bw_Bps);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-6);
  EXPECT_GT(f.median_abs_rel_error_before, 0.01);
  // With 3% noise, still within a few percent.
  ParamFit noisy = fit_gamma(start, collective_data(truth, 0.03, 2));
  EXPECT_NEAR(noisy.topology.reduce_bw_Bps, truth.reduce_bw_Bps, 0.1 * truth.reduce_bw_Bps);
}

TEST(FitGamma, NeedsAReducingCollective) {
  Topology t = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> only_allgather = {{Collective::AllGather, Algorithm::Ring, 1, 4, 1 << 20, 1e-3}};
  EXPECT_THROW(fit_gamma(t, only_allgather), Error);
}

TEST(RefineParameters, RecoversIntraNodeAlphaBetaGammaTogether) {
  Topology truth = parse_topology(kHostTopology, "test");
  Topology start = truth;
  start.intra.latency_s = 3e-6;
  start.intra.bw_Bps = 0.8 * truth.intra.bw_Bps;
  start.reduce_bw_Bps = 1.3 * truth.reduce_bw_Bps;
  ParamFit f = refine_parameters(start, collective_data(truth, 0.0, 3),
                                 {Param::IntraLatency, Param::IntraBeta, Param::NetLatency, Param::Gamma});
  EXPECT_NEAR(f.topology.intra.latency_s, truth.intra.latency_s, 0.01 * truth.intra.latency_s);
  EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps, 0.01 * truth.intra.bw_Bps);
  EXPECT_NEAR(f.topology.reduce_bw_Bps, truth.reduce_bw_Bps, 0.01 * truth.reduce_bw_Bps);
  // One node: nothing depends on the network.
  ASSERT_EQ(f.held.size(), 1u);
  EXPECT_EQ(f.held[0], Param::NetLatency);
  EXPECT_EQ(f.topology.network.latency_s, truth.network.latency_s);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-4);
}

TEST(TopologyYaml, WrittenFileLoadsBackAndPredictsTheFittedValues) {
  Topology t = parse_topology(kHostTopology, "test");
  t.name = "fitted";
  t.intra.latency_s = 0.731e-6;
  t.intra.bw_Bps = 6.123456e9;
  t.network.latency_s = 41.5e-6;
  t.network.nic_bw_Bps = 1.1e9;
  t.reduce_bw_Bps = 3.21e9;
  CalibrationInfo rec;
  rec.created = "2026-01-01T00:00:00Z";
  rec.sources = {"portrait.h5"};
  rec.sizes = {8, 1024, 1 << 20};
  rec.nodes = {1};
  rec.ranks = {2, 4};
  std::string text = topology_yaml(t, {"a test header"}, {{"intra_node.bandwidth", "fitted from a test"}}, &rec, false);
  EXPECT_NE(text.find("# a test header"), std::string::npos);
  EXPECT_NE(text.find("fitted from a test"), std::string::npos);
  EXPECT_NE(text.find("calibrated on sizes 8B .. 1MiB"), std::string::npos);
  Topology back = parse_topology(text, "written");
  EXPECT_EQ(back.name, "fitted");
  EXPECT_EQ(back.gpu, false);
  EXPECT_EQ(back.ranks_per_node, t.ranks_per_node);
  EXPECT_NEAR(back.intra.bw_Bps, t.intra.bw_Bps, 1e-6 * t.intra.bw_Bps);
  EXPECT_NEAR(back.intra.latency_s, t.intra.latency_s, 1e-6 * t.intra.latency_s);
  EXPECT_NEAR(back.network.latency_s, t.network.latency_s, 1e-6 * t.network.latency_s);
  EXPECT_NEAR(back.network.nic_bw_Bps, t.network.nic_bw_Bps, 1e-6 * t.network.nic_bw_Bps);
  EXPECT_NEAR(back.reduce_bw_Bps, t.reduce_bw_Bps, 1e-6 * t.reduce_bw_Bps);
  for (Bytes b : {Bytes{8}, Bytes{1} << 20, Bytes{64} << 20}) {
    for (int nodes : {1, 2}) {
      CostQuery q{Collective::AllReduce, Algorithm::Ring, Protocol::None, nodes, 4, b};
      EXPECT_NEAR(closed_form(back, q).time_s, closed_form(t, q).time_s, 1e-6 * closed_form(t, q).time_s);
    }
  }
}

TEST(TopologyYaml, GpuTopologyWithNcclConstantsRoundTrips) {
  Topology t = load_topology(resolve_topology_path("dgx-h100"));
  std::string text = topology_yaml(t, {}, {}, nullptr, false);
  Topology back = parse_topology(text, "written");
  EXPECT_TRUE(back.gpu);
  EXPECT_EQ(back.nccl.present, t.nccl.present);
  EXPECT_NEAR(back.host_link.bw_Bps, t.host_link.bw_Bps, 1e-6 * t.host_link.bw_Bps);
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) EXPECT_NEAR(back.nccl.base_latency_s[a][p], t.nccl.base_latency_s[a][p], 1e-12);
  CostQuery q{Collective::AllReduce, Algorithm::Ring, Protocol::None, 2, t.ranks_per_node, Bytes{1} << 28};
  EXPECT_NEAR(closed_form(back, q).time_s, closed_form(t, q).time_s, 1e-6 * closed_form(t, q).time_s);
}

// The message-library terms: each recovered from data generated with it (3% noise).
TEST(FitProtocol, RecoversEagerLimitAndRendezvousLatency) {
  const double a1 = 0.72e-6, a2 = 3.34e-6, beta = 1 / 6e9;
  const Bytes limit = 8192;
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.03);
    std::vector<TimedSize> v;
    for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 2)
      for (int rep = 0; rep < 3; ++rep) v.push_back({b, ((b <= limit ? a1 : a2) + b * beta) * (1 + noise(rng))});
    const ProtocolFit f = fit_protocol(v);
    ASSERT_TRUE(f.switched) << seed;
    EXPECT_EQ(f.eager_limit_bytes, limit) << seed;
    EXPECT_NEAR(f.latency_s, a1, 0.1 * a1) << seed;
    EXPECT_NEAR(f.rendezvous_latency_s, a2, 0.1 * a2) << seed;
    EXPECT_NEAR(f.beta_s_per_byte, beta, 0.05 * beta) << seed;
    EXPECT_LT(f.median_abs_rel_residual, 0.05);
    EXPECT_FALSE(f.inlined) << seed;  // one latency below the eager limit: no inline step invented
  }
  // Large sizes far off the line (a loaded machine, caches) do not hide the switch.
  std::vector<TimedSize> v;
  for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 2)
    v.push_back({b, ((b <= limit ? a1 : a2) + b * beta) * (b >= (Bytes{4} << 20) ? 30.0 : 1.0)});
  const ProtocolFit loaded = fit_protocol(v);
  EXPECT_TRUE(loaded.switched);
  EXPECT_EQ(loaded.eager_limit_bytes, limit);
  // One latency throughout: no switch is invented.
  const ProtocolFit one = fit_protocol(line_samples(2e-6, beta, 0.03, 7));
  EXPECT_FALSE(one.switched);
  EXPECT_NEAR(one.latency_s, 2e-6, 0.1 * 2e-6);
  // Too few large sizes to see the bandwidth.
  EXPECT_THROW(fit_protocol({{8, 1e-6}, {64, 1e-6}, {65536, 2e-5}}), Error);
}

// A ring shift of 16 ranks through Open MPI's shared memory (measured, us): the residual latency
// climbs from 0.6 to 1.2 us up to 2 KiB (a per-byte cost beta does not capture) and steps to about
// 2.5 us from 4 KiB, where Open MPI switches to rendezvous. The switch is the step, not the climb.
// Times in us of sizes 8 B, 16 B, ... (doubling), as samples.
std::vector<TimedSize> doubling_series(const std::vector<double>& us) {
  std::vector<TimedSize> v;
  Bytes b = 8;
  for (double t : us) {
    v.push_back({b, t * 1e-6});
    b *= 2;
  }
  return v;
}

TEST(FitProtocol, TheSwitchIsTheStepNotTheDrift) {
  const ProtocolFit f = fit_protocol(doubling_series({0.63, 0.63, 0.66, 0.78, 0.82, 1.16, 1.37, 1.49, 1.93, 4.05,
                                                      5.88, 8.96, 15.03, 22.27, 39.04, 69.26, 178.73, 403.85, 809.64,
                                                      1714.01, 4198.67, 9152.96, 19203.80, 38379.04}));
  ASSERT_TRUE(f.switched);
  EXPECT_EQ(f.eager_limit_bytes, Bytes{2048});
  EXPECT_GT(f.rendezvous_latency_s, 2 * f.latency_s);
}

// Three regimes (Open MPI's shared memory: inline up to 256 B, eager up to the eager limit,
// rendezvous above), 3% noise: both steps and the three latencies come back.
TEST(FitProtocol, FindsTheInlineStepBelowTheEagerLimit) {
  const double a0 = 0.65e-6, a1 = 1.2e-6, a2 = 3.0e-6, beta = 1 / 6e9;
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.03);
    std::vector<TimedSize> v;
    for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 2)
      for (int rep = 0; rep < 3; ++rep)
        v.push_back({b, ((b <= 256 ? a0 : b <= 4096 ? a1 : a2) + b * beta) * (1 + noise(rng))});
    const ProtocolFit f = fit_protocol(v);
    ASSERT_TRUE(f.switched) << seed;
    ASSERT_TRUE(f.inlined) << seed;
    EXPECT_EQ(f.eager_limit_bytes, Bytes{4096}) << seed;
    EXPECT_EQ(f.inline_limit_bytes, Bytes{256}) << seed;
    EXPECT_NEAR(f.inline_latency_s, a0, 0.1 * a0) << seed;
    EXPECT_NEAR(f.latency_s, a1, 0.1 * a1) << seed;
    EXPECT_NEAR(f.rendezvous_latency_s, a2, 0.1 * a2) << seed;
    EXPECT_LT(f.median_abs_rel_residual, 0.05) << seed;
  }
}

TEST(FitProtocol, BetaComesFromTheLargeSizes) {
  // Small messages in cache at 80 GB/s, large ones at 5 GB/s: beta is the large sizes' one.
  std::vector<TimedSize> v;
  for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 4)
    v.push_back({b, 1e-6 + b / (b < 65536 ? 80e9 : 5e9)});
  EXPECT_NEAR(fit_protocol(v).bw_Bps(), 5e9, 0.02 * 5e9);
}

TEST(FitNodeBandwidth, AllRanksSharingTheNode) {
  // One pair streams at 13.2 GB/s, eight ranks at once get 4.1 GB/s each: 32.8 GB/s per node.
  EXPECT_NEAR(fit_node_bandwidth(13.2e9, 4.1e9, 8), 32.8e9, 1e6);
  EXPECT_EQ(fit_node_bandwidth(13.2e9, 12.5e9, 8), 0.0);  // no sharing seen: unlimited
  EXPECT_EQ(fit_node_bandwidth(13.2e9, 4.1e9, 1), 0.0);
  // The fitted node bandwidth reproduces both measurements in the model: a ring shift of all
  // eight ranks (sendrecv, every rank sends) and one pair.
  Topology t = parse_topology(kHostTopology, "inline");
  t.intra.bw_Bps = 13.2e9;
  t.intra.node_bw_Bps = fit_node_bandwidth(13.2e9, 4.1e9, 8);
  const Bytes n = Bytes{16} << 20;
  const double ring = closed_form(t, {Collective::SendRecv, Algorithm::Direct, Protocol::None, 1, 8, n}).bandwidth_s;
  EXPECT_NEAR(n / ring, 4.1e9, 0.01 * 4.1e9);
}

TEST(FitMessageOverhead, RecoversFromAStreamOfEight) {
  const double a = 0.7e-6, o = 0.4e-6, beta = 1 / 13e9;
  std::vector<TimedSize> per_message;
  for (Bytes b = 8; b <= 4096; b *= 2) per_message.push_back({b, (a + 7 * o) / 8 + b * beta});
  EXPECT_NEAR(fit_message_overhead(per_message, 8, a, beta, 4096), o, 1e-3 * o);
  // Larger sizes than the limit are not used; no overhead in the data gives none.
  for (auto& x : per_message) x.time_s = a / 8 + x.bytes * beta;
  EXPECT_NEAR(fit_message_overhead(per_message, 8, a, beta, 4096), 0.0, 1e-12);
}

TEST(TopologyYaml, WritesTheMessageTermsBack) {
  Topology t = parse_topology(kHostTopology, "inline");
  t.intra.node_bw_Bps = 33e9;
  t.intra.msg = {8192, 3.3e-6, 0.4e-6, 1.2e-6, 256, 0.5e-6, 0.1e-6, 0.75, 0.6, 1.15};
  t.network.msg.eager_limit_bytes = 65536;
  t.network.msg.rendezvous_latency_s = 40e-6;
  t.network.msg.message_overhead_s = 2e-6;
  const Topology back = parse_topology(topology_yaml(t, {}, {}, nullptr, false), "written");
  EXPECT_NEAR(back.intra.node_bw_Bps, 33e9, 1);
  EXPECT_EQ(back.intra.msg.eager_limit_bytes, 8192u);
  EXPECT_NEAR(back.intra.msg.rendezvous_latency_s, 3.3e-6, 1e-15);
  EXPECT_NEAR(back.intra.msg.message_overhead_s, 0.4e-6, 1e-15);
  ASSERT_TRUE(back.intra.msg.rendezvous_overhead_s.has_value());
  EXPECT_NEAR(*back.intra.msg.rendezvous_overhead_s, 1.2e-6, 1e-15);
  EXPECT_FALSE(back.network.msg.rendezvous_overhead_s.has_value());
  EXPECT_EQ(back.network.msg.eager_limit_bytes, 65536u);
  EXPECT_NEAR(back.network.msg.rendezvous_latency_s, 40e-6, 1e-15);
  EXPECT_NEAR(back.network.msg.message_overhead_s, 2e-6, 1e-15);
  EXPECT_EQ(back.intra.msg.inline_limit_bytes, 256u);
  EXPECT_NEAR(back.intra.msg.inline_latency_s, 0.5e-6, 1e-15);
  ASSERT_TRUE(back.intra.msg.inline_overhead_s.has_value());
  EXPECT_NEAR(*back.intra.msg.inline_overhead_s, 0.1e-6, 1e-15);
  EXPECT_EQ(back.network.msg.inline_limit_bytes, 0u);
  EXPECT_EQ(back.intra.msg.one_way_factor, 0.75);
  EXPECT_EQ(back.network.msg.one_way_factor, 1.0);
  EXPECT_EQ(back.intra.msg.overhead_receive_share, 0.6);
  EXPECT_EQ(back.network.msg.overhead_receive_share, 0.0);
  EXPECT_EQ(back.intra.msg.exchange_factor, 1.15);
  EXPECT_EQ(back.network.msg.exchange_factor, 1.0);
}

// The probe's ring shift inside a node, t = latency + bytes * beta, with the data moving at
// `slowdown(bytes)` times the time where it was just written.
template <typename F>
std::pair<std::vector<TimedSize>, std::vector<TimedSize>> ring_shifts(Seconds latency, F slowdown) {
  const double beta = 1 / 5e9;
  std::vector<TimedSize> clean, written;
  for (Bytes b : {Bytes{1} << 10, Bytes{4} << 10, Bytes{64} << 10, Bytes{1} << 20, Bytes{16} << 20, Bytes{64} << 20}) {
    clean.push_back({b, latency + b * beta});
    written.push_back({b, latency + b * beta * slowdown(b)});
  }
  return {clean, written};
}

TEST(FitWrittenScale, SlowerAtMidSizesBackToOneAtBothEnds) {
  const Seconds a = 1e-6;
  // 3x at 1 KiB (below 4 KiB: not used), equal at 4 KiB, 2x at 64 KiB, 1.2x at 1 MiB, equal from 16 MiB.
  const auto [clean, written] = ring_shifts(a, [](Bytes b) {
    return b == 1024 ? 3.0 : b == 65536 ? 2.0 : b == (Bytes{1} << 20) ? 1.2 : 1.0;
  });
  const std::vector<MessageScale> c = fit_written_scale(clean, written, a);
  ASSERT_EQ(c.size(), 4u);  // 4 KiB 1, 64 KiB, 1 MiB, 16 MiB 1; 64 MiB (a second 1) dropped
  EXPECT_EQ(c[0].bytes, 4096u);
  EXPECT_EQ(c[0].scale, 1.0);
  EXPECT_EQ(c[1].bytes, 65536u);
  EXPECT_NEAR(c[1].scale, 0.5, 1e-9);
  EXPECT_EQ(c[2].bytes, Bytes{1} << 20);
  EXPECT_NEAR(c[2].scale, 1 / 1.2, 1e-9);
  EXPECT_EQ(c[3].bytes, Bytes{16} << 20);
  EXPECT_EQ(c[3].scale, 1.0);
  // The ratios behind it: every size of at least 4 KiB measured both ways, the latency taken off.
  const std::vector<MessageScale> r = written_ratios(clean, written, a);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r.front().bytes, 4096u);
  EXPECT_NEAR(r[1].scale, 0.5, 1e-9);
  // The curve as the model reads it: the interpolated factor, 1 outside the slow sizes.
  Topology t = parse_topology(kHostTopology, "inline");
  t.written_scale = c;
  EXPECT_NEAR(t.written_scale_at(65536), 0.5, 1e-9);
  EXPECT_EQ(t.written_scale_at(1024), 1.0);
  EXPECT_EQ(t.written_scale_at(Bytes{64} << 20), 1.0);
}

TEST(FitWrittenScale, NoCurveWithinTheNoiseOrWhenWrittenIsFaster) {
  const Seconds a = 1e-6;
  // 8% slower at 64 KiB, 5% faster at 1 MiB, 1.5x slower only at 1 KiB (not used): no curve.
  const auto [clean, written] = ring_shifts(a, [](Bytes b) {
    return b == 1024 ? 1.5 : b == 65536 ? 1.08 : b == (Bytes{1} << 20) ? 0.95 : 1.0;
  });
  EXPECT_TRUE(fit_written_scale(clean, written, a).empty());
  EXPECT_EQ(written_ratios(clean, written, a).size(), 5u);
  // Much faster just-written data does not make a factor above 1 either.
  const auto [c2, w2] = ring_shifts(a, [](Bytes) { return 0.5; });
  EXPECT_TRUE(fit_written_scale(c2, w2, a).empty());
  EXPECT_TRUE(fit_written_scale(clean, {}, a).empty());
}

TEST(FitWrittenScale, EdgesRepeatsAndSizesMeasuredOneWay) {
  const Seconds a = 1e-6;
  // Slower from the first used size on: the curve starts there, without a 1 before it; a 1 between
  // two slower ranges stays; slower up to the largest size: no 1 after it.
  auto [clean, written] = ring_shifts(a, [](Bytes b) {
    return b == 4096 || b == 65536 ? 1.5 : b == (Bytes{1} << 20) ? 1.0 : 1.25;
  });
  std::vector<MessageScale> c = fit_written_scale(clean, written, a);
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c.front().bytes, 4096u);
  EXPECT_NEAR(c.front().scale, 1 / 1.5, 1e-9);
  EXPECT_EQ(c[2].scale, 1.0);
  EXPECT_NEAR(c.back().scale, 0.8, 1e-9);
  // A size measured only one way is skipped; a size measured three times counts with its median
  // time; a time not above the latency is skipped.
  written.erase(written.begin() + 2);                          // no written 64 KiB
  clean.push_back({Bytes{16} << 20, clean[4].time_s});         // 16 MiB measured three times
  clean.push_back({Bytes{16} << 20, 10 * clean[4].time_s});
  clean[1].time_s = 0.5 * a;                                   // 4 KiB below the latency
  c = fit_written_scale(clean, written, a);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.front().bytes, Bytes{1} << 20);
  EXPECT_EQ(c.front().scale, 1.0);
  EXPECT_NEAR(c[1].scale, 0.8, 1e-9);
}

// One slow size among sizes that are not slow is the probe's noise, not a cache effect (which
// spans neighbouring sizes): no curve. A size 200 times slower (a rank descheduled during the
// measurement) is left out, and does not make its slow neighbour count.
TEST(FitWrittenScale, ALoneSlowSizeIsNoise) {
  const Seconds a = 1e-6;
  const auto [clean, written] = ring_shifts(a, [](Bytes b) { return b == (Bytes{1} << 20) ? 1.3 : 1.0; });
  EXPECT_TRUE(fit_written_scale(clean, written, a).empty());
  EXPECT_NEAR(written_ratios(clean, written, a)[2].scale, 1 / 1.3, 1e-9);  // measured, but not kept
  const auto [c2, w2] = ring_shifts(a, [](Bytes b) { return b == 65536 ? 200.0 : b == (Bytes{1} << 20) ? 2.0 : 1.0; });
  EXPECT_TRUE(fit_written_scale(c2, w2, a).empty());
  const auto [c3, w3] = ring_shifts(a, [](Bytes b) { return b == 65536 ? 2.0 : b == (Bytes{1} << 20) ? 1.5 : b == (Bytes{16} << 20) ? 200.0 : 1.0; });
  const std::vector<MessageScale> c = fit_written_scale(c3, w3, a);
  ASSERT_EQ(c.size(), 4u);  // 4 KiB 1, 64 KiB, 1 MiB, 64 MiB 1 (16 MiB left out)
  EXPECT_NEAR(c[2].scale, 1 / 1.5, 1e-9);
  EXPECT_EQ(c[3].bytes, Bytes{64} << 20);
  EXPECT_EQ(c[3].scale, 1.0);
}

TEST(TopologyYaml, WritesTheWrittenScaleCurveWithItsComment) {
  Topology t = parse_topology(kHostTopology, "inline");
  t.written_scale = {{16384, 1.0}, {65536, 0.45}, {Bytes{1} << 20, 0.8}, {Bytes{16} << 20, 1.0}};
  const std::string text =
      topology_yaml(t, {}, {{"written_scale", "measured 2026-01-31 from ring-shift-written vs ring-shift-control intra-node, 13 sizes"}},
                    nullptr, false);
  EXPECT_NE(text.find("written_scale:  # measured 2026-01-31 from ring-shift-written"), std::string::npos) << text;
  const Topology back = parse_topology(text, "written");
  ASSERT_EQ(back.written_scale.size(), 4u);
  EXPECT_EQ(back.written_scale[1].bytes, 65536u);
  EXPECT_NEAR(back.written_scale[1].scale, 0.45, 1e-12);
  t.written_scale.clear();
  EXPECT_EQ(topology_yaml(t, {}, {}, nullptr, false).find("written_scale"), std::string::npos);
}

// A ring shift across the network of a transport whose middle sizes move faster than its large
// ones (2x from 16 KiB to 128 KiB) and whose 64 KiB step costs a handshake.
std::vector<TimedSize> network_shift(Seconds latency, double beta, const std::function<double(Bytes)>& factor,
                                     Seconds handshake_from_64k = 0) {
  std::vector<TimedSize> out;
  for (Bytes b = 8; b <= (Bytes{16} << 20); b *= 2)
    for (int rep = 0; rep < 3; ++rep)
      out.push_back({b, latency + static_cast<double>(b) * beta / factor(b) + (b >= 65536 ? handshake_from_64k : 0.0)});
  return out;
}

TEST(FitNetworkRate, MiddleSizesFasterThanLargeOnes) {
  const Seconds a = 6e-6;
  const double beta = 1 / 1.5e9;
  auto f = [](Bytes b) { return b >= 16384 && b <= 131072 ? 2.0 : 1.0; };
  const NetworkRateFit r = fit_network_rate(network_shift(a, beta, f));
  ASSERT_TRUE(r.done);
  EXPECT_NEAR(r.latency_s, a, 1e-3 * a);
  EXPECT_NEAR(r.beta_s_per_byte, beta, 1e-3 * beta);
  // From the first size whose bytes * beta reach half the latency (4 KiB here: 2.7 us >= 3 us is
  // false, 8 KiB: 5.5 us), every size up to the largest.
  ASSERT_FALSE(r.curve.empty());
  EXPECT_EQ(r.curve.front().bytes, 8192u);
  EXPECT_EQ(r.curve.back().bytes, Bytes{16} << 20);
  for (const MessageScale& p : r.curve) EXPECT_NEAR(p.scale, f(p.bytes), 1e-3) << p.bytes;
  // As the model reads it: 2x at 64 KiB, 1 at 4 MiB, in between on a log scale.
  Topology t = parse_topology(kHostTopology, "inline");
  t.network_message_scale = r.curve;
  EXPECT_NEAR(t.network_message_scale_at(65536), 2.0, 1e-3);
  EXPECT_NEAR(t.network_message_scale_at(Bytes{4} << 20), 1.0, 1e-3);
  EXPECT_NEAR(t.network_message_scale_at(3 * 65536), 1.5, 0.1);
  // A handshake from 64 KiB on shows as a slower rate at the sizes where it is a large part.
  const NetworkRateFit h = fit_network_rate(network_shift(a, beta, [](Bytes) { return 1.0; }, 20e-6));
  ASSERT_FALSE(h.curve.empty());
  for (const MessageScale& p : h.curve) {
    if (p.bytes < 65536) {
      EXPECT_NEAR(p.scale, 1.0, 0.02) << p.bytes;  // the rate of the large sizes holds a bit of it
    } else if (p.bytes == 65536) {
      EXPECT_LT(p.scale, 0.75);
    }
  }
}

TEST(FitNetworkRate, NoCurveWhereALineExplainsTheSizes) {
  const NetworkRateFit r = fit_network_rate(network_shift(30e-6, 1 / 1.25e9, [](Bytes b) {
    return b == 65536 ? 1.05 : 1.0;  // within the noise
  }));
  ASSERT_TRUE(r.done);
  EXPECT_TRUE(r.curve.empty());
  EXPECT_FALSE(r.factors.empty());  // still printed
  // Without two sizes of at least 1 MiB (or two up to 1 KiB) nothing is fitted.
  std::vector<TimedSize> small;
  for (const TimedSize& x : network_shift(30e-6, 1 / 1.25e9, [](Bytes) { return 1.0; }))
    if (x.bytes < (Bytes{2} << 20)) small.push_back(x);
  EXPECT_FALSE(fit_network_rate(small).done);
  EXPECT_FALSE(fit_network_rate({}).done);
}

TEST(TopologyYaml, WritesTheNetworkMessageScaleCurve) {
  Topology t = parse_topology(kHostTopology, "inline");
  t.network_message_scale = {{8192, 1.2}, {65536, 2.0}, {Bytes{4} << 20, 1.0}};
  const std::string text =
      topology_yaml(t, {}, {{"network_message_scale", "measured 2026-01-31 from ring-shift network"}}, nullptr, false);
  EXPECT_NE(text.find("network_message_scale:  # measured 2026-01-31 from ring-shift network"), std::string::npos)
      << text;
  const Topology back = parse_topology(text, "written");
  ASSERT_EQ(back.network_message_scale.size(), 3u);
  EXPECT_EQ(back.network_message_scale[1].bytes, 65536u);
  EXPECT_NEAR(back.network_message_scale[1].scale, 2.0, 1e-12);
  // A curve for a network the topology does not have is an error that names the field.
  const std::string none = std::string(R"(
name: one-node
ranks_per_node: 8
device: { name: CPU, memory_bandwidth: 20 GB/s }
intra_node: { fabric: shared-memory, bandwidth: 5 GB/s, latency: 0.5 us }
network: { kind: none }
reduction: { bandwidth: 4 GB/s }
network_message_scale:
  - { bytes: 8KiB, scale: 1.2 }
)");
  try {
    parse_topology(none, "one-node.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("network_message_scale: needs a network"), std::string::npos) << e.what();
  }
}

// The network's factor on one-way latencies comes back from broadcasts (one-way) beside
// allreduces (exchanges) across nodes, one rank per node, with the network latency alongside.
TEST(RefineParameters, RecoversTheNetworkOneWayFactor) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.network.msg.one_way_factor = 0.7;
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= 256 * 1024; b *= 4)
    for (int nodes : {2, 4}) {
      samples.push_back({Collective::Broadcast, Algorithm::Binomial, nodes, 1, b, 0.0});
      samples.push_back({Collective::AllReduce, Algorithm::RecursiveDoubling, nodes, 1, b, 0.0});
      samples.push_back({Collective::AllGather, Algorithm::Ring, nodes, 1, b, 0.0});
    }
  time_on(truth, samples);
  Topology start = truth;
  start.network.msg.one_way_factor = 1.0;
  start.network.latency_s *= 1.3;
  const ParamFit f =
      refine_parameters(start, samples, {Param::NetLatency, Param::NetBeta, Param::NetOneWay}, FitWeighting::Robust);
  EXPECT_NEAR(f.topology.network.msg.one_way_factor, 0.7, 0.01);
  EXPECT_NEAR(f.topology.network.latency_s, truth.network.latency_s, 0.01 * truth.network.latency_s);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  EXPECT_EQ(field_of(Param::NetOneWay), "network.one_way_factor");
  EXPECT_EQ(to_string(Param::NetOneWay), "network.one_way_factor");
}

// --refine all: the per-message and per-call terms and the working-set curve come back from
// collectives the model generated, and the written file carries them.
TEST(RefineParameters, RecoversOverheadsAndTheWorkingSetCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.call_overhead_s = 1.5e-6;
  truth.intra.msg.message_overhead_s = 0.3e-6;
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 4);
  // Direct allgather posts several messages per round: it is what shows the message overhead.
  for (int ranks : {4, 8})
    for (Bytes b = 1024; b <= (Bytes{64} << 20); b *= 4)
      samples.push_back({Collective::AllGather, Algorithm::Direct, 1, ranks, b, 0.0});
  Topology start = truth;
  start.call_overhead_s = 0;
  start.intra.msg.message_overhead_s = 0;
  const std::vector<Param> curve = add_working_set_points(start, samples);
  ASSERT_GE(curve.size(), 4u);  // 256 KiB .. 256 MiB (allreduce 64 MiB: 128 MiB of buffers)
  truth.working_set_scale = start.working_set_scale;
  for (std::size_t i = 1; i < truth.working_set_scale.size(); ++i)
    truth.working_set_scale[i].scale = std::pow(0.9, static_cast<double>(i));  // down to 0.53: in range
  time_on(truth, samples);
  const std::vector<Param> params = with_curve(
      {Param::IntraLatency, Param::IntraBeta, Param::IntraMessageOverhead, Param::CallOverhead, Param::Gamma}, curve);
  for (FitWeighting w : {FitWeighting::Relative, FitWeighting::Robust}) {
    const ParamFit f = refine_parameters(start, samples, params, w);
    EXPECT_NEAR(f.topology.call_overhead_s, 1.5e-6, 0.02e-6);
    EXPECT_NEAR(f.topology.intra.msg.message_overhead_s, 0.3e-6, 0.01e-6);
    EXPECT_NEAR(f.topology.intra.latency_s, truth.intra.latency_s, 0.01 * truth.intra.latency_s);
    EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps, 0.01 * truth.intra.bw_Bps);
    for (std::size_t i = 1; i < truth.working_set_scale.size(); ++i)
      EXPECT_NEAR(f.topology.working_set_scale[i].scale, truth.working_set_scale[i].scale, 0.01) << i;
    EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
    const Topology back = parse_topology(topology_yaml(f.topology, {}, {}, nullptr, false), "written");
    // Written with 9 digits.
    EXPECT_NEAR(back.call_overhead_s, f.topology.call_overhead_s, 1e-8 * f.topology.call_overhead_s);
    expect_curve_written_back(f.topology, &Topology::working_set_scale, &WorkingSetScale::working_set);
  }
}

// --refine all: the local-operation curve comes back from reducing collectives generated with it
// (alongside gamma, whose value is that of batches that fit the caches), and is written out.
TEST(RefineParameters, RecoversTheLocalOperationCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 4);
  Topology start = truth;
  const std::vector<Param> curve = add_local_op_points(start, samples);
  ASSERT_GE(curve.size(), 4u);  // 64 KiB .. 64 MiB
  EXPECT_EQ(start.local_op_scale.front().bytes, Bytes{64} * 1024);
  truth.local_op_scale = start.local_op_scale;
  for (std::size_t i = 1; i < truth.local_op_scale.size(); ++i)
    truth.local_op_scale[i].scale = std::pow(0.88, static_cast<double>(i));  // down to 0.53: in range
  time_on(truth, samples);
  start.reduce_bw_Bps *= 2;
  const std::vector<Param> params = with_curve({Param::IntraLatency, Param::IntraBeta, Param::Gamma}, curve);
  const ParamFit f = refine_parameters(start, samples, params, FitWeighting::Robust);
  EXPECT_NEAR(f.topology.reduce_bw_Bps, truth.reduce_bw_Bps, 0.02 * truth.reduce_bw_Bps);
  for (std::size_t i = 1; i < truth.local_op_scale.size(); ++i)
    EXPECT_NEAR(f.topology.local_op_scale[i].scale, truth.local_op_scale[i].scale, 0.02) << i;
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  expect_curve_written_back(f.topology, &Topology::local_op_scale, &LocalOpScale::bytes);
  EXPECT_EQ(field_of(Param::LocalOp2), "local_op_scale");
  EXPECT_EQ(to_string(Param::LocalOp2), "local_op_scale[2]");
}

// --refine all: the node's working-set curve comes back from collectives generated with it, next
// to the per-rank alpha and beta: on 2, 4 and 8 ranks the same per-rank working set puts different
// amounts on the node, and the rounds where every rank moves data at once are node-bound.
TEST(RefineParameters, RecoversTheNodeWorkingSetCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 6);
  Topology start = truth;
  EXPECT_TRUE(add_node_working_set_points(start, samples).empty());  // no node bandwidth: no curve
  EXPECT_TRUE(start.node_working_set_scale.empty());
  truth.intra.node_bw_Bps = 12e9;  // 5 GB/s a rank: node-bound from three ranks at once
  start = truth;
  const std::vector<Param> curve = add_node_working_set_points(start, samples);
  // 1 MiB .. 1 GiB (8 ranks, allreduce of 64 MiB: 128 MiB of buffers a rank): 5 points after the first.
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_EQ(curve.front(), Param::NodeWorkingSet1);
  EXPECT_EQ(start.node_working_set_scale.front().working_set, Bytes{1} << 20);
  EXPECT_EQ(start.node_working_set_scale.back().working_set, Bytes{1} << 30);
  truth.node_working_set_scale = start.node_working_set_scale;
  for (std::size_t i = 1; i < truth.node_working_set_scale.size(); ++i)
    truth.node_working_set_scale[i].scale = std::pow(0.9, static_cast<double>(i));  // in range
  time_on(truth, samples);
  start.intra.bw_Bps *= 1.5;
  const std::vector<Param> params = with_curve({Param::IntraLatency, Param::IntraBeta}, curve);
  const ParamFit f = refine_parameters(start, samples, params, FitWeighting::Robust);
  EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps, 0.01 * truth.intra.bw_Bps);
  for (std::size_t i = 1; i < truth.node_working_set_scale.size(); ++i)
    EXPECT_NEAR(f.topology.node_working_set_scale[i].scale, truth.node_working_set_scale[i].scale, 0.02) << i;
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  expect_curve_written_back(f.topology, &Topology::node_working_set_scale, &WorkingSetScale::working_set);
  // Fitted where the ranks fit the node's logical CPUs, or where their number is not known.
  EXPECT_EQ(why_no_node_curve(truth, samples, 8), "");
  EXPECT_EQ(why_no_node_curve(truth, samples, 0), "");
  EXPECT_EQ(why_no_node_curve(truth, samples, 4),
            "8 ranks on a node of 4 logical CPUs take turns on its cores, which sets their shared rate, "
            "not its caches");
  EXPECT_EQ(why_no_node_curve(parse_topology(kHostTopology, "test"), samples, 8),
            "the topology has no intra_node.node_bandwidth");
  EXPECT_EQ(field_of(Param::NodeWorkingSet2), "node_working_set_scale");
  EXPECT_EQ(to_string(Param::NodeWorkingSet2), "node_working_set_scale[2]");
}

// --refine all: the message-size curve comes back from collectives generated with it (ring,
// recursive doubling and Rabenseifner move the same bytes in messages of different sizes), next to
// the intra-node alpha and beta, and is written out.
TEST(RefineParameters, RecoversTheMessageSizeCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 5);
  for (int ranks : {4, 8})
    for (Bytes b = 1024; b <= (Bytes{64} << 20); b *= 4)
      samples.push_back({Collective::AllGather, Algorithm::RecursiveDoubling, 1, ranks, b, 0.0});
  Topology start = truth;
  const std::vector<Param> curve = add_message_points(start, samples);
  ASSERT_EQ(curve.size(), 7u);  // 1 KiB .. 16 MiB, x4: the first held at 1
  EXPECT_EQ(start.message_scale.front().bytes, Bytes{1024});
  EXPECT_EQ(start.message_scale.back().bytes, Bytes{16} << 20);
  truth.message_scale = start.message_scale;
  for (std::size_t i = 1; i < truth.message_scale.size(); ++i)
    truth.message_scale[i].scale = i < 4 ? 1.0 + 0.1 * double(i) : 1.3 - 0.15 * double(i - 3);
  time_on(truth, samples);
  start.intra.bw_Bps *= 0.7;
  const std::vector<Param> params = with_curve({Param::IntraLatency, Param::IntraBeta, Param::Gamma}, curve);
  const ParamFit f = refine_parameters(start, samples, params, FitWeighting::Robust);
  EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps, 0.02 * truth.intra.bw_Bps);
  for (std::size_t i = 2; i < truth.message_scale.size(); ++i)
    EXPECT_NEAR(f.topology.message_scale[i].scale, truth.message_scale[i].scale, 0.03) << i;
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  expect_curve_written_back(f.topology, &Topology::message_scale, &MessageScale::bytes);
  EXPECT_EQ(field_of(Param::Message3), "message_scale");
  EXPECT_EQ(to_string(Param::Message7), "message_scale[7]");
}

// The network's measured curve is resampled on 4 KiB, 16 KiB, ... and its points before the last
// come back from collectives across nodes (one rank per node), with the network's latency and
// bandwidth fitted alongside.
TEST(RefineParameters, RecoversTheNetworkMessageCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.network_message_scale = {{8192, 1.2}, {65536, 2.0}, {262144, 1.4}, {Bytes{1} << 20, 0.9}, {Bytes{16} << 20, 1.0}};
  Topology start = truth;
  const std::vector<Param> curve = add_network_message_points(start);
  // 4, 16, 64, 256 KiB, 1 and 4 MiB, then the measured last point (16 MiB), which stays.
  ASSERT_EQ(curve.size(), 6u);
  ASSERT_EQ(start.network_message_scale.size(), 7u);
  EXPECT_EQ(start.network_message_scale.front().bytes, Bytes{4096});
  EXPECT_NEAR(start.network_message_scale[0].scale, 1.2, 1e-12);  // held below the first measured point
  EXPECT_NEAR(start.network_message_scale[2].scale, 2.0, 1e-12);  // 64 KiB, measured
  EXPECT_EQ(start.network_message_scale.back().bytes, Bytes{16} << 20);
  truth.network_message_scale = start.network_message_scale;
  for (std::size_t i = 0; i + 1 < truth.network_message_scale.size(); ++i)
    truth.network_message_scale[i].scale *= i % 2 ? 1.25 : 0.8;  // the collectives move otherwise
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= (Bytes{64} << 20); b *= 2)
    for (int nodes : {2, 4}) {
      samples.push_back({Collective::AllGather, Algorithm::Ring, nodes, 1, b * nodes, 0.0});
      samples.push_back({Collective::AllReduce, Algorithm::RecursiveDoubling, nodes, 1, b, 0.0});
    }
  time_on(truth, samples);
  start.network.latency_s *= 1.3;
  const std::vector<Param> params = with_curve({Param::NetLatency, Param::NetBeta}, curve);
  const ParamFit f = refine_parameters(start, samples, params, FitWeighting::Robust);
  for (std::size_t i = 0; i < truth.network_message_scale.size(); ++i)
    EXPECT_NEAR(f.topology.network_message_scale[i].scale, truth.network_message_scale[i].scale,
                0.03 * truth.network_message_scale[i].scale)
        << i;
  EXPECT_NEAR(f.topology.network.latency_s, truth.network.latency_s, 0.02 * truth.network.latency_s);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  EXPECT_EQ(field_of(Param::NetMessage2), "network_message_scale");
  EXPECT_EQ(to_string(Param::NetMessage1), "network_message_scale[0]");
  // Without a measured curve there is nothing to refit.
  Topology plain = parse_topology(kHostTopology, "test");
  EXPECT_TRUE(add_network_message_points(plain).empty());
  EXPECT_TRUE(plain.network_message_scale.empty());
}

// The one-to-many curve starts at 1 on 4 KiB, 16 KiB, ... 16 MiB, and its points before the last
// come back from direct broadcasts (the root sends to every rank at once) beside ring allgathers
// (which have no such message and pin the intra-node bandwidth), on one node of 8 ranks.
TEST(RefineParameters, RecoversTheFanOutCurve) {
  Topology truth = parse_topology(kHostTopology, "test");
  Topology start = truth;
  const std::vector<Param> curve = add_fan_out_points(start);
  ASSERT_EQ(curve.size(), 6u);
  ASSERT_EQ(start.fan_out_scale.size(), 7u);
  EXPECT_EQ(start.fan_out_scale.front().bytes, Bytes{4096});
  EXPECT_EQ(start.fan_out_scale.back().bytes, Bytes{16} << 20);
  for (const MessageScale& m : start.fan_out_scale) EXPECT_EQ(m.scale, 1.0);
  truth.fan_out_scale = start.fan_out_scale;
  const double factors[] = {1.5, 2.0, 2.0, 1.4, 1.1, 0.85, 1.0};
  for (std::size_t i = 0; i < truth.fan_out_scale.size(); ++i) truth.fan_out_scale[i].scale = factors[i];
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= (Bytes{64} << 20); b *= 2) {
    samples.push_back({Collective::Broadcast, Algorithm::Direct, 1, 8, b, 0.0});
    samples.push_back({Collective::AllGather, Algorithm::Ring, 1, 8, b * 8, 0.0});
  }
  time_on(truth, samples);
  start.intra.bw_Bps *= 0.8;
  const ParamFit f = refine_parameters(start, samples, with_curve({Param::IntraBeta}, curve), FitWeighting::Robust);
  EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps, 0.02 * truth.intra.bw_Bps);
  for (std::size_t i = 0; i + 1 < truth.fan_out_scale.size(); ++i)
    EXPECT_NEAR(f.topology.fan_out_scale[i].scale, factors[i], 0.03 * factors[i]) << i;
  EXPECT_EQ(f.topology.fan_out_scale.back().scale, 1.0);  // held
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  expect_curve_written_back(f.topology, &Topology::fan_out_scale, &MessageScale::bytes);
  EXPECT_EQ(field_of(Param::FanOut2), "fan_out_scale");
  EXPECT_EQ(to_string(Param::FanOut1), "fan_out_scale[0]");
  // A topology that has the curve keeps it: a refit starts from its points.
  Topology again = f.topology;
  EXPECT_EQ(add_fan_out_points(again).size(), 6u);
  EXPECT_NEAR(again.fan_out_scale[1].scale, f.topology.fan_out_scale[1].scale, 1e-12);
}

// A fitted value at the end of its range is flagged: the measurements did not pin it down.
TEST(RefineParameters, SaysWhichTermsEndAtTheirLimit) {
  // A fit that has to absorb more than its terms can: the data say one-way messages are 20 times
  // dearer, the factor stops at its bound (2x where it started) and is flagged.
  Topology truth = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= 16 * 1024; b *= 2)
    for (int nodes : {2, 4}) {
      samples.push_back({Collective::Broadcast, Algorithm::Binomial, nodes, 1, b, 0.0});
      samples.push_back({Collective::AllReduce, Algorithm::RecursiveDoubling, nodes, 1, b, 0.0});
    }
  time_on(truth, samples);
  for (CollectiveSample& x : samples)
    if (x.collective == Collective::Broadcast) x.time_s *= 20;
  const ParamFit f = refine_parameters(truth, samples, {Param::NetLatency, Param::NetOneWay}, FitWeighting::Robust);
  const double one_way = get_param(f.topology, Param::NetOneWay);
  EXPECT_TRUE(at_range_end(f.range.at(Param::NetOneWay), one_way)) << one_way;
  EXPECT_DOUBLE_EQ(one_way, 2 * get_param(truth, Param::NetOneWay));
}

// The inline regime's latency and overhead come back from collectives whose messages are that small
// (direct and ring allgather of a few KiB on 8 ranks), with the other terms fitted alongside.
TEST(RefineParameters, RecoversTheInlineLatencyAndOverhead) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.intra.msg.eager_limit_bytes = 4096;
  truth.intra.msg.rendezvous_latency_s = 3e-6;
  truth.intra.msg.message_overhead_s = 0.4e-6;
  truth.intra.msg.inline_limit_bytes = 256;
  truth.intra.msg.inline_latency_s = 0.35e-6;
  truth.intra.msg.inline_overhead_s = 0.08e-6;
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 5);
  for (Algorithm a : {Algorithm::Direct, Algorithm::Ring, Algorithm::RecursiveDoubling})
    for (Bytes b = 256; b <= 64 * 1024; b *= 2)
      for (int ranks : {4, 8}) samples.push_back({Collective::AllGather, a, 1, ranks, b, 0.0});
  time_on(truth, samples);
  Topology start = truth;
  start.intra.msg.inline_latency_s = 1e-6;
  start.intra.msg.inline_overhead_s.reset();  // starts at message_overhead
  const ParamFit f = refine_parameters(start, samples,
                                       {Param::IntraLatency, Param::IntraMessageOverhead, Param::IntraInlineLatency,
                                        Param::IntraInlineOverhead, Param::IntraBeta},
                                       FitWeighting::Robust);
  EXPECT_NEAR(f.topology.intra.msg.inline_latency_s, 0.35e-6, 0.02e-6);
  ASSERT_TRUE(f.topology.intra.msg.inline_overhead_s.has_value());
  EXPECT_NEAR(*f.topology.intra.msg.inline_overhead_s, 0.08e-6, 0.01e-6);
  EXPECT_NEAR(f.topology.intra.latency_s, truth.intra.latency_s, 0.02 * truth.intra.latency_s);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  EXPECT_EQ(field_of(Param::IntraInlineLatency), "intra_node.inline_latency");
  EXPECT_EQ(to_string(Param::IntraInlineOverhead), "intra.inline_overhead");
  // A topology without an inline limit ignores the parameter.
  Topology plain = parse_topology(kHostTopology, "test");
  set_param(plain, Param::IntraInlineLatency, 5e-6);
  EXPECT_EQ(plain.intra.msg.inline_latency_s, 0.0);
}

// Times `samples` on a host topology whose intra-node latency factor `factor` is `value`, then
// refits from that factor at 1 and the latency off by `latency_off`: both must come back.
void expect_latency_factor_recovered(double MessageCosts::*factor, Param param, double value,
                                     std::vector<CollectiveSample> samples, double latency_off) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.intra.msg.*factor = value;
  time_on(truth, samples);
  Topology start = truth;
  start.intra.msg.*factor = 1.0;
  start.intra.latency_s *= latency_off;
  const ParamFit f =
      refine_parameters(start, samples, {Param::IntraLatency, Param::IntraBeta, param}, FitWeighting::Robust);
  EXPECT_NEAR(f.topology.intra.msg.*factor, value, 0.01) << to_string(param);
  EXPECT_NEAR(f.topology.intra.latency_s, truth.intra.latency_s, 0.01 * truth.intra.latency_s);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
}

// The factor on one-way latencies comes back from broadcasts and reduces (binomial trees, one-way)
// measured beside allreduces and allgathers (exchanges), with the latency fitted alongside.
TEST(RefineParameters, RecoversTheOneWayFactor) {
  std::vector<CollectiveSample> samples = collective_data(parse_topology(kHostTopology, "test"), 0.0, 5);
  for (Collective c : {Collective::Broadcast, Collective::Reduce})
    for (Bytes b = 1024; b <= 256 * 1024; b *= 4)
      for (int ranks : {4, 8}) samples.push_back({c, Algorithm::Binomial, 1, ranks, b, 0.0});
  expect_latency_factor_recovered(&MessageCosts::one_way_factor, Param::IntraOneWay, 0.7, samples, 1.3);
  EXPECT_EQ(field_of(Param::IntraOneWay), "intra_node.one_way_factor");
  EXPECT_EQ(to_string(Param::IntraOneWay), "intra.one_way_factor");
}

// The factor on exchange latencies comes back from recursive doubling and halving (exchanges in
// every step) measured beside rings (shifts), with the latency fitted alongside.
TEST(RefineParameters, RecoversTheExchangeFactor) {
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= 256 * 1024; b *= 4)
    for (int ranks : {4, 8}) {
      samples.push_back({Collective::AllGather, Algorithm::Ring, 1, ranks, b, 0.0});
      samples.push_back({Collective::AllGather, Algorithm::RecursiveDoubling, 1, ranks, b, 0.0});
      samples.push_back({Collective::ReduceScatter, Algorithm::RecursiveHalving, 1, ranks, b, 0.0});
      samples.push_back({Collective::AllGather, Algorithm::Bruck, 1, ranks, b, 0.0});
    }
  expect_latency_factor_recovered(&MessageCosts::exchange_factor, Param::IntraExchange, 1.2, samples, 0.8);
  EXPECT_EQ(field_of(Param::IntraExchange), "intra_node.exchange_factor");
  EXPECT_EQ(to_string(Param::IntraExchange), "intra.exchange_factor");
}

// The share of the message overheads paid by receivers comes back from priced schedules (the
// closed forms do not see it): tree broadcasts, whose ranks send to two children that receive
// only from them, beside direct allgathers, where every rank sends and receives p - 1 messages.
TEST(RefineParameters, RecoversTheOverheadReceiveShare) {
  const SamplePredictor priced = [](const Topology& t, const CollectiveSample& s) {
    const int p = s.nodes * s.ranks_per_node;
    const Schedule sched = make_schedule({s.collective, s.algorithm, p, s.bytes / 4, 4, 0, nullptr, 0});
    return price_schedule(sched, t, Placement::uniform(s.nodes, s.ranks_per_node)).time_s;
  };
  Topology truth = parse_topology(kHostTopology, "test");
  truth.intra.msg.message_overhead_s = 0.6e-6;
  truth.intra.msg.overhead_receive_share = 0.8;
  std::vector<CollectiveSample> samples;
  for (Bytes b = 1024; b <= 64 * 1024; b *= 4)
    for (int ranks : {4, 8}) {
      samples.push_back({Collective::Broadcast, Algorithm::Tree, 1, ranks, b, 0.0});
      samples.push_back({Collective::AllGather, Algorithm::Direct, 1, ranks, b, 0.0});
      samples.push_back({Collective::AllGather, Algorithm::Ring, 1, ranks, b, 0.0});
    }
  for (CollectiveSample& x : samples) x.time_s = priced(truth, x);
  Topology start = truth;
  start.intra.msg.overhead_receive_share = 0;
  start.intra.msg.message_overhead_s = 1e-6;
  const ParamFit f = refine_parameters(
      start, samples, {Param::IntraLatency, Param::IntraMessageOverhead, Param::IntraReceiveShare},
      FitWeighting::Robust, priced);
  EXPECT_NEAR(f.topology.intra.msg.overhead_receive_share, 0.8, 0.02);
  EXPECT_NEAR(f.topology.intra.msg.message_overhead_s, 0.6e-6, 0.01e-6);
  EXPECT_LT(f.median_abs_rel_error_after, 1e-3);
  EXPECT_EQ(field_of(Param::IntraReceiveShare), "intra_node.overhead_receive_share");
  EXPECT_EQ(to_string(Param::IntraReceiveShare), "intra.overhead_receive_share");
  // The fit keeps the share inside [0, 1].
  Topology t = truth;
  set_param(t, Param::IntraReceiveShare, 1.7);
  EXPECT_EQ(t.intra.msg.overhead_receive_share, 1.0);
  // A share at 1, the end of its range, is still fitted (its derivative taken below 1), not
  // dropped as if no measurement depended on it.
  truth.intra.msg.overhead_receive_share = 1.0;
  for (CollectiveSample& x : samples) x.time_s = priced(truth, x);
  Topology at_one = start;
  at_one.intra.msg.overhead_receive_share = 1.0;
  const ParamFit at_end = refine_parameters(
      at_one, samples, {Param::IntraLatency, Param::IntraMessageOverhead, Param::IntraReceiveShare},
      FitWeighting::Robust, priced);
  EXPECT_NEAR(at_end.topology.intra.msg.overhead_receive_share, 1.0, 0.02);
  EXPECT_NE(std::find(at_end.fitted.begin(), at_end.fitted.end(), Param::IntraReceiveShare), at_end.fitted.end());
  EXPECT_EQ(std::find(at_end.held.begin(), at_end.held.end(), Param::IntraReceiveShare), at_end.held.end());
}

TEST(ParamText, ValuesWithTheirUnits) {
  EXPECT_EQ(param_text(Param::IntraLatency, 1.5e-6), "1.5 us");
  EXPECT_EQ(param_text(Param::IntraMessageOverhead, 0.25e-6), "0.25 us");
  EXPECT_EQ(param_text(Param::IntraBeta, 1e-10), "10 GB/s");  // 1 / beta
  EXPECT_EQ(param_text(Param::Gamma, 0.0), "unlimited");
  EXPECT_EQ(param_text(Param::IntraOneWay, 0.75), "0.75");
  EXPECT_EQ(param_text(Param::IntraReceiveShare, 1.0), "1");
}

// Robust weighting: a few points far off the model do not move the fit; least squares does move.
TEST(RefineParameters, RobustWeightingIgnoresAFewOutliers) {
  Topology truth = parse_topology(kHostTopology, "test");
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 5);
  for (std::size_t i = 0; i < samples.size(); i += 10) samples[i].time_s *= 3.0;  // one point in ten, 3x slower
  Topology start = truth;
  start.intra.bw_Bps = 0.8 * truth.intra.bw_Bps;
  const ParamFit robust = refine_parameters(start, samples, {Param::IntraBeta}, FitWeighting::Robust);
  const ParamFit plain = refine_parameters(start, samples, {Param::IntraBeta}, FitWeighting::Relative);
  const double robust_off = std::fabs(robust.topology.intra.bw_Bps / truth.intra.bw_Bps - 1);
  const double plain_off = std::fabs(plain.topology.intra.bw_Bps / truth.intra.bw_Bps - 1);
  EXPECT_LT(robust_off, 0.005);
  EXPECT_GT(plain_off, 0.02);
  EXPECT_LT(robust.median_abs_rel_error_after, 0.01);
}

// The fit fits whatever predicts the samples: here a model 1.25x as slow as the closed forms, so
// the latency, 1/bandwidth and 1/gamma that reproduce the data are the truth's / 1.25 (within the
// fit's ranges).
TEST(RefineParameters, FitsThePredictorItIsGiven) {
  const Topology truth = parse_topology(kHostTopology, "test");
  const SamplePredictor slower = [](const Topology& t, const CollectiveSample& s) {
    return 1.25 * predict_closed_form(t, s);
  };
  const ParamFit f = refine_parameters(truth, collective_data(truth, 0.0, 6),
                                       {Param::IntraLatency, Param::IntraBeta, Param::Gamma, Param::MemoryBeta},
                                       FitWeighting::Relative, slower);
  EXPECT_NEAR(f.topology.intra.latency_s, truth.intra.latency_s / 1.25, 0.01 * truth.intra.latency_s);
  EXPECT_NEAR(f.topology.intra.bw_Bps, truth.intra.bw_Bps * 1.25, 0.01 * truth.intra.bw_Bps);
  EXPECT_NEAR(f.topology.reduce_bw_Bps, truth.reduce_bw_Bps * 1.25, 0.01 * truth.reduce_bw_Bps);
  EXPECT_NEAR(f.topology.memory_bw_Bps, truth.memory_bw_Bps * 1.25, 0.01 * truth.memory_bw_Bps);  // the copies
  EXPECT_GT(f.median_abs_rel_error_before, 0.2);  // 1.25x the measured time: +25%
  EXPECT_LT(f.median_abs_rel_error_after, 1e-4);
}

// The collective fit's held-out check fits on every other size and the largest and judges the
// sizes between: never a size past those it fitted on, with even and odd counts of sizes.
TEST(HeldOutSplit, KeepsTheLargestSizeInTheFitAndTestsOnlySizesBetween) {
  for (int count : {2, 3, 8, 9}) {
    std::vector<CollectiveSample> samples;
    // Sizes given out of order, two algorithms each.
    for (int i = count - 1; i >= 0; --i)
      for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling})
        samples.push_back({Collective::AllReduce, a, 1, 4, Bytes{1024} << (2 * i), 1e-5});
    const HeldOutSplit split = split_held_out(samples);
    std::set<Bytes> train, test;
    for (const auto& s : split.train) train.insert(s.bytes);
    for (const auto& s : split.test) test.insert(s.bytes);
    SCOPED_TRACE(count);
    EXPECT_EQ(split.train.size() + split.test.size(), samples.size());
    EXPECT_EQ(train.size() + test.size(), static_cast<std::size_t>(count));  // a size is on one side only
    const Bytes largest = Bytes{1024} << (2 * (count - 1));
    EXPECT_TRUE(train.count(1024) && train.count(largest));
    EXPECT_EQ(test.size(), static_cast<std::size_t>((count - 1) / 2));
    for (Bytes b : test) {
      EXPECT_GT(b, *train.begin());
      EXPECT_LT(b, *train.rbegin());
      EXPECT_TRUE(train.count(b / 4) && (train.count(b * 4)));  // its neighbours were fitted on
    }
  }
}

// Several threads compute the fit's derivatives and predictions: the fit is the same, to the
// last bit, as with one; an error a prediction throws on any thread reaches the caller.
TEST(RefineParameters, ThreadsGiveTheSameFitAndPassErrorsOn) {
  Topology truth = parse_topology(kHostTopology, "test");
  truth.call_overhead_s = 1.5e-6;
  std::vector<CollectiveSample> samples = collective_data(truth, 0.0, 4);
  Topology start = truth;
  start.call_overhead_s = 0;
  start.intra.latency_s *= 1.5;
  const std::vector<Param> curve = add_message_points(start, samples);
  time_on(truth, samples);
  const std::vector<Param> params =
      with_curve({Param::IntraLatency, Param::IntraBeta, Param::CallOverhead, Param::Gamma}, curve);
  const ParamFit one = refine_parameters(start, samples, params, FitWeighting::Robust, predict_closed_form, 1);
  for (int threads : {2, 3, 8}) {
    SCOPED_TRACE(threads);
    const ParamFit many = refine_parameters(start, samples, params, FitWeighting::Robust, predict_closed_form, threads);
    EXPECT_EQ(many.iterations, one.iterations);
    ASSERT_EQ(many.fitted.size(), one.fitted.size());
    for (Param p : params) EXPECT_EQ(get_param(many.topology, p), get_param(one.topology, p)) << to_string(p);
    EXPECT_EQ(many.rel_error, one.rel_error);
  }
  EXPECT_LT(one.median_abs_rel_error_after, 1e-3);  // and the fit is a fit
  // A prediction that throws for one sample, whichever thread prices it.
  const Bytes bad = samples[samples.size() / 2].bytes;
  const SamplePredictor throws = [bad](const Topology& t, const CollectiveSample& s) {
    if (s.bytes == bad && t.call_overhead_s > 0) throw Error("cannot price this sample");
    return predict_closed_form(t, s);
  };
  try {
    refine_parameters(start, samples, params, FitWeighting::Robust, throws, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cannot price this sample");
  }
}

// A term the fit moves to where no sample depends on it any more is reported as fitted, at that
// value, and one no sample ever depended on as held. Here a share binds only above 0.5: the first
// step takes it to 0.2 (the linearised fit's answer), where it is flat, while the latency goes on
// being fitted.
TEST(RefineParameters, ReportsATermMovedToWhereNoSampleDependsOnItAsFitted) {
  const SamplePredictor predict = [](const Topology& t, const CollectiveSample& s) {
    return t.intra.latency_s * static_cast<double>(s.key) + 1e-3 * std::max(t.intra.send_share - 0.5, 0.0);
  };
  std::vector<CollectiveSample> samples;
  for (std::size_t k = 1; k <= 8; ++k)
    samples.push_back({Collective::Broadcast, Algorithm::Direct, 1, 8, 1024 * k, 1e-3 * k - 0.3e-3, k});
  Topology start = parse_topology(kHostTopology, "test");
  start.intra.latency_s = 2e-3;
  start.intra.send_share = 1;
  const ParamFit f = refine_parameters(start, samples, {Param::IntraSendShare, Param::IntraLatency, Param::NetOneWay},
                                       FitWeighting::Robust, predict);
  EXPECT_GT(f.iterations, 1);
  EXPECT_LT(f.topology.intra.send_share, 0.5);
  EXPECT_EQ(f.fitted, (std::vector<Param>{Param::IntraLatency, Param::IntraSendShare}));
  EXPECT_EQ(f.held, std::vector<Param>{Param::NetOneWay});
}

// A ring shift of 16 ranks on a 16-core machine (medians, us, 8 B .. 64 MiB): the steps at 256 B
// and 2 KiB are there but too blurred to keep from the probe alone; the fit still names where they
// would be, so that a collective fit can decide their latencies.
TEST(FitProtocol, NamesTheStepsItDoesNotKeep) {
  const ProtocolFit f = fit_protocol(doubling_series({0.58, 0.67, 0.76, 0.99, 1.20, 1.02, 1.43, 1.41, 1.96, 4.03,
                                                      5.15, 6.91, 12.31, 21.72, 36.40, 66.79, 130.20, 304.12, 669.19,
                                                      1340.42, 2796.26, 7390.00, 16065.19, 31435.82}));
  EXPECT_FALSE(f.switched);
  EXPECT_EQ(f.candidate_eager_bytes, 2048u);
  EXPECT_EQ(f.candidate_inline_bytes, 256u);
  // Where the steps are kept, the candidates are the kept limits.
  std::vector<TimedSize> clear;
  for (Bytes x = 8; x <= (Bytes{1} << 22); x *= 2)
    clear.push_back({x, (x <= 256 ? 0.5e-6 : x <= 4096 ? 1.0e-6 : 3.0e-6) + static_cast<double>(x) / 10e9});
  const ProtocolFit k = fit_protocol(clear);
  ASSERT_TRUE(k.switched && k.inlined);
  EXPECT_EQ(k.candidate_eager_bytes, k.eager_limit_bytes);
  EXPECT_EQ(k.candidate_inline_bytes, k.inline_limit_bytes);
  EXPECT_EQ(k.eager_limit_bytes, 4096u);
  EXPECT_EQ(k.inline_limit_bytes, 256u);
  EXPECT_EQ(k.other_inline_bytes, 0u);  // no third step
}

// A ring shift of 16 ranks on the 16-core machine (medians, us, 8 B .. 64 MiB) with two steps below
// the eager limit (2 KiB): Open MPI's shared memory has a fast path for the smallest messages
// (to 32 B here) and inline sends (to 256 B). The larger jump is kept as the inline step; the other
// is named with its own latencies, for the collectives to choose between (`calibrate --refine all`).
TEST(FitProtocol, NamesTheOtherStepBelowTheEagerLimit) {
  const ProtocolFit f = fit_protocol(doubling_series({0.61, 0.61, 0.64, 1.04, 0.88, 1.00, 1.36, 1.59, 2.13, 4.32,
                                                      6.07, 8.63, 14.16, 21.59, 37.06, 69.50, 173.07, 404.17, 814.13,
                                                      1683.33, 3788.91, 8529.15, 19334.32, 31121.31}));
  ASSERT_TRUE(f.switched && f.inlined);
  EXPECT_EQ(f.eager_limit_bytes, 2048u);
  EXPECT_EQ(f.inline_limit_bytes, 32u);
  EXPECT_EQ(f.other_inline_bytes, 256u);
  EXPECT_GE(f.other_latency_s, 1.3 * f.other_inline_latency_s);
  EXPECT_GE(f.other_rendezvous_latency_s, 1.5 * f.other_latency_s);
  EXPECT_NEAR(f.other_inline_latency_s, 0.8e-6, 0.15e-6);  // 8 B .. 256 B
  EXPECT_NEAR(f.other_latency_s, 1.5e-6, 0.4e-6);          // 512 B .. 2 KiB
}

// ---- NCCL's constants ----------------------------------------------------------------------

// NCCL's model with known constants (the "truth") per algorithm x protocol.
Topology nccl_truth() {
  Topology t = load_topology(resolve_topology_path("h200-node"));
  const double base[2][3] = {{4e-6, 9e-6, 12e-6}, {5e-6, 11e-6, 15e-6}};
  const double hop[2][3] = {{0.9e-6, 1.5e-6, 2.5e-6}, {0.7e-6, 1.2e-6, 3e-6}};
  const double bw[2][3] = {{60e9, 300e9, 340e9}, {45e9, 250e9, 320e9}};
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) {
      t.nccl.base_latency_s[a][p] = base[a][p];
      t.nccl.intra_hop_latency_s[a][p] = hop[a][p];
      t.nccl.bus_bw_Bps[a][p] = bw[a][p];
    }
  return t;
}

// Forced runs generated by NCCL's model on `truth`, with `noise` (relative, normal).
std::vector<NcclSample> nccl_samples(const Topology& truth, const std::vector<int>& ranks, bool all_collectives,
                                     double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<NcclSample> out;
  for (int r : ranks)
    for (Algorithm a : {Algorithm::NcclRing, Algorithm::NcclTree})
      for (Protocol p : kNcclProtocols)
        for (Collective c :
             {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast}) {
          if (c != Collective::AllReduce && (a == Algorithm::NcclTree || !all_collectives)) continue;
          for (Bytes b = 8; b <= (Bytes{256} << 20); b *= 4) {
            const double t = closed_form(truth, {c, a, p, 1, r, b}).time_s;
            out.push_back({c, a, p, 1, r, b, t * (1.0 + n(rng))});
          }
        }
  return out;
}

TEST(FitNccl, RecoversBaseHopAndBandwidthFromForcedRuns) {
  const Topology truth = nccl_truth();
  const Topology start = load_topology(resolve_topology_path("h200-node"));
  for (unsigned seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    const NcclFit f = fit_nccl(start, nccl_samples(truth, {2, 4, 8}, true, 0.03, seed));
    ASSERT_EQ(f.terms.size(), 6u);
    EXPECT_EQ(f.multi_node, 0u);
    for (const NcclTermFit& t : f.terms) {
      SCOPED_TRACE(std::string(to_string(t.algorithm)) + "/" + std::string(to_string(t.protocol)));
      const int a = t.algorithm == Algorithm::NcclTree ? kNcclTableTree : kNcclTableRing;
      const int p = t.protocol == Protocol::LL ? 0 : t.protocol == Protocol::LL128 ? 1 : 2;
      ASSERT_TRUE(t.done) << t.why_not;
      EXPECT_TRUE(t.hop_fitted);
      EXPECT_NEAR(t.base_latency_s, truth.nccl.base_latency_s[a][p], 0.1 * truth.nccl.base_latency_s[a][p]);
      EXPECT_NEAR(t.intra_hop_latency_s, truth.nccl.intra_hop_latency_s[a][p],
                  0.2 * truth.nccl.intra_hop_latency_s[a][p]);
      EXPECT_NEAR(t.bus_bw_Bps, truth.nccl.bus_bw_Bps[a][p], 0.05 * truth.nccl.bus_bw_Bps[a][p]);
      EXPECT_EQ(f.topology.nccl.bus_bw_Bps[a][p], t.bus_bw_Bps);
      EXPECT_GT(t.r2, 0.99);
      EXPECT_LT(t.median_abs_rel_residual, 0.04);
      EXPECT_GT(t.median_abs_rel_error_before, 0.05);  // the preset's constants are not these
      ASSERT_TRUE(t.held_out_done);
      EXPECT_GT(t.held_out, 0u);
      EXPECT_LT(t.held_out_median_abs_rel_error, 0.05);
      EXPECT_EQ(t.ranks, (std::vector<int>{2, 4, 8}));
      EXPECT_EQ(t.min_bytes, 8u);
      EXPECT_EQ(t.max_bytes, Bytes{128} << 20);  // 8 B x 4^12
    }
  }
}

// Two ranks, allreduce only: one hop count, so the hop latency stays the topology's and the base
// latency takes up the difference; the fit still predicts the runs.
TEST(FitNccl, OneHopCountHoldsTheHopLatency) {
  const Topology truth = nccl_truth();
  const Topology start = load_topology(resolve_topology_path("h200-node"));
  const std::vector<NcclSample> samples = nccl_samples(truth, {2}, false, 0.02, 7);
  const NcclFit f = fit_nccl(start, samples);
  ASSERT_EQ(f.terms.size(), 6u);
  for (const NcclTermFit& t : f.terms) {
    SCOPED_TRACE(std::string(to_string(t.algorithm)) + "/" + std::string(to_string(t.protocol)));
    const int a = t.algorithm == Algorithm::NcclTree ? kNcclTableTree : kNcclTableRing;
    const int p = t.protocol == Protocol::LL ? 0 : t.protocol == Protocol::LL128 ? 1 : 2;
    ASSERT_TRUE(t.done);
    EXPECT_FALSE(t.hop_fitted);
    EXPECT_EQ(t.intra_hop_latency_s, start.nccl.intra_hop_latency_s[a][p]);
    // Two hops at two ranks (ring allreduce: 2(p-1) steps; tree: 2(p-1) hops).
    const double expected_base = truth.nccl.base_latency_s[a][p] +
                                 2 * (truth.nccl.intra_hop_latency_s[a][p] - start.nccl.intra_hop_latency_s[a][p]);
    EXPECT_NEAR(t.base_latency_s, expected_base, 0.1 * truth.nccl.base_latency_s[a][p]);
    EXPECT_NEAR(t.bus_bw_Bps, truth.nccl.bus_bw_Bps[a][p], 0.05 * truth.nccl.bus_bw_Bps[a][p]);
    EXPECT_LT(t.held_out_median_abs_rel_error, 0.05);
  }
  // The written constants predict the runs as the fit said.
  std::vector<double> rel;
  for (const NcclSample& s : samples)
    rel.push_back((closed_form(f.topology, {s.collective, s.algorithm, s.protocol, 1, 2, s.bytes}).time_s - s.time_s) /
                  s.time_s);
  EXPECT_LT(median_abs(rel), 0.03);
}

// A time that does not grow with the size: no bandwidth term is seen, so bus_bandwidth stays unset
// (the intra-node bandwidth x bw_fraction) and the base latency takes the time.
TEST(FitNccl, NoBandwidthVisibleLeavesItUnset) {
  const Topology start = load_topology(resolve_topology_path("h200-node"));
  std::vector<NcclSample> samples;
  for (Bytes b = 8; b <= 4096; b *= 2)
    samples.push_back({Collective::AllReduce, Algorithm::NcclRing, Protocol::LL, 1, 2, b, 10e-6});
  const NcclFit f = fit_nccl(start, samples);
  ASSERT_EQ(f.terms.size(), 1u);
  const NcclTermFit& t = f.terms[0];
  ASSERT_TRUE(t.done);
  EXPECT_TRUE(t.bw_clamped);
  EXPECT_EQ(t.bus_bw_Bps, 0.0);
  EXPECT_EQ(f.topology.nccl.bus_bw_Bps[kNcclTableRing][0], 0.0);
  const double hops = 2 * start.nccl.intra_hop_latency_s[kNcclTableRing][0];
  EXPECT_NEAR(t.base_latency_s, 10e-6 - hops - start.call_overhead_s, 0.02e-6);
}

TEST(FitNccl, NeedsForcedRunsInsideOneNode) {
  const Topology start = load_topology(resolve_topology_path("h200-node"));
  const std::vector<NcclSample> none = {
      {Collective::AllReduce, Algorithm::NcclRing, Protocol::None, 1, 2, 1024, 10e-6},  // protocol not forced
      {Collective::AllReduce, Algorithm::NcclRing, Protocol::LL, 1, 1, 1024, 10e-6},    // one rank
      {Collective::AllReduce, Algorithm::Nccl, Protocol::LL, 1, 2, 1024, 10e-6},        // NCCL's choice
  };
  try {
    fit_nccl(start, none);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nccl-ring and nccl-tree"), std::string::npos) << e.what();
  }
  // Too few sizes: the term is reported, not fitted.
  const NcclFit f =
      fit_nccl(start, {{Collective::AllReduce, Algorithm::NcclTree, Protocol::Simple, 1, 2, 1024, 10e-6}});
  ASSERT_EQ(f.terms.size(), 1u);
  EXPECT_FALSE(f.terms[0].done);
  EXPECT_NE(f.terms[0].why_not.find("two sizes"), std::string::npos);
}

TEST(FitNccl, WrittenTopologyReadsBackWithItsComments) {
  const Topology truth = nccl_truth();
  const Topology start = load_topology(resolve_topology_path("h200-node"));
  const NcclFit f = fit_nccl(start, nccl_samples(truth, {2, 4}, true, 0.01, 3));
  const std::string text =
      topology_yaml(f.topology, {}, {{"nccl.bus_bandwidth.ring", "fitted from run.h5: nccl-ring x LL, LL128, Simple"}},
                    nullptr, false);
  EXPECT_NE(text.find("bus_bandwidth:"), std::string::npos) << text;
  EXPECT_NE(text.find("# fitted from run.h5: nccl-ring x LL, LL128, Simple"), std::string::npos) << text;
  const Topology back = parse_topology(text, "written");
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) {
      EXPECT_NEAR(back.nccl.bus_bw_Bps[a][p], f.topology.nccl.bus_bw_Bps[a][p],
                  1e-6 * f.topology.nccl.bus_bw_Bps[a][p]);
      EXPECT_NEAR(back.nccl.base_latency_s[a][p], f.topology.nccl.base_latency_s[a][p], 1e-12);
    }
  for (Protocol p : kNcclProtocols) {
    CostQuery q{Collective::AllGather, Algorithm::NcclRing, p, 1, 4, Bytes{1} << 24};
    EXPECT_NEAR(closed_form(back, q).time_s, closed_form(f.topology, q).time_s,
                1e-6 * closed_form(f.topology, q).time_s);
  }
  // A preset without fitted bandwidths writes none (the tiers stand).
  EXPECT_EQ(topology_yaml(start, {}, {}, nullptr, false).find("bus_bandwidth"), std::string::npos);
}

// nccl.bus_bandwidth sets NCCL's bandwidth inside a node; across nodes the network still caps it.
// Without fitted constants nccl-ring follows NCCL's ported model; the two-algorithm model it was
// fitted to prices our ring with the protocol (the same formula) from the tiers, the reference here.
TEST(FitNccl, BusBandwidthInsideANodeTheNetworkCapsItAcross) {
  const Topology preset = load_topology(resolve_topology_path("dgx-h100"));
  Topology fast = preset;
  fast.nccl.bus_bw_Bps[kNcclTableRing][2] = 2 * preset.intra.bw_Bps;  // ring / Simple
  const Bytes b = Bytes{1} << 30;
  const CostQuery one{Collective::AllGather, Algorithm::NcclRing, Protocol::Simple, 1, 8, b};
  const CostQuery one_tiers{Collective::AllGather, Algorithm::Ring, Protocol::Simple, 1, 8, b};
  const Cost slow1 = closed_form(preset, one_tiers), fast1 = closed_form(fast, one);
  EXPECT_NEAR(fast1.bandwidth_s, slow1.bandwidth_s / 2, 1e-9 * slow1.bandwidth_s);
  EXPECT_EQ(fast1.latency_s, slow1.latency_s);
  // Across nodes: the node's network bandwidth, as if the NVLink bandwidth were unlimited.
  Topology wide = preset;
  wide.intra.bw_Bps *= 100;
  fast.nccl.bus_bw_Bps[kNcclTableRing][2] = 100 * preset.intra.bw_Bps;
  const CostQuery four{Collective::AllGather, Algorithm::NcclRing, Protocol::Simple, 4, 8, b};
  const CostQuery four_tiers{Collective::AllGather, Algorithm::Ring, Protocol::Simple, 4, 8, b};
  EXPECT_NEAR(closed_form(fast, four).bandwidth_s, closed_form(wide, four_tiers).bandwidth_s,
              1e-9 * closed_form(wide, four_tiers).bandwidth_s);
  EXPECT_LT(closed_form(fast, four).bandwidth_s, closed_form(preset, four_tiers).bandwidth_s);
  // Other protocols and the tree keep the tiers' bandwidth.
  const CostQuery ll{Collective::AllReduce, Algorithm::Tree, Protocol::Simple, 1, 8, b};
  EXPECT_DOUBLE_EQ(closed_form(fast, ll).time_s, closed_form(preset, ll).time_s);
}

TEST(FitNccl, BusBandwidthIsCheckedWhenRead) {
  const std::string bad = R"(
name: t
gpus_per_node: 2
device: { name: G, memory_bandwidth: 1 TB/s }
intra_node: { fabric: nvswitch, bandwidth: 100 GB/s, latency: 1 us }
host_link: { bandwidth: 64 GB/s, latency: 1 us }
network: { kind: none }
nccl:
  base_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 us, Simple: 1 us } }
  intra_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 us, Simple: 1 us } }
  inter_hop_latency: { ring: { LL: 1 us, LL128: 1 us, Simple: 1 us }, tree: { LL: 1 us, LL128: 1 us, Simple: 1 us } }
  bus_bandwidth: { ring: { LL: fast } }
)";
  try {
    parse_topology(bad, "bad.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nccl.bus_bandwidth.ring.LL"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commsim
