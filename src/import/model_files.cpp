// SPDX-License-Identifier: Apache-2.0
#include "import/model_files.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"
#include "import/gpuvs/model_file.hpp"
#include "import/gguf/gguf_model.hpp"
#include "import/held_models.hpp"
#include "import/hf/hf_checkpoint.hpp"
#include "import/hf/hf_config.hpp"
#include "import/keras/keras_graph.hpp"
#include "import/keras/keras_model.hpp"
#include "import/onnx/onnx_model.hpp"

namespace gpuvs::import {

namespace {
std::string extension(const std::string& path) { return strings::lower(std::filesystem::path(path).extension().string()); }
}  // namespace

bool is_model_file(const std::string& id_or_path) {
  const std::string ext = extension(id_or_path);
  return ext == ".toml" || ext == ".json" || ext == ".keras" || ext == ".onnx" || ext == ".gguf" || ext == ".safetensors";
}

models::NetworkInfo network_from_file(const std::string& path, const std::map<std::string, std::string>& options) {
  for (const auto& key : models::gpt_shape_keys())
    if (options.count(key))
      throw InputError(fmt::format("option {} sets the shape of workload {} only; '{}' has its own shape", key,
                                   models::kGptWorkload, strings::printable(path)));
  if (is_onnx_path(path)) return onnx_network(path, options);
  if (is_safetensors_path(path)) return checkpoint_network(path, options);
  const std::string ext = extension(path);
  if (ext == ".gguf") return gguf_network_from(path);
  if (ext == ".keras") {
    const std::string text = keras_archive_config(path);
    const nlohmann::json parsed = parse_json_or_discarded(text, path);
    if (keras_needs_graph(parsed)) return keras_network_parsed(parsed, path);
  }
  const std::string* held = held_model(path);
  if (ext == ".json") {
    // A Hugging Face config.json, a Keras model, or gpuvs's own Sequential model in JSON: parsed once to
    // tell them apart (discarded when malformed; the model-file reader then says where).
    const std::string text = held ? *held : files::read_all(path, "model file");
    const nlohmann::json parsed = parse_json_or_discarded(text, path);
    if (is_hf_config(parsed)) return hf_network_parsed(parsed, path);
    if (is_keras_json(parsed) && keras_needs_graph(parsed)) return keras_network_parsed(parsed, path);
    return models::sequential_network(json_model_file_spec(text, parsed, path), "model file " + path);
  }
  return models::sequential_network(sequential_from_file(path), "model file " + path);
}

models::ModelSpec sequential_from_file(const std::string& path) {
  if (const std::string* held = held_model(path)) {
    const std::string ext = extension(path);
    if (ext == ".json") return json_model_file_spec(*held, parse_json_or_discarded(*held, path), path);
    if (ext == ".toml") return parse_model_text(*held, path, false);
  }
  return load_model_file(path);
}

}  // namespace gpuvs::import
