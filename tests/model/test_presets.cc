// The presets against published measurements (references: nccl-tests and NCCL issues). The
// tolerances are the ones the model is meant to meet; each comment says what was measured.
#include <gtest/gtest.h>

#include <cmath>

#include "model/cost/cost.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

Topology preset(const char* name) {
  return load_topology(resolve_topology_path(name));
}

// channels 0: the topology's default (NCCL's count).
double busbw_GBps(const Topology& t, Collective c, Algorithm a, int nodes, int per_node, Bytes n, int channels = 0) {
  Cost cost = closed_form(t, CostQuery{c, a, Protocol::None, nodes, per_node, n, channels});
  return static_cast<double>(n) / cost.time_s * busbw_factor(c, nodes * per_node) / 1e9;
}

TEST(Presets, DgxH100OneNodeRingAllreduceNear370) {
  // 8x H100, ring allreduce busbw about 365-370 GB/s for 2-8 GPUs (NVIDIA/nccl #1455, nccl-tests
  // #212, #290), not the 450 GB/s line rate. NCCL's own model (graph/tuning.cc, 2.28.9: 16 channels
  // of 20.0 GB/s x (ppn-1)/ppn... capped by the SM90 ring rate) puts it at 359.5-359.8, within 3% of
  // the published figure. The hand-written ring also copies its own chunk into the accumulator
  // before each combine, n(p-1)/p bytes at the HBM's 3.35 TB/s: 5-6% below.
  Topology t = preset("dgx-h100");
  for (int g = 2; g <= 8; ++g) {
    const double nccl = busbw_GBps(t, Collective::AllReduce, Algorithm::NcclRing, 1, g, 8ull << 30);
    EXPECT_GE(nccl, 355) << g << " GPUs";
    EXPECT_LE(nccl, 375) << g << " GPUs";
    const double ring = busbw_GBps(t, Collective::AllReduce, Algorithm::Ring, 1, g, 8ull << 30);
    EXPECT_GE(ring, 340) << g << " GPUs";
    EXPECT_LT(ring, nccl) << g << " GPUs";
  }
}

TEST(Presets, H200NodeNcclBusbwAt1GiB) {
  // 8x H200 (Azure ND H200 v5, NCCL 2.20.5, NVLS): 468 GB/s busbw at 1 GiB. NCCL's model picks
  // NVLS there, as NCCL did: within 5%.
  Topology t = preset("h200-node");
  const Cost pick = closed_form(t, CostQuery{Collective::AllReduce, Algorithm::Nccl, Protocol::None, 1, 8, 1ull << 30});
  EXPECT_EQ(pick.algorithm, Algorithm::NcclNvls);
  double bw = busbw_GBps(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, 1ull << 30);
  EXPECT_NEAR(bw, 468, 0.05 * 468);
  // Small messages are latency bound: 1 KiB measured 0.06 GB/s busbw (about 30 us). The
  // hand-written ring (14 steps of the 2 us NVSwitch step latency) is within 25%; NCCL's own model
  // leaves out the launch overhead and is within a factor 2.5.
  EXPECT_NEAR(busbw_GBps(t, Collective::AllReduce, Algorithm::Ring, 1, 8, 1024), 0.06, 0.25 * 0.06);
  double nccl_small = busbw_GBps(t, Collective::AllReduce, Algorithm::Nccl, 1, 8, 1024);
  EXPECT_GT(nccl_small, 0.06 / 2.5);
  EXPECT_LT(nccl_small, 0.06 * 2.5);
}

