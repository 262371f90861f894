// SPDX-License-Identifier: Apache-2.0
// NCCL, loaded at run time (libnccl.so.2), so the plugin works where it is absent: the entry points gpuvs
// calls, or the one-line reason they are missing. Compiled only where the toolkit has nccl.h.
#pragma once
#include <nccl.h>

#include <string>

namespace gpuvs::gpu::cuda {

struct NcclLibrary {
  void* handle = nullptr;
  std::string why;  // empty when every entry point below was found
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitAll) init_all = nullptr;
  decltype(&ncclCommInitRank) init_rank = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

/// The process's NCCL (loaded once).
const NcclLibrary& nccl();
/// Throws CudaFailure "WHAT: NCCL's error string" unless r is ncclSuccess.
void nccl_check(ncclResult_t r, const char* what);
/// The library, or RuntimeFailure "PURPOSE needs NCCL: why".
const NcclLibrary& nccl_for(const char* purpose);
/// Member `rank` of `size` in the group whose ncclUniqueId bytes are `unique_id`, on the current CUDA
/// device (ncclCommInitRank; every member calls it at the same time). RuntimeFailure naming why.
ncclComm_t join_group(const std::string& unique_id, int rank, int size);

}  // namespace gpuvs::gpu::cuda
