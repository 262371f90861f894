// One rank of an all-reduce group across the GPUs of this process (NCCL, loaded at run time), kept free
// of NCCL's headers so the engine compiles where the toolkit lacks them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
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

}  // namespace gpuvs::gpu::cuda
