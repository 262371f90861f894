// SPDX-License-Identifier: Apache-2.0
#include "models/builder.hpp"

#include <fmt/format.h>

#include "ir/autodiff.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {
std::string layer_name(const char* base, int index) {
  return index == 0 ? std::string(base) : fmt::format("{}_{}", base, index);
}
}  // namespace

std::vector<ParamInit> param_inits(const ModelSpec& spec) {
  std::vector<ParamInit> out;
  std::int64_t in = spec.input_dim;
  int dense_i = 0;
  for (const auto& l : spec.layers) {
    if (l.kind != LayerSpec::Kind::dense) continue;
    const std::string nm = layer_name("dense", dense_i++);
    out.push_back({nm + "/kernel", {in, l.units}, ParamInit::Kind::glorot_uniform, in, l.units});
    if (l.use_bias) out.push_back({nm + "/bias", {l.units}, ParamInit::Kind::zeros, 0, 0});
    in = l.units;
  }
  return out;
}

Graph build_graph(const ModelSpec& spec, const BuildOptions& opt) {
  Graph g;
  const NodeId x = g.input("x", {opt.batch, spec.input_dim}, opt.dtype);
  const NodeId labels = g.input("labels", {opt.batch}, DType::i32);
  NodeId h = x;
  std::int64_t in = spec.input_dim;
  int dense_i = 0, drop_i = 0;
  for (const auto& l : spec.layers) {
    if (l.kind == LayerSpec::Kind::dropout) {
      const std::string nm = layer_name("dropout", drop_i++);
      // Inverted dropout is active only while training; at evaluation it is the identity.
      if (opt.mode == Mode::train && l.rate > 0.0) h = g.dropout(nm, h, l.rate);
      continue;
    }
    const std::string nm = layer_name("dense", dense_i++);
    const NodeId w = g.param(nm + "/kernel", {in, l.units}, opt.dtype);
    const NodeId b = l.use_bias ? g.param(nm + "/bias", {l.units}, opt.dtype) : kNone;
    // Fuse the activation into the GEMM epilogue when its gradient needs only the output.
    const bool fuse = act_grad_from_output(l.act);
    h = g.matmul(nm + "/matmul", h, w, b, fuse ? l.act : Act::none);
    if (!fuse) h = g.activation(nm + "/" + std::string(act_name(l.act)), h, l.act);
    in = l.units;
  }
  // The output softmax and the cross-entropy are one fused, stable op on the logits (as Keras does
  // when the loss sees a softmax output); predictions' argmax is the same on logits and probabilities.
  g.set_output("logits", h);
  g.set_output("loss", g.softmax_xent("loss", h, labels));
  g.set_output("accuracy", g.accuracy("accuracy", h, labels));
  if (opt.mode == Mode::train && opt.append_step) append_training_step(g, spec.adam);
  return g;
}

}  // namespace gpuvs::models
