// Selected by CMake when the CUDA toolkit has no nccl.h: the all-reduce benchmark is waived.
#include "core/error.hpp"
#include "gpu/cuda/collective.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

std::string nccl_version() { return "NCCL not built (no nccl.h at configure time)"; }

BenchResult nccl_allreduce(const BenchRequest&) { return waived(nccl_version()); }

std::vector<std::unique_ptr<Collective>> make_collectives(int) {
  throw RuntimeFailure("multi-GPU training needs NCCL: " + nccl_version());
}

}  // namespace gpuvs::gpu::cuda
