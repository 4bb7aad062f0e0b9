#include "collectives/cuda/nccl_baselines.h"

#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "collectives/cuda/cuda_check.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"
#include "model/nccl/ids.h"

namespace commsim::cuda {
namespace {

ncclDataType_t to_nccl(DType t) {
  switch (t) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int32: return ncclInt32;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float16: return ncclFloat16;
  }
  throw Error("unknown dtype for NCCL");
}

ncclRedOp_t to_nccl(RedOp op) {
  switch (op) {
    case RedOp::Sum: return ncclSum;
    case RedOp::Min: return ncclMin;
    case RedOp::Max: return ncclMax;
  }
  throw Error("unknown reduction for NCCL");
}

// NCCL's name of a collective in its TUNING lines ("AllReduce: 4194304 Bytes -> Algo Ring ...").
const char* nccl_func_name(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "AllReduce";
    case Collective::AllGather: return "AllGather";
    case Collective::ReduceScatter: return "ReduceScatter";
    case Collective::Broadcast: return "Broadcast";
    case Collective::Reduce: return "Reduce";
    case Collective::SendRecv:
    case Collective::AllToAll: return nullptr;  // point-to-point: NCCL logs no tuning choice
  }
  return nullptr;
}

}  // namespace

NcclBaselines::NcclBaselines(MPI_Comm comm, double timeout_s) : timeout_s_(timeout_s) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
  if (std::getenv("NCCL_DEBUG") == nullptr) {
    char host[128] = {0};
    gethostname(host, sizeof host - 1);
    const char* keep = std::getenv("COMMSIM_NCCL_LOG_DIR");
    const char* tmp = std::getenv("TMPDIR");
    keep_log_ = keep && *keep;
    const std::string dir = keep_log_ ? keep : tmp && *tmp ? tmp : "/tmp";
    log_path_ = dir + "/commsim-nccl-" + host + "-" + std::to_string(static_cast<long>(getpid())) + ".log";
    std::remove(log_path_.c_str());
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
    setenv("NCCL_DEBUG_FILE", log_path_.c_str(), 1);
  }
}

NcclBaselines::~NcclBaselines() {
  comms_.clear();
  if (!log_path_.empty() && !keep_log_) std::remove(log_path_.c_str());
  int fin = 0;
  COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin));
  if (!fin && comm_ != MPI_COMM_NULL) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
}

NcclSetting NcclBaselines::setting_for(const NcclRequest& r) {
  NcclSetting s;
  // kNcclForcedAlgorithms is in NCCL's order, the order of its NCCL_ALGO names.
  const auto forced = std::find(kNcclForcedAlgorithms.begin(), kNcclForcedAlgorithms.end(), r.algorithm);
  if (forced != kNcclForcedAlgorithms.end())
    s.algo = std::string(nccl::kAlgorithmNames[static_cast<std::size_t>(forced - kNcclForcedAlgorithms.begin())]);
  else if (r.algorithm != Algorithm::Nccl)
    throw Error("algorithm " + std::string(to_string(r.algorithm)) +
                " is not an NCCL baseline (nccl, or nccl-ring, nccl-tree, nccl-nvls, nccl-nvlstree, "
                "nccl-collnet-direct, nccl-collnet-chain, nccl-pat)");
  if (r.protocol != Protocol::None) s.proto = std::string(to_string(r.protocol));
  return s;
}

NcclComm& NcclBaselines::comm_for(const NcclSetting& setting) {
  auto it = comms_.find(setting);
  if (it == comms_.end()) it = comms_.emplace(setting, std::make_unique<NcclComm>(comm_, setting, timeout_s_)).first;
  return *it->second;
}

