// SPDX-License-Identifier: Apache-2.0
// Keras models gpuvs prices but the engine does not run: Sequential or Functional graphs with Conv1D/Conv2D,
// MaxPooling1D/2D, AveragePooling1D/2D, GlobalAveragePooling1D/2D, GlobalMaxPooling1D/2D, BatchNormalization,
// LayerNormalization, Embedding, MultiHeadAttention, Add, Concatenate, Reshape, Flatten, Dense, Dropout
// and Activation, built into the graph IR (images as NCHW; the layout's cost is the convolution pricer's).
// The training graph adds sparse categorical cross-entropy on the model's output and autodiff.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>

#include "models/networks.hpp"

namespace gpuvs::import {

/// True when a parsed Keras model (is_keras_json) has a layer the dense model spec cannot hold.
bool keras_needs_graph(const nlohmann::json& j);

/// The network; InputError "WHERE: layer NAME (CLASS): what" for what it cannot build.
models::NetworkInfo keras_network(const std::string& text, const std::string& where);
/// The same from JSON the caller has parsed already.
models::NetworkInfo keras_network_parsed(const nlohmann::json& j, const std::string& where);

}  // namespace gpuvs::import
