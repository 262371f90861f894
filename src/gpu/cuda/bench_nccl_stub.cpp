// Selected by CMake when the CUDA toolkit has no nccl.h: the all-reduce benchmark is waived.
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

std::string nccl_version() { return "NCCL not built (no nccl.h at configure time)"; }

BenchResult nccl_allreduce(const BenchRequest&) { return waived(nccl_version()); }

}  // namespace gpuvs::gpu::cuda
