// SPDX-License-Identifier: Apache-2.0
// Selected by CMake when CUDA is not built.
#include "engine/cuda/cuda_build.hpp"

namespace gpuvs::engine::cuda {

bool built_with_cuda() { return false; }

std::string build_info() { return "not built (no nvcc at configure time, or GPUVS_CUDA=OFF)"; }

}  // namespace gpuvs::engine::cuda
