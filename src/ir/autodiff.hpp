// SPDX-License-Identifier: Apache-2.0
// Reverse-mode automatic differentiation over the graph IR, and the training-step builder.
#pragma once
#include <map>

#include "ir/ir.hpp"

namespace gpuvs::ir {

/// Appends to `g` the nodes computing d(root)/d(x) for every node x that depends on a trainable param,
/// given `seed` = d(loss)/d(root) (a node with root's shape). Returns node -> gradient node, for params
/// and intermediate nodes alike. Inputs (data) get no gradient. Throws std::invalid_argument naming the
/// op when a node on the path has no gradient rule.
std::map<NodeId, NodeId> append_gradients(Graph& g, NodeId root, NodeId seed);

/// Turns a forward graph with a scalar output "loss" into one training step: forward, backward (seeded
/// with 1) and one Adam update per trainable param. Returns the param -> gradient map.
std::map<NodeId, NodeId> append_training_step(Graph& g, const AdamConfig& adam);

}  // namespace gpuvs::ir
