// SPDX-License-Identifier: Apache-2.0
// Finds and loads the CUDA plugin once per process. Search order: $GPUVS_CUDA_PLUGIN (a path; "none"
// disables the plugin), the directory of the running executable, ../lib/gpuvs beside it, and the build
// directory the plugin was built into.
#pragma once
#include <string>

#include "gpu/plugin_api.hpp"

namespace gpuvs::gpu {

/// The plugin, or nullptr with `why` set (not built, not found, or not loadable and why).
Api* plugin(std::string& why);

}  // namespace gpuvs::gpu
