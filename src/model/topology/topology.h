#pragma once
// A cluster described by a topology file (configs/topologies/*.yaml): nodes of identical GPUs (or
// host ranks), the fabric inside a node, the network between nodes, and optional NCCL protocol
// constants and what NCCL's own tuning model reads (NcclMachine). Plain data; load_topology()
// validates everything and reports file, line and field.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/units.h"

namespace commsim {

// How a message library's protocol changes the cost of one message on a tier (all optional; the
// defaults leave latency_s as the only per-message cost).
//  - eager / rendezvous: messages of more than eager_limit_bytes pay rendezvous_latency_s (a
//    handshake before the data moves) instead of the tier's latency (0 = no switch);
//  - message_overhead_s: what each additional message a rank posts in the same round adds (the CPU
//    posts them one after another), so posting q messages at once costs (q - 1) * message_overhead_s
//    before the last one leaves;
//  - rendezvous_overhead_s: the same for messages above the eager limit, whose handshakes the CPUs
//    also handle one after another (unset: message_overhead_s);
//  - inline: messages of at most inline_limit_bytes (below the eager limit) travel inside the
//    library's control slot with no buffer to manage (Open MPI's shared-memory "inline send", at
//    256 B by default) and pay inline_latency_s, and inline_overhead_s per additional message
//    (unset: message_overhead_s), instead of the tier's latency (0 = no such regime);
//  - one_way_factor: a message whose receiver posts no send and whose sender posts no receive in
//    the same round (binomial trees: broadcast, reduce, scatter, gather) pays its latency times
//    this factor. The latencies are fitted on exchanges, where every rank both sends and receives;
//    a one-way message meets an idle receiver (1 = no difference);
//  - exchange_factor: a message whose receiver sends back to its sender in the same round
//    (recursive doubling and halving, direct, any pattern on two ranks) pays its latency times
//    this factor; the latencies are those of shifts, where a rank sends to one rank and receives
//    from another (rings, Bruck), as in the probe's ring shift (1 = no difference);
//  - overhead_receive_share: which side of a transfer pays the overheads above. With share s, the
//    transfer posted after i other sends of its sender's round and after j other receives of its
//    receiver's round waits ((1 - s) i + s j) overheads: 0 = the sender posts its messages one
//    after another (the default), 1 = the receiver takes in its messages one after another, so a
//    rank that sends to two ranks which receive only from it pays nothing extra (a binary tree).
//    Where every rank sends and receives the same number of messages (direct) the share does
//    not matter.
struct MessageCosts {
  Bytes eager_limit_bytes = 0;       // 0: every message pays the tier's latency
  Seconds rendezvous_latency_s = 0;  // used above eager_limit_bytes
  Seconds message_overhead_s = 0;    // per additional message posted in one round
  std::optional<Seconds> rendezvous_overhead_s;  // per additional message above eager_limit_bytes
  Bytes inline_limit_bytes = 0;      // 0: no inline regime
  Seconds inline_latency_s = 0;      // used up to inline_limit_bytes
  std::optional<Seconds> inline_overhead_s;  // per additional message up to inline_limit_bytes
  double one_way_factor = 1.0;       // on the latency of a one-way message
  double overhead_receive_share = 0;  // of each overhead, the part paid per receive (0..1)
  double exchange_factor = 1.0;      // on the latency of a message answered in the same round
  // The factor on the latency of a message by how its two ranks talk in that round (the terms above).
  double latency_factor(bool one_way, bool exchange) const {
    return one_way ? one_way_factor : exchange ? exchange_factor : 1.0;
  }
  // The overheads a transfer waits for: posted after `sends_before` sends of its sender's round and
  // after `recvs_before` receives of its receiver's round.
  Seconds queued_overhead_s(double bytes, double sends_before, double recvs_before) const {
    const double n = (1 - overhead_receive_share) * sends_before + overhead_receive_share * recvs_before;
    return n > 0 ? n * overhead_s(bytes) : 0.0;
  }
  bool is_inline(double bytes) const {
    return inline_limit_bytes > 0 && bytes <= static_cast<double>(inline_limit_bytes);
  }
  bool is_rendezvous(double bytes) const {
    return eager_limit_bytes > 0 && bytes > static_cast<double>(eager_limit_bytes);
  }
  // The posting overhead of one more message of `bytes` bytes.
  Seconds overhead_s(double bytes) const {
    if (inline_overhead_s && is_inline(bytes)) return *inline_overhead_s;
    return rendezvous_overhead_s && is_rendezvous(bytes) ? *rendezvous_overhead_s : message_overhead_s;
  }
  // The per-message latency of a message of `bytes` bytes, given the tier's (eager) latency.
  Seconds latency_s(Seconds eager_latency_s, double bytes) const {
    return is_inline(bytes) ? inline_latency_s : is_rendezvous(bytes) ? rendezvous_latency_s : eager_latency_s;
  }
};

// One link tier: the cost of a message that crosses it is latency_s + bytes / bw_Bps.
struct Tier {
  std::string fabric;       // "nvswitch", "nvlink-mesh", "pcie-switch", "host-bridge", "shared-memory", "infiniband", ...
  Seconds latency_s = 0;    // per message (per hop), s
  BytesPerSecond bw_Bps = 0;  // usable bandwidth per rank per direction, B/s
  // Intra-node tier only: the aggregate bandwidth of all transfers inside one node at once (a
  // CPU's memory system), 0 = unlimited. A transfer then gets min(bw_Bps, node_bw_Bps / f), f =
  // transfers active on the node.
  BytesPerSecond node_bw_Bps = 0;
  // Intra-node tier only: the part of a round's outgoing bytes that count against the sending
  // rank's bandwidth (0..1). 1: the sends a rank posts in one round share its bandwidth, as when
  // the sender copies each message out; below 1, the receivers move part of the data themselves
  // (single-copy mechanisms such as CMA, where each receiver reads the sender's buffer), so one
  // rank sending to many is bound less by its own rate. A round's receives always share the
  // receiver's bandwidth; a single transfer is not affected.
  double send_share = 1.0;
  MessageCosts msg{};
  Seconds message_latency_s(double bytes) const { return msg.latency_s(latency_s, bytes); }
};

struct Network {
  std::string kind;          // "infiniband", "roce", "efa", "slingshot", "tcpxo", "ethernet", "tcp", "none"
  std::string fabric_shape;  // "fat-tree", "rail-optimized", "single-switch", ...
  int nics_per_node = 0;     // NICs of a node, shared by its ranks
  BytesPerSecond nic_bw_Bps = 0;  // usable bandwidth of one NIC per direction, B/s
  Seconds latency_s = 0;     // end-to-end latency of one message between nodes, s
  double oversubscription = 1.0;  // >= 1; the fabric's bandwidth between nodes is divided by it
  MessageCosts msg{};
  Seconds message_latency_s(double bytes) const { return msg.latency_s(latency_s, bytes); }
  bool present() const { return nics_per_node > 0; }
  // Bandwidth out of one node into the network, B/s (all NICs, after oversubscription).
  BytesPerSecond node_bw_Bps() const { return nics_per_node * nic_bw_Bps / oversubscription; }
};

// One graph as NCCL_DEBUG_SUBSYS=GRAPH prints it ("Pattern 4, crossNic 0, nChannels 12, bw
// 30.000000/30.000000, ..."): stated in the topology (nccl.graphs), it replaces the graph that NCCL's
// model would derive for that algorithm.
struct NcclGraphOverride {
  int channels = 0;                 // nChannels; 0 = not given (the model derives the graph)
  BytesPerSecond bw_intra_Bps = 0;  // per channel inside a node (NCCL prints GB/s, 1e9 B/s)
  BytesPerSecond bw_inter_Bps = 0;  // per channel across nodes
  bool given() const { return channels > 0; }
};

// NCCL's TUNING table as NCCL printed it on a machine (NCCL_DEBUG_SUBSYS=TUNING; the
// `nccl.tuning_table` section, written by `commsim calibrate` from an imported log, read by
// model/nccl/logged_table.h): NCCL's own base latency and algorithm bandwidth per function x
// algorithm x protocol, for the ranks and nodes it was logged on.
struct NcclTuningEntry {
  int function = 0, algorithm = 0, protocol = 0;  // NCCL's indices (model/nccl/ids.h)
  double latency_us = 0;                          // comm->latencies, us
  double bandwidth_GBps = 0;                      // comm->bandwidths, GB/s (1e9 B/s); 0: NCCL disabled it
};
struct NcclTuningTable {
  // The communicator NCCL tuned for: the table applies to calls of exactly it.
  int ranks = 0, nodes = 0;
  std::string source;                    // where it was logged ("run.h5, NCCL 2.28.9"), for the written comment
  std::vector<NcclTuningEntry> entries;  // the entries logged; the others stay NCCL's model's
  bool given() const { return !entries.empty(); }
};

// What NCCL's own tuning model (src/model/nccl, see from_topology.h) reads about the cluster beyond
// the tiers: the machine fields of the `nccl:` section. Every field is optional; the defaults
// (stated per field, applied by nccl_system()) describe a uniform node from gpus_per_node,
// intra_node.fabric, device.name and the network.
struct NcclMachine {
  std::string version;                // NCCL release ("2.21.5", "2.28"); "" = the newest ported
  int compute_capability = 0;         // x10 (9.0 -> 90, 10.3 -> 103); 0 = from device.name (else 9.0)
  int nvlinks_per_gpu = -1;           // -1 = by fabric and architecture (18 Hopper/Blackwell, 12 A100, 0 PCIe)
  BytesPerSecond nvlink_bw_Bps = 0;   // per link; 0 = NCCL's value for the architecture (topo.h)
  std::optional<bool> nvls;           // NVLink SHARP multicast; unset = yes on nvswitch with 9.0 or newer
  int nvlink_domain_gpus = 0;         // GPUs of one NVLink domain (multi-node NVLink); 0 = gpus_per_node
  bool collnet = false;               // SHARP (NCCL_COLLNET_ENABLE=1 with a CollNet plugin)
  int collnet_heads = 0;              // CollNet heads per node; 0 = network.nics_per_node
  std::string cpu_arch = "x86";       // x86, arm, power
  std::string cpu_vendor = "intel";   // intel, amd, zhaoxin, other
  int pcie_gen = 0;                   // GPU <-> NIC link; 0 = by architecture (5 Hopper+, 4 Ampere/Ada, else 3)
  int pcie_width = 16;
  BytesPerSecond nic_speed_Bps = 0;   // per NIC as the net plugin reports it; 0 = network.nic_bandwidth
  Seconds net_latency_s = 0;          // NCCL's latencyInter: the NET node's latency in the topology XML
  NcclGraphOverride ring, tree, nvls_graph;  // nccl.graphs.{ring,tree,nvls}
  std::string algo, proto;            // NCCL_ALGO / NCCL_PROTO as the cluster sets them ("" = unset)
  // The host's cost of one NCCL call per GPU it launches on (ncclGroupEnd's enqueue and one kernel
  // launch per GPU), without and with CUDA graphs; < 0 = the defaults of model/nccl/from_topology.h.
  Seconds launch_s = -1, graph_launch_s = -1;
  // How the measured run drove its GPUs: GPUs per host thread (nccl-tests -g) and CUDA graph
  // launches (-G 1). `commsim import` sets them from the log; a cluster's file leaves them at 1/no.
  int gpus_per_thread = 1;
  bool cuda_graphs = false;
  // Fitted by `commsim calibrate` on imported NCCL runs (fit_nccl_model): the share of NCCL's
  // per-channel bandwidths (every graph's bwIntra and bwInter) the machine reaches, in (0, 1], and
  // a latency added to every NCCL call (negative where NCCL's latencies are above the machine's;
  // a call's latency never goes below 0).
  double bandwidth_scale = 1;
  Seconds latency_offset_s = 0;
  NcclTuningTable tuning_table;  // nccl.tuning_table: NCCL's own numbers from its log
};

// The rows of NcclConstants' tables, in NCCL's order (NCCL_ALGO_TREE = 0, NCCL_ALGO_RING = 1;
// model/nccl/ids.h), and their keys in the `nccl:` section.
inline constexpr int kNcclTableTree = 0, kNcclTableRing = 1;
inline constexpr const char* kNcclTableNames[2] = {"tree", "ring"};

// NCCL's protocol constants (src/graph/tuning.cc), indexed [algorithm tree=0/ring=1 (kNcclTableTree,
// kNcclTableRing)][protocol LL=0/LL128=1/Simple=2], as NCCL indexes them.
struct NcclConstants {
  bool present = false;  // the latency tables were given (the closed forms need them)
  double base_latency_s[2][3] = {};     // per call
  double intra_hop_latency_s[2][3] = {};  // per hop inside the node (NVLink or PCIe values)
  double inter_hop_latency_s[2][3] = {};  // per hop across the network
  double bw_fraction[3] = {0.5, 120.0 / 128.0, 1.0};  // protocol bandwidth relative to Simple
  // The bus bandwidth NCCL reaches inside a node with each algorithm and protocol (the optional
  // `nccl.bus_bandwidth`, fitted by `commsim calibrate` from forced runs), B/s; 0: the intra-node
  // bandwidth x bw_fraction. Across nodes the node's network bandwidth x bw_fraction still caps it.
  BytesPerSecond bus_bw_Bps[2][3] = {};
  NcclMachine machine;  // what NCCL's tuning model reads (all optional)
};

// One storage tier (the optional `storage:` list): where a job's data and checkpoints go. Rates are
// what one node gets when it reads or writes one large file sequentially; a shared tier (a parallel
// file system every node mounts) may also cap the whole cluster's rate.
struct StorageTier {
  std::string name;                 // "local-nvme", "lustre", ...: unique within the file
  bool shared = false;              // false: each node has its own (a local disk); true: one for all nodes
  BytesPerSecond read_bw_Bps = 0;   // sequential read, one node, B/s
  BytesPerSecond write_bw_Bps = 0;  // sequential write (O_DIRECT, data on the device), one node, B/s
  Seconds latency_s = 0;            // one 4 KiB random read at queue depth 1, s
  // Shared tiers only: the file system's aggregate rates over all nodes at once, B/s; 0 = no cap
  // beyond nodes x the per-node rate.
  BytesPerSecond aggregate_read_bw_Bps = 0;
  BytesPerSecond aggregate_write_bw_Bps = 0;
  // The write rate `nodes` nodes each get when they all write at once.
  BytesPerSecond write_bw_per_node(int nodes) const {
    if (!shared || aggregate_write_bw_Bps <= 0 || nodes < 1) return write_bw_Bps;
    return std::min(write_bw_Bps, aggregate_write_bw_Bps / nodes);
  }
  BytesPerSecond read_bw_per_node(int nodes) const {
    if (!shared || aggregate_read_bw_Bps <= 0 || nodes < 1) return read_bw_Bps;
    return std::min(read_bw_Bps, aggregate_read_bw_Bps / nodes);
  }
};

// What a calibrated topology's parameters were fitted on: the optional `calibrated:` section
// (written by `commsim calibrate`, or by hand: `calibrated: { sizes: "8B:256MiB", nodes: "1:4" }`).
// A prediction for a size or node count outside these extrapolates the fit.
struct CalibrationInfo {
  bool present = false;
  std::vector<Bytes> sizes;  // message sizes measured, ascending
  std::vector<int> nodes;    // node counts measured, ascending
  std::vector<int> ranks;    // rank counts measured, ascending (may be empty)
  std::string created;       // ISO 8601 date of the calibration ("" when not given)
  std::vector<std::string> sources;  // the measurement files
};

// What one transport does to the tiers (the optional `transports:` section): the same wires cost
// more or less depending on what moves the bytes (MPI's point-to-point layer, UCX directly, NCCL),
// so a calibrated topology can hold per-transport latency and bandwidth. A value that is set
// replaces the tier's value when predicting rows of that transport (with_transport).
struct TransportOverride {
  std::string transport;                       // "mpi", "ucx", "nccl", "ipc"
  std::optional<Seconds> intra_latency_s;      // intra_node.latency
  std::optional<BytesPerSecond> intra_bw_Bps;  // intra_node.bandwidth
  std::optional<Seconds> network_latency_s;    // network.latency
  std::optional<BytesPerSecond> nic_bw_Bps;    // network.nic_bandwidth
};

// One point of the working-set curve (Topology::working_set_scale).
struct WorkingSetScale {
  Bytes working_set = 0;  // bytes of one rank's Input and Output (working_set_bytes in model/collective.h)
  double scale = 1.0;     // factor on the memory-bound bandwidths at that working set
};

// One point of the local-operation curve (Topology::local_op_scale).
struct LocalOpScale {
  Bytes bytes = 0;     // bytes one local operation touches (a copy, or the reductions of one round)
  double scale = 1.0;  // factor on reduction.bandwidth and device.memory_bandwidth at that size
};

// One point of a message-size curve (Topology::message_scale, written_scale, network_message_scale,
// fan_out_scale).
struct MessageScale {
  Bytes bytes = 0;     // bytes of one message (between two ranks of a node; between nodes for the network's)
  double scale = 1.0;  // factor on the tier's bandwidths at that size
};

// The piece size of commsim's host executor unless `commsim run --piece-size` sets another: long
// transfers move in pieces so that the combine of one overlaps the arrival of the next and finds it
// in the caches.
constexpr Bytes kHostPieceBytes = 512 * 1024;

struct Topology {
  std::string name;          // from the file's `name`
  std::string description;
  std::string source_path;   // the file it was read from ("" when parsed from text)
  std::string text;          // the YAML text as read, stored with every result

