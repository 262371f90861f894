// SPDX-License-Identifier: Apache-2.0
// Keras models as Keras writes them: `model.to_json()` (Keras 2 and Keras 3 forms) and the config.json
// inside a `.keras` archive (with its compile config). Sequential models — and Functional models whose
// layers form one chain — of Dense, Dropout, Activation, Flatten and InputLayer become a ModelSpec the
// CPU engine trains and the model prices. A layer gpuvs cannot build, or a setting it would silently drop
// (a regularizer, a constraint), is refused with the layer's name and class; it is never skipped.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

#include "models/model_spec.hpp"

namespace gpuvs::import {

/// The config.json inside a Keras 3 `.keras` archive (a zip: config.json, metadata.json, the weights). The
/// weights are not read. InputError "PATH: what" when it is not a zip or has no config.json.
std::string keras_archive_config(const std::string& path);

/// A Keras activation name as the IR's activation; softmax is reported in `softmax` (the loss fuses it);
/// nullopt for a name gpuvs does not build.
std::optional<ir::Act> keras_activation(const std::string& name, bool& softmax);

/// The Keras layer classes this reader builds into a ModelSpec (the engine trains exactly these).
const std::vector<std::string>& keras_sequential_layers();

/// True when parsed JSON is a Keras model (a Sequential, Functional or Model `class_name` with a `config`);
/// false for anything else, a discarded parse included.
bool is_keras_json(const nlohmann::json& j);

/// A `.keras` archive's compile config (no other form has one; absent, nothing changes): Adam's settings
/// and from_logits into `spec`, its metrics as its own. Refuses, "WHERE: $.compile_config.KEY: what", an
/// optimizer other than Adam, a loss other than sparse categorical cross-entropy, a metric other than
/// accuracy: the engine trains only those, and the Keras graph path prices only those (never SGD as Adam).
void keras_compile_config(const nlohmann::json& j, const std::string& where, models::ModelSpec& spec);

/// The model. InputError "WHERE: layer NAME (CLASS): what" or "WHERE: $.path: what" for anything it
/// cannot represent.
models::ModelSpec keras_model_spec(const std::string& text, const std::string& where);
/// The same from JSON the caller has parsed already.
models::ModelSpec keras_model_spec_parsed(const nlohmann::json& j, const std::string& where);

}  // namespace gpuvs::import