void NcclBaselines::enqueue(const NcclRequest& r, const void* input, void* output, Stream stream) {
  const NcclSetting setting = setting_for(r);
  if (setting.algo == "Tree" && r.collective != Collective::AllReduce)
    throw Error("NCCL has a Tree algorithm for allreduce only; nccl-tree does not apply to " +
                std::string(to_string(r.collective)));
  NcclComm& c = comm_for(setting);
  ncclComm_t comm = c.get();
  const ncclDataType_t t = to_nccl(r.dtype);
  const ncclRedOp_t op = to_nccl(r.op);
  const std::uint64_t p = static_cast<std::uint64_t>(nranks_), block = r.count / p;
  const std::uint64_t es = dtype_size(r.dtype);
  const auto* in = static_cast<const char*>(input);
  auto* out = static_cast<char*>(output);
  switch (r.collective) {
    case Collective::AllReduce: return c.wait(ncclAllReduce(in, out, r.count, t, op, comm, stream), "ncclAllReduce");
    case Collective::AllGather: return c.wait(ncclAllGather(in, out, block, t, comm, stream), "ncclAllGather");
    case Collective::ReduceScatter:
      return c.wait(ncclReduceScatter(in, out, block, t, op, comm, stream), "ncclReduceScatter");
    case Collective::Broadcast:
      return c.wait(ncclBroadcast(in, out, r.count, t, r.root, comm, stream), "ncclBroadcast");
    case Collective::Reduce: return c.wait(ncclReduce(in, out, r.count, t, op, r.root, comm, stream), "ncclReduce");
    case Collective::SendRecv: {
      // nccl-tests' sendrecv: each rank sends to the next and receives from the previous.
      NCCL_CHECK(ncclGroupStart());
      NCCL_CHECK(ncclSend(in, r.count, t, (rank_ + 1) % nranks_, comm, stream));
      NCCL_CHECK(ncclRecv(out, r.count, t, (rank_ + nranks_ - 1) % nranks_, comm, stream));
      return c.wait(ncclGroupEnd(), "ncclGroupEnd (sendrecv)");
    }
    case Collective::AllToAll: {
      NCCL_CHECK(ncclGroupStart());
      for (int q = 0; q < nranks_; ++q) {
        NCCL_CHECK(ncclSend(in + q * block * es, block, t, q, comm, stream));
        NCCL_CHECK(ncclRecv(out + q * block * es, block, t, q, comm, stream));
      }
      return c.wait(ncclGroupEnd(), "ncclGroupEnd (alltoall)");
    }
  }
  throw Error("unknown collective for NCCL");
}

void NcclBaselines::mark() {
  if (log_path_.empty()) return;
  std::ifstream f(log_path_, std::ios::ate);
  log_offset_ = f ? static_cast<long>(f.tellg()) : 0;
}

NcclChoice NcclBaselines::picked(Collective c) {
  if (log_path_.empty()) return {};
  std::ifstream f(log_path_);
  if (!f) return {};
  f.seekg(log_offset_);
  const char* func = nccl_func_name(c);
  std::vector<NcclTuningLine> lines;
  std::string line;
  while (std::getline(f, line)) {
    if (line.find("NCCL WARN") != std::string::npos) std::fprintf(stderr, "%s\n", line.c_str());
    if (!func) continue;
    if (auto t = parse_nccl_tuning_line(line)) lines.push_back(std::move(*t));
  }
  return func ? nccl_choice(lines, func) : NcclChoice{};
}

void NcclBaselines::abort() noexcept {
  for (auto& [s, c] : comms_) c->abort();
}

std::string closest_forced(double unforced_s, const std::vector<std::pair<std::string, double>>& forced) {
  if (forced.empty() || !(unforced_s > 0)) return "";
  const std::pair<std::string, double>* best = nullptr;
  for (const auto& f : forced)
    if (f.second > 0 && (!best || std::fabs(f.second - unforced_s) < std::fabs(best->second - unforced_s))) best = &f;
  if (!best) return "";
  char pct[32];
  std::snprintf(pct, sizeof pct, "%+.0f%%", (best->second / unforced_s - 1.0) * 100.0);
  return "nearest forced run: " + best->first + " (" + pct + " time vs unforced; matched by time)";
}

}  // namespace commsim::cuda
