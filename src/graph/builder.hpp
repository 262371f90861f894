// Builds graphs from a Sequential ModelSpec: the training step (forward, backward, Adam) or the
// evaluation graph (forward without dropout), both with the same param names so they share storage.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/ir.hpp"
#include "graph/model_spec.hpp"

namespace gpuvs::graph {

enum class Mode { train, eval };

struct BuildOptions {
  std::int64_t batch = 32;
  DType dtype = DType::f32;
  Mode mode = Mode::train;
  bool append_step = true;  // train mode: also append backward and Adam (else the forward with dropout)
};

/// How a param starts (Keras defaults: glorot_uniform kernels, zero biases).
struct ParamInit {
  std::string name;
  Shape shape;
  enum class Kind { glorot_uniform, zeros } kind = Kind::zeros;
  std::int64_t fan_in = 0, fan_out = 0;
};

/// Inputs "x" [batch, input_dim] and "labels" [batch] (i32); outputs "loss" and "accuracy".
/// Params "dense/kernel", "dense/bias", "dense_1/kernel", ... as Keras names them.
Graph build_graph(const ModelSpec& spec, const BuildOptions& opt);
std::vector<ParamInit> param_inits(const ModelSpec& spec);

}  // namespace gpuvs::graph
