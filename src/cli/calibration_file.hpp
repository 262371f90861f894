// SPDX-License-Identifier: Apache-2.0
// Reads a saved bench record (gpuvs bench --save) into the performance model's calibration for the
// catalog device it was measured on.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/registry.hpp"
#include "catalog/catalog.hpp"
#include "perf/calibration.hpp"

namespace gpuvs::cli {

/// InputError (naming the file) when it is unreadable, not a bench record, or holds no GPU figures from
/// a catalog device.
perf::Calibration load_calibration(const std::string& path, const catalog::Catalog& cat);

/// The calibration for the catalog GPU these benchmark results measured (`quick`: the sizes --quick uses),
/// or nullopt when they hold no GPU figure from a catalog device. InputError when they mix two devices.
std::optional<perf::Calibration> calibration_from(const std::vector<bench::Measurement>& results, bool quick,
                                                  const catalog::Catalog& cat, const std::string& source);

/// Each class's benchmark, unit, measured and modelled rate and their ratio, as predict --json and a stored evaluate run
/// both write them; `applied`: the calibration was measured on the card being priced (else reported only).
nlohmann::json calibration_classes_json(const perf::Calibration& cal, bool applied);

}  // namespace gpuvs::cli
