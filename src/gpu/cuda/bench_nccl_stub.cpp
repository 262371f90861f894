// SPDX-License-Identifier: Apache-2.0
// Selected by CMake when the CUDA toolkit has no nccl.h: the NCCL benchmarks are waived, and multi-GPU
// training (in one process or across MPI ranks) says why it cannot start.
#include "core/error.hpp"
#include "gpu/cuda/collective.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

std::string nccl_version() { return "NCCL not built (no nccl.h at configure time)"; }

BenchResult nccl_allreduce(const BenchRequest&) { return waived(nccl_version()); }

std::vector<std::unique_ptr<Collective>> make_collectives(int) {
  throw RuntimeFailure("multi-GPU training needs NCCL: " + nccl_version());
}

std::string nccl_unique_id() { throw RuntimeFailure("GPUs across MPI ranks need NCCL: " + nccl_version()); }

std::unique_ptr<Collective> make_group_collective(const std::string&, int, int) {
  throw RuntimeFailure("GPUs across MPI ranks need NCCL: " + nccl_version());
}

std::unique_ptr<RankCollectives> open_rank_collectives(int, const std::string&, int, int) {
  throw RuntimeFailure("the NCCL cluster benchmark needs NCCL: " + nccl_version());
}

}  // namespace gpuvs::gpu::cuda
