// SPDX-License-Identifier: Apache-2.0
// A trained Sequential model's weights as a safetensors file (Hugging Face's format, huggingface/safetensors
// README "Format"), laid out as PyTorch holds them so that `torch.nn.Linear` modules named after the Keras layers
// load them with load_state_dict: "dense.weight" [out, in] (the Keras kernel [in, out] transposed), "dense.bias"
// [out], F32, little-endian, the header padded with spaces to 8 bytes as the reference writer pads it. The
// header's __metadata__ says the format ("pt") and the model's layers.
#pragma once
#include <string>

#include "engine/param_store.hpp"
#include "models/model_spec.hpp"

namespace gpuvs::engine {

/// Text every file export_safetensors writes holds in its first 4 KiB (how --save-weights knows its own files).
inline constexpr const char* kSafetensorsSignature = "\"gpuvs_weights\"";

/// The file's bytes: every Dense layer's kernel and bias from `store` (optimizer slots are not weights).
std::string export_safetensors(const models::ModelSpec& spec, const ParamStore& store);

}  // namespace gpuvs::engine