TEST(Presets, DgxH100FourNodes) {
  // 4 nodes x 8 H100 over 8x400G InfiniBand (NCCL 2.24.3): allreduce 331 GB/s, allgather 324 GB/s.
  Topology t = preset("dgx-h100");
  const Bytes n = 8ull << 30;
  // NCCL's model, and the hand-written ring with the default channels (two per NIC, rail-aligned:
  // every NIC carries a channel at once, as NCCL's rings do).
  // NCCL's own model (graph/tuning.cc, 2.28.9) counts the ring's NVLink rate, not the NICs', and
  // is 18% above the measured allgather (381 GB/s): within 20%.
  for (Algorithm a : {Algorithm::NcclRing, Algorithm::Nccl, Algorithm::Ring}) {
    const double tolerance = a == Algorithm::Ring ? 0.15 : 0.2;
    EXPECT_NEAR(busbw_GBps(t, Collective::AllReduce, a, 4, 8, n), 331, 0.15 * 331) << to_string(a);
    EXPECT_NEAR(busbw_GBps(t, Collective::AllGather, a, 4, 8, n), 324, tolerance * 324) << to_string(a);
  }
  // A ring of one channel sends one flow per node boundary (one NIC); hierarchical runs eight rings
  // across the nodes at once and so uses all eight NICs, as the default channels do.
  for (Bytes size : {Bytes{64} << 20, Bytes{1} << 30, n}) {
    const double one = busbw_GBps(t, Collective::AllReduce, Algorithm::Ring, 4, 8, size, 1);
    const double ring = busbw_GBps(t, Collective::AllReduce, Algorithm::Ring, 4, 8, size);
    const double hier = busbw_GBps(t, Collective::AllReduce, Algorithm::Hierarchical, 4, 8, size);
    EXPECT_GT(hier, 3 * one) << size;
    EXPECT_LT(one, 55) << size;  // at most one NDR NIC
    EXPECT_GT(ring, 3 * one) << size;
  }
  // Broadcast measured 286 GB/s: the model (a chain at the ring's bandwidth) is optimistic here,
  // within 35%.
  EXPECT_NEAR(busbw_GBps(t, Collective::Broadcast, Algorithm::Nccl, 4, 8, n), 286, 0.35 * 286);
}

TEST(Presets, DgxA100SmallMessageLatencyTrend) {
  // Ring allreduce, one channel, 8..128 bytes on DGX A100 (nccl-tests #123): time in us for
  // 2..8 GPUs. A fixed launch cost is not part of an alpha-beta model, so compare the growth from
  // 2 GPUs (each further ring step adds ~2 us), and the value at 8 GPUs.
  const double measured_us[] = {10, 13.76, 16.88, 20.8, 25.2, 29.5, 33.7};
  Topology t = preset("dgx-a100");
  auto ring_us = [&](int g) {
    return closed_form(t, CostQuery{Collective::AllReduce, Algorithm::Ring, Protocol::None, 1, g, 8}).time_s * 1e6;
  };
  for (int g = 3; g <= 8; ++g) {
    double predicted = ring_us(g) - ring_us(2), measured = measured_us[g - 2] - measured_us[0];
    EXPECT_NEAR(predicted, measured, 0.2 * measured) << g << " GPUs";
    EXPECT_GT(ring_us(g), ring_us(g - 1));
  }
  EXPECT_NEAR(ring_us(8), 33.7, 0.25 * 33.7);
}

TEST(Presets, EveryPresetPricesEveryAlgorithm) {
  for (const char* name : {"consumer-pcie-4090", "dgx-a100", "dgx-h100", "h200-node", "gb200-nvl72", "local-cpu",
                           "aws-p4d", "oci-a100", "polaris", "gb300-nvl72"}) {
    Topology t = preset(name);
    int max_nodes = t.network.present() ? 16 : 1;
    for (Collective c : kAllCollectives)
      for (Algorithm a : kAllAlgorithms) {
        if (!has_closed_form(t, c, a, Protocol::None)) continue;
        for (int nodes = 1; nodes <= max_nodes; nodes *= 4) {
          // NCCL's forced algorithms it cannot run on this machine (NVLS on a PCIe node, PAT with
          // several GPUs per node, CollNet without SHARP) say why instead (tests/model/cost/test_nccl_tuned.cc).
          if (is_nccl_algorithm(a) && a != Algorithm::Nccl && a != Algorithm::NcclRing && a != Algorithm::NcclTree)
            continue;
          Cost small = closed_form(t, CostQuery{c, a, Protocol::None, nodes, t.ranks_per_node, 8});
          Cost large = closed_form(t, CostQuery{c, a, Protocol::None, nodes, t.ranks_per_node, 1ull << 30});
          EXPECT_GT(small.time_s, 0) << name << " " << to_string(c) << " " << to_string(a);
          EXPECT_GT(large.time_s, small.time_s) << name << " " << to_string(c) << " " << to_string(a);
          EXPECT_TRUE(std::isfinite(large.time_s));
        }
      }
  }
}

}  // namespace
}  // namespace commsim
