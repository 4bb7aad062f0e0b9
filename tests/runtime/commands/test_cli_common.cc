// The shared command-line parsing: lists, validation messages, the parser helper.
#include <gtest/gtest.h>

#include <functional>

#include "model/error.h"
#include "runtime/commands/cli.h"
#include "test_util.h"

namespace commsim {
namespace {

using test::error_of;


const std::vector<Algorithm> kHand(kHandWrittenAlgorithms.begin(), kHandWrittenAlgorithms.end());

TEST(CliCommon, Collectives) {
  EXPECT_EQ(parse_collectives("all").size(), kAllCollectives.size());
  EXPECT_EQ(parse_collectives("allreduce, allgather,allreduce"),
            (std::vector<Collective>{Collective::AllReduce, Collective::AllGather}));
  std::string msg = error_of([] { parse_collectives("allreduce,allsum"); });
  EXPECT_NE(msg.find("'allsum'"), std::string::npos) << msg;
  for (Collective c : kAllCollectives) EXPECT_NE(msg.find(std::string(to_string(c))), std::string::npos) << msg;
  EXPECT_NE(error_of([] { parse_collectives("allreduce,"); }).find("unknown collective ''"), std::string::npos);
}

TEST(CliCommon, AlgorithmsAndPairs) {
  AlgorithmSelection all = parse_algorithms("all", kHand);
  EXPECT_TRUE(all.all);
  auto pairs = pair_algorithms({Collective::AllReduce, Collective::SendRecv}, all, kHand, nullptr);
  ASSERT_EQ(pairs.size(), 2u);
  for (const auto& [c, algs] : pairs) {
    EXPECT_FALSE(algs.empty());
    for (Algorithm a : algs) EXPECT_TRUE(applies(c, a)) << to_string(c) << " " << to_string(a);
  }

  std::string unknown = error_of([] { parse_algorithms("ring,mpi", kHand); });
  EXPECT_NE(unknown.find("'mpi'"), std::string::npos) << "mpi is not in the allowed list: " << unknown;
  EXPECT_NE(unknown.find("rabenseifner"), std::string::npos) << unknown;

  // An algorithm that applies to none of the collectives: the message says which do.
  AlgorithmSelection bruck = parse_algorithms("bruck", kHand);
  std::string msg = error_of([&] { pair_algorithms({Collective::AllReduce}, bruck, kHand, nullptr); });
  EXPECT_NE(msg.find("bruck does not apply to allreduce"), std::string::npos) << msg;
  for (Algorithm a : hand_written_algorithms(Collective::AllReduce))
    EXPECT_NE(msg.find(std::string(to_string(a))), std::string::npos) << msg;

  // Applies to some: dropped for the others, with a note.
  AlgorithmSelection sel = parse_algorithms("ring,bruck", kHand);
  std::vector<std::string> skipped;
  auto p = pair_algorithms({Collective::AllReduce, Collective::AllGather}, sel, kHand, &skipped);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].second, std::vector<Algorithm>{Algorithm::Ring});
  EXPECT_EQ(p[1].second, (std::vector<Algorithm>{Algorithm::Ring, Algorithm::Bruck}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("bruck does not apply to allreduce"), std::string::npos) << skipped[0];

  // A collective left with nothing is an error.
  std::string none = error_of([&] {
    pair_algorithms({Collective::AllReduce, Collective::SendRecv}, parse_algorithms("ring", kHand), kHand, nullptr);
  });
  EXPECT_NE(none.find("sendrecv"), std::string::npos) << none;
  EXPECT_NE(none.find("direct"), std::string::npos) << none;
}

TEST(CliCommon, ProtocolsSizesNodesFormat) {
  EXPECT_EQ(parse_protocols("none"), std::vector<Protocol>{Protocol::None});
  EXPECT_EQ(parse_protocols("all").size(), 3u);
  EXPECT_EQ(parse_protocols("LL,simple"), (std::vector<Protocol>{Protocol::LL, Protocol::Simple}));
  EXPECT_NE(error_of([] { parse_protocols("LL256"); }).find("'LL256'"), std::string::npos);

  auto sizes = parse_sizes("1KiB:4KiB");
  EXPECT_EQ(sizes, (std::vector<Bytes>{1024, 2048, 4096}));
  EXPECT_NE(error_of([] { parse_sizes("4KiB:1KiB"); }).find("--sizes"), std::string::npos);

  EXPECT_EQ(parse_nodes("1:8"), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_NE(error_of([] { parse_nodes("0,2"); }).find("--nodes"), std::string::npos);

  EXPECT_EQ(parse_format("csv"), OutputFormat::Csv);
  std::string f = error_of([] { parse_format("xml"); });
  EXPECT_NE(f.find("table, csv, json"), std::string::npos) << f;
}

TEST(CliCommon, CommandLineParsesAndReportsErrors) {
  auto make = [](SweepOptions& s, OutputOptions& o) {
    CommandLine cli("predict", "predict things", "commsim predict --nodes 1,2");
    add_sweep_options(cli.options(), s, true);
    add_output_options(cli.options(), o, false);
    return cli;
  };
  {
    SweepOptions s;
    OutputOptions o;
    CommandLine cli = make(s, o);
    const char* argv[] = {"predict", "--nodes", "1,2", "--sizes=1KiB", "--force", "--out", "x.h5"};
    EXPECT_TRUE(cli.parse(7, const_cast<char**>(argv)));
    EXPECT_EQ(s.nodes, "1,2");
    EXPECT_EQ(s.sizes, "1KiB");
    EXPECT_EQ(s.collectives, "allreduce");  // default kept
    EXPECT_TRUE(o.force);
    EXPECT_EQ(o.out, "x.h5");
    EXPECT_TRUE(cli.given("nodes"));
    EXPECT_FALSE(cli.given("collectives"));
    std::string help = cli.help();
    for (const char* opt : {"--collectives", "--algorithms", "--sizes", "--nodes", "--protocols", "--format", "--out",
                            "--force", "examples:", "KiB"})
      EXPECT_NE(help.find(opt), std::string::npos) << opt;
  }
  {
    SweepOptions s;
    OutputOptions o;
    CommandLine cli = make(s, o);
    const char* argv[] = {"predict", "--nodez", "1"};
    std::string msg = error_of([&] { cli.parse(3, const_cast<char**>(argv)); });
    EXPECT_NE(msg.find("nodez"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--help"), std::string::npos) << msg;
  }
  {
    SweepOptions s;
    OutputOptions o;
    CommandLine cli = make(s, o);
    const char* argv[] = {"predict", "--nodes", "2", "stray"};
    EXPECT_NE(error_of([&] { cli.parse(4, const_cast<char**>(argv)); }).find("unexpected argument 'stray'"),
              std::string::npos);
  }
  {
    SweepOptions s;
    OutputOptions o;
    CommandLine cli = make(s, o);
    const char* argv[] = {"predict", "--help"};
    testing::internal::CaptureStdout();
    bool go_on = cli.parse(2, const_cast<char**>(argv));
    std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_FALSE(go_on);
    EXPECT_NE(printed.find("usage: commsim predict"), std::string::npos);
  }
}

}  // namespace
}  // namespace commsim
