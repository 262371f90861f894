// Built-in workloads by id. Ids are lowercase-dashed; an unknown id is an InputError naming the closest ids.
#pragma once
#include <string>
#include <vector>

#include "graph/model_spec.hpp"

namespace gpuvs::graph {

struct WorkloadInfo {
  std::string id;
  std::string description;
};

std::vector<WorkloadInfo> builtin_workloads();
/// The Sequential spec of a built-in workload.
ModelSpec builtin_workload(const std::string& id);
/// A built-in id, or else a model file path (.toml / .json).
ModelSpec resolve_workload(const std::string& id_or_path);

}  // namespace gpuvs::graph
