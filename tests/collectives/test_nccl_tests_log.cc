// The nccl-tests log reader on every published log of tests/data/nccl-tests (each raw/<id>.txt
// against the rows of <id>.csv, read from the same output by hand), on nccl-tests' JSON output,
// and on the forms a pasted log takes: launcher prefixes, NCCL lines inside rows, bad and cut logs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "collectives/libraries/nccl_tests_log.h"
#include "model/error.h"

namespace commsim {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(COMMSIM_SOURCE_DIR) / "tests/data/nccl-tests";

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, sep);) out.push_back(field);
  return out;
}

// An <id>.csv: the `# collective:` metadata line and the rows.
struct Truth {
  std::string collective;
  std::vector<std::vector<std::string>> rows;
};

Truth read_truth(const std::filesystem::path& csv) {
  Truth t;
  std::ifstream f(csv);
  bool header = false;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("# collective: ", 0) == 0) t.collective = line.substr(14);
    if (line.empty() || line[0] == '#') continue;
    if (!header) {
      header = true;  // collective,size_B,count,type,redop,oop_time_us,...
      continue;
    }
    t.rows.push_back(split(line, ','));
  }
  return t;
}

double num(const std::string& s) {
  return std::stod(s);
}

// The table header of nccl-tests 2.x and one all_reduce row under it.
const std::string kFirstRow =
    "        1024           256     float     sum      -1    10.00    0.10    0.18      0    10.50    0.10    0.17     "
    " 0";
const std::string kHeaderAndFirstRow =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n" +
    kFirstRow + "\n";

TEST(NcclTestsLog, ReadsEveryPublishedLogAsItsCsvSays) {
  int files = 0;
  std::size_t rows = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus / "raw")) {
    if (entry.path().extension() != ".txt") continue;
    const std::string id = entry.path().stem().string();
    SCOPED_TRACE(id);
    const Truth truth = read_truth(kCorpus / (id + ".csv"));
    ASSERT_FALSE(truth.rows.empty());
    const NcclTestsLog log = parse_nccl_tests_log(read_text(entry.path()), id, truth.collective);
    EXPECT_EQ(log.error, "");
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front();
    ASSERT_EQ(log.rows.size(), truth.rows.size());
    for (std::size_t i = 0; i < truth.rows.size(); ++i) {
      const auto& want = truth.rows[i];
      const NcclTestsRow& got = log.rows[i];
      SCOPED_TRACE("row " + std::to_string(i) + " (line " + std::to_string(got.line) + ")");
      ASSERT_EQ(want.size(), 11u);
      EXPECT_EQ(got.collective, want[0]);
      EXPECT_EQ(got.size_B, std::stoull(want[1]));
      EXPECT_EQ(got.count, std::stoull(want[2]));
      EXPECT_EQ(got.type, want[3]);
      EXPECT_EQ(got.redop, want[4]);
      EXPECT_EQ(got.out_of_place.time_us, num(want[5]));
      EXPECT_EQ(got.out_of_place.algbw_gbps, num(want[6]));
      EXPECT_EQ(got.out_of_place.busbw_gbps, num(want[7]));
      EXPECT_EQ(got.in_place.time_us, num(want[8]));
      EXPECT_EQ(got.in_place.algbw_gbps, num(want[9]));
      EXPECT_EQ(got.in_place.busbw_gbps, num(want[10]));
    }
    ++files;
    rows += log.rows.size();
  }
  EXPECT_EQ(files, 48);
  EXPECT_GT(rows, 1700u);
}

