// SPDX-License-Identifier: Apache-2.0
// Benchmark results as a JSON record (schema_version 2): the figures with units, spec and % of spec,
// the GPU environment of each, and the machine that produced them. `gpuvs bench -o json` prints it,
// `--save` stores it for the performance model's calibration and for the report.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/registry.hpp"
#include "core/files.hpp"

namespace gpuvs::bench {

constexpr int kResultsSchema = 2;

nlohmann::json measurement_json(const Measurement& m);
/// The whole record: {"schema_version", "created_utc", "gpuvs", "quick", "machine", "results"}.
nlohmann::json results_json(const std::vector<Measurement>& results, bool quick, const std::string& gpuvs_version);

/// Reads results back (from --save files); InputError naming `where` on malformed records.
/// The output policy's view of a record file named by `flag` (--save): one results_json wrote (its "gpuvs" key,
/// near the top of the sorted dump) is replaced; anything else needs `force`.
files::OutputSpec record_output(const std::string& flag, bool force);

std::vector<Measurement> measurements_from_json(const nlohmann::json& record, const std::string& where);

}  // namespace gpuvs::bench
