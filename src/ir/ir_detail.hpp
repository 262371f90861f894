// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the files that define Graph's op constructors (ir.cpp, ir_nn.cpp). Not public.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.hpp"

namespace gpuvs::ir::detail {

/// Shape and argument errors name the op and the node (MLX's lesson): "graph op conv2d 'layer1': ...".
[[noreturn]] inline void bad(std::string_view op, const std::string& name, const std::string& why) {
  throw std::invalid_argument(fmt::format("graph op {} '{}': {}", op, name, why));
}

inline Node make(OpKind op, std::string name, std::vector<NodeId> inputs, Shape shape, DType dtype) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.shape = std::move(shape);
  n.dtype = dtype;
  return n;
}

}  // namespace gpuvs::ir::detail
