#pragma once
// CPU reduction and the exactly-checkable inputs shared by the reference executor, the host
// executor and the runtime's result check.
#include <cstdint>

#include "collectives/elements/dtype.h"
#include "model/collective.h"

namespace commsim {

// dst[i] = dst[i] op src[i] for count elements; loops the compiler vectorizes.
void reduce_into(void* dst, const void* src, std::uint64_t count, DType dtype, RedOp op);

// Inputs chosen so every expected result is exact in every dtype (small integers, like
// nccl-tests): element i of rank r's Input. Values stay small enough that a sum over up to 1024
// ranks is exact in bfloat16/float16 for the reducing collectives.
void fill_input(void* input, std::uint64_t count, DType dtype, Collective c, int rank, int nranks);

// Number of elements of `output` (rank `rank`'s Output, `count` elements) that differ from the
// exact expected result of collective c with op over nranks ranks whose inputs came from
// fill_input. For reduce, only the root's output is checked (other ranks return 0).
// `count` is the Output's element count (Schedule::output_count); the per-rank block of
// allgather/reducescatter/alltoall (see generators.h) follows from it: count / nranks for
// allgather and alltoall, count for reducescatter. Costs O(count), whatever nranks is.
std::uint64_t count_wrong(const void* output, std::uint64_t count, DType dtype, RedOp op, Collective c, int rank,
                          int nranks, int root);

}  // namespace commsim
