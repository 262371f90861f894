// SPDX-License-Identifier: Apache-2.0
// One rank of an all-reduce group (NCCL, loaded at run time): across the GPUs of this process, or one GPU
// in each of several processes (MPI ranks). Kept free of NCCL's headers so the engine compiles where the
// toolkit lacks them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpuvs::gpu::cuda {

class Collective {
 public:
  virtual ~Collective() = default;
  /// In place, the mean over the ranks, enqueued on `stream` (capturable in a CUDA graph).
  virtual void all_reduce_mean(float* buffer, std::int64_t count, cudaStream_t stream) = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
};

/// Communicators for CUDA devices 0..n-1 (ncclCommInitAll). RuntimeFailure naming why when NCCL is absent.
std::vector<std::unique_ptr<Collective>> make_collectives(int n);

/// A new id for a group across processes (ncclGetUniqueId's bytes). RuntimeFailure without NCCL.
std::string nccl_unique_id();
/// This process's member `rank` of `size` in the group `unique_id`, on the current CUDA device
/// (ncclCommInitRank: every member calls it at the same time). RuntimeFailure naming why.
std::unique_ptr<Collective> make_group_collective(const std::string& unique_id, int rank, int size);

}  // namespace gpuvs::gpu::cuda
