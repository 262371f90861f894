#include "graph/workloads.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "graph/model_file.hpp"

namespace gpuvs::graph {

namespace {
// The seed document's Keras model:
//   Dense(128, relu, input_shape=(780,)) -> Dropout(0.2) -> Dense(10, softmax);
//   compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
ModelSpec seed_mlp() {
  ModelSpec s;
  s.name = "seed-mlp";
  s.input_dim = 780;
  LayerSpec d1;
  d1.units = 128;
  d1.act = Act::relu;
  LayerSpec drop;
  drop.kind = LayerSpec::Kind::dropout;
  drop.rate = 0.2;
  LayerSpec d2;
  d2.units = 10;
  d2.softmax = true;
  s.layers = {d1, drop, d2};
  return s;
}
}  // namespace

std::vector<WorkloadInfo> builtin_workloads() {
  return {{"seed-mlp", "Keras Dense(128, relu, input 780) -> Dropout(0.2) -> Dense(10, softmax), Adam, SCCE"}};
}

ModelSpec builtin_workload(const std::string& id) {
  if (id == "seed-mlp") return seed_mlp();
  std::vector<std::string> ids;
  for (const auto& w : builtin_workloads()) ids.push_back(w.id);
  throw InputError(fmt::format("unknown workload '{}' (closest: {}; or give a .toml/.json model file)",
                               strings::printable(id),
                               strings::join(strings::closest(id, ids), ", ")));
}

ModelSpec resolve_workload(const std::string& id_or_path) {
  const std::string ext = strings::lower(std::filesystem::path(id_or_path).extension().string());
  if (ext == ".toml" || ext == ".json" || ext == ".keras") return load_model_file(id_or_path);
  if (id_or_path.find('/') != std::string::npos && std::filesystem::exists(id_or_path))
    return load_model_file(id_or_path);
  return builtin_workload(id_or_path);
}

}  // namespace gpuvs::graph
