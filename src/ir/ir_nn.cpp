// SPDX-License-Identifier: Apache-2.0
// Graph constructors for the convolutional and transformer ops: shape inference and checks.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "ir/ir.hpp"
#include "ir/ir_detail.hpp"

namespace gpuvs::ir {

using detail::bad;
using detail::make;

namespace {
std::int64_t out_size(std::int64_t in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}
bool is_float(DType t) { return t != DType::i32; }
}  // namespace

NodeId Graph::conv2d(std::string name, NodeId x, NodeId w, NodeId bias, int stride, int pad, int groups, Act act) {
  return conv2d(std::move(name), x, w, bias, Window{0, 0, stride, stride, pad, pad}, groups, act);
}

NodeId Graph::conv2d(std::string name, NodeId x, NodeId w, NodeId bias, const Window& sp, int groups, Act act) {
  const Node& X = node(x);
  const Node& W = node(w);
  if (X.shape.size() != 4 || W.shape.size() != 4) bad("conv2d", name, "needs X [N,C,H,W] and W [K,C/groups,R,S]");
  if (groups < 1 || X.shape[1] % groups != 0 || W.shape[0] % groups != 0 || W.shape[1] * groups != X.shape[1])
    bad("conv2d", name, fmt::format("channels {} and weights {} do not fit {} groups", X.shape[1], shape_str(W.shape), groups));
  if (sp.stride_h < 1 || sp.stride_w < 1 || sp.pad_h < 0 || sp.pad_w < 0) bad("conv2d", name, "stride must be >= 1 and padding >= 0");
  if (!act_grad_from_output(act)) bad("conv2d", name, "only activations differentiable from the output can be fused");
  const auto kh = static_cast<int>(W.shape[2]), kw = static_cast<int>(W.shape[3]);
  const std::int64_t p = out_size(X.shape[2], kh, sp.stride_h, sp.pad_h), q = out_size(X.shape[3], kw, sp.stride_w, sp.pad_w);
  if (p < 1 || q < 1) bad("conv2d", name, "the kernel is larger than the padded input");
  Node n = make(OpKind::conv2d, std::move(name), {x, w}, {X.shape[0], W.shape[0], p, q}, X.dtype);
  if (bias != kNone) {
    if (node(bias).shape != Shape{W.shape[0]}) bad("conv2d", n.name, "bias must have shape [K]");
    n.inputs.push_back(bias);
    n.has_bias = true;
  }
  n.kernel_h = kh;
  n.kernel_w = kw;
  n.stride_h = sp.stride_h;
  n.stride_w = sp.stride_w;
  n.pad_h = sp.pad_h;
  n.pad_w = sp.pad_w;
  n.groups = groups;
  n.act = act;
  return add_node(std::move(n));
}

NodeId Graph::conv2d_grad_input(std::string name, NodeId dy, NodeId conv_node) {
  const Node& c = node(conv_node);
  if (c.op != OpKind::conv2d) bad("conv2d_grad_input", name, "ref must be a conv2d node");
  Node n = make(OpKind::conv2d_grad_input, std::move(name), {dy, c.inputs[1]}, node(c.inputs[0]).shape, node(dy).dtype);
  n.ref = conv_node;
  return add_node(std::move(n));
}

NodeId Graph::conv2d_grad_weight(std::string name, NodeId dy, NodeId conv_node) {
  const Node& c = node(conv_node);
  if (c.op != OpKind::conv2d) bad("conv2d_grad_weight", name, "ref must be a conv2d node");
  Node n = make(OpKind::conv2d_grad_weight, std::move(name), {c.inputs[0], dy}, node(c.inputs[1]).shape,
                node(c.inputs[1]).dtype);
  n.ref = conv_node;
  return add_node(std::move(n));
}

NodeId Graph::normalize(std::string name, NodeId x, NodeId scale, NodeId shift, NormKind kind, int groups) {
  const Node& X = node(x);
  if (X.shape.size() < 2) bad("normalize", name, "input needs at least 2 dimensions");
  const std::int64_t channels =
      kind == NormKind::batch || kind == NormKind::group ? X.shape[1] : X.shape.back();
  if (node(scale).shape != Shape{channels})
    bad("normalize", name, fmt::format("scale must have shape [{}], got {}", channels, shape_str(node(scale).shape)));
  if (shift != kNone && node(shift).shape != Shape{channels}) bad("normalize", name, "shift must match scale");
  if (kind == NormKind::group && (groups < 1 || channels % groups != 0))
    bad("normalize", name, fmt::format("{} channels do not split into {} groups", channels, groups));
  Node n = make(OpKind::normalize, std::move(name), {x, scale}, X.shape, X.dtype);
  if (shift != kNone) n.inputs.push_back(shift);
  n.norm = kind;
  n.groups = groups;
  return add_node(std::move(n));
}

NodeId Graph::normalize_grad(std::string name, NodeId dy, NodeId norm_node) {
  const Node& f = node(norm_node);
  if (f.op != OpKind::normalize) bad("normalize_grad", name, "ref must be a normalize node");
  Node n = make(OpKind::normalize_grad, std::move(name), {dy, f.inputs[0], f.inputs[1]}, f.shape, node(dy).dtype);
  n.ref = norm_node;
  n.norm = f.norm;
  return add_node(std::move(n));
}

NodeId Graph::normalize_grad_scale(std::string name, NodeId dy, NodeId norm_node) {
  const Node& f = node(norm_node);
  if (f.op != OpKind::normalize) bad("normalize_grad_scale", name, "ref must be a normalize node");
  Node n = make(OpKind::normalize_grad_scale, std::move(name), {dy, f.inputs[0]}, node(f.inputs[1]).shape,
                node(f.inputs[1]).dtype);
  n.ref = norm_node;
  n.norm = f.norm;
  return add_node(std::move(n));
}

NodeId Graph::pool2d(std::string name, NodeId x, PoolKind kind, const Window& w) {
  const Node& X = node(x);
  if (X.shape.size() != 4) bad("pool2d", name, "needs [N,C,H,W]");
  const std::int64_t p = out_size(X.shape[2], w.kernel_h, w.stride_h, w.pad_h);
  const std::int64_t q = out_size(X.shape[3], w.kernel_w, w.stride_w, w.pad_w);
  if (p < 1 || q < 1 || w.stride_h < 1 || w.stride_w < 1) bad("pool2d", name, "window does not fit the input");
  Node n = make(OpKind::pool2d, std::move(name), {x}, {X.shape[0], X.shape[1], p, q}, X.dtype);
  n.pool = kind;
  n.kernel_h = w.kernel_h;
  n.kernel_w = w.kernel_w;
  n.stride_h = w.stride_h;
  n.stride_w = w.stride_w;
  n.pad_h = w.pad_h;
  n.pad_w = w.pad_w;
  return add_node(std::move(n));
}

NodeId Graph::pool2d_grad(std::string name, NodeId dy, NodeId pool_node) {
  const Node& f = node(pool_node);
  if (f.op != OpKind::pool2d) bad("pool2d_grad", name, "ref must be a pool2d node");
  Node n = make(OpKind::pool2d_grad, std::move(name), {dy}, node(f.inputs[0]).shape, node(dy).dtype);
  n.ref = pool_node;
  n.pool = f.pool;
  return add_node(std::move(n));
}

NodeId Graph::reshape(std::string name, NodeId x, Shape shape, bool copy) {
  if (numel(shape) != numel(node(x).shape))
    bad("reshape", name, fmt::format("{} and {} hold different element counts", shape_str(node(x).shape), shape_str(shape)));
  Node n = make(OpKind::reshape, std::move(name), {x}, std::move(shape), node(x).dtype);
  n.copy = copy;
  return add_node(std::move(n));
}

NodeId Graph::slice(std::string name, NodeId x, int axis, std::int64_t start, std::int64_t length) {
  Shape shape = node(x).shape;
  if (axis < 0 || static_cast<std::size_t>(axis) >= shape.size()) bad("slice", name, "axis out of range");
  if (start < 0 || length < 1 || start + length > shape[static_cast<std::size_t>(axis)])
    bad("slice", name, fmt::format("[{}, {}) is outside dimension {} of {}", start, start + length, axis, shape_str(shape)));
  shape[static_cast<std::size_t>(axis)] = length;
  Node n = make(OpKind::slice, std::move(name), {x}, std::move(shape), node(x).dtype);
  n.axis = axis;
  n.offset = start;
  return add_node(std::move(n));
}

NodeId Graph::repeat(std::string name, NodeId x, Shape shape) {
  const std::int64_t in = numel(node(x).shape);
  if (in == 0 || numel(shape) % in != 0) bad("repeat", name, "output must hold a whole number of copies");
  return add_node(make(OpKind::repeat, std::move(name), {x}, std::move(shape), node(x).dtype));
}

NodeId Graph::reduce_to(std::string name, NodeId x, NodeId like) {
  const std::int64_t in = numel(node(x).shape), out = numel(node(like).shape);
  if (out == 0 || in % out != 0) bad("reduce_to", name, "input must be a whole multiple of the target");
  return add_node(make(OpKind::reduce_to, std::move(name), {x, like}, node(like).shape, node(x).dtype));
}

NodeId Graph::embedding(std::string name, NodeId ids, NodeId table) {
  const Node& I = node(ids);
  const Node& T = node(table);
  if (I.dtype != DType::i32 || T.shape.size() != 2) bad("embedding", name, "needs i32 ids and a table [V,H]");
  Shape out = I.shape;
  out.push_back(T.shape[1]);
  return add_node(make(OpKind::embedding, std::move(name), {ids, table}, std::move(out), T.dtype));
}

NodeId Graph::embedding_grad(std::string name, NodeId dy, NodeId embedding_node) {
  const Node& f = node(embedding_node);
  if (f.op != OpKind::embedding) bad("embedding_grad", name, "ref must be an embedding node");
  Node n = make(OpKind::embedding_grad, std::move(name), {dy, f.inputs[0]}, node(f.inputs[1]).shape,
                node(f.inputs[1]).dtype);
  n.ref = embedding_node;
  return add_node(std::move(n));
}

NodeId Graph::batch_matmul(std::string name, NodeId a, NodeId b, bool trans_a, bool trans_b) {
  const Node& A = node(a);
  const Node& B = node(b);
  if (A.shape.size() != 3 || B.shape.size() != 3 || A.shape[0] != B.shape[0])
    bad("batch_matmul", name, fmt::format("needs [B,M,K] and [B,K,N], got {} and {}", shape_str(A.shape), shape_str(B.shape)));
  if (!is_float(A.dtype)) bad("batch_matmul", name, "operands must be floating point");
  const std::int64_t m = trans_a ? A.shape[2] : A.shape[1], k = trans_a ? A.shape[1] : A.shape[2];
  const std::int64_t kb = trans_b ? B.shape[2] : B.shape[1], n = trans_b ? B.shape[1] : B.shape[2];
  if (k != kb) bad("batch_matmul", name, fmt::format("inner dimensions differ: {} vs {}", k, kb));
  Node out = make(OpKind::batch_matmul, std::move(name), {a, b}, {A.shape[0], m, n}, A.dtype);
  out.trans_a = trans_a;
  out.trans_b = trans_b;
  return add_node(std::move(out));
}

NodeId Graph::attention(std::string name, NodeId q, NodeId k, NodeId v, bool causal) {
  const Node& Q = node(q);
  const Node& K = node(k);
  const Node& V = node(v);
  if (Q.shape.size() != 3 || K.shape.size() != 3 || V.shape.size() != 3)
    bad("attention", name, "needs Q [B*H,T,d], K [B*Hkv,S,d], V [B*Hkv,S,dv]");
  if (K.shape[0] < 1 || K.shape[0] != V.shape[0] || K.shape[1] != V.shape[1] || Q.shape[2] != K.shape[2] || Q.shape[0] % K.shape[0] != 0)
    bad("attention", name, fmt::format("Q {}, K {}, V {} do not fit", shape_str(Q.shape), shape_str(K.shape), shape_str(V.shape)));
  Node n = make(OpKind::attention, std::move(name), {q, k, v}, {Q.shape[0], Q.shape[1], V.shape[2]}, Q.dtype);
  n.causal = causal;
  return add_node(std::move(n));
}

NodeId Graph::attention_grad(std::string name, NodeId dout, NodeId attention_node) {
  const Node& f = node(attention_node);
  if (f.op != OpKind::attention) bad("attention_grad", name, "ref must be an attention node");
  const std::int64_t packed =
      numel(node(f.inputs[0]).shape) + numel(node(f.inputs[1]).shape) + numel(node(f.inputs[2]).shape);
  Node n = make(OpKind::attention_grad, std::move(name), {dout, f.inputs[0], f.inputs[1], f.inputs[2], attention_node},
                {packed}, node(dout).dtype);
  n.ref = attention_node;
  n.causal = f.causal;
  return add_node(std::move(n));
}

bool ew_broadcasts(EwFn f) {
  switch (f) {
    case EwFn::mul: case EwFn::add: case EwFn::sub: case EwFn::div: case EwFn::pow: case EwFn::max: case EwFn::min:
    case EwFn::where:
      return true;
    default:
      return false;
  }
}

std::size_t ew_arity(EwFn f) {
  switch (f) {
    case EwFn::rope: case EwFn::scale_mask: case EwFn::neg: case EwFn::abs: case EwFn::exp: case EwFn::log:
    case EwFn::sqrt: case EwFn::reciprocal: case EwFn::erf: case EwFn::cast:
      return 1;
    case EwFn::gated_grad_a: case EwFn::gated_grad_b: case EwFn::where:
      return 3;
    case EwFn::grad:
      return 0;  // dy and the forward node's inputs: checked by elementwise_grad
    default:
      return 2;
  }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      throw std::invalid_argument(fmt::format("{}: shapes {} and {} do not broadcast", what, shape_str(a), shape_str(b)));
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

NodeId Graph::elementwise(std::string name, EwFn fn, std::vector<NodeId> inputs, bool causal) {
  if (inputs.empty()) bad("elementwise", name, "needs an input");
  if (fn == EwFn::grad) bad("elementwise", name, "a gradient is built by elementwise_grad");
  const std::size_t arity = ew_arity(fn);
  if (inputs.size() != arity) bad("elementwise", name, fmt::format("{} takes {} inputs", ew_name(fn), arity));
  Shape shape = node(inputs[0]).shape;
  // A where's condition is not data: the values come from its other two inputs.
  DType dtype = fn == EwFn::where ? node(inputs[1]).dtype : node(inputs[0]).dtype;
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const Node& other = node(inputs[i]);
    if (fn == EwFn::add_bcast) {
      // b broadcasts over the trailing dims of x: x [N,C,...], b [N,C].
      if (other.shape.size() > shape.size() || !std::equal(other.shape.begin(), other.shape.end(), shape.begin()))
        bad("elementwise", name, "add_bcast needs b's shape to lead x's");
    } else if (ew_broadcasts(fn)) {
      try {
        shape = broadcast_shapes(shape, other.shape, ew_name(fn).data());
      } catch (const std::invalid_argument& e) {
        bad("elementwise", name, e.what());
      }
    } else if (other.shape != shape) {
      bad("elementwise", name, fmt::format("{} needs equal shapes, got {} and {}", ew_name(fn), shape_str(shape),
                                           shape_str(other.shape)));
    }
  }
  Node n = make(OpKind::elementwise, std::move(name), std::move(inputs), std::move(shape), dtype);
  n.fn = fn;
  n.causal = causal;
  return add_node(std::move(n));
}

NodeId Graph::elementwise_grad(std::string name, NodeId dy, NodeId fwd, int input_index) {
  const Node& f = node(fwd);
  if (f.op != OpKind::elementwise) bad("elementwise_grad", name, "ref must be an elementwise node");
  if (input_index < 0 || static_cast<std::size_t>(input_index) >= f.inputs.size()) bad("elementwise_grad", name, "no such input");
  if (node(dy).shape != f.shape) bad("elementwise_grad", name, "dy must have the forward output's shape");
  // Only the forward tensors the derivative reads (so the memory model keeps no more alive): none for a sum,
  // a difference, a negation or a cast; the condition for a where; the other factor for a product; else all.
  std::vector<NodeId> in{dy};
  switch (f.fn) {
    case EwFn::add: case EwFn::sub: case EwFn::neg: case EwFn::cast:
      break;
    case EwFn::where:
      in.push_back(f.inputs[0]);
      break;
    case EwFn::mul:
      in.push_back(f.inputs[input_index == 0 ? 1 : 0]);
      break;
    default:
      in.insert(in.end(), f.inputs.begin(), f.inputs.end());
  }
  // A cast's gradient goes back in its input's type (a 16-bit tensor cast to FP32 gets a 16-bit gradient).
  const DType type = f.fn == EwFn::cast ? node(f.inputs[static_cast<std::size_t>(input_index)]).dtype : node(dy).dtype;
  Node n = make(OpKind::elementwise, std::move(name), std::move(in), f.shape, type);
  n.fn = EwFn::grad;
  n.ref = fwd;
  n.axis = input_index;
  return add_node(std::move(n));
}

NodeId Graph::cast(std::string name, NodeId x, DType dtype) {
  Node n = make(OpKind::elementwise, std::move(name), {x}, node(x).shape, dtype);
  n.fn = EwFn::cast;
  return add_node(std::move(n));
}

NodeId Graph::reduce(std::string name, NodeId x, PoolKind kind, Shape kept) {
  const Shape& s = node(x).shape;
  if (kept.size() != s.size()) bad("reduce", name, fmt::format("{} and {} differ in rank", shape_str(s), shape_str(kept)));
  for (std::size_t i = 0; i < s.size(); ++i)
    if (kept[i] != s[i] && kept[i] != 1) bad("reduce", name, fmt::format("{} is not {} with axes reduced to 1", shape_str(kept), shape_str(s)));
  Node n = make(OpKind::reduce, std::move(name), {x}, std::move(kept), node(x).dtype);
  n.pool = kind;
  return add_node(std::move(n));
}

NodeId Graph::concat(std::string name, std::vector<NodeId> inputs, int axis) {
  if (inputs.size() < 2) bad("concat", name, "needs at least two inputs");
  Shape out = node(inputs[0]).shape;
  if (axis < 0 || static_cast<std::size_t>(axis) >= out.size()) bad("concat", name, "axis out of range");
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const Shape& s = node(inputs[i]).shape;
    if (s.size() != out.size()) bad("concat", name, "ranks differ");
    for (std::size_t d = 0; d < s.size(); ++d)
      if (d != static_cast<std::size_t>(axis) && s[d] != out[d]) bad("concat", name, "shapes differ off the axis");
    if (__builtin_add_overflow(out[static_cast<std::size_t>(axis)], s[static_cast<std::size_t>(axis)], &out[static_cast<std::size_t>(axis)]))
      bad("concat", name, "the inputs add up past 64-bit sizes along the axis");
  }
  const DType dtype = node(inputs[0]).dtype;
  Node n = make(OpKind::concat, std::move(name), std::move(inputs), std::move(out), dtype);
  n.axis = axis;
  return add_node(std::move(n));
}

