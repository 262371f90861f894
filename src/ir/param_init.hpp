// SPDX-License-Identifier: Apache-2.0
// How a param of a graph starts: what the engine fills in before the first step (model builders say which).
#pragma once
#include <cstdint>
#include <string>

#include "ir/ir.hpp"

namespace gpuvs::ir {

/// How a param starts (Keras defaults: glorot_uniform kernels, zero biases).
struct ParamInit {
  std::string name;
  Shape shape;
  enum class Kind { glorot_uniform, zeros } kind = Kind::zeros;
  std::int64_t fan_in = 0, fan_out = 0;
};

}  // namespace gpuvs::ir
