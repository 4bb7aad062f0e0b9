#pragma once
// NCCL's graph values (channels and per-channel bandwidth per algorithm) from a physical
// description of the machine, following the search rules of graph/search.cc (v2.28.9-1): the
// per-architecture speed arrays, the start speed, lowering the speed while it stays above 0.49x
// the best, ncclTopoDupChannels, raising it again in pass 2, and the NVLS head accounting.
//
// This is not NCCL's recursive path search. It assumes a uniform machine: every GPU has the same
// links, all GPUs sit on one NVSwitch (or one PCIe root complex), every NIC hangs off a PCIe
// switch next to its GPUs, and the tree and CollNet graphs take the ring's channels. Within those
// limits it reproduces the GRAPH lines NCCL prints on DGX H100/H200, DGX A100 and GB200 NVL72
// (README.md lists the rows checked).
#include "model/nccl/ids.h"
#include "model/nccl/system.h"

namespace commsim::nccl {

struct Version;

struct Machine {
  int compCap = 90;        // 80 A100, 90 H100/H200, 100 B200/GB200
  int gpusPerNode = 8;     // GPUs in the node (the NVLink domain for an MNNVL rack)
  int gpusInUse = 0;       // ranks per node of the communicator; 0 = every GPU
  int nNodes = 1;          // NVLink domains
  bool nvswitch = true;    // all GPUs on NVSwitches; false = NVLink mesh or PCIe only
  bool multicast = true;   // NVLS driver support (fabric manager / IMEX, NCCL_NVLS_ENABLE)
  int nvlinksPerGpu = 18;  // 0 = no NVLink (PCIe only)
  double nvlinkGBps = 0;   // per link; 0 = NCCL's SMxx_NVLINK_BW for compCap and release
  int pcieGen = 5;         // GPU <-> NIC and GPU <-> CPU PCIe link
  int pcieWidth = 16;
  int nicsPerNode = 8;
  double nicGBps = 50.0;  // per NIC, as the net plugin reports it (NDR 400G = 50)
  CpuArch cpuArch = kCpuX86;
  CpuVendor cpuVendor = kVendorIntel;
};

// ncclTopoCompute results for ring, tree, CollNet and NVLS and the communicator fields NCCL
// derives from them (nRanks, nvlsSupport, nvlsChannels, nvsCount ...). CollNet stays off; set
// System::collNet afterwards to model a SHARP fabric. Throws commsim::Error on a machine that
// cannot be described (no GPUs, more GPUs in use than in the node).
System make_system(const Machine& machine, const Version& version);

// GB/s of one GPU's link of each kind, as NCCL's topology has them (graph/topo.h:15-32,
// graph/topo.cc:491,601-604).
double nvlink_gbps_per_link(int compCap, const Version& version);
double pcie_gbps(int gen, int width);

}  // namespace commsim::nccl
