// SPDX-License-Identifier: Apache-2.0
// Which catalog device a probed GPU is: by its model token, SM count, memory size and form factor.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "hw/nvidia.hpp"

namespace gpuvs::hw {

/// The best-matching catalog id, or empty when no catalog device shares the model name and SM count.
std::string match_catalog(const GpuDevice& d, const catalog::Catalog& cat);

/// The catalog id a device name as nvidia-smi and torch.cuda.get_device_name() print it stands for
/// ("NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"), by its model token and what
/// else the name says (memory size, PCIe or SXM: nvidia-smi names the PCIe variants so); empty when no device
/// or more than one fits equally well.
std::string match_catalog_name(const std::string& name, const catalog::Catalog& cat);
/// Every catalog id that fits `name` best (several when the name leaves the variant open: "NVIDIA A100").
std::vector<std::string> catalog_names_matching(const std::string& name, const catalog::Catalog& cat);

/// probe_nvidia() with every GPU's catalog_id filled in.
NvidiaReport probe_nvidia_matched(const catalog::Catalog& cat);

}  // namespace gpuvs::hw
