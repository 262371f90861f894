// SPDX-License-Identifier: Apache-2.0
// The graph IR: one representation that the engine runs and the performance model prices.
//
// A Graph is a list of nodes in topological order (a node's inputs always precede it). Every node has a
// static shape and dtype. The op set is small and each op can state its own cost (see cost.hpp).
// Forward graphs are built by builder.hpp; autodiff.hpp appends the backward pass and optimizer updates.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuvs::ir {

/// f32/f64/i32 run on the CPU engine; f16, bf16 and fp8 (e4m3) describe mixed-precision graphs that the
/// performance model prices.
enum class DType : std::uint8_t { f32, f64, i32, f16, bf16, fp8 };
std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);

using Shape = std::vector<std::int64_t>;
std::int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);

/// Elementwise activations. Those whose derivative can be computed from the output (relu, tanh, sigmoid)
/// may be fused into a matmul epilogue; gelu needs its input, so it is a separate node.
enum class Act : std::uint8_t { none, relu, gelu, tanh, sigmoid, silu };
std::string_view act_name(Act a);
bool act_grad_from_output(Act a);

enum class OpKind : std::uint8_t {
  input,              // fed by the caller each step (features, labels, or a seed gradient)
  param,              // persistent tensor held by the parameter store
  fill,               // constant tensor, every element = value
  matmul,             // act(op(A) . op(B) [+ bias]); op = transpose when trans_a / trans_b
  activation,         // act(X)
  activation_grad,    // dY * act'(saved); saved = Y when act_grad_from_output(act), else X
  dropout,            // inverted dropout: X * mask / (1 - rate); mask saved for backward
  dropout_grad,       // dY * mask / (1 - rate), mask of node `ref`
  softmax,            // row-wise softmax (predictions)
  softmax_xent,       // mean over rows of -log softmax(logits)[label]; fused and stable; probs saved
  softmax_xent_grad,  // dLoss * (probs - onehot(label)) / rows, of node `ref`
  reduce_rows,        // column sums over the rows of a matrix (bias gradients)
  add,                // A + B, same shape (gradient accumulation)
  accuracy,           // fraction of rows whose argmax equals the label
  adam_update,        // in-place Adam on (param, grad) with moment slots in the parameter store
  // Convolutional and transformer networks (priced by the performance model; the CPU engine runs the ops
  // above). Tensors are logically NCHW for images and [rows, features] or [batch*heads, seq, dim] otherwise.
  conv2d,                 // act(conv(X [N,C,H,W], W [K,C/groups,R,S]) [+ bias]) -> [N,K,P,Q]
  conv2d_grad_input,      // dX of conv node `ref` from (dY, W)
  conv2d_grad_weight,     // dW of conv node `ref` from (X, dY)
  normalize,              // batch / layer / group / RMS normalisation with scale [and shift] params
  normalize_grad,         // dX of normalize node `ref` from dY
  normalize_grad_scale,   // d(scale) of normalize node `ref` from dY
  pool2d,                 // max / average / sum pooling over windows
  pool2d_grad,            // dX of pool node `ref` from dY
  reshape,                // same elements, new shape: a view, or a copy when `copy` (a permute)
  slice,                  // a view: indices [offset, offset + len) along `axis` of the input
  repeat,                 // the input repeated to fill `shape` (e.g. KV heads shared by query heads)
  reduce_to,              // dY summed down to the shape of input 1 (broadcast gradients, conv bias)
  embedding,              // rows of table [V,H] picked by i32 ids -> ids.shape + [H]
  embedding_grad,         // d(table) of embedding node `ref`: scatter-add of dY
  batch_matmul,           // op(A [B,M,K]) . op(B [B,K,N]) -> [B,M,N]
  attention,              // fused softmax(Q K^T / sqrt(d) [causal]) V (flash attention): no T x T tensor
  attention_grad,         // dQ, dK, dV of attention node `ref`, packed flat; slices take them apart
  elementwise,            // `fn` over same-sized inputs (see EwFn)
  concat,                 // inputs joined along `axis`
  upsample2x,             // nearest-neighbour 2x upsampling of [N,C,H,W]
  softmax_grad,           // dX of a softmax from (dY, Y)
  mse_loss,               // mean of (prediction - target)^2 over all elements (diffusion noise loss)
  mse_loss_grad,          // dLoss * 2 (prediction - target) / n, of node `ref`
  reduce,                 // sum / mean / max over the axes where the output (kept-dims shape) has size 1
};
std::string_view op_name(OpKind k);

