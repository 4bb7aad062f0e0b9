#pragma once
// Units: every quantity in the model carries its unit in its name (`latency_s`, `bw_Bps`,
// `bytes`). These functions parse the human-written values of topology files and command lines
// ("450 GB/s", "25 Gb/s", "2 us", "4GiB") and format numbers for people.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace commsim {

using Seconds = double;         // time, s
using BytesPerSecond = double;  // bandwidth, B/s
using Bytes = std::uint64_t;    // sizes, B

// What a parsed value may be: anything outside is refused with an error naming the range, so that
// no value overflows or rounds to zero further on (a bandwidth of 1e300 TB/s would price every
// transfer at 0 s).
inline constexpr Bytes kMaxBytes = Bytes{1} << 53;                // 8 PiB: exact in a double
inline constexpr BytesPerSecond kMinBandwidth_Bps = 1.0;          // 1 B/s
inline constexpr BytesPerSecond kMaxBandwidth_Bps = 1e15;         // 1 PB/s
inline constexpr Seconds kMaxTime_s = 1e6;                        // about 11.6 days
// Counts: node counts and rank (GPU) counts up to these, so that products of a rank count with a
// small factor still fit an int (`plan --nodes 1000000000` printed a negative GPU count).
inline constexpr int kMaxNodes = 1 << 20;
inline constexpr int kMaxRanks = 1 << 24;

// `value` when it is finite and from lo to hi; else throws Error "<what> <value> is outside
// <lo> to <hi> <unit>" (what: "--timeout"; unit: "s", or "" for counts).
double check_range(double value, double lo, double hi, std::string_view what, std::string_view unit);
long long check_range(long long value, long long lo, long long hi, std::string_view what);

// "8", "8B", "1KiB", "1 KB" (1000), "4GiB", "1.5MiB"; at most kMaxBytes. Throws Error naming the text.
Bytes parse_bytes(std::string_view text);
// "450 GB/s" (decimal bytes), "25 Gb/s" (bits), "3.35 TB/s", "100 MiB/s". From kMinBandwidth_Bps
// to kMaxBandwidth_Bps.
BytesPerSecond parse_bandwidth(std::string_view text);
// "2 us", "2us", "1.5 µs", "500 ns", "0.1 ms", "1 s". From 0 to kMaxTime_s.
Seconds parse_time(std::string_view text);

// A list of sizes: "8B:4GiB" (factor 2), "8B:4GiB:x4" (factor 4), "1KiB,1MiB,3MiB", or mixed
// with commas. Sorted, duplicates removed. Throws Error on an empty or reversed range.
std::vector<Bytes> parse_size_list(std::string_view text);
// "1,2,4,8" or a range "1:1024" (factor 2) or "1:16:x4". Positive integers up to kMaxRanks.
std::vector<int> parse_int_list(std::string_view text);

// 1024 -> "1KiB", 1536 -> "1.5KiB", 8 -> "8B"; at most `significant` digits below 10^(significant-1)
// of the unit, whole numbers above ("4.43MiB", "485KiB"; with 2: "4.4MiB").
std::string format_bytes(Bytes bytes, int significant = 3);
// Seconds as "12.3 us", "4.56 ms", "1.23 s".
std::string format_time(Seconds s);
// B/s as "370.8 GB/s" (decimal, like nccl-tests).
std::string format_bandwidth(BytesPerSecond bw);

}  // namespace commsim
