// SPDX-License-Identifier: Apache-2.0
#include "import/held_models.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::import {

namespace {
std::mutex g_mutex;
std::map<std::string, std::string>& held() {
  static std::map<std::string, std::string> models;
  return models;
}
}  // namespace

HeldModel::HeldModel(std::string name, std::string bytes) : name_(std::move(name)) {
  const std::string ext = strings::lower(std::filesystem::path(name_).extension().string());
  if (ext != ".json" && ext != ".toml" && ext != ".onnx" && ext != ".gguf")
    throw InputError(fmt::format("a model held in memory needs a name ending .json, .toml, .onnx or .gguf, not '{}'", strings::printable(name_)));
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (!held().emplace(name_, std::move(bytes)).second)
    throw InputError(fmt::format("a model named '{}' is held in memory already", strings::printable(name_)));
}

HeldModel::~HeldModel() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  held().erase(name_);
}

const std::string* held_model(const std::string& name) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = held().find(name);
  return it == held().end() ? nullptr : &it->second;  // stable: map nodes do not move, and the holder outlives the read
}

}  // namespace gpuvs::import