enum class NormKind : std::uint8_t { batch, layer, group, rms };
enum class PoolKind : std::uint8_t { max, avg, sum };
/// Elementwise functions: mul (a*b), add_bcast (x + b broadcast over trailing spatial dims), swiglu
/// (silu(a)*b) and geglu (gelu(a)*b) with their two gradients (gated_grad_a/b, inputs dy, a, b), rope
/// (rotary position embedding, or its inverse for gradients), scale_mask (scale and causal mask on scores).
/// The math model files write, broadcasting as NumPy does (trailing dimensions aligned, each equal or 1; mul
/// broadcasts too): binary add, sub, div, pow, max, min; where (cond, a, b); unary neg, abs, exp, log, sqrt,
/// reciprocal, erf, cast (to the node's dtype). grad: d(input `axis`) of the elementwise node `ref`, over its
/// output's shape (inputs: dy, then the forward node's inputs; the caller sums it down to a broadcast input).
enum class EwFn : std::uint8_t {
  mul, add_bcast, swiglu, geglu, gated_grad_a, gated_grad_b, rope, scale_mask,
  add, sub, div, pow, max, min, where, neg, abs, exp, log, sqrt, reciprocal, erf, cast, grad
};
/// True for the NumPy-broadcasting functions above (mul included).
bool ew_broadcasts(EwFn f);
/// Inputs an elementwise function takes.
std::size_t ew_arity(EwFn f);
/// The NumPy broadcast of two shapes; std::invalid_argument naming `what` when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what);
std::string_view ew_name(EwFn f);

/// Keras Adam defaults; the update uses Keras's form (epsilon added to sqrt(v), bias correction in the step).
struct AdamConfig {
  double learning_rate = 1e-3;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
};

using NodeId = int;
inline constexpr NodeId kNone = -1;

struct Node {
  NodeId id = kNone;
  OpKind op = OpKind::input;
  std::string name;
  std::vector<NodeId> inputs;
  Shape shape;
  DType dtype = DType::f32;
  // Attributes; which ones apply depends on `op`.
  bool trans_a = false, trans_b = false;  // matmul
  bool has_bias = false;                  // matmul: inputs[2] is the bias
  Act act = Act::none;                    // matmul, activation, activation_grad
  double rate = 0.0;                      // dropout, dropout_grad
  double value = 0.0;                     // fill
  bool trainable = false;                 // param
  NodeId ref = kNone;                     // grad ops: the forward node they differentiate (its attributes, and the side data it saved: perf/memory.hpp)
  AdamConfig adam;                        // adam_update
  int kernel_h = 0, kernel_w = 0;         // conv2d (from W), pool2d
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int groups = 1;                         // conv2d, normalize (group)
  NormKind norm = NormKind::batch;        // normalize
  PoolKind pool = PoolKind::max;          // pool2d
  EwFn fn = EwFn::mul;                    // elementwise
  bool causal = false;                    // attention, elementwise scale_mask
  bool copy = false;                      // reshape
  std::int64_t offset = 0;                // slice: start index along `axis`
  int axis = 0;                           // concat, slice
};

/// Convolution / pooling window geometry.
struct Window {
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
};

class Graph {
 public:
  NodeId input(std::string name, Shape shape, DType dtype);
  NodeId param(std::string name, Shape shape, DType dtype, bool trainable = true);
  NodeId fill(std::string name, Shape shape, DType dtype, double value);
  /// act(op(a) . op(b) + bias). `bias` may be kNone. act must be none, relu, tanh or sigmoid.
  NodeId matmul(std::string name, NodeId a, NodeId b, NodeId bias = kNone, Act act = Act::none,
                bool trans_a = false, bool trans_b = false);
  NodeId activation(std::string name, NodeId x, Act act);
  NodeId activation_grad(std::string name, NodeId dy, NodeId saved, Act act);
  NodeId dropout(std::string name, NodeId x, double rate);
  NodeId dropout_grad(std::string name, NodeId dy, NodeId dropout_node);
  NodeId softmax(std::string name, NodeId x);
  NodeId softmax_xent(std::string name, NodeId logits, NodeId labels);
  /// The loss as mixed-precision training runs it: 16-bit logits cast to FP32 first (`name` + "/fp32"), then
  /// softmax_xent (PyTorch's autocast runs cross_entropy in FP32; Hugging Face's and Megatron's heads call .float();
  /// Keras losses compute in float32). FP32 logits go straight in.
  NodeId softmax_xent_fp32(std::string name, NodeId logits, NodeId labels);
  NodeId softmax_xent_grad(std::string name, NodeId dloss, NodeId xent_node);
  NodeId reduce_rows(std::string name, NodeId x);
  NodeId add(std::string name, NodeId a, NodeId b);
  NodeId accuracy(std::string name, NodeId logits, NodeId labels);
  NodeId adam_update(std::string name, NodeId param, NodeId grad, const AdamConfig& cfg);

