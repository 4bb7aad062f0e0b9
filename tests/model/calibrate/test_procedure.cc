// calibrate(), the whole procedure, on measurements the model generates: the tiers come back from
// the probe's rows, refine fits gamma to collectives, and the result's text reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/calibrate/procedure.h"
#include "model/error.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

constexpr double kAlpha = 1.5e-6, kBeta = 1.0 / 6e9;

// One probe of a host: the ring shift inside a node on a line, the reduction and copy loops.
ProbeInput host_probe() {
  ProbeInput p;
  p.cpu_model = "Test CPU";
  p.cpu_cores = 8;
  p.nodes = 1;
  p.ranks = 4;
  p.ranks_per_node = 4;
  for (Bytes b = 8; b <= (Bytes{64} << 20); b *= 4) {
    const double us = (kAlpha + static_cast<double>(b) * kBeta) * 1e6;
    p.rows.push_back({"ring-shift", "intra-node", b, us, us});
    if (b >= 65536) {
      p.rows.push_back({"reduce", "local", b, static_cast<double>(b) / 3e9 * 1e6, 0});
      p.rows.push_back({"memcpy", "local", b, 1e-1 + static_cast<double>(b) / 12e9 * 1e6, 0});
    }
  }
  return p;
}

CalibrationOptions options(const std::string& refine = "auto") {
  CalibrationOptions o;
  o.name = "fitted";
  o.created = "2026-01-02T03:04:05Z";
  o.sources = {"portrait.h5"};
  o.refine = refine;
  return o;
}

CalibrationInput host_input() {
  CalibrationInput in;
  in.probes = {host_probe()};
  in.base = load_topology(resolve_topology_path("local-cpu"));
  return in;
}

TEST(Calibrate, FitsTheTiersFromTheProbeAndReadsBack) {
  const CalibrationResult r = calibrate(host_input(), options());
  ASSERT_TRUE(r.tiers.intra.done);
  EXPECT_FALSE(r.tiers.net.done);
  EXPECT_NEAR(r.tiers.intra.fit.alpha_s, kAlpha, 1e-3 * kAlpha);
  EXPECT_NEAR(r.topology.intra.bw_Bps, 6e9, 6e9 * 1e-3);
  EXPECT_NEAR(r.topology.reduce_bw_Bps, 3e9, 3e9 * 1e-3);
  EXPECT_GT(r.topology.memory_bw_Bps, 0);
  ASSERT_TRUE(r.tiers.protocol);
  EXPECT_TRUE(r.tiers.protocol->done);
  EXPECT_FALSE(r.tiers.protocol->fit.switched);  // one line: no protocol step
  EXPECT_FALSE(r.collectives);
  EXPECT_FALSE(r.nccl);
  EXPECT_EQ(r.topology.name, "fitted");
  EXPECT_EQ(r.topology.device_name, "Test CPU");
  // The record: the ring shift's sizes, the probe's nodes and ranks.
  EXPECT_EQ(r.record.sizes.front(), 8u);
  EXPECT_EQ(r.record.nodes, std::vector<int>{1});
  EXPECT_EQ(r.record.ranks, std::vector<int>{4});
  EXPECT_EQ(r.record.sources, std::vector<std::string>{"portrait.h5"});
  // Comments name where the values come from; the text loads back to them.
  const auto has = [&](const std::string& field) {
    return std::ranges::any_of(r.comments, [&](const auto& c) { return c.first == field && !c.second.empty(); });
  };
  EXPECT_TRUE(has("intra_node.latency"));
  EXPECT_TRUE(has("reduction.bandwidth"));
  EXPECT_TRUE(r.with_section);
  const Topology back = parse_topology(r.text, "written");
  EXPECT_NEAR(back.intra.bw_Bps, r.topology.intra.bw_Bps, 1e-6 * r.topology.intra.bw_Bps);
  EXPECT_NEAR(back.reduce_bw_Bps, r.topology.reduce_bw_Bps, 1e-6 * r.topology.reduce_bw_Bps);
  EXPECT_TRUE(back.calibrated.present);
  EXPECT_NE(r.text.find("fitted 2026-01-02 from ring-shift intra-node"), std::string::npos);
}

TEST(Calibrate, RefineGammaRecoversTheReductionRate) {
  const CalibrationResult tiers_only = calibrate(host_input(), options());
  Topology truth = tiers_only.topology;
  truth.reduce_bw_Bps = 1.5e9;
  CalibrationInput in = host_input();
  for (Bytes b = 65536; b <= (Bytes{64} << 20); b *= 4) {
    CollectiveSample s{Collective::AllReduce, Algorithm::Ring, 1, 4, b, 0, in.collectives.size()};
    s.time_s = predict_closed_form(truth, s);
    ASSERT_TRUE(std::isfinite(s.time_s));
    in.collectives.push_back(s);
  }
  in.run_files = 1;
  const CalibrationResult r = calibrate(in, options());  // auto: gamma, given collectives
  ASSERT_TRUE(r.collectives);
  EXPECT_EQ(r.collectives->refine, "gamma");
  EXPECT_NEAR(r.topology.reduce_bw_Bps, 1.5e9, 1.5e9 * 1e-3);
  EXPECT_LT(r.collectives->fit.median_abs_rel_error_after, 1e-3);
  EXPECT_EQ(r.collectives->start.reduce_bw_Bps, tiers_only.topology.reduce_bw_Bps);
  EXPECT_TRUE(r.collectives->held_out_done);
  EXPECT_LT(r.collectives->held_out_median_abs_rel_error, 1e-2);
  // The collectives' sizes join the record.
  EXPECT_TRUE(std::ranges::binary_search(r.record.sizes, Bytes{65536}));
}

