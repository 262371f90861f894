// SPDX-License-Identifier: Apache-2.0
#include "models/model_spec.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

std::int64_t ModelSpec::num_classes() const {
  for (auto it = layers.rbegin(); it != layers.rend(); ++it)
    if (it->kind == LayerSpec::Kind::dense) return it->units;
  return 0;
}

std::int64_t ModelSpec::param_count() const {
  std::int64_t in = input_dim, total = 0;
  for (const auto& l : layers) {
    if (l.kind != LayerSpec::Kind::dense) continue;
    total += in * l.units + (l.use_bias ? l.units : 0);
    in = l.units;
  }
  return total;
}

std::string ModelSpec::fingerprint() const {
  std::string s = fmt::format("in={}", input_dim);
  for (const auto& l : layers) {
    if (l.kind == LayerSpec::Kind::dense)
      s += fmt::format(";dense({},{},bias={})", l.units, l.softmax ? "softmax" : act_name(l.act), l.use_bias);
    else
      s += fmt::format(";dropout({})", l.rate);
  }
  return s + fmt::format(";loss={};from_logits={}", loss, from_logits);
}

void ModelSpec::validate(const std::string& where) const {
  auto at = [&](const LayerSpec& l) { return l.line > 0 ? fmt::format("{}:{}", where, l.line) : where; };
  // Sizes up to 2^31 keep every product below in int64; the parameter total is held to 2^48, as the ONNX
  // reader's tensors are (units = 2^63 - 1 overflowed param_count; found by fuzz_model_toml's tree mutator).
  constexpr std::int64_t kMaxSize = std::int64_t{1} << 31, kMaxParams = std::int64_t{1} << 48;
  if (input_dim <= 0) throw InputError(fmt::format("{}: input_shape must be a positive size", where));
  if (input_dim > kMaxSize) throw InputError(fmt::format("{}: input_shape {} is larger than 2^31", where, input_dim));
  if (layers.empty()) throw InputError(fmt::format("{}: the model has no layers", where));
  if (layers.size() > kMaxLayers) throw InputError(fmt::format("{}: {} layers, more than the {} a model file may list", where, layers.size(), kMaxLayers));
  const LayerSpec* last_dense = nullptr;
  for (const auto& l : layers)
    if (l.kind == LayerSpec::Kind::dense) last_dense = &l;
  if (last_dense == nullptr) throw InputError(fmt::format("{}: the model needs at least one dense layer", where));
  for (const auto& l : layers) {
    if (l.kind == LayerSpec::Kind::dense) {
      if (l.units <= 0) throw InputError(fmt::format("{}: dense units must be positive, got {}", at(l), l.units));
      if (l.units > kMaxSize) throw InputError(fmt::format("{}: dense units {} is larger than 2^31", at(l), l.units));
      if (l.softmax && &l != last_dense)
        throw InputError(fmt::format("{}: softmax is supported only on the output layer", at(l)));
    } else if (!(l.rate >= 0.0 && l.rate < 1.0)) {
      throw InputError(fmt::format("{}: dropout rate must be in [0, 1), got {}", at(l), l.rate));
    }
  }
  std::int64_t in = input_dim, params = 0;
  for (const auto& l : layers) {
    if (l.kind != LayerSpec::Kind::dense) continue;
    params += in * l.units + l.units;  // each term below 2^63 (sizes to 2^31), the sum held below 2^48
    if (params > kMaxParams) throw InputError(fmt::format("{}: the model has more than 2^48 parameters", at(l)));
    in = l.units;
  }
  if (loss != "sparse_categorical_crossentropy")
    throw InputError(fmt::format("{}: loss '{}' is not supported (expected sparse_categorical_crossentropy)", where,
                                 strings::printable(loss)));
  if (!last_dense->softmax && !from_logits)
    throw InputError(fmt::format(
        "{}: the output layer is not softmax, so the loss needs from_logits = true", at(*last_dense)));
  if (last_dense->softmax && from_logits)
    throw InputError(fmt::format("{}: from_logits = true but the output layer applies softmax", at(*last_dense)));
  if (last_dense->units < 2)
    throw InputError(fmt::format("{}: the output layer needs at least 2 classes", at(*last_dense)));
  for (const auto& m : metrics)
    if (m != "accuracy")
      throw InputError(fmt::format("{}: metric '{}' is not supported (expected accuracy)", where, strings::printable(m)));
  if (!(adam.learning_rate > 0) || !(adam.beta_1 >= 0 && adam.beta_1 < 1) || !(adam.beta_2 >= 0 && adam.beta_2 < 1) ||
      !(adam.epsilon > 0))
    throw InputError(fmt::format("{}: Adam needs learning_rate > 0, 0 <= beta < 1 and epsilon > 0", where));
}

std::string ModelSpec::summary() const {
  std::string out = fmt::format("Model: \"{}\"\n{:<28}{:<22}{:>10}\n", name, "Layer (type)", "Output Shape", "Param #");
  std::int64_t in = input_dim;
  int dense_i = 0, drop_i = 0;
  for (const auto& l : layers) {
    if (l.kind == LayerSpec::Kind::dense) {
      const std::string nm = dense_i == 0 ? "dense" : fmt::format("dense_{}", dense_i);
      ++dense_i;
      const std::int64_t p = in * l.units + (l.use_bias ? l.units : 0);
      out += fmt::format("{:<28}{:<22}{:>10}\n", nm + " (Dense)", fmt::format("(None, {})", l.units), p);
      in = l.units;
    } else {
      const std::string nm = drop_i == 0 ? "dropout" : fmt::format("dropout_{}", drop_i);
      ++drop_i;
      out += fmt::format("{:<28}{:<22}{:>10}\n", nm + " (Dropout)", fmt::format("(None, {})", in), 0);
    }
  }
  return out + fmt::format("Total params: {}\n", param_count());
}

}  // namespace gpuvs::models
