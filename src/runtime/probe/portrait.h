#pragma once
// The machine portrait of `commsim probe`, formatted from its measurements: the text portrait (one
// line per part of the machine), the table of every measurement, the storage rows, and the closing
// table a planner starts from (text or markdown). Pure: numbers in, text out.
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/h5/probe_file.h"

namespace commsim {

// The fastest bandwidth among the rows of one kind and tier (the plateau of the curve), GB/s; 0
// when there are none.
double peak_bw(const ProbeData& d, const std::string& kind, const std::string& tier);

// "commsim probe: machine portrait\n  hosts : ...". `ranks_per_host`: the ranks on each of d.hosts,
// in the same order; the rest describe rank 0's host.
std::string format_portrait(const ProbeData& d, const std::vector<int>& ranks_per_host, const std::string& mpi_version,
                            const std::string& net_devices, const std::string& memory_total);

// One line per measurement (kind, tier, memory, bytes, ranks, reps, median, p95, GB/s), with a header.
void print_probe_rows(std::ostream& out, const ProbeData& d);
// One line per storage row, with a header; nothing when there are none.
void print_storage_rows(std::ostream& out, const std::vector<StorageRow>& rows);

// (part, this machine): GPUs, interconnect, intra-node bandwidth, network bandwidth, local disk,
// shared storage.
using PortraitTable = std::vector<std::pair<std::string, std::string>>;
PortraitTable portrait_table(const ProbeData& d, const std::string& net_devices);
// `format`: "text" (aligned "part: value" lines) or "markdown" (a table ready to paste).
void print_portrait_table(std::ostream& out, const PortraitTable& t, const std::string& format);

}  // namespace commsim