TEST(Calibrate, RefineWithoutCollectivesOrUnknownIsAnError) {
  EXPECT_THROW(calibrate(host_input(), options("all")), Error);
  EXPECT_THROW(calibrate(host_input(), options("everything")), Error);
  EXPECT_NO_THROW(calibrate(host_input(), options("none")));
}

TEST(Calibrate, NcclRunsWithoutForcedOnesSayWhy) {
  CalibrationInput in = host_input();
  in.any_nccl = true;
  const CalibrationResult r = calibrate(in, options());
  ASSERT_TRUE(r.nccl);
  EXPECT_FALSE(r.nccl->error.empty());
  EXPECT_TRUE(r.nccl->fitted.empty());
  EXPECT_EQ(r.text.find("nccl: base latency"), std::string::npos);
}

TEST(Calibrate, SlowestGpuPairSetsTheIntraNodeRate) {
  CalibrationInput in;
  ProbeInput p;
  p.links.gpus = 8;
  p.links.slowest_path = "NV12";
  p.links.pairs_differ = true;
  p.links.slowest_pair_bw_Bps = INFINITY;
  p.links.most_nvlinks = 18;
  in.probes = {p};
  in.base = load_topology(resolve_topology_path("dgx-h100"));
  const CalibrationResult r = calibrate(in, options());
  ASSERT_TRUE(r.link.changed);
  EXPECT_NEAR(r.link.after_Bps, r.link.before_Bps * 12 / 18, 1e-9 * r.link.before_Bps);
  EXPECT_EQ(r.topology.intra.bw_Bps, r.link.after_Bps);
  // A uniform node changes nothing.
  in.probes.front().links.pairs_differ = false;
  EXPECT_FALSE(calibrate(in, options()).link.changed);
}

// The written file describes the probed machine, and each value says where it came from.
TEST(Calibrate, DescribesTheProbedMachineAndNamesEverySource) {
  CalibrationInput in = host_input();
  in.probes.front().memory_bytes = Bytes{24} << 30;
  const CalibrationResult r = calibrate(in, options());
  EXPECT_EQ(r.topology.ranks_per_node, 8);  // its logical CPUs, not the preset's
  EXPECT_EQ(r.topology.device_memory_bytes, Bytes{24} << 30);
  EXPECT_NE(r.text.find("ranks_per_node: 8  # probe: 8 logical CPUs"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("memory: 24GiB  # probe: rank 0's host memory"), std::string::npos) << r.text;
  // Every value line of the topology carries a comment (probe, fit or preset).
  std::size_t lines = 0;
  std::string section;
  for (std::size_t at = 0, end; at < r.text.size(); at = end + 1) {
    end = r.text.find('\n', at);
    const std::string line = r.text.substr(at, end - at);
    if (!line.empty() && line[0] != ' ') section = line.substr(0, line.find(':'));
    const std::size_t colon = line.find(": ");
    if (section == "calibrated" || section == "name" || section == "description" || colon == std::string::npos ||
        line.find_first_not_of(' ') == line.find('#') || line.find("- ") != std::string::npos)
      continue;
    ++lines;
    EXPECT_NE(line.find('#'), std::string::npos) << line;
  }
  EXPECT_GT(lines, 8u);
  EXPECT_NE(r.text.find("# preset local-cpu: not measured on this machine"), std::string::npos);
}

// A GPU preset as the base of a host probe would write the preset's numbers as this machine's.
TEST(Calibrate, RefusesAGpuBaseForAHostProbe) {
  CalibrationInput in = host_input();
  in.base = load_topology(resolve_topology_path("dgx-h100"));
  try {
    calibrate(in, options());
    FAIL() << "a GPU base was taken for a host probe";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not this machine's"), std::string::npos) << e.what();
  }
}

// Measurements that would give values no topology may hold are refused, never written.
TEST(Calibrate, RefusesValuesOutsideWhatAFileMayHold) {
  CalibrationInput in = host_input();
  for (ProbeSample& row : in.probes.front().rows)
    if (row.kind == "ring-shift") row.median_us = row.min_us = 1e13 + row.median_us;  // 1e7 s a message
  try {
    calibrate(in, options());
    FAIL() << "a latency of 1e7 s was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside what a topology may hold"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commsim
