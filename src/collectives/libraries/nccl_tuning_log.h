#pragma once
// What NCCL chose for a collective call, read from NCCL's own log (NCCL_DEBUG=INFO
// NCCL_DEBUG_SUBSYS=TUNING). Pure text parsing: no NCCL needed, so it is tested on saved logs.
//
// The lines it reads, as NCCL prints them on rank 0 (prefix "host:pid:tid [cudaDev] NCCL INFO ",
// src/debug.cc; an optional timestamp before it is ignored):
//  - NCCL 2.24 and later, src/enqueue.cc:741 at v2.28.9-1 (:678 at v2.24.3-1), one line per call:
//      "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}"
//    e.g. "AllReduce: 4194304 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..3}"; some builds
//    append " comm 0x..."; the names are ncclAlgoToString / ncclProtoToString's (TREE, RING,
//    COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT; LL, LL128, SIMPLE), read in any letter
//    case with or without the underscores and written as the TUNING table's (NVLSTree, Simple);
//  - NCCL 2.27 and later, src/scheduler/symmetric_sched.cc, a call run by a symmetric kernel:
//      "%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d nWorks %d"
//    (algorithm "Symmetric", the kernel's name as the protocol);
//  - NCCL 2.23, src/enqueue.cc:1855 at v2.23.4-1:
//      "%s: %ld Bytes -> Algo %d proto %d time %f"
//  - NCCL 2.20 to 2.22, src/enqueue.cc:1498 at v2.20.5-1 (:1613 at v2.22.3-1), without the
//    function: "%ld Bytes -> Algo %d proto %d time %f"
//    with NCCL's indices (algorithm 0 Tree, 1 Ring, 2 CollNetDirect, 3 CollNetChain, 4 NVLS,
//    5 NVLSTree, 6 PAT; protocol 0 LL, 1 LL128, 2 Simple) and no channel count. Up to 2.19 NCCL
//    logs no per-call choice at INFO level.
// Every other line (other INFO subsystems, WARN lines, a line cut short) is not a tuning line.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commsim {

struct NcclTuningLine {
  std::string function;     // NCCL's name: "AllReduce", "AllGather", ...; "" in the old format
  std::uint64_t bytes = 0;  // as NCCL prints it (count x type size of the call's send count)
  std::string algorithm;    // NCCL's spelling: "Ring", "Tree", "NVLS", ... or "Symmetric"
  std::string protocol;     // "LL", "LL128", "Simple"; a symmetric kernel's name
  int channels = 0;         // channelHi - channelLo + 1 (nchannels for symmetric kernels); 0: not printed
};

// The tuning line in `line`, or nullopt when it is not one (or is malformed: a missing field, a
// number that does not parse, channelHi below channelLo).
std::optional<NcclTuningLine> parse_nccl_tuning_line(std::string_view line);

// Every tuning line of a log text, in order.
std::vector<NcclTuningLine> parse_nccl_tuning_log(std::string_view text);

// What NCCL chose for the calls of `function` (NCCL's name, e.g. "AllReduce") among `lines`: the
// (algorithm, protocol, channels) printed most often (the first of them on a tie); lines of the
// old format, which do not name the function, count for any function. `calls` is 0 when no line
// matches.
struct NcclChoice {
  std::string algorithm, protocol;
  int channels = 0;
  int calls = 0;  // lines that gave this choice
  int other = 0;  // lines of the same function that gave another choice
  bool empty() const { return calls == 0; }
};
NcclChoice nccl_choice(const std::vector<NcclTuningLine>& lines, std::string_view function);

// NCCL's algorithm and protocol names as commsim writes them ("Ring", "Tree", "NVLS", ...;
// "LL", "LL128", "Simple"), whatever the letter case NCCL printed.
std::string canonical_nccl_algorithm(std::string_view name);
std::string canonical_nccl_protocol(std::string_view name);

}  // namespace commsim
