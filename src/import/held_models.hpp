// SPDX-License-Identifier: Apache-2.0
// Models a program embedding gpuvs holds in memory (the Python module: the text of a Keras model's to_json(), a
// torch.nn.Module exported to ONNX bytes), read through the same importers as model files. Each is held under a
// name with a model file's extension, which is how commands name it (`--workload NAME`) and how errors name it;
// while held, that name is read from memory and never looked up on disk.
#pragma once
#include <string>

namespace gpuvs::import {

/// Holds `bytes` under `name` for this object's lifetime. InputError when `name` has no model file extension
/// (.json, .toml, .onnx, .gguf) or is held already.
class HeldModel {
 public:
  HeldModel(std::string name, std::string bytes);
  ~HeldModel();
  HeldModel(const HeldModel&) = delete;
  HeldModel& operator=(const HeldModel&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

/// The bytes held under `name`, or nullptr.
const std::string* held_model(const std::string& name);

}  // namespace gpuvs::import
