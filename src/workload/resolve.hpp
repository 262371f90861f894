// SPDX-License-Identifier: Apache-2.0
// The front door for a workload: a name (a built-in network, a built-to-size decoder, `gpt` with its shape
// options, a built-in Sequential model) or a model file, resolved by one rule for every command.
#pragma once
#include <map>
#include <string>

#include "models/model_spec.hpp"
#include "models/networks.hpp"

namespace gpuvs::workload {

/// The network `id_or_path` names: a model file (import/model_files.hpp: `options` bind an ONNX file's symbolic
/// dims) when it has a model file's extension, a Hugging Face checkpoint (a folder with config.json, or a hub id
/// found in the local cache: import/hf/hf_checkpoint.hpp), else a built-in name (models::builtin_network: `gpt`
/// takes its shape from `options`). Option keys neither reads are the caller's and ignored here.
models::NetworkInfo resolve_network(const std::string& id_or_path, const std::map<std::string, std::string>& options = {});

/// The Sequential model (what the engine trains) `id_or_path` names: a model file (.toml, .json, .keras, or any
/// path with a '/' that exists) or a built-in Sequential preset.
models::ModelSpec resolve_sequential(const std::string& id_or_path);

}  // namespace gpuvs::workload