  NodeId conv2d(std::string name, NodeId x, NodeId w, NodeId bias, int stride, int pad, int groups = 1,
                Act act = Act::none);
  /// The same with strides and padding per axis (`w`'s kernel sizes are ignored: W gives them); a 1-D
  /// convolution is a 1 x k one over [N, C, 1, T].
  NodeId conv2d(std::string name, NodeId x, NodeId w, NodeId bias, const Window& strides_pads, int groups, Act act);
  NodeId conv2d_grad_input(std::string name, NodeId dy, NodeId conv_node);
  NodeId conv2d_grad_weight(std::string name, NodeId dy, NodeId conv_node);
  /// scale (and shift, may be kNone for RMS) have the normalised channel count: dim 1 for batch/group,
  /// the last dim for layer/rms.
  NodeId normalize(std::string name, NodeId x, NodeId scale, NodeId shift, NormKind kind, int groups = 1);
  NodeId normalize_grad(std::string name, NodeId dy, NodeId norm_node);
  NodeId normalize_grad_scale(std::string name, NodeId dy, NodeId norm_node);
  NodeId pool2d(std::string name, NodeId x, PoolKind kind, const Window& w);
  NodeId pool2d_grad(std::string name, NodeId dy, NodeId pool_node);
  NodeId reshape(std::string name, NodeId x, Shape shape, bool copy = false);
  NodeId slice(std::string name, NodeId x, int axis, std::int64_t start, std::int64_t length);
  NodeId repeat(std::string name, NodeId x, Shape shape);
  NodeId reduce_to(std::string name, NodeId x, NodeId like);
  NodeId embedding(std::string name, NodeId ids, NodeId table);
  NodeId embedding_grad(std::string name, NodeId dy, NodeId embedding_node);
  NodeId batch_matmul(std::string name, NodeId a, NodeId b, bool trans_a = false, bool trans_b = false);
  NodeId attention(std::string name, NodeId q, NodeId k, NodeId v, bool causal);
  NodeId attention_grad(std::string name, NodeId dout, NodeId attention_node);
  NodeId elementwise(std::string name, EwFn fn, std::vector<NodeId> inputs, bool causal = false);
  NodeId concat(std::string name, std::vector<NodeId> inputs, int axis);
  NodeId upsample2x(std::string name, NodeId x);
  NodeId softmax_grad(std::string name, NodeId dy, NodeId softmax_node);
  NodeId mse_loss(std::string name, NodeId prediction, NodeId target);
  NodeId mse_loss_grad(std::string name, NodeId dloss, NodeId mse_node);
  /// d(input `input_index`) of elementwise node `fwd` from dY, over the forward output's shape.
  NodeId elementwise_grad(std::string name, NodeId dy, NodeId fwd, int input_index);
  /// x converted to `dtype` (an elementwise cast).
  NodeId cast(std::string name, NodeId x, DType dtype);
  /// Sum (PoolKind::sum), mean (avg) or max of x over the axes where `kept` (x's rank; each dim equal to x's or
  /// 1) has size 1; the output has shape `kept` (views drop the axes).
  NodeId reduce(std::string name, NodeId x, PoolKind kind, Shape kept);

  const Node& node(NodeId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  /// Node by name; kNone if absent.
  NodeId find(std::string_view name) const;

  /// Named results the caller reads after a run ("loss", "accuracy", "probs").
  void set_output(std::string key, NodeId id);
  NodeId output(std::string_view key) const;  // kNone if absent
  const std::map<std::string, NodeId, std::less<>>& outputs() const { return outputs_; }

  /// A fresh node name "base", or "base_2", "base_3"... when taken (builders of repeated blocks): the smallest
  /// suffix free. Amortised constant time however many nodes share a base (a file may name them all alike).
  std::string unique_name(const std::string& base);

 private:
  NodeId add_node(Node n);
  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> by_name_;
  // unique_name(): per base, the suffix below which every "base_N" is taken (names are never freed).
  std::unordered_map<std::string, int> taken_below_;
  std::int64_t param_elements_ = 0;  // held to 2^56 (add_node)
  std::map<std::string, NodeId, std::less<>> outputs_;
};

}  // namespace gpuvs::ir
