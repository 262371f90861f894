// SPDX-License-Identifier: Apache-2.0
// A decoder read from a model file (a Hugging Face config, a GGUF header) as a network: the shape held to what
// gpuvs can build and price, whichever file it came from.
#pragma once
#include <string>

#include "models/networks.hpp"

namespace gpuvs::import {

/// The decoder network `c` describes, named `where` (the file) with `description`. InputError "WHERE: ..." when
/// the sizes together make more than 2^48 parameters or more expert MLPs than a graph can hold (that message names
/// `experts_key`, the file's field for the expert count).
models::NetworkInfo decoder_network(const models::DecoderConfig& c, const std::string& where, std::string description,
                                    const std::string& experts_key);

}  // namespace gpuvs::import
