// The parser of NCCL's TUNING log (collectives/libraries/nccl_tuning_log.h), on a log in NCCL 2.28.3's format
// (tests/collectives/data/nccl-2.28.3-tuning.log) and on single lines of every format variant.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "collectives/libraries/nccl_tuning_log.h"

namespace commsim {
namespace {

std::string read_fixture() {
  std::ifstream f(std::string(COMMSIM_SOURCE_DIR) + "/tests/collectives/data/nccl-2.28.3-tuning.log");
  EXPECT_TRUE(f) << "the fixture log is missing";
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(NcclTuningLog, CurrentFormat) {
  auto t = parse_nccl_tuning_line(
      "gpu-h200-0:48213:48213 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={0..23}");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "AllReduce");
  EXPECT_EQ(t->bytes, 4194304u);
  EXPECT_EQ(t->algorithm, "Ring");
  EXPECT_EQ(t->protocol, "LL128");
  EXPECT_EQ(t->channels, 24);
}

TEST(NcclTuningLog, ChannelRangeNotFromZero) {
  auto t = parse_nccl_tuning_line(
      "h:1:1 [1] NCCL INFO ReduceScatter: 2097152 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={4..19}\r\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->channels, 16);
}

TEST(NcclTuningLog, UpperCaseNamesAndCommSuffix) {
  auto t = parse_nccl_tuning_line(
      "h:1:1 [0] NCCL INFO AllReduce: 4 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0} comm 0x55a7a339db50");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->algorithm, "Tree");
  EXPECT_EQ(t->protocol, "LL");
  EXPECT_EQ(t->channels, 1);
}

// NCCL_DEBUG_TIMESTAMP_FORMAT puts a timestamp before the prefix; NVLS and PAT keep NCCL's spelling.
TEST(NcclTuningLog, TimestampPrefixAndOtherAlgorithms) {
  auto t = parse_nccl_tuning_line(
      "[2026-12-04 18:00:00.123456] gpu-a:7:7 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo nvls proto simple "
      "channel{Lo..Hi}={0..15}");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->algorithm, "NVLS");
  EXPECT_EQ(t->protocol, "Simple");
  EXPECT_EQ(t->channels, 16);
  auto pat = parse_nccl_tuning_line("h:1:1 [0] NCCL INFO AllGather: 4096 Bytes -> Algo PAT proto LL channel{Lo..Hi}={0..1}");
  ASSERT_TRUE(pat);
  EXPECT_EQ(pat->algorithm, "PAT");
}

TEST(NcclTuningLog, WithoutChannels) {
  auto t = parse_nccl_tuning_line("NCCL INFO Broadcast: 1024 Bytes -> Algo Ring proto Simple");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "Broadcast");
  EXPECT_EQ(t->channels, 0);
}

TEST(NcclTuningLog, OldNumericFormat) {
  auto t = parse_nccl_tuning_line("h:1:1 [0] NCCL INFO 4096 Bytes -> Algo 0 proto 2 time 9.337600");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "");
  EXPECT_EQ(t->algorithm, "Tree");
  EXPECT_EQ(t->protocol, "Simple");
  EXPECT_EQ(t->channels, 0);
  EXPECT_FALSE(parse_nccl_tuning_line("h:1:1 [0] NCCL INFO 4096 Bytes -> Algo 7 proto 0 time 1.0"));
  EXPECT_FALSE(parse_nccl_tuning_line("h:1:1 [0] NCCL INFO 4096 Bytes -> Algo 1 proto 3 time 1.0"));
}

// 2.24+ spells the algorithms as ncclAlgoToString does (collectives.cc:58-69 at v2.28.9-1); they
// are written as the TUNING table names them.
TEST(NcclTuningLog, UnderscoredAlgorithmNames) {
  for (const auto& [printed, name] : {std::pair<const char*, const char*>{"NVLS_TREE", "NVLSTree"},
                                      {"COLLNET_DIRECT", "CollNetDirect"},
                                      {"COLLNET_CHAIN", "CollNetChain"}}) {
    auto t = parse_nccl_tuning_line(std::string("h:1:1 [0] NCCL INFO AllReduce: 8388608 Bytes -> Algo ") + printed +
                                    " proto SIMPLE channel{Lo..Hi}={0..15}");
    ASSERT_TRUE(t) << printed;
    EXPECT_EQ(t->algorithm, name);
    EXPECT_EQ(t->protocol, "Simple");
  }
}

