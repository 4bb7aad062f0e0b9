// NCCL's TUNING table from a log into the topology (model/nccl/logged_table.h): read from an
// nccl-tests log (collectives/libraries/nccl_tests_log.h), written as nccl.tuning_table, read back,
// and used by NCCL's model in place of its own numbers.
//
// The fixture tests/collectives/data/nccl-2.28.9-tuning-table.log is an all_reduce_perf log of one
// 8-GPU H100 node with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING. Its table lines are in NCCL
// 2.28.9's exact format (NVIDIA/nccl src/graph/tuning.cc:499-539 at v2.28.9-1: "%8.1f/%6.1f |"
// per entry, blocks of three algorithms), with the numbers commsim's port of ncclTopoTuneModel
// gives for a DGX H100 (src/model/nccl/NCCL_MODEL.md, section 2.9) except AllReduce Ring/LL, set to
// 12.0 us / 70.0 GB/s (the model's is 15.0 / 80.6) so that the tests can tell the log's numbers
// from the model's. The per-call lines are 2.24+'s (enqueue.cc:741 at v2.28.9-1).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "collectives/libraries/nccl_tests_log.h"
#include "model/cost/cost.h"
#include "model/error.h"
#include "model/nccl/from_topology.h"
#include "model/nccl/logged_table.h"
#include "model/nccl/tuning.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

NcclTestsLog fixture() {
  const std::string path = std::string(COMMSIM_SOURCE_DIR) + "/tests/collectives/data/nccl-2.28.9-tuning-table.log";
  std::ifstream f(path);
  EXPECT_TRUE(f) << "the fixture log is missing: " << path;
  std::stringstream s;
  s << f.rdbuf();
  return parse_nccl_tests_log(s.str(), "nccl-2.28.9-tuning-table.log");
}

const NcclTuningEntry* entry(const NcclTuningTable& t, int f, int a, int p) {
  for (const NcclTuningEntry& e : t.entries)
    if (e.function == f && e.algorithm == a && e.protocol == p) return &e;
  return nullptr;
}

TEST(NcclTuningTable, TheLogKeepsTheWholeFirstTableAndEachRowsPick) {
  const NcclTestsLog log = fixture();
  ASSERT_TRUE(log.error.empty()) << log.error;
  // Three blocks (Tree Ring CollNetDirect | CollNetChain NVLS NVLSTree | PAT) of an Algorithm, a
  // Protocol, a Max NThreads and five function lines; not the threadThresholds line after them.
  ASSERT_EQ(log.nccl_tuning_table.size(), 24u);
  EXPECT_EQ(log.nccl_tuning_table.front().substr(0, 9), "Algorithm");
  EXPECT_EQ(log.nccl_tuning_table.back().substr(0, 9), "AllReduce");
  ASSERT_EQ(log.rows.size(), 7u);
  EXPECT_EQ(log.rows[0].nccl_algo, "Ring");
  EXPECT_EQ(log.rows[0].nccl_proto, "LL");
  EXPECT_EQ(log.rows[0].nccl_channels, 24);
  EXPECT_EQ(log.rows[4].nccl_algo, "NVLS");
  EXPECT_EQ(log.rows[4].nccl_proto, "Simple");
  EXPECT_EQ(log.rows[4].nccl_channels, 16);
}

TEST(NcclTuningTable, ParsedAsPrinted) {
  const NcclTuningTable t = nccl::parse_tuning_table(fixture().nccl_tuning_table, 8, 1, false);
  EXPECT_EQ(t.entries.size(), 5u * 7u * 3u);
  const NcclTuningEntry* ring_ll = entry(t, nccl::kAllReduce, nccl::kRing, nccl::kLL);
  ASSERT_TRUE(ring_ll);
  EXPECT_DOUBLE_EQ(ring_ll->latency_us, 12.0);
  EXPECT_DOUBLE_EQ(ring_ll->bandwidth_GBps, 70.0);
  const NcclTuningEntry* nvls = entry(t, nccl::kAllReduce, nccl::kNvls, nccl::kSimple);
  ASSERT_TRUE(nvls);
  EXPECT_DOUBLE_EQ(nvls->latency_us, 25.0);
  EXPECT_DOUBLE_EQ(nvls->bandwidth_GBps, 272.0);
  // Disabled entries are kept as disabled (bandwidth 0) when nothing was forced...
  const NcclTuningEntry* tree_bcast = entry(t, nccl::kBroadcast, nccl::kTree, nccl::kSimple);
  ASSERT_TRUE(tree_bcast);
  EXPECT_EQ(tree_bcast->bandwidth_GBps, 0);
  // ...and left to the model when NCCL_ALGO / NCCL_PROTO forced them off.
  const NcclTuningTable forced = nccl::parse_tuning_table(fixture().nccl_tuning_table, 8, 1, true);
  EXPECT_FALSE(entry(forced, nccl::kBroadcast, nccl::kTree, nccl::kSimple));
  EXPECT_TRUE(entry(forced, nccl::kAllReduce, nccl::kRing, nccl::kLL));
}

