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
#include <vector>

namespace gpuvs::graph {

enum class DType : std::uint8_t { f32, f64, i32 };
std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);

using Shape = std::vector<std::int64_t>;
std::int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);

/// Elementwise activations. Those whose derivative can be computed from the output (relu, tanh, sigmoid)
/// may be fused into a matmul epilogue; gelu needs its input, so it is a separate node.
enum class Act : std::uint8_t { none, relu, gelu, tanh, sigmoid };
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
};
std::string_view op_name(OpKind k);

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
  NodeId ref = kNone;                     // grad ops: the forward node whose saved tensor they read
  AdamConfig adam;                        // adam_update
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
  NodeId softmax_xent_grad(std::string name, NodeId dloss, NodeId xent_node);
  NodeId reduce_rows(std::string name, NodeId x);
  NodeId add(std::string name, NodeId a, NodeId b);
  NodeId accuracy(std::string name, NodeId logits, NodeId labels);
  NodeId adam_update(std::string name, NodeId param, NodeId grad, const AdamConfig& cfg);

  const Node& node(NodeId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::size_t size() const { return nodes_.size(); }
  /// Node by name; kNone if absent.
  NodeId find(std::string_view name) const;

  /// Named results the caller reads after a run ("loss", "accuracy", "probs").
  void set_output(std::string key, NodeId id);
  NodeId output(std::string_view key) const;  // kNone if absent
  const std::map<std::string, NodeId, std::less<>>& outputs() const { return outputs_; }

 private:
  NodeId add_node(Node n);
  std::vector<Node> nodes_;
  std::map<std::string, NodeId, std::less<>> outputs_;
};

}  // namespace gpuvs::graph
