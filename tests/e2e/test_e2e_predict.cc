// `commsim predict` run as a process: exit codes, the CSV/JSON/table it prints, the HDF5 file it
// writes (read back with the library reader), and its messages for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/collective.h"
#include "model/topology/topology.h"
#include "runtime/h5/results_file.h"
#include "test_util.h"
#include "text_formats.h"

namespace commsim {
namespace {

using test::slurp;
using Result = test::CommandResult;

// Runs `commsim <args>` through the shell (args are written as a user types them).
Result commsim(const std::string& args, const test::TempDir& dir) { return test::run_binary(COMMSIM_BIN, args, dir); }

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

const char* kSweep = "--topology dgx-h100 --nodes 1,2 --collectives allreduce,allgather --algorithms all --sizes 8B:1MiB";

TEST(PredictE2E, CsvHasTheColumnsAndOneRowPerPoint) {
  test::TempDir dir;
  Result r = commsim(std::string("predict ") + kSweep + " --format csv", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "skipped")) << r.err;
  auto rows = test::parse_csv(r.out);
  ASSERT_GE(rows.size(), 2u) << r.out;
  const std::vector<std::string> required = {
      "collective",   "algorithm",  "backend",    "protocol",        "dtype",       "nodes",
      "ranks",        "bytes",      "predicted_us", "predicted_busbw_gbps", "measured_median_us",
      "measured_p95_us", "algbw_gbps", "busbw_gbps", "rel_error",     "wrong",       "status"};
  const auto& header = rows[0];
  ASSERT_GE(header.size(), required.size());
  for (std::size_t i = 0; i < required.size(); ++i) EXPECT_EQ(header[i], required[i]);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;

  Topology topo = load_topology(resolve_topology_path("dgx-h100"));
  // Every applicable hand-written algorithm and NCCL's own choice, at 2 node counts and 18 sizes (8B..1MiB).
  std::size_t expected = 0;
  for (Collective c : {Collective::AllReduce, Collective::AllGather})
    expected += (hand_written_algorithms(c).size() + 1) * 2 * 18;
  EXPECT_EQ(rows.size() - 1, expected);

  // Per (collective, nodes, bytes): the winner is the fastest row; busbw follows from the time.
  std::map<std::string, std::pair<double, std::string>> fastest;
  std::map<std::string, std::set<std::string>> winners;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), header.size());
    EXPECT_EQ(row[col["backend"]], "model");
    EXPECT_EQ(row[col["status"]], "predicted");
    for (const char* empty : {"measured_median_us", "measured_p95_us", "algbw_gbps", "busbw_gbps", "rel_error", "wrong"})
      EXPECT_TRUE(row[col[empty]].empty()) << empty;
    int nodes = std::stoi(row[col["nodes"]]);
    int ranks = std::stoi(row[col["ranks"]]);
    EXPECT_EQ(ranks, nodes * topo.ranks_per_node);
    double t_us = std::stod(row[col["predicted_us"]]);
    double busbw = std::stod(row[col["predicted_busbw_gbps"]]);
    double bytes = std::stod(row[col["bytes"]]);
    EXPECT_GT(t_us, 0);
    Collective c = *parse_collective(row[col["collective"]]);
    EXPECT_NEAR(busbw, bytes / (t_us * 1e-6) / 1e9 * busbw_factor(c, ranks), 1e-9 * (1 + busbw));
    std::string key = row[col["collective"]] + "/" + row[col["nodes"]] + "/" + row[col["bytes"]];
    auto& f = fastest[key];
    // The winner is the fastest of our schedules; NCCL's choice is priced beside them.
    if (row[col["algorithm"]] != "nccl" && (f.second.empty() || t_us < f.first)) f = {t_us, row[col["algorithm"]]};
    winners[key].insert(row[col["predicted_winner"]]);
  }
  for (const auto& [key, f] : fastest) {
    ASSERT_EQ(winners[key].size(), 1u) << key << ": one winner per size";
    EXPECT_EQ(*winners[key].begin(), f.second) << key;
  }
}

