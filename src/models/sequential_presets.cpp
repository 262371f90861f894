// SPDX-License-Identifier: Apache-2.0
#include "models/sequential_presets.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {
// The seed document's Keras model:
//   Dense(128, relu, input_shape=(780,)) -> Dropout(0.2) -> Dense(10, softmax);
//   compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
ModelSpec seed_mlp() {
  ModelSpec s;
  s.name = "seed-mlp";
  s.input_dim = 780;
  LayerSpec d1;
  d1.units = 128;
  d1.act = Act::relu;
  LayerSpec drop;
  drop.kind = LayerSpec::Kind::dropout;
  drop.rate = 0.2;
  LayerSpec d2;
  d2.units = 10;
  d2.softmax = true;
  s.layers = {d1, drop, d2};
  return s;
}
}  // namespace

std::vector<SequentialPreset> sequential_presets() {
  return {{"seed-mlp", "Keras Dense(128, relu, input 780) -> Dropout(0.2) -> Dense(10, softmax), Adam, SCCE"}};
}

ModelSpec sequential_preset(const std::string& id) {
  if (id == "seed-mlp") return seed_mlp();
  std::vector<std::string> ids;
  for (const auto& w : sequential_presets()) ids.push_back(w.id);
  throw InputError(fmt::format("unknown workload '{}' (closest: {}; or give a .toml/.json model file)",
                               strings::printable(id),
                               strings::join(strings::closest(id, ids), ", ")));
}

}  // namespace gpuvs::models