  bool gpu = true;           // false: host ranks (CPU only)
  int ranks_per_node = 1;    // GPUs per node (one rank per GPU), or host ranks per node
  std::string device_name;   // "NVIDIA H100 80GB HBM3", "CPU"
  Bytes device_memory_bytes = 0;  // per GPU (per node for host topologies)
  BytesPerSecond memory_bw_Bps = 0;  // HBM (or DRAM) bandwidth per device
  double peak_tflops = 0;    // dense BF16 peak per device, TFLOP/s (device.peak_tflops); 0 = not given
  int max_nodes = 0;         // 0 = no limit

  Tier intra;                // between ranks of one node
  Tier host_link;            // GPU <-> host (PCIe / C2C); unused for host topologies
  Network network;           // between nodes
  BytesPerSecond reduce_bw_Bps = 0;  // bytes reduced per second by one rank (gamma = 1 / this)

  // Optional runtime and memory-hierarchy terms (off by default; `commsim calibrate --refine`
  // fits them to measured collectives):
  //  - call_overhead_s: what every collective call costs besides its rounds (ranks leave the
  //    barrier before it at different times, the call sets itself up);
  //  - working_set_scale: host memory is faster while a rank's buffers fit its caches. The points
  //    (ascending working sets) give a factor on intra_node.bandwidth, node_bandwidth,
  //    reduction.bandwidth and device.memory_bandwidth, interpolated linearly in log(working set)
  //    and held constant beyond the first and last point. Empty: no scaling.
  //  - local_op_scale: a copy or a reduction runs faster while the bytes it touches stay in the
  //    caches: the points (ascending sizes) give a factor on reduction.bandwidth and
  //    device.memory_bandwidth by the bytes of one copy, or of the reductions a rank does in one
  //    round (data received and combined in one round is cold once it outgrows the caches).
  //    Interpolated and held like working_set_scale. Empty: no scaling.
  //  - message_scale: one message inside a node moves at a rate that depends on its own size: a
  //    message that fits the caches is copied cache to cache, a larger one streams through memory
  //    while every other rank of the node does the same. The points (ascending sizes) give a factor
  //    on intra_node.bandwidth and intra_node.node_bandwidth by the bytes of one message
  //    (recursive doubling's last message is n/2, ring's n/p). Interpolated and held like
  //    working_set_scale. Empty: no scaling.
  //  - written_scale: a message inside a node whose data its sender wrote earlier in the same
  //    collective (received, combined or copied: a ring forwarding a block, a tree passing a chunk
  //    on) can move slower than one the sender has not touched, while the written lines still sit
  //    in the sender core's caches and the receiver must fetch them from there. The points
  //    (ascending sizes) give a factor on intra_node.bandwidth and intra_node.node_bandwidth by the
  //    bytes of such a message, on top of message_scale; `commsim probe` measures it (a ring shift
  //    of just-written data against one after writing another buffer). Interpolated and held like
  //    working_set_scale. Empty: no difference.
  //  - network_message_scale: one message between nodes moves at a rate that depends on its size
  //    (the transport's buffers and protocol switches: a TCP message of 64 KiB can move twice as
  //    fast as one of 4 MiB). The points (ascending sizes) give a factor on network.nic_bandwidth and
  //    the node's share of it, by the bytes of one message; `commsim probe` measures it (the network
  //    ring shift at every size against its latency and its large-message rate). Interpolated and
  //    held like working_set_scale. Empty: no scaling.
  //  - fan_out_scale: a message inside a node that its sender posts together with others in one
  //    round, to a receiver whose round takes in only that message (one to many: a direct
  //    broadcast's root, a tree's parent sending to its children), can move at another rate than
  //    one of a ring or an exchange: the receivers copy from one sender's memory at once, and each
  //    message waits alone for its receiver. The points (ascending sizes) give a factor on
  //    intra_node.bandwidth and intra_node.node_bandwidth by the bytes of such a message, on top of
  //    message_scale (and written_scale). Interpolated and held like working_set_scale. Empty: no
  //    difference.
  //  - node_working_set_scale: the aggregate rate of a node's memory system
  //    (intra_node.node_bandwidth) falls further as what all ranks of the node hold at once
  //    outgrows the caches they share. The points (ascending; `working_set` is one rank's working
  //    set times the ranks on its node) give a factor on intra_node.node_bandwidth, on top of
  //    working_set_scale's. Interpolated and held like working_set_scale. Empty: no such factor.
  Seconds call_overhead_s = 0;
  // Host ranks: commsim's host executor moves a transfer longer than this in pieces and combines
  // each piece as it arrives (`commsim run --piece-size`), so a combine on arrival touches one
  // piece while it is still in the caches: local_op_scale is taken at the bytes of the pieces a
  // round combines at once, not at the whole transfer's. Not a YAML key: set by the run (unset:
  // kHostPieceBytes on host topologies, whole transfers on GPU topologies). See piece().
  std::optional<Bytes> piece_bytes;
  std::vector<WorkingSetScale> working_set_scale;
  std::vector<WorkingSetScale> node_working_set_scale;
  std::vector<LocalOpScale> local_op_scale;
  std::vector<MessageScale> message_scale;
  std::vector<MessageScale> written_scale;
  std::vector<MessageScale> network_message_scale;
  std::vector<MessageScale> fan_out_scale;

