// SPDX-License-Identifier: Apache-2.0
// Compiled by nvcc when CUDA is enabled; selected by CMake instead of cuda_build_stub.cpp.
#include "engine/cuda/cuda_build.hpp"

namespace gpuvs::engine::cuda {

bool built_with_cuda() { return true; }

std::string build_info() {
  return "nvcc " + std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) +
         ", architectures " GPUVS_CUDA_ARCHS;
}

}  // namespace gpuvs::engine::cuda
