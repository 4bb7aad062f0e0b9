#pragma once
// The GPU part of `commsim probe`: which GPUs this process sees, and cudaMemcpy timings (device to
// device, host to device and back through pinned memory, and between two GPUs). Plain host
// header; without a CUDA runtime in the build every function reports that GPUs cannot be probed.
#include <string>
#include <vector>

#include "model/units.h"

namespace commsim {

struct GpuInventory {
  std::vector<std::string> names;  // one per visible device, in device order
  std::string note;                // why there are none ("this build has no CUDA", "no device", ...)
  std::vector<std::string> bus_ids;  // PCI bus id of each ("0000:19:00.0"; "" when CUDA gives none)
};
GpuInventory probe_gpu_inventory();

// Times `samples` cudaMemcpy calls of `bytes` bytes with CUDA events on `device`, after `warmup`
// untimed ones; returns seconds per copy, one entry per sample. kind: "d2d" (within the device),
// "h2d" / "d2h" (pinned host memory), "peer" (device -> device + 1; needs two devices).
// Throws Error when the kind is unknown, the device is missing, or a CUDA call fails.
std::vector<double> time_gpu_copy(const std::string& kind, int device, Bytes bytes, int samples, int warmup);

// `nvidia-smi topo -m` output, "" when nvidia-smi is not available.
std::string nvidia_smi_topology();

}  // namespace commsim
