// Which catalog device a probed GPU is: by its model token, SM count, memory size and form factor.
#pragma once
#include <string>

#include "catalog/catalog.hpp"
#include "hw/nvidia.hpp"

namespace gpuvs::hw {

/// The best-matching catalog id, or empty when no catalog device shares the model name and SM count.
std::string match_catalog(const GpuDevice& d, const catalog::Catalog& cat);

/// probe_nvidia() with every GPU's catalog_id filled in.
NvidiaReport probe_nvidia_matched(const catalog::Catalog& cat);

}  // namespace gpuvs::hw
