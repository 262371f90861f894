// Reads a saved bench record (gpuvs bench --save) into the performance model's calibration for the
// catalog device it was measured on.
#pragma once
#include <string>

#include "catalog/catalog.hpp"
#include "perf/calibration.hpp"

namespace gpuvs::cli {

/// InputError (naming the file) when it is unreadable, not a bench record, or holds no GPU figures from
/// a catalog device.
perf::Calibration load_calibration(const std::string& path, const catalog::Catalog& cat);

}  // namespace gpuvs::cli
