// SPDX-License-Identifier: Apache-2.0
#include "ir/ir.hpp"

#include "ir/ir_detail.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gpuvs::ir {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::fp8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
  }
  return "?";
}

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::string_view act_name(Act a) {
  switch (a) {
    case Act::none: return "linear";
    case Act::relu: return "relu";
    case Act::gelu: return "gelu";
    case Act::tanh: return "tanh";
    case Act::sigmoid: return "sigmoid";
    case Act::silu: return "silu";
  }
  return "?";
}

bool act_grad_from_output(Act a) { return a != Act::gelu && a != Act::silu; }

std::string_view ew_name(EwFn f) {
  switch (f) {
    case EwFn::mul: return "mul";
    case EwFn::add_bcast: return "add_bcast";
    case EwFn::swiglu: return "swiglu";
    case EwFn::geglu: return "geglu";
    case EwFn::gated_grad_a: return "gated_grad_a";
    case EwFn::gated_grad_b: return "gated_grad_b";
    case EwFn::rope: return "rope";
    case EwFn::scale_mask: return "scale_mask";
    case EwFn::add: return "add";
    case EwFn::sub: return "sub";
    case EwFn::div: return "div";
    case EwFn::pow: return "pow";
    case EwFn::max: return "max";
    case EwFn::min: return "min";
    case EwFn::where: return "where";
    case EwFn::neg: return "neg";
    case EwFn::abs: return "abs";
    case EwFn::exp: return "exp";
    case EwFn::log: return "log";
    case EwFn::sqrt: return "sqrt";
    case EwFn::reciprocal: return "reciprocal";
    case EwFn::erf: return "erf";
    case EwFn::cast: return "cast";
    case EwFn::grad: return "grad";
  }
  return "?";
}

std::string_view op_name(OpKind k) {
  switch (k) {
    case OpKind::input: return "input";
    case OpKind::param: return "param";
    case OpKind::fill: return "fill";
    case OpKind::matmul: return "matmul";
    case OpKind::activation: return "activation";
    case OpKind::activation_grad: return "activation_grad";
    case OpKind::dropout: return "dropout";
    case OpKind::dropout_grad: return "dropout_grad";
    case OpKind::softmax: return "softmax";
    case OpKind::softmax_xent: return "softmax_xent";
    case OpKind::softmax_xent_grad: return "softmax_xent_grad";
    case OpKind::reduce_rows: return "reduce_rows";
    case OpKind::add: return "add";
    case OpKind::accuracy: return "accuracy";
    case OpKind::adam_update: return "adam_update";
    case OpKind::conv2d: return "conv2d";
    case OpKind::conv2d_grad_input: return "conv2d_grad_input";
    case OpKind::conv2d_grad_weight: return "conv2d_grad_weight";
    case OpKind::normalize: return "normalize";
    case OpKind::normalize_grad: return "normalize_grad";
    case OpKind::normalize_grad_scale: return "normalize_grad_scale";
    case OpKind::pool2d: return "pool2d";
    case OpKind::pool2d_grad: return "pool2d_grad";
    case OpKind::reshape: return "reshape";
    case OpKind::slice: return "slice";
    case OpKind::repeat: return "repeat";
    case OpKind::reduce_to: return "reduce_to";
    case OpKind::embedding: return "embedding";
    case OpKind::embedding_grad: return "embedding_grad";
    case OpKind::batch_matmul: return "batch_matmul";
    case OpKind::attention: return "attention";
    case OpKind::attention_grad: return "attention_grad";
    case OpKind::elementwise: return "elementwise";
    case OpKind::concat: return "concat";
    case OpKind::upsample2x: return "upsample2x";
    case OpKind::softmax_grad: return "softmax_grad";
    case OpKind::mse_loss: return "mse_loss";
    case OpKind::mse_loss_grad: return "mse_loss_grad";
    case OpKind::reduce: return "reduce";
  }
  return "?";
}

using detail::bad;
using detail::make;

