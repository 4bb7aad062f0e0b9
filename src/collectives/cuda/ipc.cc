#include "collectives/cuda/ipc.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "collectives/cuda/cuda_check.h"
#include "collectives/host/mpi_check.h"
#include "model/error.h"

namespace commsim::cuda {

IpcMap::IpcMap(MPI_Comm node_comm) {
  COMMSIM_MPI_CHECK(MPI_Comm_dup(node_comm, &comm_));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(comm_, &local_rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(comm_, &local_size_));
}

IpcMap::~IpcMap() {
  // Destructors never throw: close what is open and ignore failures (the context may be gone).
  for (auto& [base, ptrs] : cache_)
    for (int r = 0; r < static_cast<int>(ptrs.size()); ++r)
      if (r != local_rank_ && ptrs[r]) cudaIpcCloseMemHandle(ptrs[r]);
  int fin = 0;
  COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin));
  if (!fin && comm_ != MPI_COMM_NULL) COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_free(&comm_));
}

const std::vector<void*>& IpcMap::map(void* base) {
  if (base == nullptr) throw Error("IpcMap::map: null buffer on " + where());
  // Agree whether every rank already has its buffer mapped: all must take the same path.
  int hit = cache_.count(base) ? 1 : 0, all_hit = 0;
  COMMSIM_MPI_CHECK(MPI_Allreduce(&hit, &all_hit, 1, MPI_INT, MPI_MIN, comm_));
  if (all_hit) return cache_.at(base);
  if (hit) {
    // Some other rank has a new buffer: drop our stale mapping and exchange again.
    auto& old = cache_.at(base);
    for (int r = 0; r < local_size_; ++r)
      if (r != local_rank_ && old[r]) cudaIpcCloseMemHandle(old[r]);
    cache_.erase(base);
  }
  cudaIpcMemHandle_t mine;
  CUDA_CHECK(cudaIpcGetMemHandle(&mine, base));
  std::vector<cudaIpcMemHandle_t> all(local_size_);
  COMMSIM_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_));
  std::vector<void*> ptrs(local_size_, nullptr);
  for (int r = 0; r < local_size_; ++r) {
    if (r == local_rank_) {
      ptrs[r] = base;
      continue;
    }
    CUDA_CHECK(cudaIpcOpenMemHandle(&ptrs[r], all[r], cudaIpcMemLazyEnablePeerAccess));
  }
  return cache_[base] = std::move(ptrs);
}

void IpcMap::unmap(void* base) {
  auto it = cache_.find(base);
  if (it != cache_.end()) {
    for (int r = 0; r < local_size_; ++r)
      if (r != local_rank_ && it->second[r]) CUDA_CHECK(cudaIpcCloseMemHandle(it->second[r]));
    cache_.erase(it);
  }
  COMMSIM_MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace commsim::cuda
