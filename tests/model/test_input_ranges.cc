// Values from files and options are refused outside a stated range, with an error that names the
// value, instead of overflowing or rounding to zero further on (a size of 1e19 bytes used to become
// 2^63, a bandwidth of 1e300 TB/s priced every transfer at 0 s).
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
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

// Options that are plain numbers: --timeout 4.6e9, inf or nan fired the watchdog at once, and
// plan --nodes 1000000000 printed a negative GPU count.
TEST(InputRanges, CheckRangeRefusesWhatIsNotFiniteOrOutside) {
  EXPECT_DOUBLE_EQ(check_range(300.0, 0, kMaxTime_s, "--timeout", "s"), 300.0);
  EXPECT_DOUBLE_EQ(check_range(0.0, 0, kMaxTime_s, "--timeout", "s"), 0.0);
  for (double bad : {4.6e9, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()})
    EXPECT_NE(error_of([&] { check_range(bad, 0, kMaxTime_s, "--timeout", "s"); }).find("is outside 0 to 1e+06 s"),
              std::string::npos)
        << bad;
  EXPECT_EQ(check_range(64LL, 1, kMaxNodes, "--nodes"), 64);
  EXPECT_EQ(error_of([] { check_range(1000000000LL, 1, kMaxNodes, "--nodes"); }),
            "--nodes 1000000000 is outside 1 to 1048576");
  EXPECT_THROW(parse_int_list("16777217"), Error);  // kMaxRanks + 1
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

// A plain factor (no unit) is bounded too: oversubscription 1e300 divided every network bandwidth
// down to nearly nothing and was accepted.
TEST(InputRanges, AnOversubscriptionBeyondAThousandIsRefused) {
  const std::string text = std::string("name: bad\nranks_per_node: 2\n") +
                           "device: { name: CPU, memory: 1 GiB, memory_bandwidth: 10 GB/s }\n" +
                           "intra_node: { fabric: shared-memory, bandwidth: 5 GB/s, latency: 1 us }\n" +
                           "network:\n  kind: tcp\n  fabric: single-switch\n  nics_per_node: 1\n" +
                           "  nic_bandwidth: 10 Gb/s\n  latency: 30 us\n  oversubscription: 1e300\n";
  const std::string message = error_of([&] { parse_topology(text, "bad.yaml"); });
  EXPECT_NE(message.find("bad.yaml:11: network.oversubscription: must be from 1"), std::string::npos) << message;
}

TEST(InputRanges, AFolderIsNotATopologyFile) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string message = error_of([&] { load_topology(dir); });
  EXPECT_NE(message.find("is a folder"), std::string::npos) << message;
}

}  // namespace
}  // namespace commsim
