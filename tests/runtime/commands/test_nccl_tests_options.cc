// nccl-tests' options on `commsim run`: sizes read as nccl-tests' parsesize reads them, its size
// loop, its defaults, and errors that name the option (NVIDIA/nccl-tests src/common.cu).
#include <gtest/gtest.h>

#include "model/error.h"
#include "runtime/commands/cli.h"
#include "runtime/sweep/measured.h"
#include "test_util.h"

namespace commsim {
namespace {

using test::error_of;

TEST(NcclTestsOptions, SizesAreBinaryWithSuffixes) {
  EXPECT_EQ(parse_nccl_tests_size("8", "-b"), 8u);
  EXPECT_EQ(parse_nccl_tests_size("1K", "-b"), 1024u);
  EXPECT_EQ(parse_nccl_tests_size("1k", "-b"), 1024u);
  EXPECT_EQ(parse_nccl_tests_size("256M", "-e"), 256u << 20);
  EXPECT_EQ(parse_nccl_tests_size("8G", "-e"), Bytes{8} << 30);  // 8 GiB, where --sizes 8GB is 8e9
  EXPECT_EQ(parse_nccl_tests_size("0.5G", "-e"), Bytes{1} << 29);
  EXPECT_EQ(parse_nccl_tests_size("2 M", "-e"), 2u << 20);  // sscanf("%lf %1s") skips the blank
  for (const char* bad : {"", "8GB", "8T", "x", "-1"}) {
    const std::string msg = error_of([bad] { parse_nccl_tests_size(bad, "-e"); });
    EXPECT_NE(msg.find("-e: '"), std::string::npos) << bad << ": " << msg;
  }
}

TEST(NcclTestsOptions, SizeLoopIsNcclTests) {
  // -b 8 -e 256M -f 2: 8 B to 256 MiB, 26 sizes.
  const std::vector<Bytes> by2 = nccl_tests_sizes(8, 256u << 20, 1u << 20, 2);
  ASSERT_EQ(by2.size(), 26u);
  EXPECT_EQ(by2.front(), 8u);
  EXPECT_EQ(by2.back(), 256u << 20);
  // Without -f, steps of -i: 1M, 2M, 3M; a step that overshoots -e ends the loop.
  EXPECT_EQ(nccl_tests_sizes(1u << 20, 3u << 20, 1u << 20, 1), (std::vector<Bytes>{1u << 20, 2u << 20, 3u << 20}));
  EXPECT_EQ(nccl_tests_sizes(8, 1u << 20, 1u << 20, 1), (std::vector<Bytes>{8}));
  EXPECT_EQ(nccl_tests_sizes(64, 64, 0, 1), (std::vector<Bytes>{64}));
  EXPECT_NE(error_of([] { nccl_tests_sizes(2048, 1024, 1, 2); }).find("-b 2048 is larger than -e 1024"),
            std::string::npos);
  EXPECT_NE(error_of([] { nccl_tests_sizes(8, 1024, 0, 1); }).find("-i 0"), std::string::npos);
}

TEST(NcclTestsOptions, DefaultsAreNcclTests) {
  NcclTestsOptions o;
  EXPECT_FALSE(o.any());
  o.n = "5";
  EXPECT_TRUE(o.any());
  const NcclTestsSettings s = resolve_nccl_tests(o);
  EXPECT_EQ(s.sizes, (std::vector<Bytes>{32u << 20}));  // -b 32M -e 32M
  EXPECT_EQ(s.iters, 5);
  EXPECT_EQ(s.warmup, 1);
  EXPECT_TRUE(s.check);  // -c 1
  EXPECT_EQ(s.dtype, "float32");
  EXPECT_EQ(s.op, "sum");
  EXPECT_EQ(s.root, 0);
  EXPECT_EQ(s.average, 1);
  EXPECT_FALSE(s.blocking);
  EXPECT_EQ(s.graph_launches, 0);
}

TEST(NcclTestsOptions, ValuesAreReadAsNcclTestsReadsThem) {
  NcclTestsOptions o;
  o.b = "8";
  o.e = "1M";
  o.f = "2";
  o.n = "0x10";  // strtol base 0, as nccl-tests
  o.w = "2";
  o.c = "0";
  o.d = "half";
  o.o = "all";
  o.r = "1";
  o.a = "3";
  o.z = "1";
  o.G = "4";
  const NcclTestsSettings s = resolve_nccl_tests(o);
  EXPECT_EQ(s.sizes.size(), 18u);
  EXPECT_EQ(s.sizes.back(), 1u << 20);
  EXPECT_EQ(s.iters, 16);
  EXPECT_EQ(s.warmup, 2);
  EXPECT_FALSE(s.check);
  EXPECT_EQ(s.dtype, "float16");
  EXPECT_EQ(s.op, "all");
  EXPECT_EQ(s.root, 1);
  EXPECT_EQ(s.average, 3);
  EXPECT_TRUE(s.blocking);
  EXPECT_EQ(s.graph_launches, 4);
}

TEST(NcclTestsOptions, ErrorsNameTheOption) {
  auto error_with = [](auto set) {
    NcclTestsOptions o;
    set(o);
    return error_of([&] { resolve_nccl_tests(o); });
  };
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.n = "20x"; }).find("-n: '20x' is not an integer"),
            std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.a = "4"; }).find("-a 4"), std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.d = "int8"; }).find("-d: commsim has no type 'int8'"),
            std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.o = "prod"; }).find("sum, min and max"), std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.N = "0"; }).find("--passes"), std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.z = "2"; }).find("-z 2"), std::string::npos);
  EXPECT_NE(error_with([](NcclTestsOptions& o) { o.g = "8"; }).find("one rank per GPU"), std::string::npos);
  NcclTestsOptions one_gpu;
  one_gpu.g = "1";
  EXPECT_TRUE(one_gpu.any());
  EXPECT_NO_THROW(resolve_nccl_tests(one_gpu));
}

// `report` compares like with like: points timed per iteration and as nccl-tests do not mix.
TEST(NcclTestsOptions, ReportRefusesMixedTimings) {
  Point a, b, c, unmeasured;
  a.measured_median_us = b.measured_median_us = c.measured_median_us = 10;
  a.timing = "nccl-tests";
  b.timing = "per-iteration";
  c.timing = "";  // a file from before the column: per iteration
  unmeasured.status = "skipped";
  EXPECT_EQ(timing_of(c), "per-iteration");
  EXPECT_EQ(timing_of(unmeasured), "");
  std::vector<Point> points = {a, b, c, unmeasured};
  const std::string msg = error_of([&] { select_timing(points, ""); });
  EXPECT_NE(msg.find("1 nccl-tests, 2 per-iteration"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--timing"), std::string::npos) << msg;
  points = {a, b, c, unmeasured};
  select_timing(points, "per-iteration");
  EXPECT_EQ(points.size(), 3u);  // b, c and the unmeasured point
  points = {a, unmeasured};
  EXPECT_NO_THROW(select_timing(points, ""));
  EXPECT_NE(error_of([&] { select_timing(points, "wall"); }).find("unknown mode 'wall'"), std::string::npos);
}

}  // namespace
}  // namespace commsim
