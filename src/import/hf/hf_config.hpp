// SPDX-License-Identifier: Apache-2.0
// Hugging Face `config.json` files as workloads: the decoder and encoder families people train and serve,
// read into gpuvs's shapes (DecoderConfig, BertConfig). Only the shape is read; weights are not needed to
// price a model. Keys that change nothing gpuvs prices (RoPE scaling, dropout probabilities, token ids)
// are accepted; a key that changes the shape in a way gpuvs does not build is refused, never skipped.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "models/networks.hpp"

namespace gpuvs::import {

/// The `architectures` gpuvs reads.
const std::vector<std::string>& hf_architectures();

/// True when parsed JSON is a Hugging Face model config (an object naming `architectures` or `model_type`)
/// rather than a gpuvs Sequential model file; false for anything else, a discarded parse included.
bool is_hf_config(const nlohmann::json& j);

/// The network a config describes. `where` names the file in errors: InputError "WHERE: $.key: what" for
/// malformed JSON, missing or impossible values, and unsupported architectures or features.
models::NetworkInfo hf_network(const std::string& text, const std::string& where);
/// The same from JSON the caller has parsed already (to tell the kinds of model file apart, once).
models::NetworkInfo hf_network_parsed(const nlohmann::json& j, const std::string& where);

}  // namespace gpuvs::import