NodeId Graph::upsample2x(std::string name, NodeId x) {
  const Shape& s = node(x).shape;
  if (s.size() != 4) bad("upsample2x", name, "needs [N,C,H,W]");
  return add_node(make(OpKind::upsample2x, std::move(name), {x}, {s[0], s[1], 2 * s[2], 2 * s[3]}, node(x).dtype));
}

NodeId Graph::softmax_grad(std::string name, NodeId dy, NodeId softmax_node) {
  const Node& f = node(softmax_node);
  if (f.op != OpKind::softmax) bad("softmax_grad", name, "ref must be a softmax node");
  Node n = make(OpKind::softmax_grad, std::move(name), {dy, softmax_node}, f.shape, node(dy).dtype);
  n.ref = softmax_node;
  return add_node(std::move(n));
}

NodeId Graph::mse_loss(std::string name, NodeId prediction, NodeId target) {
  if (node(prediction).shape != node(target).shape) bad("mse_loss", name, "prediction and target differ in shape");
  return add_node(make(OpKind::mse_loss, std::move(name), {prediction, target}, {}, node(prediction).dtype));
}

NodeId Graph::mse_loss_grad(std::string name, NodeId dloss, NodeId mse_node) {
  const Node& f = node(mse_node);
  if (f.op != OpKind::mse_loss) bad("mse_loss_grad", name, "ref must be an mse_loss node");
  Node n = make(OpKind::mse_loss_grad, std::move(name), {dloss, f.inputs[0], f.inputs[1]}, node(f.inputs[0]).shape,
                node(f.inputs[0]).dtype);
  n.ref = mse_node;
  return add_node(std::move(n));
}

}  // namespace gpuvs::ir
