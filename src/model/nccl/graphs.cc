// A closed-form stand-in for ncclTopoCompute (graph/search.cc:991-1195 at v2.28.9-1) on uniform
// machines; graphs.h says what is assumed.
#include "model/nccl/graphs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>

#include "model/error.h"
#include "model/nccl/versions.h"

namespace commsim::nccl {
namespace {

// graph/search.cc:976-989.
constexpr float kSpeedIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr float kSpeedInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                 7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr float kSm90SpeedIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr float kSm90SpeedInter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr float kSm100SpeedIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr float kSm100SpeedInter[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                      17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

constexpr int kMaxChannels = 64;
constexpr int kMaxNvlsArity = 32;

std::span<const float> speed_array(int compCap, bool inter) {
  if (compCap >= 100)
    return inter ? std::span<const float>(kSm100SpeedInter) : std::span<const float>(kSm100SpeedIntra);
  if (compCap >= 90) return inter ? std::span<const float>(kSm90SpeedInter) : std::span<const float>(kSm90SpeedIntra);
  return inter ? std::span<const float>(kSpeedInter) : std::span<const float>(kSpeedIntra);
}

// Channels that fit at a per-channel speed, for one pattern on this machine.
using Capacity = std::function<int(float speed)>;

struct Found {
  int nChannels = 0;
  float bw = 0;
};

// Pass 1 of ncclTopoCompute for rings and trees: start at the first speed <= maxBw, keep the best
// nChannels x speed, lower the speed while the next one is above 0.49x the best; then
// ncclTopoDupChannels; then pass 2 raises the speed while the channels still fit.
Found search_ring(std::span<const float> speeds, const Capacity& fits, float maxBw, float totalBw, int maxChannels,
                  int compCap) {
  std::size_t i = 0;
  while (i + 1 < speeds.size() && speeds[i] > maxBw) ++i;
  Found best;
  for (;;) {
    int n = std::min(maxChannels, fits(speeds[i]));
    if (n > 0 && n * speeds[i] > best.nChannels * best.bw) best = {n, speeds[i]};
    if (best.nChannels * best.bw >= totalBw) break;
    if (i + 1 < speeds.size() && (best.nChannels == 0 || speeds[i + 1] / best.bw > .49f)) {
      ++i;
      continue;
    }
    break;
  }
  if (best.nChannels == 0) return {1, 0.1f};  // "falling back to simple order"
  // ncclTopoDupChannels (search.cc:961-974).
  bool dup = best.bw >= 25.0f && !(compCap > 80 && best.bw < 50.0f && best.nChannels > 4);
  if (dup) {
    int doubled = std::min(best.nChannels * 2, maxChannels);
    best.bw /= static_cast<float>((doubled + best.nChannels - 1) / best.nChannels);
    best.nChannels = doubled;
  }
  // Pass 2: a higher speed with at least as many channels.
  std::size_t j = 0;
  while (j + 1 < speeds.size() && speeds[j] > best.bw) ++j;
  while (j > 0 && fits(speeds[j - 1]) >= best.nChannels) best.bw = speeds[--j];
  return best;
}

int divup(int a, int b) {
  return (a + b - 1) / b;
}

}  // namespace

double nvlink_gbps_per_link(int compCap, const Version& version) {
  // graph/topo.h:16-21; SM90 was 20.0 up to 2.19.
  if (compCap >= 100) return 40.1;
  if (compCap >= 90) return version.minor <= 19 ? 20.0 : 20.6;
  if (compCap == 86) return 12.0;
  if (compCap >= 70) return 20.0;
  return 18.0;
}

double pcie_gbps(int gen, int width) {
  // graph/topo.cc:491: width x speed / 80, speed 15/30/60/120/240 for Gen1..Gen5.
  static constexpr double kSpeed[] = {0, 15, 30, 60, 120, 240};
  if (gen < 1 || gen > 5) throw Error(fmt::format("PCIe generation {} (1 to 5)", gen));
  return width * kSpeed[gen] / 80.0;
}

System make_system(const Machine& m, const Version& version) {
  int gpus = m.gpusInUse > 0 ? m.gpusInUse : m.gpusPerNode;
  if (m.gpusPerNode < 1 || gpus > m.gpusPerNode || m.nNodes < 1)
    throw Error(fmt::format("NCCL model: {} GPUs in use of {} per node on {} nodes", gpus, m.gpusPerNode, m.nNodes));
  System s;
  s.minCompCap = s.maxCompCap = m.compCap;
  s.nNodes = m.nNodes;
  s.nRanks = gpus * m.nNodes;
  s.cpuArch = m.cpuArch;
  s.cpuVendor = m.cpuVendor;
  s.nvsCount = m.nvswitch ? 1 : 0;
  bool inter = m.nNodes > 1;
  bool nvlink = m.nvlinksPerGpu > 0;
  float pcie = static_cast<float>(pcie_gbps(m.pcieGen, m.pcieWidth));
  float link = nvlink ? static_cast<float>(m.nvlinksPerGpu *
                                           (m.nvlinkGBps > 0 ? m.nvlinkGBps : nvlink_gbps_per_link(m.compCap, version)))
                      : pcie;
  // NICs next to the GPUs in use: a rank does not get the NICs of GPUs outside the communicator.
  int nics = m.nicsPerNode >= m.gpusPerNode ? gpus * (m.nicsPerNode / m.gpusPerNode)
                                            : std::min(m.nicsPerNode, divup(gpus * m.nicsPerNode, m.gpusPerNode));
  float nicPath = std::min(static_cast<float>(m.nicGBps), pcie);
  std::span<const float> speeds = speed_array(m.compCap, inter);

  // Ring: every channel crosses each GPU's link once each way; across nodes it also enters and
  // leaves through one NIC, and one GPU per channel sends to the NIC instead of over NVLink.
  Capacity ringFits = [&](float speed) {
    int byLink = static_cast<int>(link / speed);
    if (!inter) return byLink;
    int byNic = nics * static_cast<int>(nicPath / speed);
    if (gpus > 1) byNic = std::min<int>(byNic, static_cast<int>(link * gpus / ((gpus - 1) * speed)));
    return byNic;
  };
  float maxBw = inter ? nicPath : link;
  float totalBw = inter ? nicPath * nics : link;
  Found ring = search_ring(speeds, ringFits, maxBw, totalBw, kMaxChannels / 2, m.compCap);
  Graph g;
  g.nChannels = ring.nChannels;
  g.bwIntra = g.bwInter = ring.bw;
  g.typeIntra = gpus == 1 ? kPathLoc : nvlink ? kPathNvl : kPathPhb;
  g.typeInter = kPathPix;
  g.pattern = kPatternRing;
  s.graphs[kRing] = g;
  // Tree (PAT reads it too): the ring's channels and speed, a balanced tree (assumed).
  g.pattern = kPatternBalancedTree;
  s.graphs[kTree] = g;
  s.maxTreePattern = kPatternBalancedTree;
  // CollNet: one channel per NIC at the NIC's speed (assumed; no GRAPH lines published).
  Graph collnet = g;
  collnet.nChannels = std::max(1, nics);
  collnet.bwIntra = collnet.bwInter = std::min(ring.bw, nicPath);
  collnet.pattern = kPatternCollNetDirect;
  s.graphs[kCollNetDirect] = s.graphs[kCollNetChain] = collnet;

  // NVLS (search.cc:386-417, 1036-1046, 1176-1180): one head per channel; a head loads its
  // NVSwitch link with 2x bw and every other channel with 1x, so bwIntra <= link / (nCh + 1);
  // pass 2 raises bwInter while it is below twice bwIntra (and fits the NIC across nodes).
  bool nvls = m.nvswitch && m.compCap >= 90 && gpus >= 2;
  if (nvls) {
    int n = std::min(kMaxNvlsArity, gpus);
    if (inter) n = std::min(n, std::max(1, nics));
    std::size_t i = 0;
    while (i + 1 < speeds.size() && speeds[i] * (n + 1) > link) ++i;
    Graph nv;
    nv.nChannels = n;
    nv.bwIntra = nv.bwInter = speeds[i];
    while (i > 0 && nv.bwInter < nv.bwIntra * 2 && (!inter || speeds[i - 1] <= nicPath)) nv.bwInter = speeds[--i];
    nv.typeIntra = kPathNvl;
    nv.typeInter = kPathPix;
    nv.sameChannels = false;
    nv.pattern = kPatternNvls;
    s.graphs[kNvls] = nv;
  }
  s.nvlsSupport = nvls && m.multicast;
  // transport/nvls.cc:9-11,179-196: 16 on Hopper; Blackwell 24 in one NVLink domain, 32 across.
  s.nvlsChannels = !s.nvlsSupport ? 0 : m.compCap >= 100 ? (inter ? 32 : 24) : 16;
  return s;
}

}  // namespace commsim::nccl
