// The host's launch cost per call, the fitted bandwidth share and latency offset in NCCL's ported
// model (model/nccl/from_topology.h, model/cost/nccl_tuned.cc), and their fit to NCCL runs alone
// (model/calibrate/nccl_fit.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/calibrate/nccl_fit.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/nccl/from_topology.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

// The DGX H100 preset (NCCL 2.28.9) with its `nccl:` machine fields changed by `set`.
template <class F>
Topology dgx(F set) {
  Topology t = load_topology(resolve_topology_path("dgx-h100"));
  t.nccl.machine.version = "2.28.9";
  set(t.nccl.machine);
  return t;
}
Topology dgx() {
  return dgx([](NcclMachine&) {});
}
Topology dgx_threads(int gpus, bool graphs = false) {
  return dgx([&](NcclMachine& m) {
    m.gpus_per_thread = gpus;
    m.cuda_graphs = graphs;
  });
}
Topology dgx_fit(double scale, Seconds offset_s) {
  return dgx([&](NcclMachine& m) {
    m.bandwidth_scale = scale;
    m.latency_offset_s = offset_s;
  });
}

// A minimal GPU topology with `nccl` as its `nccl:` section (for the reader's checks).
Topology minimal(const std::string& nccl) {
  return parse_topology(
      "name: t\ngpus_per_node: 8\ndevice: { name: \"NVIDIA H100 80GB HBM3\", memory_bandwidth: 3 TB/s }\n"
      "intra_node: { fabric: nvswitch, bandwidth: 370 GB/s, latency: 2 us }\n"
      "host_link: { bandwidth: 64 GB/s, latency: 1 us }\n"
      "network: { kind: infiniband, nics_per_node: 8, nic_bandwidth: 50 GB/s, latency: 5 us }\nnccl:\n" +
          nccl,
      "t.yaml");
}

double time_us(const Topology& t, Bytes bytes, int nodes = 1, int ranks_per_node = 4) {
  return closed_form(t, {Collective::AllReduce, Algorithm::Nccl, Protocol::None, nodes, ranks_per_node, bytes}).time_s *
         1e6;
}

TEST(NcclLaunch, OneThreadDrivingSeveralGpusFloorsTheCall) {
  // NCCL 2.28.9 on 4 GPUs of one NVSwitch node: ring LL, 6.6 us base + 6 NVLink hops of 0.6 us
  // (tuning.cc) = 10.2 us, above one GPU's launch (5 us): the host does not show.
  EXPECT_NEAR(time_us(dgx(), 8), 10.2, 0.01);
  // nccl-tests -g 4: one thread launches on 4 GPUs per call, 4 x 5 us.
  EXPECT_NEAR(time_us(dgx_threads(4), 8), 4 * nccl::kDefaultLaunchUs, 1e-6);
  // With CUDA graphs the smaller launch cost.
  EXPECT_NEAR(time_us(dgx_threads(4, true), 8), 4 * nccl::kDefaultGraphLaunchUs, 1e-6);
  // A stated launch cost replaces the default; below NCCL's time it changes nothing.
  EXPECT_NEAR(time_us(dgx([](NcclMachine& m) {
                        m.gpus_per_thread = 4;
                        m.launch_s = 2e-6;
                      }),
                      8),
              10.2, 0.01);
  // Large messages are NCCL's bandwidth time, far above the floor.
  EXPECT_DOUBLE_EQ(time_us(dgx_threads(4), Bytes{1} << 30), time_us(dgx(), Bytes{1} << 30));
}

TEST(NcclLaunch, EmptyCallCostsNothing) {
  // nccl-tests prints sizes below one element per rank as 0 B: NCCL returns without launching.
  EXPECT_EQ(time_us(dgx_threads(4), 0), 0.0);
}

TEST(NcclLaunch, ScaleAndOffset) {
  const double base_small = time_us(dgx(), 8), base_large = time_us(dgx(), Bytes{1} << 30);
  EXPECT_NEAR(time_us(dgx_fit(1, 3e-6), 8), base_small + 3, 1e-6);
  EXPECT_NEAR(time_us(dgx_fit(1, -3e-6), 8), base_small - 3, 1e-6);
  // Never below a latency of 0; the host's launch still floors the call.
  EXPECT_GE(time_us(dgx_fit(1, -1e-3), Bytes{1} << 30), 0.0);
  EXPECT_NEAR(time_us(dgx_fit(1, -1e-3), 8), nccl::kDefaultLaunchUs, 1e-6);
  // Half the per-channel bandwidth: about twice the time where bandwidth dominates.
  EXPECT_NEAR(time_us(dgx_fit(0.5, 0), Bytes{1} << 30) / base_large, 2.0, 0.02);
  EXPECT_THROW(minimal("  bandwidth_scale: 1.5\n"), Error);
  EXPECT_THROW(minimal("  bandwidth_scale: 0\n"), Error);
  EXPECT_NEAR(minimal("  latency_offset: -2.5 us\n").nccl.machine.latency_offset_s, -2.5e-6, 1e-12);
}

// Samples of allreduce on 4 GPUs from 8 B to 1 GiB, timed on `truth`.
std::vector<NcclSample> samples_of(const Topology& truth) {
  std::vector<NcclSample> out;
  for (Bytes b = 8; b <= (Bytes{1} << 30); b *= 4)
    out.push_back({Collective::AllReduce, Algorithm::Nccl, Protocol::None, 1, 4, b, time_us(truth, b) * 1e-6});
  return out;
}

TEST(NcclModelFit, RecoversScaleAndOffset) {
  const Topology truth = dgx_fit(0.7, 3e-6);
  const NcclModelFit f = fit_nccl_model(dgx(), samples_of(truth));
  EXPECT_NEAR(f.bandwidth_scale, 0.7, 0.0051);
  EXPECT_NEAR(f.latency_offset_s, 3e-6, 0.3e-6);
  EXPECT_GT(f.median_abs_rel_error_before, 0.1);
  EXPECT_LT(f.median_abs_rel_error, 0.01);
  EXPECT_FALSE(f.scale_at_bound);
  ASSERT_FALSE(f.held_out.empty());
  for (const NcclModelSampleError& e : f.held_out) EXPECT_LT(std::abs(e.rel_error), 0.02) << e.bytes;
  // The fitted topology carries the terms.
  EXPECT_DOUBLE_EQ(f.topology.nccl.machine.bandwidth_scale, f.bandwidth_scale);
  EXPECT_DOUBLE_EQ(f.topology.nccl.machine.latency_offset_s, f.latency_offset_s);
}

TEST(NcclModelFit, StaysWithinPhysicalBounds) {
  // Measured twice as fast as NCCL's graph speeds allow: the fit stops at the links' rate (1) and
  // says so; an offset never makes a latency negative.
  std::vector<NcclSample> fast = samples_of(dgx());
  for (NcclSample& s : fast) s.time_s *= 0.3;
  const NcclModelFit f = fit_nccl_model(dgx(), fast);
  EXPECT_DOUBLE_EQ(f.bandwidth_scale, 1.0);
  EXPECT_TRUE(f.scale_at_bound);
  for (const NcclSample& s : fast) EXPECT_GE(time_us(f.topology, s.bytes), 0.0);
}

TEST(NcclModelFit, RefusesWithoutNcclSamples) {
  EXPECT_THROW(fit_nccl_model(dgx(), {}), Error);
  // One rank moves nothing: not a sample.
  EXPECT_THROW(fit_nccl_model(dgx(), {{Collective::AllReduce, Algorithm::Nccl, Protocol::None, 1, 1, 1024, 1e-5}}),
               Error);
}

}  // namespace
}  // namespace commsim