NodeId Graph::add_node(Node n) {
  if (n.name.empty()) n.name = fmt::format("{}_{}", op_name(n.op), nodes_.size());
  if (by_name_.count(n.name)) bad(op_name(n.op), n.name, "duplicate node name");
  // Every tensor's element count fits 64-bit arithmetic with room for bytes and FLOPs (readers' shapes come
  // from files: a product that wrapped would be priced as a small tensor).
  std::int64_t elements = 1;
  for (std::int64_t d : n.shape)
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements) || elements > (std::int64_t{1} << 56))
      bad(op_name(n.op), n.name, fmt::format("shape {} holds more than 2^56 elements", shape_str(n.shape)));
  for (NodeId in : n.inputs)
    if (in < 0 || static_cast<std::size_t>(in) >= nodes_.size()) bad(op_name(n.op), n.name, "input out of range");
  // The parameters together, too: param_count() and every byte count built on it add them up (256 tensors of
  // 2^55 from a Keras file passed 2^63).
  if (n.op == OpKind::param) {
    if (param_elements_ + elements > (std::int64_t{1} << 56))
      bad(op_name(n.op), n.name, "the graph's parameters would hold more than 2^56 elements");
    param_elements_ += elements;
  }
  n.id = static_cast<NodeId>(nodes_.size());
  by_name_.emplace(n.name, n.id);
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

NodeId Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? kNone : it->second;
}

std::string Graph::unique_name(const std::string& base) {
  if (!by_name_.count(base)) return base;
  int& i = taken_below_.try_emplace(base, 2).first->second;
  for (;; ++i) {
    std::string candidate = fmt::format("{}_{}", base, i);
    if (!by_name_.count(candidate)) return candidate;  // not yet taken: the caller may not use it, so i stays
  }
}

NodeId Graph::input(std::string name, Shape shape, DType dtype) {
  Node n = make(OpKind::input, std::move(name), {}, std::move(shape), dtype);
  return add_node(std::move(n));
}

NodeId Graph::param(std::string name, Shape shape, DType dtype, bool trainable) {
  Node n = make(OpKind::param, std::move(name), {}, std::move(shape), dtype);
  n.trainable = trainable;
  return add_node(std::move(n));
}

NodeId Graph::fill(std::string name, Shape shape, DType dtype, double value) {
  Node n = make(OpKind::fill, std::move(name), {}, std::move(shape), dtype);
  n.value = value;
  return add_node(std::move(n));
}

NodeId Graph::matmul(std::string name, NodeId a, NodeId b, NodeId bias, Act act, bool trans_a, bool trans_b) {
  const Node& A = node(a);
  const Node& B = node(b);
  if (A.shape.size() != 2 || B.shape.size() != 2) bad("matmul", name, "operands must be matrices");
  if (A.dtype != B.dtype || A.dtype == DType::i32) bad("matmul", name, "operands must share a float dtype");
  if (!act_grad_from_output(act)) bad("matmul", name, "gelu cannot be fused (its gradient needs the input)");
  const std::int64_t m = trans_a ? A.shape[1] : A.shape[0];
  const std::int64_t k = trans_a ? A.shape[0] : A.shape[1];
  const std::int64_t kb = trans_b ? B.shape[1] : B.shape[0];
  const std::int64_t n = trans_b ? B.shape[0] : B.shape[1];
  if (k != kb)
    bad("matmul", name, fmt::format("inner dimensions differ: {} x {}", shape_str(A.shape), shape_str(B.shape)));
  Node out;
  out.op = OpKind::matmul;
  out.name = std::move(name);
  out.inputs = {a, b};
  if (bias != kNone) {
    if (node(bias).shape != Shape{n}) bad("matmul", out.name, "bias must have shape [N]");
    out.inputs.push_back(bias);
    out.has_bias = true;
  }
  out.shape = {m, n};
  out.dtype = A.dtype;
  out.act = act;
  out.trans_a = trans_a;
  out.trans_b = trans_b;
  return add_node(std::move(out));
}

NodeId Graph::activation(std::string name, NodeId x, Act act) {
  Node n = make(OpKind::activation, std::move(name), {x}, node(x).shape, node(x).dtype);
  n.act = act;
  return add_node(std::move(n));
}

NodeId Graph::activation_grad(std::string name, NodeId dy, NodeId saved, Act act) {
  if (node(dy).shape != node(saved).shape) bad("activation_grad", name, "gradient and saved tensor differ in shape");
  Node n = make(OpKind::activation_grad, std::move(name), {dy, saved}, node(dy).shape, node(dy).dtype);
  n.act = act;
  return add_node(std::move(n));
}

NodeId Graph::dropout(std::string name, NodeId x, double rate) {
  if (!(rate >= 0.0 && rate < 1.0)) bad("dropout", name, fmt::format("rate {} outside [0, 1)", rate));
  Node n = make(OpKind::dropout, std::move(name), {x}, node(x).shape, node(x).dtype);
  n.rate = rate;
  return add_node(std::move(n));
}

