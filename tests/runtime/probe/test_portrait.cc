// The machine portrait, formatted from given measurements.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "runtime/probe/portrait.h"

namespace commsim {
namespace {

ProbeMeasurement row(const std::string& kind, const std::string& tier, Bytes bytes, double median_us, double gbps) {
  ProbeMeasurement m;
  m.kind = kind;
  m.tier = tier;
  m.memory = "host";
  m.bytes = bytes;
  m.ranks = 2;
  m.reps = 1;
  m.median_us = median_us;
  m.p95_us = median_us;
  m.bw_gbps = gbps;
  return m;
}

ProbeData two_ranks_one_node() {
  ProbeData d;
  d.nodes = 1;
  d.ranks = 2;
  d.ranks_per_node = 2;
  d.hosts = {"node1"};
  d.cpu_model = "Test CPU";
  d.cpu_cores = 8;
  d.gpu_note = "this build has no CUDA";
  d.intra_fabric = "shared memory (MPI between processes of one host)";
  d.rows = {row("pingpong", "intra-node", 8, 0.5, 0.016),
            row("pingpong", "intra-node", 1 << 20, 100, 10.5),
            row("stream", "intra-node", 1 << 20, 90, 11.6),
            row("ring-shift", "intra-node", 8, 0.6, 0.013),
            row("ring-shift", "intra-node", 1 << 20, 120, 8.7),
            row("ring-shift-control", "intra-node", 65536, 10, 6.5),
            row("ring-shift-written", "intra-node", 65536, 15, 4.4),
            row("memcpy", "local", 1 << 20, 50, 21.0),
            row("reduce", "local", 1 << 20, 80, 13.1)};
  return d;
}

TEST(ProbePortrait, PeakBandwidthIsTheFastestRowOfAKindAndTier) {
  const ProbeData d = two_ranks_one_node();
  EXPECT_DOUBLE_EQ(peak_bw(d, "ring-shift", "intra-node"), 8.7);
  EXPECT_DOUBLE_EQ(peak_bw(d, "ring-shift", "network"), 0.0);
}

TEST(ProbePortrait, TheTextNamesHostsLatencyBandwidthAndTheWrittenSlowdown) {
  const std::string p = format_portrait(two_ranks_one_node(), {2}, "Open MPI v4.1.4", "eth0", "16GiB");
  EXPECT_NE(p.find("commsim probe: machine portrait\n"), std::string::npos) << p;
  EXPECT_NE(p.find("  hosts            : 1 (node1: 2 ranks)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("Test CPU, 8 logical CPUs, 16GiB memory"), std::string::npos) << p;
  EXPECT_NE(p.find("latency 0.50 us (8B ping-pong, one way)"), std::string::npos) << p;
  EXPECT_NE(p.find("bandwidth 11.60 GB/s per direction (stream)"), std::string::npos) << p;
  EXPECT_NE(p.find("x1.50 the time of untouched data at 64KiB"), std::string::npos) << p;
  EXPECT_NE(p.find("  MPI              : Open MPI v4.1.4\n"), std::string::npos) << p;
  EXPECT_NE(p.find("across the network: not measured (all ranks on one host)"), std::string::npos) << p;
  EXPECT_NE(p.find("  GPUs             : none (this build has no CUDA)\n"), std::string::npos) << p;
}

TEST(ProbePortrait, TheRowsTableHasOneLinePerMeasurement) {
  std::ostringstream out;
  print_probe_rows(out, two_ranks_one_node());
  const std::string s = out.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1 + 1 + 9) << s;  // blank line, header, rows
  EXPECT_NE(s.find("ring-shift-written intra-node host"), std::string::npos) << s;
}

TEST(ProbePortrait, TheClosingTableInTextAndMarkdown) {
  const PortraitTable t = portrait_table(two_ranks_one_node(), "eth0 (1000 Mb/s)");
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].first, "GPUs");
  EXPECT_EQ(t[3].second, "not measured (all ranks on one host)");
  EXPECT_EQ(t[4].second, "not probed (give --storage PATH)");
  std::ostringstream text, markdown;
  print_portrait_table(text, t, "text");
  print_portrait_table(markdown, t, "markdown");
  EXPECT_NE(text.str().find("\nportrait:\n  GPUs                 : none"), std::string::npos) << text.str();
  EXPECT_NE(markdown.str().find("| part | this machine |\n|---|---|\n| GPUs | none"), std::string::npos)
      << markdown.str();
}

}  // namespace
}  // namespace commsim