  NcclConstants nccl;
  std::vector<StorageTier> storage;  // the `storage:` list, in file order (may be empty)
  CalibrationInfo calibrated;  // present only in calibrated topologies
  std::vector<TransportOverride> transports;  // per-transport tier values, in file order

  Seconds gamma_s_per_byte() const { return 1.0 / reduce_bw_Bps; }
  // The factor of working_set_scale at `working_set` bytes (1 without the curve).
  double scale_at(double working_set) const {
    return curve_at(working_set_scale, &WorkingSetScale::working_set, working_set);
  }
  // The factor on intra_node.node_bandwidth when each of `ranks_on_node` ranks holds `working_set`
  // bytes: working_set_scale at one rank's, times node_working_set_scale at their sum.
  double node_scale_at(double working_set, double ranks_on_node) const {
    return scale_at(working_set) *
           curve_at(node_working_set_scale, &WorkingSetScale::working_set, working_set * ranks_on_node);
  }
  // The bytes of one piece of a transfer that the executor combines on arrival (piece_bytes); 0:
  // whole transfers.
  Bytes piece() const { return piece_bytes ? *piece_bytes : (gpu ? 0 : kHostPieceBytes); }
  // The factor of local_op_scale for an operation on `bytes` bytes (1 without the curve).
  double local_op_scale_at(double bytes) const { return curve_at(local_op_scale, &LocalOpScale::bytes, bytes); }
  // The factor of message_scale for one intra-node message of `bytes` bytes (1 without the curve).
  double message_scale_at(double bytes) const { return curve_at(message_scale, &MessageScale::bytes, bytes); }
  // The factor of written_scale for one intra-node message of just-written data (1 without the curve).
  double written_scale_at(double bytes) const { return curve_at(written_scale, &MessageScale::bytes, bytes); }
  // The factor of fan_out_scale for one intra-node message of a round that sends several to a
  // receiver that takes in only it (1 without the curve).
  double fan_out_scale_at(double bytes) const { return curve_at(fan_out_scale, &MessageScale::bytes, bytes); }
  // The factor of network_message_scale for one message between nodes (1 without the curve).
  double network_message_scale_at(double bytes) const {
    return curve_at(network_message_scale, &MessageScale::bytes, bytes);
  }