TEST(PredictE2E, OutFileHoldsTheSameRowsAndRefusesOverwrite) {
  test::TempDir dir;
  const std::string h5 = dir.file("pred.h5");
  Result csv = commsim(std::string("predict ") + kSweep + " --format csv --out '" + h5 + "'", dir);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  ASSERT_TRUE(test::exists(h5));
  EXPECT_FALSE(test::exists(h5 + ".partial"));
  auto rows = test::parse_csv(csv.out);
  ResultsContents file = read_results(h5);
  ASSERT_EQ(file.runs.size(), 1u);
  EXPECT_EQ(file.runs[0].backend, "model");
  EXPECT_EQ(file.runs[0].status, "complete");
  EXPECT_EQ(file.runs[0].topology_name, "dgx-h100");
  EXPECT_FALSE(file.runs[0].topology_text.empty());
  EXPECT_TRUE(contains(file.command_line, "predict")) << file.command_line;
  ASSERT_EQ(file.points.size(), rows.size() - 1);
  for (std::size_t i = 0; i < file.points.size(); ++i) {
    const Point& p = file.points[i];
    const auto& row = rows[i + 1];
    EXPECT_EQ(row[0], to_string(p.collective));
    EXPECT_EQ(row[1], to_string(p.algorithm));
    EXPECT_EQ(std::stoull(row[7]), p.bytes);
    EXPECT_EQ(std::stod(row[8]), p.predicted_us) << "CSV prints the exact double";
    EXPECT_TRUE(std::isnan(p.measured_median_us));
  }

  Result again = commsim(std::string("predict ") + kSweep + " --out '" + h5 + "'", dir);
  EXPECT_NE(again.rc, 0);
  EXPECT_TRUE(contains(again.err, "exists")) << again.err;
  EXPECT_TRUE(contains(again.err, "--force")) << again.err;
  EXPECT_EQ(read_points(h5).size(), file.points.size());

  Result forced = commsim("predict --topology dgx-h100 --nodes 1 --sizes 1MiB --out '" + h5 + "' --force", dir);
  ASSERT_EQ(forced.rc, 0) << forced.err;
  EXPECT_EQ(read_points(h5).size(), hand_written_algorithms(Collective::AllReduce).size() + 1);
}

