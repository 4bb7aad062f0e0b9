// Per-transport tier values (`transports:` in a topology file): parsed and validated like the rest
// of the file, applied by with_transport, and seen by the cost model exactly as if the file had
// been written with those values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/cost/cost.h"
#include "model/error.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {
namespace {

// Two nodes' worth of host ranks; `transports` is appended as given (one entry per line).
std::string host_topology(const std::string& intra_bw, const std::string& intra_lat, const std::string& nic_bw,
                          const std::string& net_lat, const std::vector<std::string>& transports = {}) {
  std::string s =
      "name: two-hosts\n"              // 1
      "ranks_per_node: 4\n"            // 2
      "device:\n"                      // 3
      "  name: CPU\n"                  // 4
      "  memory_bandwidth: 30 GB/s\n"  // 5
      "intra_node:\n"                  // 6
      "  fabric: shared-memory\n"      // 7
      "  bandwidth: " +
      intra_bw +
      "\n"  // 8
      "  latency: " +
      intra_lat +
      "\n"                    // 9
      "network:\n"            // 10
      "  kind: tcp\n"         // 11
      "  nics_per_node: 1\n"  // 12
      "  nic_bandwidth: " +
      nic_bw +
      "\n"  // 13
      "  latency: " +
      net_lat + "\n";                                    // 14
  for (const auto& line : transports) s += line + "\n";  // from line 15
  return s;
}

const std::vector<std::string> kOverrides = {
    "transports:",                                             // 15
    "  ucx:",                                                  // 16
    "    intra_node: { bandwidth: 9 GB/s, latency: 0.3 us }",  // 17
    "    network: { latency: 12 us }",                         // 18
    "  mpi:",                                                  // 19
    "    network: { nic_bandwidth: 5 Gb/s }",                  // 20
};

Topology base_with_overrides() {
  return parse_topology(host_topology("5 GB/s", "0.5 us", "10 Gb/s", "30 us", kOverrides), "t.yaml");
}

std::string error_of(const std::vector<std::string>& transports) {
  try {
    parse_topology(host_topology("5 GB/s", "0.5 us", "10 Gb/s", "30 us", transports), "t.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TransportOverride, ParsedValuesReplaceOnlyTheGivenFields) {
  const Topology t = base_with_overrides();
  ASSERT_EQ(t.transports.size(), 2u);

  const Topology ucx = with_transport(t, "ucx");
  EXPECT_DOUBLE_EQ(ucx.intra.bw_Bps, parse_bandwidth("9 GB/s"));
  EXPECT_DOUBLE_EQ(ucx.intra.latency_s, parse_time("0.3 us"));
  EXPECT_DOUBLE_EQ(ucx.network.latency_s, parse_time("12 us"));
  EXPECT_DOUBLE_EQ(ucx.network.nic_bw_Bps, t.network.nic_bw_Bps);  // not overridden

  const Topology mpi = with_transport(t, "mpi");
  EXPECT_DOUBLE_EQ(mpi.network.nic_bw_Bps, parse_bandwidth("5 Gb/s"));
  EXPECT_DOUBLE_EQ(mpi.intra.bw_Bps, t.intra.bw_Bps);
  EXPECT_DOUBLE_EQ(mpi.intra.latency_s, t.intra.latency_s);
  EXPECT_DOUBLE_EQ(mpi.network.latency_s, t.network.latency_s);
}

TEST(TransportOverride, TransportWithoutOverrideLeavesTheTopologyAlone) {
  const Topology t = base_with_overrides();
  for (const char* name : {"nccl", "ipc", "", "something-else"}) {
    const Topology same = with_transport(t, name);
    EXPECT_DOUBLE_EQ(same.intra.bw_Bps, t.intra.bw_Bps) << name;
    EXPECT_DOUBLE_EQ(same.intra.latency_s, t.intra.latency_s) << name;
    EXPECT_DOUBLE_EQ(same.network.nic_bw_Bps, t.network.nic_bw_Bps) << name;
    EXPECT_DOUBLE_EQ(same.network.latency_s, t.network.latency_s) << name;
  }
}

TEST(TransportOverride, FileWithoutSectionHasNoOverrides) {
  const Topology t = parse_topology(host_topology("5 GB/s", "0.5 us", "10 Gb/s", "30 us"), "t.yaml");
  EXPECT_TRUE(t.transports.empty());
}

// The model must price a transport's rows exactly as if the file had been written with that
// transport's numbers: every tier lookup goes through the overridden values.
TEST(TransportOverride, CostsEqualAFileWrittenWithTheTransportsValues) {
  const Topology ucx = with_transport(base_with_overrides(), "ucx");
  const Topology written = parse_topology(host_topology("9 GB/s", "0.3 us", "10 Gb/s", "12 us"), "w.yaml");
  const Topology base = base_with_overrides();
  int compared = 0;
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Hierarchical}) {
    for (int nodes : {1, 2}) {
      for (Bytes bytes : {Bytes{1024}, Bytes{1} << 20, Bytes{64} << 20}) {
        const CostQuery q{Collective::AllReduce, a, Protocol::None, nodes, 4, bytes};
        if (!has_closed_form(written, q.collective, a, q.protocol)) continue;
        const double expected = closed_form(written, q).time_s;
        ++compared;
        EXPECT_DOUBLE_EQ(closed_form(ucx, q).time_s, expected) << to_string(a) << " nodes " << nodes << " " << bytes;
        // And the override really changes the prediction (otherwise this test proves nothing).
        EXPECT_NE(closed_form(base, q).time_s, expected) << to_string(a) << " nodes " << nodes << " " << bytes;
      }
    }
  }
  EXPECT_GE(compared, 12);
}

TEST(TransportOverride, ErrorsNameFileLineAndField) {
  EXPECT_EQ(error_of({"transports:", "  verbs:", "    intra_node: { latency: 1 us }"}),
            "t.yaml:16: transports.verbs: unknown key (allowed here: mpi, ucx, nccl, ipc)");
  EXPECT_EQ(error_of({"transports:", "  ucx:", "    intra_node: { bw: 1 GB/s }"}),
            "t.yaml:17: transports.ucx.intra_node.bw: unknown key (allowed here: bandwidth, latency)");
  EXPECT_EQ(error_of({"transports:", "  ucx:", "    network: { bandwidth: 1 GB/s }"}),
            "t.yaml:17: transports.ucx.network.bandwidth: unknown key (allowed here: nic_bandwidth, latency)");
  EXPECT_EQ(error_of({"transports:", "  ucx:", "    intra_node: { latency: 3 parsecs }"})
                .rfind("t.yaml:17: transports.ucx.intra_node.latency: ", 0),
            0u);
  EXPECT_NE(error_of({"transports:", "  ucx:", "    intra_node: { bandwidth: 0 GB/s }"}).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of({"transports:", "  ucx:", "    intra_node: { bandwidth: 0 GB/s }"})
                .find("transports.ucx.intra_node.bandwidth"),
            std::string::npos);
  EXPECT_EQ(error_of({"transports:", "  ucx: {}"}),
            "t.yaml:16: transports.ucx: give intra_node and/or network values for this transport");
  EXPECT_EQ(error_of({"transports:", "  ucx:", "    intra_node: {}"}),
            "t.yaml:17: transports.ucx.intra_node: give bandwidth and/or latency");
  EXPECT_EQ(error_of({"transports:", "  ucx:"}), "t.yaml:16: transports.ucx: has no value");
  EXPECT_EQ(error_of({"transports: [ucx]"}).rfind("t.yaml:15: transports: expected a map", 0), 0u);
  EXPECT_EQ(error_of({"transports:", "  ucx:", "    intra_node: { latency: 1 us }",
                      "  ucx:", "    intra_node: { latency: 2 us }"}),
            "t.yaml:18: transports.ucx: key given twice");
}

TEST(TransportOverride, NetworkOverrideNeedsANetwork) {
  const std::string text =
      "name: one-host\n"
      "ranks_per_node: 4\n"
      "device: { name: CPU, memory_bandwidth: 30 GB/s }\n"
      "intra_node: { fabric: shared-memory, bandwidth: 5 GB/s, latency: 0.5 us }\n"
      "network: { kind: none }\n"
      "transports:\n"
      "  ucx:\n"
      "    network: { latency: 10 us }\n";
  try {
    parse_topology(text, "one.yaml");
    FAIL() << "a network override on a topology without a network was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("one.yaml:8: transports.ucx.network: this topology has no network", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace commsim
