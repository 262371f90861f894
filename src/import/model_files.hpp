// SPDX-License-Identifier: Apache-2.0
// The importers' front door: which reader a model file goes to (by its extension and, for .json and .keras, by
// what the file holds), so callers never pick a reader themselves. Every reader refuses what it cannot build
// with one InputError line naming the file; nothing is skipped.
#pragma once
#include <map>
#include <string>

#include "models/model_spec.hpp"
#include "models/networks.hpp"

namespace gpuvs::import {

/// True when `id_or_path` names a model file (by its extension: .toml, .json, .keras, .onnx, .gguf, .safetensors, any case), not a
/// built-in id.
bool is_model_file(const std::string& id_or_path);

/// The network a model file describes: an ONNX graph (its symbolic dims bound from `options`; keys that name
/// no dim are the caller's), a GGUF file (the decoder and its weights as stored), a safetensors file or index (the
/// checkpoint of its folder: import/hf/hf_checkpoint.hpp), a Hugging Face config.json, a Keras model that needs the graph IR, or a
/// Sequential model (gpuvs's TOML/JSON, or Keras's Dense/Dropout models) as an "mlp" network. A `gpt` shape key
/// in `options` is an InputError: the file has its own shape.
models::NetworkInfo network_from_file(const std::string& path, const std::map<std::string, std::string>& options = {});

/// The Sequential model a file describes (what the engine trains): gpuvs's TOML/JSON model file or a Keras
/// model of Dense, Dropout, Activation and Flatten layers.
models::ModelSpec sequential_from_file(const std::string& path);

}  // namespace gpuvs::import
