// SPDX-License-Identifier: Apache-2.0
// What CUDA support this binary was built with. The CUDA backend itself arrives with the CUDA engine
// issue; until then this records whether nvcc compiled the CUDA parts and for which architectures.
#pragma once
#include <string>

namespace gpuvs::engine::cuda {

/// True when configure found nvcc and compiled the CUDA sources.
bool built_with_cuda();
/// "nvcc 13.0, architectures 80;90" or "not built (no nvcc at configure time, or GPUVS_CUDA=OFF)".
std::string build_info();

}  // namespace gpuvs::engine::cuda
