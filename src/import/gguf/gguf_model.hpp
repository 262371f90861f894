// SPDX-License-Identifier: Apache-2.0
// A GGUF file as a workload: the decoder its metadata describes (llama.cpp's `{arch}.*` keys, checked against the
// tensors' shapes) and the weights as stored, tensor by tensor, so the serving model prices the file's actual
// quantization mix (a Q4_K_M file keeps some tensors in Q6_K, Q5_0 or F32 by llama.cpp's rules and its rows).
#pragma once
#include <string>
#include <vector>

#include "import/gguf/gguf_file.hpp"
#include "models/networks.hpp"

namespace gpuvs::import {

/// The `general.architecture` values read: llama (LLaMA, Mistral and Mixtral as llama.cpp converts them), qwen2,
/// gemma.
const std::vector<std::string>& gguf_architectures();

/// The decoder and its stored weights. InputError "WHERE: KEY: what" for a missing or impossible hyperparameter,
/// an architecture not read, a tensor missing or shaped otherwise than the metadata says.
models::NetworkInfo gguf_network(const GgufHeader& h, const std::string& where);

/// Reads the file (or the held bytes named `path`) and builds its network.
models::NetworkInfo gguf_network_from(const std::string& path);

}  // namespace gpuvs::import