TEST(NcclTestsLog, ReadsTheMetadataOfAMultiNodeLog) {
  const NcclTestsLog log = parse_nccl_tests_log(read_text(kCorpus / "raw/rjun_h100_10n_g8.txt"), "rjun");
  EXPECT_EQ(log.nccl_tests_version, "2.17.8");
  EXPECT_EQ(log.nccl_version, "2.29.2");  // nccl-library=22902
  EXPECT_EQ(log.threads, 1);
  EXPECT_EQ(log.gpus_per_thread, 1);
  EXPECT_EQ(log.iters, 20);
  EXPECT_EQ(log.warmup_iters, 5);
  ASSERT_EQ(log.ranks.size(), 80u);
  EXPECT_EQ(log.hosts().size(), 10u);
  EXPECT_EQ(log.ranks[9].host, "cnode3-003");
  EXPECT_EQ(log.ranks[9].device, 1);
  EXPECT_EQ(log.ranks[9].gpu, "NVIDIA H100 80GB HBM3");
  std::set<std::string> collectives;
  for (const auto& r : log.rows) collectives.insert(r.collective);
  EXPECT_EQ(collectives, (std::set<std::string>{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"}));
  ASSERT_FALSE(log.summaries.empty());
  EXPECT_EQ(log.summaries.front().collective, "all_reduce");
  EXPECT_EQ(log.command_line, "");  // not printed
  // A footer without its number.
  EXPECT_TRUE(std::isnan(parse_nccl_tests_log("# Avg bus bandwidth    :\n", "empty").summaries.at(0).avg_busbw_gbps));
}

TEST(NcclTestsLog, ReadsTheOldFormatUnderMpirunTagsAndTheForcedAlgorithm) {
  const NcclTestsLog log =
      parse_nccl_tests_log(read_text(kCorpus / "raw/aws_p4d_efa_a100_2n_ring.txt"), "aws", "all_reduce");
  ASSERT_EQ(log.rows.size(), 28u);
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_EQ(log.rows[0].out_of_place.wrong, -1);
  EXPECT_DOUBLE_EQ(log.rows[0].out_of_place.max_error, 2e-07);
  EXPECT_EQ(log.iters, 1000);
  EXPECT_EQ(ranks_from_bandwidths(log), 16);  // no rank lines: busbw/algbw = 2(n-1)/n
  EXPECT_DOUBLE_EQ(log.summaries.at(0).avg_busbw_gbps, 7.80081);

  const NcclTestsLog forced = parse_nccl_tests_log(
      "$ mpirun -np 16 -x NCCL_ALGO=RING -x NCCL_PROTO=Simple ./build/all_reduce_perf -b 8 -e 1G\n" +
          read_text(kCorpus / "raw/aws_p4d_efa_a100_2n_ring.txt"),
      "aws");
  EXPECT_EQ(forced.forced_algo, "RING");
  EXPECT_EQ(forced.forced_proto, "Simple");
  EXPECT_EQ(forced.rows.at(0).collective, "all_reduce");            // from the tool's name
  EXPECT_EQ(forced.command_line.substr(0, 15), "mpirun -np 16 -");  // without the prompt
}

TEST(NcclTestsLog, ReadsRowsSplicedWithNcclLinesAndTheirAlgorithm) {
  const std::string log_text =
      "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n"
      "node1:100:100 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
      "[2024-05-01 12:00:00] node1:100:100 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n"
      "node1:100:100 [0] NCCL INFO   Algorithm   |            Tree |            Ring\n"
      "node1:100:100 [0] NCCL INFO   Protocol    |  LL | LL128 | Simple |  LL | LL128 | Simple\n"
      "node1:100:100 [0] NCCL INFO    AllReduce  |  9.4/ 7.5 | 17.4/ 18.0 | 61.0/ 36.0 |  8.4/ 3.7 | 14.8/ 28.1 | "
      "23.0/ 72.0\n"
      "node1:100:100 [0] NCCL INFO comm 0x5601 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
      "node1:100:100 [0] NCCL INFO   Algorithm   |            Tree |            Ring\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "     1048576        262144     float     sum      -1node1:100:100 [0] NCCL INFO AllReduce: 1048576 Bytes -> "
      "Algo Ring proto LL128 channel{Lo..Hi}={0..7}\n"
      "node1:100:100 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={0..7}\n"
      "    20.50   51.15   89.51      0node1:100:100 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo Ring proto LL128 "
      "channel{Lo..Hi}={0..7}\n"
      "    20.40   51.40   89.95      0\n"
      "     2097152        524288     float     sum      -1    30.10   69.67  121.93      0    30.00   69.91  122.34   "
      " N/A\n"
      "# Avg bus bandwidth    : 105.9\n";
  const NcclTestsLog log = parse_nccl_tests_log(log_text, "spliced", "allreduce");
  ASSERT_EQ(log.error, "");
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[0].collective, "all_reduce");
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_EQ(log.rows[0].out_of_place.time_us, 20.50);
  EXPECT_EQ(log.rows[0].in_place.busbw_gbps, 89.95);
  EXPECT_EQ(log.rows[0].in_place.wrong, 0);
  EXPECT_EQ(log.rows[0].nccl_algo, "Ring");
  EXPECT_EQ(log.rows[0].nccl_proto, "LL128");
  EXPECT_EQ(log.rows[0].nccl_channels, 8);
  EXPECT_EQ(log.rows[0].line, 10);
  EXPECT_EQ(log.rows[1].nccl_algo, "");       // no per-call line printed with it
  EXPECT_EQ(log.rows[1].in_place.wrong, -1);  // N/A
  EXPECT_EQ(log.nccl_version, "2.19.3");
  EXPECT_EQ(log.forced_proto, "LL128");
  EXPECT_EQ(log.forced_algo, "");
  EXPECT_EQ(log.nccl_ranks, 16);
  EXPECT_EQ(log.nccl_nodes, 2);
  ASSERT_EQ(log.nccl_tuning_table.size(), 3u);  // the first table only
  EXPECT_EQ(log.nccl_tuning_table[2].substr(0, 9), "AllReduce");
}

TEST(NcclTestsLog, StripsSrunLabelsAndReadsPerIterationColumns) {
  const std::string log_text =
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    "
      "i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%\n"
      "0:         1024           256     float     sum      -1    10.00    0.10    0.18      0     9.00    11.00    "
      "11.00     3.10    10.50    0.10    0.17      0     9.50    11.50    11.50     2.90\n";
  const NcclTestsLog log = parse_nccl_tests_log(log_text, "srun", "all_reduce");
  ASSERT_EQ(log.error, "");
  ASSERT_EQ(log.rows.size(), 1u);
  EXPECT_EQ(log.rows[0].in_place.time_us, 10.50);
  EXPECT_EQ(log.rows[0].in_place.wrong, 0);
}

TEST(NcclTestsLog, ReadsNcclTestsJson) {
  const NcclTestsLog log = parse_nccl_tests_log(
      read_text(std::filesystem::path(COMMSIM_SOURCE_DIR) / "tests/collectives/data/nccl-tests-all_reduce.json"),
      "json");
  ASSERT_EQ(log.error, "");
  EXPECT_TRUE(log.json);
  ASSERT_EQ(log.rows.size(), 3u);
  EXPECT_EQ(log.rows[0].collective, "all_reduce");
  EXPECT_EQ(log.rows[0].size_B, 1048576u);
  EXPECT_EQ(log.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(log.rows[2].in_place.busbw_gbps, 364.78);
  EXPECT_EQ(log.rows[2].out_of_place.wrong, 0);
  EXPECT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(log.nccl_version, "2.29.2");
  EXPECT_EQ(log.iters, 20);
  EXPECT_EQ(log.forced_algo, "Ring");
  EXPECT_NE(log.command_line.find("-g 1"), std::string::npos);

  // Cut in the middle of the third result: the two before it are kept, with a warning.
  const std::string text =
      read_text(std::filesystem::path(COMMSIM_SOURCE_DIR) / "tests/collectives/data/nccl-tests-all_reduce.json");
  const NcclTestsLog cut = parse_nccl_tests_log(text.substr(0, text.find("8589934592")), "cut.json");
  EXPECT_EQ(cut.error, "");
  EXPECT_EQ(cut.rows.size(), 2u);
  ASSERT_EQ(cut.warnings.size(), 1u);
  EXPECT_NE(cut.warnings[0].find("cut.json:"), std::string::npos);
  EXPECT_NE(parse_nccl_tests_log("{\"version\": 2, \"results\": [", "bad.json").error, "");
  const NcclTestsLog wrong_type = parse_nccl_tests_log("{\"results\": [{\"size\": \"big\"}]}", "type.json");
  EXPECT_NE(wrong_type.error.find("type.json:"), std::string::npos) << wrong_type.error;
}

TEST(NcclTestsLog, NamesTheLineOfABadRowAndKeepsTheRowsBefore) {
  const std::string text =
      kHeaderAndFirstRow +
      "        2048           512     float     sum      -1    1x.00    0.20    0.36      0    10.50    0.20    0.35   "
      "   0\n"
      "        4096          1024     float     sum      -1    10.00    0.41    0.72      0    10.50    0.39    0.68   "
      "   0\n";
  const NcclTestsLog log = parse_nccl_tests_log(text, "bad.log", "all_reduce");
  EXPECT_EQ(log.rows.size(), 1u);
  EXPECT_NE(log.error.find("bad.log:3:"), std::string::npos) << log.error;
  EXPECT_NE(log.error.find("'1x.00'"), std::string::npos) << log.error;

  // One field too many and no header: no layout fits.
  const NcclTestsLog extra = parse_nccl_tests_log(kFirstRow + "  7\n", "extra.log");
  EXPECT_NE(extra.error.find("extra.log:1:"), std::string::npos) << extra.error;
}

TEST(NcclTestsLog, KeepsTheRowsOfACutLogWithAWarning) {
  const std::string text = kHeaderAndFirstRow + "        2048           512     float     sum      -1    11.00    0.19";
  const NcclTestsLog log = parse_nccl_tests_log(text, "cut.log", "all_reduce");
  EXPECT_EQ(log.error, "");
  EXPECT_EQ(log.rows.size(), 1u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings[0].find("cut.log:3:"), std::string::npos) << log.warnings[0];

  const NcclTestsLog cut_then_more = parse_nccl_tests_log(text + "\n# Avg bus bandwidth    : 0.1\n", "cut2.log");
  EXPECT_NE(cut_then_more.error.find("cut2.log:3: the row is cut short"), std::string::npos) << cut_then_more.error;
  EXPECT_EQ(cut_then_more.rows.size(), 1u);
}

TEST(NcclTestsLog, TellsRanksAndNodesFromTheLogElseAsGiven) {
  auto placement = [](const char* id, int nodes = 0, int gpus_per_node = 0) {
    const NcclTestsLog log =
        parse_nccl_tests_log(read_text(kCorpus / "raw" / (std::string(id) + ".txt")), id, "all_reduce");
    const NcclTestsPlacement p = placement_of(log, id, nodes, gpus_per_node);
    return std::to_string(p.ranks) + "/" + std::to_string(p.nodes) + (p.note.empty() ? "" : " (note)");
  };
  EXPECT_EQ(placement("rjun_h100_10n_g8"), "80/10");                // rank lines
  EXPECT_EQ(placement("rjun_h100_10n_g8", 2), "80/10 (note)");      // the log wins
  EXPECT_EQ(placement("h100sxm_nvs_g4_small_reg0_graph0"), "4/1");  // -g 4, one process
  EXPECT_EQ(placement("oci_tut_a100_1n"), "8/1");                   // no rank lines; nGpus 8, busbw/algbw
  EXPECT_EQ(placement("aws_p4d_efa_a100_2n_ring", 2), "16/2");      // busbw/algbw = 2(16-1)/16
  EXPECT_EQ(placement("aws_p4d_efa_a100_2n_ring", 0, 8), "16/2");
  EXPECT_EQ(placement("aws_p4de_efa_2n", 4, 4), "16/4");       // as given
  EXPECT_THROW(placement("aws_p4d_efa_a100_2n_ring"), Error);  // 16 ranks, nodes unknown
  const NcclTestsLog nothing = parse_nccl_tests_log("", "empty.log");
  try {
    placement_of(nothing, "empty.log");
    FAIL() << "no ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.log:"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsLog, IgnoresLinesThatAreNotRows) {
  const NcclTestsLog log = parse_nccl_tests_log(
      "MPICH Slingshot Network Summary: 3 network timeouts\n2024-05-01 12:00:00 job started\n", "other.log");
  EXPECT_EQ(log.error, "");
  EXPECT_TRUE(log.rows.empty());
  EXPECT_EQ(nccl_function_of("all_gather_perf"), "AllGather");
  EXPECT_EQ(nccl_function_of("gather"), "");
}

}  // namespace
}  // namespace commsim
