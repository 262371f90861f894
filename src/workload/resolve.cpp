// SPDX-License-Identifier: Apache-2.0
#include "workload/resolve.hpp"

#include <filesystem>

#include "core/strings.hpp"
#include "import/hf/hf_checkpoint.hpp"
#include "import/model_files.hpp"
#include "models/sequential_presets.hpp"

namespace gpuvs::workload {

models::NetworkInfo resolve_network(const std::string& id_or_path, const std::map<std::string, std::string>& options) {
  if (import::is_model_file(id_or_path)) return import::network_from_file(id_or_path, options);
  if (import::is_checkpoint(id_or_path)) return import::checkpoint_network(id_or_path, options);
  return models::builtin_network(id_or_path, options);
}

models::ModelSpec resolve_sequential(const std::string& id_or_path) {
  const std::string ext = strings::lower(std::filesystem::path(id_or_path).extension().string());
  if (ext == ".toml" || ext == ".json" || ext == ".keras") return import::sequential_from_file(id_or_path);
  if (id_or_path.find('/') != std::string::npos && std::filesystem::exists(id_or_path))
    return import::sequential_from_file(id_or_path);
  return models::sequential_preset(id_or_path);
}

}  // namespace gpuvs::workload