TEST(PredictE2E, JsonIsOneDocument) {
  test::TempDir dir;
  Result r = commsim("predict --topology dgx-h100 --nodes 1,2 --sizes 1KiB,1MiB --format json", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  test::Json doc;
  ASSERT_NO_THROW(doc = test::JsonParser(r.out).document()) << r.out;
  EXPECT_EQ(doc["context"]["backend"].str(), "model");
  // Our schedules, and NCCL's own choice beside them (dgx-h100 has NCCL constants).
  EXPECT_EQ(doc["points"].arr().size(), (hand_written_algorithms(Collective::AllReduce).size() + 1) * 2 * 2);
  std::size_t nccl_rows = 0;
  for (const test::Json& pt : doc["points"].arr())
    if (pt["algorithm"].str() == "nccl") ++nccl_rows;
  EXPECT_EQ(nccl_rows, 2u * 2u);
  EXPECT_TRUE(doc["points"].arr()[0]["measured_median_us"].is_null());
  EXPECT_FALSE(doc["notes"].arr().empty()) << "crossover lines";
}

TEST(PredictE2E, DefaultIsAOneScreenSummaryNamingRingVsTreePerNodeCount) {
  test::TempDir dir;
  Result r = commsim("predict", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> rows;
  std::size_t n = 0, widest = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    widest = std::max(widest, line.size());
    if (!line.empty() && line[0] != '#') rows.push_back(line);
  }
  EXPECT_LE(n, 40u) << "one screen:\n" << r.out;
  EXPECT_LE(widest, 150u) << r.out;  // a terminal of 150 columns
  // One row of ours and one of NCCL's choice per node count, 1 to 64 nodes.
  ASSERT_EQ(rows.size(), 2u * 7u) << r.out;
  for (int i = 0; i < 7; ++i) {
    std::istringstream first(rows[i]);
    int nodes = 0, ranks = 0;
    first >> nodes >> ranks;
    EXPECT_EQ(nodes, 1 << i) << rows[i];
    EXPECT_EQ(ranks, 8 << i) << rows[i];
    EXPECT_TRUE(contains(rows[i], "ring") || contains(rows[i], "tree")) << rows[i];
    EXPECT_TRUE(contains(rows[i], "GB/s")) << rows[i];
    EXPECT_TRUE(contains(rows[i], " us")) << rows[i];
  }
  EXPECT_TRUE(contains(r.out, "ring vs tree"));
  EXPECT_TRUE(contains(r.out, "NCCL picks"));
  EXPECT_TRUE(contains(r.out, "--format table"));
  // A crossover is named with its size: "tree < 2.9MiB < ring" on one node.
  EXPECT_TRUE(contains(rows[0], "tree < ") && contains(rows[0], " < ring")) << rows[0];
}

TEST(PredictE2E, DetailIsTheFullTableWithUnitsWinnersAndCrossovers) {
  test::TempDir dir;
  Result r = commsim("predict --detail --nodes 1,4", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(us)"));
  EXPECT_TRUE(contains(r.out, "(GB/s)"));
  EXPECT_TRUE(contains(r.out, "winner"));
  EXPECT_TRUE(contains(r.out, "crossovers"));
  EXPECT_TRUE(contains(r.out, " nccl ")) << "NCCL's choice is a row of the table";
  EXPECT_TRUE(contains(r.out, "allreduce: ")) << r.out.substr(0, 2000);
  Result table = commsim("predict --format table --nodes 1,4", dir);
  ASSERT_EQ(table.rc, 0) << table.err;
  // The same table but for the command line echoed in its first line.
  EXPECT_EQ(r.out.substr(r.out.find('\n')), table.out.substr(table.out.find('\n')));
  // The winner is one of our schedules, never NCCL's model.
  EXPECT_FALSE(contains(r.out, "  nccl\n")) << r.out.substr(0, 2000);
  // A small sweep prints the table by default.
  Result small = commsim("predict --nodes 16 --algorithms ring,tree --sizes 4GiB", dir);
  ASSERT_EQ(small.rc, 0) << small.err;
  EXPECT_TRUE(contains(small.out, "(GB/s)")) << small.out;
  EXPECT_FALSE(contains(small.out, "fastest, by size")) << small.out;
  Result both = commsim("predict --detail --format csv", dir);
  EXPECT_NE(both.rc, 0);
  EXPECT_TRUE(contains(both.err, "--detail")) << both.err;
}

TEST(PredictE2E, HelpDocumentsEveryOption) {
  test::TempDir dir;
  Result r = commsim("predict --help", dir);
  ASSERT_EQ(r.rc, 0);
  for (const char* opt : {"--topology", "--gpus-per-node", "--nodes", "--collectives", "--algorithms", "--sizes",
                          "--protocols", "--dtype", "--format", "--detail", "summary", "--out", "--force", "examples:",
                          "GB/s", "KiB"})
    EXPECT_TRUE(contains(r.out, opt)) << opt;
  Result v = commsim("--version", dir);
  EXPECT_EQ(v.rc, 0);
  EXPECT_TRUE(contains(v.out, "commsim ")) << v.out;
  EXPECT_TRUE(contains(v.out, "backends:")) << v.out;
}

struct BadInput {
  const char* args;
  const char* says;  // the message must name the problem
};

TEST(PredictE2E, BadInputIsAClearErrorWithNonZeroExit) {
  const BadInput cases[] = {
      {"--collectives allsum", "'allsum'"},
      {"--collectives allreduce --algorithms bruck", "bruck does not apply to allreduce"},
      {"--collectives allreduce --algorithms frobnicate", "'frobnicate'"},
      {"--gpus-per-node 64", "--gpus-per-node 64"},
      {"--gpus-per-node 0", "--gpus-per-node 0"},
      {"--sizes 4KiB:1KiB", "--sizes"},
      {"--sizes 12XB", "--sizes"},
      {"--nodes 0", "--nodes"},
      {"--format xml", "'xml'"},
      {"--topology no-such-topology-file.yaml", "no-such-topology-file"},
      {"--nodez 4", "nodez"},
      {"--force", "--out"},
  };
  test::TempDir dir;
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.args);
    Result r = commsim(std::string("predict ") + c.args, dir);
    EXPECT_NE(r.rc, 0);
    EXPECT_TRUE(contains(r.err, c.says)) << r.err;
    EXPECT_TRUE(r.out.empty()) << "nothing printed before the error: " << r.out.substr(0, 200);
  }
  // The "which do apply" part of the message.
  Result r = commsim("predict --collectives allreduce --algorithms bruck", dir);
  for (Algorithm a : hand_written_algorithms(Collective::AllReduce))
    EXPECT_TRUE(contains(r.err, std::string(to_string(a)))) << r.err;

  Topology topo = load_topology(resolve_topology_path("dgx-h100"));
  if (topo.max_nodes > 0) {
    Result big = commsim("predict --nodes " + std::to_string(topo.max_nodes * 2), dir);
    EXPECT_NE(big.rc, 0);
    EXPECT_TRUE(contains(big.err, "max_nodes")) << big.err;
  }
}

}  // namespace
}  // namespace commsim
