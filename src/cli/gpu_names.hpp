// SPDX-License-Identifier: Apache-2.0
// The names users type for a GPU: a catalog id or alias, or the name nvidia-smi and PyTorch print for the card.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"

namespace gpuvs::cli {

/// The catalog id `typed` names: an id or alias as catalog::Catalog::find takes it, else a device name as
/// nvidia-smi and torch.cuda.get_device_name() print it, said on stderr ("read 'NVIDIA GeForce RTX 4090' as
/// rtx-4090"). Neither: catalog::find's InputError, with its nearest ids.
std::string gpu_id(const catalog::Catalog& cat, const std::string& typed);
std::vector<std::string> gpu_ids(const catalog::Catalog& cat, const std::vector<std::string>& typed);

}  // namespace gpuvs::cli
