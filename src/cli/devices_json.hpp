// SPDX-License-Identifier: Apache-2.0
// The devices record (`gpuvs devices --json`, and part of every evaluate run).
#pragma once
#include <nlohmann/json.hpp>

#include "hw/cpu.hpp"
#include "hw/nvidia.hpp"

namespace gpuvs::cli {

/// catalog_id of each GPU must already be matched.
nlohmann::json devices_record(const hw::CpuInfo& cpu, const hw::NvidiaReport& gpu);

}  // namespace gpuvs::cli
