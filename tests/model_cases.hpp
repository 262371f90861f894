// SPDX-License-Identifier: Apache-2.0
// One list of small dense models, each stressing one op or variant the engines run: every activation the
// CUDA kernels have, dropout at two rates, a layer without bias, depth, two classes, logits without a
// softmax layer, and the seed model itself. Every backend's tests run the same list (as ggml's
// test-backend-ops lists its cases once): gradients against finite differences on the CPU
// (test_gradients), node by node against the CPU oracle on a GPU at several batch shapes (test_cuda_engine),
// and in perf mode, one step timed on every backend (bench/bench_model_cases).
#pragma once
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/sequential_presets.hpp"

namespace gpuvs::test {

struct ModelCase {
  std::string name;
  models::ModelSpec spec;
};

inline std::vector<ModelCase> model_cases() {
  using models::LayerSpec;
  const auto dense = [](std::int64_t units, ir::Act act, bool bias = true) {
    LayerSpec l;
    l.units = units;
    l.act = act;
    l.use_bias = bias;
    return l;
  };
  const auto dropout = [](double rate) {
    LayerSpec l;
    l.kind = LayerSpec::Kind::dropout;
    l.rate = rate;
    return l;
  };
  const auto classes = [](std::int64_t n) {
    LayerSpec l;
    l.units = n;
    l.softmax = true;
    return l;
  };
  const auto model = [](const std::string& name, std::int64_t input, std::vector<LayerSpec> layers, bool from_logits = false) {
    models::ModelSpec s;
    s.name = name;
    s.input_dim = input;
    s.layers = std::move(layers);
    s.from_logits = from_logits;
    return ModelCase{name, s};
  };
  std::vector<ModelCase> out = {
      model("relu", 12, {dense(8, ir::Act::relu), classes(4)}),
      model("tanh", 12, {dense(8, ir::Act::tanh), classes(4)}),
      model("sigmoid", 12, {dense(8, ir::Act::sigmoid), classes(4)}),
      model("gelu", 12, {dense(8, ir::Act::gelu), classes(4)}),
      model("linear", 12, {dense(8, ir::Act::none), classes(4)}),
      model("dropout-0.2", 12, {dense(8, ir::Act::relu), dropout(0.2), classes(4)}),
      model("dropout-0.5", 12, {dense(8, ir::Act::relu), dropout(0.5), classes(4)}),
      model("no-bias", 12, {dense(8, ir::Act::relu, false), classes(4)}),
      model("deep", 9, {dense(16, ir::Act::relu), dense(8, ir::Act::tanh), dropout(0.1), dense(6, ir::Act::relu), classes(3)}),
      model("two-classes", 5, {dense(4, ir::Act::relu), classes(2)}),
  };
  // Logits straight into the loss (Dense without softmax, from_logits=True).
  ModelCase logits = model("from-logits", 12, {dense(8, ir::Act::relu), dense(4, ir::Act::none)}, true);
  out.push_back(logits);
  out.push_back({"seed-mlp", models::sequential_preset("seed-mlp")});
  return out;
}

}  // namespace gpuvs::test
