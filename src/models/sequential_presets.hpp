// SPDX-License-Identifier: Apache-2.0
// Built-in Sequential models (the ones the engine trains) by id. Ids are lowercase-dashed; an unknown id is an InputError naming the closest ids.
#pragma once
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace gpuvs::models {

struct SequentialPreset {
  std::string id;
  std::string description;
};

std::vector<SequentialPreset> sequential_presets();
/// The Sequential spec of a built-in workload.
ModelSpec sequential_preset(const std::string& id);

}  // namespace gpuvs::models
