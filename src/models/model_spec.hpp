// SPDX-License-Identifier: Apache-2.0
// A Keras-like Sequential model description: the layers, the optimizer and the loss.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace gpuvs::models {

struct LayerSpec {
  enum class Kind { dense, dropout } kind = Kind::dense;
  std::int64_t units = 0;    // dense
  ir::Act act = ir::Act::none;       // dense; softmax is recorded in `softmax`
  bool softmax = false;      // dense with activation="softmax" (output layer only)
  bool use_bias = true;      // dense
  double rate = 0.0;         // dropout
  int line = 0;              // where it was declared (model files), 0 if built in
};

/// The most layers a model file may list: ten times the deepest published network's (ResNet-1001, EfficientNet-B7's
/// ~800). A file of 300,000 layers fits in 56 KB compressed; it is refused before anything is built for it.
inline constexpr std::size_t kMaxLayers = 10000;

struct ModelSpec {
  std::string name;
  std::int64_t input_dim = 0;
  std::vector<LayerSpec> layers;
  ir::AdamConfig adam;  // optimizer: Adam is the one supported
  std::string loss = "sparse_categorical_crossentropy";
  bool from_logits = false;
  std::vector<std::string> metrics{"accuracy"};

  /// Units of the last Dense layer (the class count).
  std::int64_t num_classes() const;
  /// Trainable parameter count.
  std::int64_t param_count() const;
  /// A stable text of everything that defines the architecture (checkpoints refuse other models).
  std::string fingerprint() const;
  /// Checks the Keras rules the builder relies on; throws InputError naming `where` and the layer line.
  void validate(const std::string& where) const;
  /// Keras-style summary table (layer, output shape, params).
  std::string summary() const;
};

}  // namespace gpuvs::models