NodeId Graph::dropout_grad(std::string name, NodeId dy, NodeId dropout_node) {
  const Node& d = node(dropout_node);
  if (d.op != OpKind::dropout) bad("dropout_grad", name, "ref must be a dropout node");
  Node n;
  n.op = OpKind::dropout_grad;
  n.name = std::move(name);
  n.inputs = {dy};
  n.ref = dropout_node;
  n.shape = d.shape;
  n.dtype = d.dtype;
  n.rate = d.rate;
  return add_node(std::move(n));
}

NodeId Graph::softmax(std::string name, NodeId x) {
  if (node(x).shape.size() < 2) bad("softmax", name, "input needs at least 2 dimensions (rows over the last)");
  Node n = make(OpKind::softmax, std::move(name), {x}, node(x).shape, node(x).dtype);
  return add_node(std::move(n));
}

NodeId Graph::softmax_xent(std::string name, NodeId logits, NodeId labels) {
  const Node& L = node(logits);
  const Node& y = node(labels);
  if (L.shape.size() != 2 || y.dtype != DType::i32 || y.shape != Shape{L.shape[0]})
    bad("softmax_xent", name, "needs logits [B,C] and i32 labels [B]");
  Node n = make(OpKind::softmax_xent, std::move(name), {logits, labels}, {}, L.dtype);
  return add_node(std::move(n));
}

NodeId Graph::softmax_xent_fp32(std::string name, NodeId logits, NodeId labels) {
  const NodeId scored = dtype_size(node(logits).dtype) < 4 ? cast(name + "/fp32", logits, DType::f32) : logits;
  return softmax_xent(std::move(name), scored, labels);
}

NodeId Graph::softmax_xent_grad(std::string name, NodeId dloss, NodeId xent_node) {
  const Node& x = node(xent_node);
  if (x.op != OpKind::softmax_xent) bad("softmax_xent_grad", name, "ref must be a softmax_xent node");
  if (!node(dloss).shape.empty()) bad("softmax_xent_grad", name, "loss gradient must be a scalar");
  Node n;
  n.op = OpKind::softmax_xent_grad;
  n.name = std::move(name);
  n.inputs = {dloss, x.inputs[1]};
  n.ref = xent_node;
  n.shape = node(x.inputs[0]).shape;
  n.dtype = x.dtype;
  return add_node(std::move(n));
}

NodeId Graph::reduce_rows(std::string name, NodeId x) {
  if (node(x).shape.size() != 2) bad("reduce_rows", name, "input must be a matrix");
  Node n = make(OpKind::reduce_rows, std::move(name), {x}, {node(x).shape[1]}, node(x).dtype);
  return add_node(std::move(n));
}

NodeId Graph::add(std::string name, NodeId a, NodeId b) {
  if (node(a).shape != node(b).shape || node(a).dtype != node(b).dtype) bad("add", name, "operands differ");
  Node n = make(OpKind::add, std::move(name), {a, b}, node(a).shape, node(a).dtype);
  return add_node(std::move(n));
}

NodeId Graph::accuracy(std::string name, NodeId logits, NodeId labels) {
  const Node& L = node(logits);
  if (L.shape.size() != 2 || node(labels).shape != Shape{L.shape[0]}) bad("accuracy", name, "needs [B,C] and [B]");
  Node n = make(OpKind::accuracy, std::move(name), {logits, labels}, {}, L.dtype);
  return add_node(std::move(n));
}

NodeId Graph::adam_update(std::string name, NodeId param, NodeId grad, const AdamConfig& cfg) {
  const Node& p = node(param);
  if (p.op != OpKind::param || !p.trainable) bad("adam_update", name, "target must be a trainable param");
  if (node(grad).shape != p.shape) bad("adam_update", name, "gradient shape differs from the param's");
  Node n = make(OpKind::adam_update, std::move(name), {param, grad}, p.shape, p.dtype);
  n.adam = cfg;
  return add_node(std::move(n));
}

void Graph::set_output(std::string key, NodeId id) { outputs_[std::move(key)] = id; }

NodeId Graph::output(std::string_view key) const {
  auto it = outputs_.find(key);
  return it == outputs_.end() ? kNone : it->second;
}

}  // namespace gpuvs::ir
