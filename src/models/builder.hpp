// SPDX-License-Identifier: Apache-2.0
// Builds graphs from a Sequential ModelSpec: the training step (forward, backward, Adam) or the
// evaluation graph (forward without dropout), both with the same param names so they share storage.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/ir.hpp"
#include "ir/param_init.hpp"
#include "models/model_spec.hpp"

namespace gpuvs::models {

enum class Mode { train, eval };

struct BuildOptions {
  std::int64_t batch = 32;
  ir::DType dtype = ir::DType::f32;
  Mode mode = Mode::train;
  bool append_step = true;  // train mode: also append backward and Adam (else the forward with dropout)
};

/// Inputs "x" [batch, input_dim] and "labels" [batch] (i32); outputs "loss" and "accuracy".
/// Params "dense/kernel", "dense/bias", "dense_1/kernel", ... as Keras names them.
ir::Graph build_graph(const ModelSpec& spec, const BuildOptions& opt);
std::vector<ir::ParamInit> param_inits(const ModelSpec& spec);

}  // namespace gpuvs::models
