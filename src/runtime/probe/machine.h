#pragma once
// What `commsim probe` says about the host it runs on besides measurements: CPU model, logical
// CPUs, memory and network devices, read from /proc and /sys of this host.
#include <string>

namespace commsim {

struct HostFacts {
  std::string cpu_model = "unknown";     // "AMD EPYC 7763 64-Core Processor"
  int cpu_cores = 0;                     // logical CPUs
  std::string memory_total = "unknown";  // "503 GiB", as format_bytes writes it
  // InfiniBand HCAs and interfaces with their link speed: "mlx5_0 (InfiniBand/RoCE HCA), eth0
  // (25000 Mb/s)"; "none found" when there are none.
  std::string network_devices = "none found";
};

// This host's facts ("unknown" for what the system does not say).
HostFacts read_host_facts();

}  // namespace commsim
