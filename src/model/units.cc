#include "model/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/error.h"

namespace commsim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "450 GB/s" into (450, "GB/s"). Throws if there is no leading number.
std::pair<double, std::string> split_number(std::string_view text, std::string_view what) {
  std::string_view s = trim(text);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-' ||
                          s[i] == '+' || s[i] == 'e' || s[i] == 'E')) {
    // 'e' only counts as an exponent when followed by a digit or sign (so "8e" is not eaten).
    if ((s[i] == 'e' || s[i] == 'E') &&
        !(i + 1 < s.size() && (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '-' || s[i + 1] == '+')))
      break;
    ++i;
  }
  std::string num(s.substr(0, i));
  double value = 0;
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), value);
  if (num.empty() || ec != std::errc() || ptr != num.data() + num.size() || !std::isfinite(value))
    throw Error("cannot read " + std::string(what) + " '" + std::string(text) + "': expected a number followed by a unit");
  return {value, std::string(trim(s.substr(i)))};
}

}  // namespace

Bytes parse_bytes(std::string_view text) {
  auto [value, unit] = split_number(text, "size");
  static const std::pair<const char*, double> units[] = {
      {"", 1},          {"B", 1},         {"KB", 1e3},     {"MB", 1e6},     {"GB", 1e9},   {"TB", 1e12},
      {"KiB", 1024.0},  {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"K", 1024.0},    {"M", 1048576.0}, {"G", 1073741824.0}, {"k", 1024.0}};
  for (auto& [name, mult] : units) {
    if (unit == name) {
      double bytes = value * mult;
      if (bytes < 0) throw Error("size '" + std::string(text) + "' is negative");
      if (bytes > static_cast<double>(kMaxBytes))
        throw Error("size '" + std::string(text) + "' is larger than the largest size commsim takes, 8 PiB");
      if (std::abs(bytes - std::round(bytes)) > 1e-6)
        throw Error("size '" + std::string(text) + "' is not a whole number of bytes");
      return static_cast<Bytes>(std::llround(bytes));
    }
  }
  throw Error("size '" + std::string(text) + "' has unknown unit '" + unit +
              "' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
}

BytesPerSecond parse_bandwidth(std::string_view text) {
  auto [value, unit] = split_number(text, "bandwidth");
  std::string u = unit;
  if (u.size() > 2 && u.substr(u.size() - 2) == "ps") u = u.substr(0, u.size() - 2) + "/s";  // Gbps -> Gb/s
  static const std::pair<const char*, double> units[] = {
      {"B/s", 1},        {"KB/s", 1e3},      {"MB/s", 1e6},      {"GB/s", 1e9},      {"TB/s", 1e12},
      {"KiB/s", 1024.0}, {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"TiB/s", 1099511627776.0},
      {"b/s", 1 / 8.0},  {"Kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},  {"Gb/s", 1e9 / 8},  {"Tb/s", 1e12 / 8}};
  for (auto& [name, mult] : units) {
    if (u == name) {
      double bw = value * mult;
      if (!(bw > 0)) throw Error("bandwidth '" + std::string(text) + "' must be positive");
      if (bw < kMinBandwidth_Bps || bw > kMaxBandwidth_Bps)
        throw Error("bandwidth '" + std::string(text) + "' is outside what a link can be: 1 B/s to 1 PB/s");
      return bw;
    }
  }
  throw Error("bandwidth '" + std::string(text) + "' has unknown unit '" + unit +
              "' (use B/s, KB/s, MB/s, GB/s, TB/s, Gb/s, Tb/s, GiB/s ...)");
}

Seconds parse_time(std::string_view text) {
  auto [value, unit] = split_number(text, "time");
  static const std::pair<const char*, double> units[] = {
      {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"\xCE\xBCs", 1e-6}, {"ns", 1e-9}};
  for (auto& [name, mult] : units) {
    if (unit == name) {
      if (value < 0) throw Error("time '" + std::string(text) + "' must not be negative");
      const Seconds t = value * mult;
      if (t > kMaxTime_s)
        throw Error("time '" + std::string(text) + "' is longer than commsim takes, 1e6 s (11.6 days)");
      return t;
    }
  }
  throw Error("time '" + std::string(text) + "' has unknown unit '" + unit + "' (use s, ms, us, ns)");
}

namespace {

template <class T, class Parse>
std::vector<T> parse_list(std::string_view text, Parse parse, std::string_view what) {
  std::set<T> out;
  std::string_view rest = trim(text);
  if (rest.empty()) throw Error("empty " + std::string(what) + " list");
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) throw Error("empty item in " + std::string(what) + " list '" + std::string(text) + "'");
    auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      out.insert(parse(item));
      continue;
    }
    std::string_view lo_s = item.substr(0, colon), hi_s = item.substr(colon + 1);
    double factor = 2;
    auto colon2 = hi_s.find(':');
    if (colon2 != std::string_view::npos) {
      std::string_view f = trim(hi_s.substr(colon2 + 1));
      hi_s = hi_s.substr(0, colon2);
      if (!f.empty() && (f[0] == 'x' || f[0] == '*')) f.remove_prefix(1);
      std::string fs(f);
      char* end = nullptr;
      factor = std::strtod(fs.c_str(), &end);
      if (fs.empty() || *end != '\0' || !(factor > 1))
        throw Error("range '" + std::string(item) + "': step must be a factor above 1, like ':x2'");
    }
    T lo = parse(lo_s), hi = parse(hi_s);
    if (hi < lo) throw Error("range '" + std::string(item) + "' ends below its start");
    if (lo == 0) {
      out.insert(0);
      lo = 1;
    }
    for (double v = static_cast<double>(lo); v <= static_cast<double>(hi) * (1 + 1e-12); v *= factor) {
      out.insert(static_cast<T>(std::llround(v)));
      if (out.size() > 100000) throw Error("range '" + std::string(item) + "' has too many points");
    }
  }
  return {out.begin(), out.end()};
}

}  // namespace

std::vector<Bytes> parse_size_list(std::string_view text) {
  return parse_list<Bytes>(text, [](std::string_view s) { return parse_bytes(s); }, "size");
}

std::vector<int> parse_int_list(std::string_view text) {
  auto v = parse_list<long long>(
      text,
      [](std::string_view s) {
        std::string t(trim(s));
        long long x = 0;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
        if (t.empty() || ec != std::errc() || p != t.data() + t.size() || x <= 0 || x > kMaxRanks)
          throw Error("'" + t + "' is not a positive whole number");
        return x;
      },
      "number");
  return {v.begin(), v.end()};
}

double check_range(double value, double lo, double hi, std::string_view what, std::string_view unit) {
  if (std::isfinite(value) && value >= lo && value <= hi) return value;
  const std::string u = unit.empty() ? "" : " " + std::string(unit);
  throw Error(fmt::format("{} {}{} is outside {:g} to {:g}{}", what, value, u, lo, hi, u));
}

long long check_range(long long value, long long lo, long long hi, std::string_view what) {
  if (value >= lo && value <= hi) return value;
  throw Error(fmt::format("{} {} is outside {} to {}", what, value, lo, hi));
}

std::string format_bytes(Bytes bytes, int significant) {
  static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == std::floor(v) || v >= std::pow(10.0, significant - 1))
    std::snprintf(buf, sizeof buf, "%.0f%s", v, names[u]);
  else
    std::snprintf(buf, sizeof buf, "%.*g%s", significant, v, names[u]);
  return buf;
}

std::string format_time(Seconds s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string format_bandwidth(BytesPerSecond bw) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", bw / 1e9);
  return buf;
}

}  // namespace commsim
