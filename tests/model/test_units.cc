// Parsing of the unit-carrying values used in topology files and on the command line.
#include <gtest/gtest.h>

#include "model/error.h"
#include "model/units.h"

namespace commsim {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("8B"), 8u);
  EXPECT_EQ(parse_bytes("1KiB"), 1024u);
  EXPECT_EQ(parse_bytes("1 KB"), 1000u);
  EXPECT_EQ(parse_bytes("4GiB"), 4ull << 30);
  EXPECT_EQ(parse_bytes("1.5MiB"), 3ull << 19);
  EXPECT_EQ(parse_bytes("80 GB"), 80'000'000'000ull);
  EXPECT_THROW(parse_bytes("1.5B"), Error);    // not whole bytes
  EXPECT_THROW(parse_bytes("4 GiBs"), Error);  // unknown unit
  EXPECT_THROW(parse_bytes("GiB"), Error);     // no number
  EXPECT_THROW(parse_bytes("-1 KiB"), Error);
}

TEST(Units, Bandwidth) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("450 GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25 Gb/s"), 25e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3.35 TB/s"), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 MiB/s"), 100.0 * 1024 * 1024);
  EXPECT_THROW(parse_bandwidth("0 GB/s"), Error);
  EXPECT_THROW(parse_bandwidth("-5 GB/s"), Error);
  EXPECT_THROW(parse_bandwidth("450"), Error);     // a bandwidth needs a unit
  EXPECT_THROW(parse_bandwidth("450 GB"), Error);  // a size is not a bandwidth
  EXPECT_THROW(parse_bandwidth("450 furlongs/s"), Error);
}

TEST(Units, Time) {
  EXPECT_DOUBLE_EQ(parse_time("2 us"), 2e-6);
  EXPECT_DOUBLE_EQ(parse_time("2us"), 2e-6);
  EXPECT_DOUBLE_EQ(parse_time("1.5 \xC2\xB5s"), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_time("500 ns"), 500e-9);
  EXPECT_DOUBLE_EQ(parse_time("0.1 ms"), 1e-4);
  EXPECT_DOUBLE_EQ(parse_time("1 s"), 1.0);
  EXPECT_DOUBLE_EQ(parse_time("0 us"), 0.0);
  EXPECT_THROW(parse_time("-1 us"), Error);
  EXPECT_THROW(parse_time("5 parsecs"), Error);
  EXPECT_THROW(parse_time("5"), Error);
}

TEST(Units, SizeLists) {
  auto v = parse_size_list("8B:64B");
  EXPECT_EQ(v, (std::vector<Bytes>{8, 16, 32, 64}));
  v = parse_size_list("1KiB:16KiB:x4");
  EXPECT_EQ(v, (std::vector<Bytes>{1024, 4096, 16384}));
  v = parse_size_list("1MiB, 1KiB ,1KiB");
  EXPECT_EQ(v, (std::vector<Bytes>{1024, 1 << 20}));
  EXPECT_EQ(parse_size_list("8B:4GiB").size(), 30u);  // 2^3 .. 2^32
  EXPECT_THROW(parse_size_list("64B:8B"), Error);
  EXPECT_THROW(parse_size_list(""), Error);
  EXPECT_EQ(parse_int_list("1:1024").size(), 11u);
  EXPECT_THROW(parse_int_list("0,1"), Error);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(1024), "1KiB");
  EXPECT_EQ(format_bytes(1536), "1.5KiB");
  EXPECT_EQ(format_bytes(8), "8B");
  EXPECT_EQ(format_bandwidth(370.8e9), "370.8 GB/s");
}

}  // namespace
}  // namespace commsim
