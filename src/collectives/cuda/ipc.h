#pragma once
// CUDA IPC between the ranks of one node: each rank's device buffer becomes addressable by every
// other rank of the node (cudaIpcGetMemHandle / cudaIpcOpenMemHandle), so kernels read and write
// peers' memory directly. Handles travel through MPI once per buffer and the mappings are cached.
// Ranks that share one GPU work too (the mapping is then the same HBM seen by another process).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <vector>

namespace commsim::cuda {

class IpcMap {
 public:
  // node_comm: the ranks that share memory (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED).
  // The map keeps its own duplicate of it.
  explicit IpcMap(MPI_Comm node_comm);
  ~IpcMap();  // closes every mapping still open (does not free anyone's buffer)
  IpcMap(const IpcMap&) = delete;
  IpcMap& operator=(const IpcMap&) = delete;

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // Collective over the node: every rank passes its own buffer, which must be the start of a
  // cudaMalloc allocation of this process. Returns the address of every rank's buffer in this
  // process, indexed by local rank (this rank's own entry is `base`). The first call for a buffer
  // exchanges handles and opens them; later calls on every rank with the same buffer return the
  // cached mapping after one small agreement (no handle traffic, no opening).
  const std::vector<void*>& map(void* base);

  // Collective over the node: closes the peers' mappings of `base` and waits until every rank has
  // closed its mapping of this rank's buffer, so the caller may cudaFree it afterwards.
  void unmap(void* base);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::map<void*, std::vector<void*>> cache_;  // own base -> every rank's buffer
};

}  // namespace commsim::cuda
