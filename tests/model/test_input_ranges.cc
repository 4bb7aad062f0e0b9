// Values from files and options are refused outside a stated range, with an error that names the
// value, instead of overflowing or rounding to zero further on (a size of 1e19 bytes used to become
// 2^63, a bandwidth of 1e300 TB/s priced every transfer at 0 s).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "model/error.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InputRanges, SizesUpToEightPebibytes) {
  EXPECT_EQ(parse_bytes("9007199254740992"), kMaxBytes);
  EXPECT_NE(error_of([] { parse_bytes("1e16"); }).find("8 PiB"), std::string::npos);
  EXPECT_NE(error_of([] { parse_bytes("1e19"); }).find("'1e19'"), std::string::npos);
  EXPECT_THROW(parse_size_list("8B:1e19"), Error);
}

TEST(InputRanges, BandwidthsALinkCanHave) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("1000 TB/s"), 1e15);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1 B/s"), 1.0);
  EXPECT_NE(error_of([] { parse_bandwidth("1e300 TB/s"); }).find("1 B/s to 1 PB/s"), std::string::npos);
  EXPECT_THROW(parse_bandwidth("5e-324 B/s"), Error);
  EXPECT_THROW(parse_bandwidth("1001 TB/s"), Error);
}

TEST(InputRanges, TimesUpToAMillionSeconds) {
  EXPECT_DOUBLE_EQ(parse_time("1e6 s"), 1e6);
  EXPECT_NE(error_of([] { parse_time("1e303 s"); }).find("'1e303 s'"), std::string::npos);
  EXPECT_THROW(parse_time("inf s"), Error);
  EXPECT_THROW(parse_time("nan us"), Error);
}

TEST(InputRanges, ATopologyWithAnImpossibleValueNamesItsLine) {
  const std::string text = std::string("name: bad\nranks_per_node: 2\n") +
                           "device: { name: CPU, memory: 1 GiB, memory_bandwidth: 10 GB/s }\n" +
                           "intra_node:\n  fabric: shared-memory\n  bandwidth: 1e300 TB/s\n  latency: 1 us\n" +
                           "network: { kind: none }\n";
  const std::string message = error_of([&] { parse_topology(text, "bad.yaml"); });
  EXPECT_NE(message.find("bad.yaml:6"), std::string::npos) << message;
  EXPECT_NE(message.find("1 PB/s"), std::string::npos) << message;
}

TEST(InputRanges, AFolderIsNotATopologyFile) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string message = error_of([&] { load_topology(dir); });
  EXPECT_NE(message.find("is a folder"), std::string::npos) << message;
}

}  // namespace
}  // namespace commsim