// 2.23 (enqueue.cc:1855 at v2.23.4-1): the function, then NCCL's indices and the estimated time.
TEST(NcclTuningLog, NumericFormatWithTheFunction) {
  auto t = parse_nccl_tuning_line("h:1:1 [0] NCCL INFO AllGather: 262144 Bytes -> Algo 1 proto 1 time 54.707825");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "AllGather");
  EXPECT_EQ(t->bytes, 262144u);
  EXPECT_EQ(t->algorithm, "Ring");
  EXPECT_EQ(t->protocol, "LL128");
  EXPECT_EQ(t->channels, 0);
  EXPECT_FALSE(parse_nccl_tuning_line("h:1:1 [0] NCCL INFO AllGather: 262144 Bytes -> Algo 1 proto 1 time x"));
  EXPECT_FALSE(parse_nccl_tuning_line("h:1:1 [0] NCCL INFO AllGather: 262144 Bytes -> Algo 1 proto 1"));
}

TEST(NcclTuningLog, SymmetricKernel) {
  auto t = parse_nccl_tuning_line(
      "h:1:1 [0] NCCL INFO AllGather [Symmetric]: 65536 Bytes -> Kernel AllGather_LL nchannels 8 nthreads 512 nWorks "
      "1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->function, "AllGather");
  EXPECT_EQ(t->algorithm, "Symmetric");
  EXPECT_EQ(t->protocol, "AllGather_LL");
  EXPECT_EQ(t->channels, 8);
  EXPECT_FALSE(parse_nccl_tuning_line(
      "h:1:1 [0] NCCL INFO AllGather [Symmetric]: 65536 Bytes -> Kernel AllGather_LL nchannels x"));
}

TEST(NcclTuningLog, NotTuningLines) {
  for (const char* line : {
           "",
           "plain text",
           "h:1:1 [0] NCCL INFO NCCL version 2.28.3+cuda12.9",
           "h:1:1 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels",
           "h:1:1 [0] enqueue.cc:2371 NCCL WARN AllReduce: 4 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}",
           "h:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={0..",
           "h:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo Ring",
           "h:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo Ring proto",
           "h:1:1 [0] NCCL INFO AllReduce: 4194304 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={7..3}",
           "h:1:1 [0] NCCL INFO AllReduce: 4x94304 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={0..3}",
           "h:1:1 [0] NCCL INFO All Reduce: 4 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}",
           "h:1:1 [0] NCCL INFO AllReduce: -4 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}",
       })
    EXPECT_FALSE(parse_nccl_tuning_line(line)) << line;
}

TEST(NcclTuningLog, FixtureLog) {
  const std::vector<NcclTuningLine> lines = parse_nccl_tuning_log(read_fixture());
  // 13 good lines of the current format, one symmetric kernel, one of the old format; the
  // malformed ones, the INIT lines and the WARN line are left out.
  ASSERT_EQ(lines.size(), 15u);
  EXPECT_EQ(lines.front().function, "AllReduce");
  EXPECT_EQ(lines.front().bytes, 8u);
  EXPECT_EQ(lines.back().function, "");
  EXPECT_EQ(lines.back().algorithm, "Ring");
  EXPECT_EQ(lines.back().protocol, "LL");

  // AllReduce: Ring/Simple on 24 channels three times is the most frequent choice; the old-format
  // line counts for any function.
  NcclChoice ar = nccl_choice(lines, "AllReduce");
  EXPECT_EQ(ar.algorithm, "Ring");
  EXPECT_EQ(ar.protocol, "Simple");
  EXPECT_EQ(ar.channels, 24);
  EXPECT_EQ(ar.calls, 3);
  EXPECT_EQ(ar.other, 8);

  NcclChoice rs = nccl_choice(lines, "ReduceScatter");
  EXPECT_EQ(rs.protocol, "LL128");
  EXPECT_EQ(rs.channels, 16);
  EXPECT_EQ(rs.calls, 1);
  EXPECT_EQ(rs.other, 1);  // the old-format line
}

TEST(NcclTuningLog, ChoiceTieGoesToTheFirstAndEmptyWhenNone) {
  std::vector<NcclTuningLine> lines = {
      {"AllGather", 64, "Ring", "LL", 2}, {"AllGather", 64, "Ring", "Simple", 4}, {"AllReduce", 64, "Tree", "LL", 1}};
  NcclChoice c = nccl_choice(lines, "AllGather");
  EXPECT_EQ(c.protocol, "LL");
  EXPECT_EQ(c.calls, 1);
  EXPECT_EQ(c.other, 1);
  EXPECT_TRUE(nccl_choice(lines, "Broadcast").empty());
  EXPECT_TRUE(nccl_choice({}, "AllReduce").empty());
}

}  // namespace
}  // namespace commsim