// The model's own table printed in NCCL's format reads back to the same numbers (to the 0.1 NCCL
// prints), for 7 algorithms in three blocks (2.28) and 6 in two (2.22), on two nodes.
TEST(NcclTuningTable, ReadsBackWhatNcclsFormatPrints) {
  const Topology topo = load_topology(resolve_topology_path("dgx-h100"));
  for (const char* release : {"2.28.9", "2.22.3"}) {
    const nccl::Version& v = nccl::find_version(release);
    const nccl::TuningTable model = nccl::tune_model(nccl::nccl_system(topo, 2, 8, v), v);
    const NcclTuningTable t = nccl::parse_tuning_table(nccl::format_tuning_table(model), 16, 2, false);
    EXPECT_EQ(t.entries.size(), static_cast<std::size_t>(5 * model.numAlgorithms * 3)) << release;
    for (const NcclTuningEntry& e : t.entries) {
      EXPECT_NEAR(e.latency_us, model.latencies[e.function][e.algorithm][e.protocol], 0.051) << release;
      EXPECT_NEAR(e.bandwidth_GBps, model.bandwidths[e.function][e.algorithm][e.protocol], 0.051) << release;
    }
  }
}

TEST(NcclTuningTable, ABadLineIsNamed) {
  std::vector<std::string> lines = fixture().nccl_tuning_table;
  lines[4] = "       Reduce |     0.0/   0.0 |  oops";
  try {
    nccl::parse_tuning_table(lines, 8, 1, false);
    FAIL() << "a bad line was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nccl::parse_tuning_table({"    AllReduce |    15.0/  80.6 |"}, 8, 1, false), Error);
  EXPECT_THROW(nccl::parse_tuning_table({"  Algorithm   |   Ring   Butterfly  |"}, 8, 1, false), Error);
  EXPECT_THROW(nccl::parse_tuning_table({}, 8, 1, false), Error);
}

// The table written into the topology, read back, and priced: a call of the logged communicator
// takes the log's numbers, any other NCCL's model's.
TEST(NcclTuningTable, TheWrittenTopologyPredictsWithTheLogsNumbers) {
  Topology t = load_topology(resolve_topology_path("dgx-h100"));
  t.nccl.machine.tuning_table = nccl::parse_tuning_table(fixture().nccl_tuning_table, 8, 1, false);
  t.nccl.machine.tuning_table.source = "run.log, NCCL 2.28.9";
  const std::string yaml = topology_yaml(t, {"test"}, {}, nullptr, false);
  EXPECT_NE(yaml.find("Ring: { LL: 12 us / 70 GB/s, LL128: 40.6 us / 189.3 GB/s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("Tree: { LL: off, LL128: off, Simple: off }"), std::string::npos) << yaml;
  const Topology back = parse_topology(yaml, "written.yaml");
  ASSERT_EQ(back.nccl.machine.tuning_table.entries.size(), t.nccl.machine.tuning_table.entries.size());
  EXPECT_EQ(back.nccl.machine.tuning_table.source, "run.log, NCCL 2.28.9");
  for (const NcclTuningEntry& e : t.nccl.machine.tuning_table.entries) {
    const NcclTuningEntry* b = entry(back.nccl.machine.tuning_table, e.function, e.algorithm, e.protocol);
    ASSERT_TRUE(b);
    EXPECT_DOUBLE_EQ(b->bandwidth_GBps, e.bandwidth_GBps);
    if (e.bandwidth_GBps > 0) {  // "off": never picked, so no latency is written
      EXPECT_DOUBLE_EQ(b->latency_us, e.latency_us);
    }
  }

  // AllReduce Ring/LL of 1 MiB on the 8 GPUs logged: 12 us + 1048576 B / 70 GB/s (ncclTopoGetAlgoTime:
  // no plateau or tree correction for a one-node ring).
  const Bytes n = 1 << 20;
  const CostQuery ring_ll{Collective::AllReduce, Algorithm::NcclRing, Protocol::LL, 1, 8, n};
  EXPECT_NEAR(closed_form(back, ring_ll).time_s * 1e6, 12.0 + n / (70.0 * 1e3), 1e-3);
  const Topology plain = load_topology(resolve_topology_path("dgx-h100"));
  EXPECT_GT(std::abs(closed_form(plain, ring_ll).time_s - closed_form(back, ring_ll).time_s) * 1e6, 1.0);
  // 4 GPUs were not logged: NCCL's model prices them, as without the table.
  const CostQuery four{Collective::AllReduce, Algorithm::NcclRing, Protocol::LL, 1, 4, n};
  EXPECT_DOUBLE_EQ(closed_form(back, four).time_s, closed_form(plain, four).time_s);
  // The fitted share of NCCL's bandwidth scales the log's bandwidths too.
  Topology scaled = back;
  scaled.nccl.machine.bandwidth_scale = 0.5;
  EXPECT_NEAR(closed_form(scaled, ring_ll).time_s * 1e6, 12.0 + n / (35.0 * 1e3), 1e-3);
}

TEST(NcclTuningTable, TheTopologyReaderNamesABadEntry) {
  const std::string head =
      "name: t\ngpus_per_node: 8\ndevice: { name: \"NVIDIA H100 80GB HBM3\", memory_bandwidth: 3 TB/s }\n"
      "intra_node: { fabric: nvswitch, bandwidth: 370 GB/s, latency: 2 us }\n"
      "host_link: { bandwidth: 64 GB/s, latency: 1 us }\nnetwork: { kind: none }\nnccl:\n  tuning_table:\n";
  try {
    parse_topology(head + "    ranks: 8\n    nodes: 1\n    AllReduce:\n      Ring: { LL: 12 us }\n", "t.yaml");
    FAIL() << "read an entry without its bandwidth";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nccl.tuning_table.AllReduce.Ring.LL"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      parse_topology(head + "    ranks: 8\n    nodes: 1\n    AllReduce:\n      Rings: { LL: off }\n", "t.yaml"), Error);
  EXPECT_THROW(parse_topology(head + "    nodes: 1\n    AllReduce:\n      Ring: { LL: off }\n", "t.yaml"), Error);
}

}  // namespace
}  // namespace commsim
