// SPDX-License-Identifier: Apache-2.0
// Model files: a Keras Sequential model described in TOML or JSON (same structure in both).
//
//   name = "my-model"
//   input_shape = [780]
//   [[layers]]                      # dense: units, activation (relu|gelu|tanh|sigmoid|softmax|linear), use_bias
//   type = "dense"                  # dropout: rate
//   units = 128
//   activation = "relu"
//   [compile]
//   optimizer = "adam"              # or { name = "adam", learning_rate = 1e-3, beta_1, beta_2, epsilon }
//   loss = "sparse_categorical_crossentropy"   # or { name = ..., from_logits = true }
//   metrics = ["accuracy"]
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string>

#include "models/model_spec.hpp"

namespace gpuvs::import {

/// Parses a model file (.toml or .json, chosen by extension). Any problem throws InputError as one line
/// "FILE:LINE: what is wrong (what would be right)".
models::ModelSpec load_model_file(const std::filesystem::path& path);
/// Same, from text; `where` names it in errors; `json` picks the syntax.
models::ModelSpec parse_model_text(const std::string& text, const std::string& where, bool json);
/// A .json model file's model from its text and that text parsed without exceptions (`parsed`, discarded
/// when malformed): Keras's own JSON or gpuvs's model file; named after the file when it names no model.
models::ModelSpec json_model_file_spec(const std::string& text, const nlohmann::json& parsed, const std::filesystem::path& path);

}  // namespace gpuvs::import
