#include "runtime/probe/machine.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "model/units.h"

namespace commsim {
namespace {

std::string read_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::string read_memory_total() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      unsigned long long kb = 0;
      std::sscanf(line.c_str(), "MemTotal: %llu", &kb);
      return format_bytes(kb * 1024);
    }
  }
  return "unknown";
}

std::string read_network_devices() {
  namespace fs = std::filesystem;
  std::string out;
  std::error_code ec;
  if (fs::exists("/sys/class/infiniband", ec)) {
    for (const auto& e : fs::directory_iterator("/sys/class/infiniband", ec))
      out += (out.empty() ? "" : ", ") + e.path().filename().string() + " (InfiniBand/RoCE HCA)";
  }
  if (fs::exists("/sys/class/net", ec)) {
    for (const auto& e : fs::directory_iterator("/sys/class/net", ec)) {
      std::string name = e.path().filename().string();
      if (name == "lo") continue;
      std::ifstream speed(e.path() / "speed");
      long long mbps = -1;
      if (!(speed >> mbps)) mbps = -1;
      out += (out.empty() ? "" : ", ") + name + (mbps > 0 ? " (" + std::to_string(mbps) + " Mb/s)" : "");
    }
  }
  return out.empty() ? "none found" : out;
}

}  // namespace

HostFacts read_host_facts() {
  HostFacts f;
  f.cpu_model = read_cpu_model();
  f.cpu_cores = static_cast<int>(std::thread::hardware_concurrency());
  f.memory_total = read_memory_total();
  f.network_devices = read_network_devices();
  return f;
}

}  // namespace commsim