 private:
  // log2 of r > 0, exact and without a logarithm when r is a power of two (curve points and
  // message sizes usually are).
  static double log2_of(double r) {
    const auto bits = std::bit_cast<std::uint64_t>(r);
    const auto exponent = static_cast<int>((bits >> 52) & 0x7ff);
    if ((bits & ((std::uint64_t{1} << 52) - 1)) == 0 && exponent > 0 && exponent < 0x7ff)
      return static_cast<double>(exponent - 1023);
    return std::log2(r);
  }
  // Linear in log(x) between the points of a curve, held beyond its ends; 1 without points. Keys
  // are sizes far below 2^63 (converted as signed: one instruction). Inline: the closed forms
  // look curves up several times a call.
  template <typename Point>
  static double curve_at(const std::vector<Point>& w, Bytes Point::*key, double x) {
    const std::size_t n = w.size();
    if (n == 0) return 1.0;
    const Point* p = w.data();
    auto key_of = [&](std::size_t i) { return static_cast<double>(static_cast<std::int64_t>(p[i].*key)); };
    if (x <= key_of(0)) return p[0].scale;
    if (x >= key_of(n - 1)) return p[n - 1].scale;
    std::size_t i = 1;
    while (key_of(i) < x) ++i;
    const double x0 = key_of(i - 1), x1 = key_of(i);
    if (x == x1) return p[i].scale;
    const double f = log2_of(x / x0) / log2_of(x1 / x0);
    return p[i - 1].scale + f * (p[i].scale - p[i - 1].scale);
  }
};


// Reads and validates a topology file. Throws Error("FILE:LINE: FIELD: what is wrong") for an
// unknown key, a missing field, a wrong type, a non-positive bandwidth, an unknown unit, or a
// file that is empty or not YAML.
Topology load_topology(const std::string& path);
// The same from text; `origin` names it in error messages.
Topology parse_topology(const std::string& yaml_text, const std::string& origin);

// The topology as YAML text in the schema of configs/topologies/README.md, loadable by
// parse_topology (write_yaml.cc). `header` is emitted as comment lines at the top;
// `field_comments` maps a dotted field ("intra_node.bandwidth", "network.latency",
// "reduction.bandwidth", "device.memory_bandwidth", "host_link.bandwidth", ...) to a comment placed
// after its value. With a record and with_calibrated_section, a `calibrated:` map records its
// sizes, nodes, ranks, sources and date (otherwise the same facts go into the header comments
// only); without a record nothing is said about a calibration (`topo.calibrated` is not written).
std::string topology_yaml(const Topology& topo, const std::vector<std::string>& header,
                          const std::vector<std::pair<std::string, std::string>>& field_comments,
                          const CalibrationInfo* record, bool with_calibrated_section);

// `topology` with the tier values of `transport`'s override applied (see TransportOverride); an
// unchanged copy when the file has no override for it. The NCCL constants, reduction bandwidth and
// the overrides themselves are kept.
Topology with_transport(const Topology& topology, std::string_view transport);

// Where presets live: model/config_dirs.h ($COMMSIM_CONFIG_DIR, an installed binary's
// ../share/commsim/configs, the source tree's configs/). A bare name ("dgx-h100") resolves to
// <dir>/topologies/dgx-h100.yaml; a path is used as it is.
std::string resolve_topology_path(const std::string& name_or_path);

}  // namespace commsim
