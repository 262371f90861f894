// SPDX-License-Identifier: Apache-2.0
// The ONNX graph converter: one pass over the nodes in file order (ONNX requires topological order), each
// node either folded (its inputs' values are known: constants and shape arithmetic), kept as a view of a weight
// (Transpose, Reshape, Slice ... of an initializer), fused with the nodes after it into one IR op (GELU's erf
// form, LayerNorm written out, attention as exporters write it, a MatMul's bias and activation), or built as
// IR ops. Not public: onnx_model.hpp is the front door.
//
// Parameters: every initializer a compute op reads as a tensor becomes a param, trainable except
// BatchNormalization's running statistics (ONNX does not mark buffers; a fixed positional table is counted
// as trainable). Initializers only read by folded arithmetic (a causal-mask buffer, shape constants) are not
// params. Known tensors that compute ops read become frozen params named "const:..." (scalars: fills).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/onnx/onnx_known.hpp"
#include "models/networks.hpp"

namespace onnx {
class GraphProto;
class NodeProto;
class TensorProto;
class ValueInfoProto;
}  // namespace onnx

namespace gpuvs::import::onnx_detail {

/// What the reader decided about the file's inputs once (resolve time): sizes for the symbolic dimensions.
struct Binding {
  std::map<std::string, std::int64_t> dims;     // non-batch symbolic dims by name
  std::set<std::string> batch_dims;             // symbolic dims at axis 0 of an input: the batch
  std::int64_t fixed_batch = 0;                 // > 0: every input's axis 0 is this fixed size
};

/// What a conversion saw, for `gpuvs graph` and the description.
struct Summary {
  std::map<std::string, int> ops;               // ONNX op type -> nodes
  int folded = 0;                               // nodes evaluated while converting (shape arithmetic, masks)
  int weight_views = 0;                         // view ops applied to initializers (no kernel)
  std::map<std::string, int> fused;             // "attention (causal)" -> count, ...
  std::set<std::string> notes;                  // approximations, said once each
};

struct Value {
  ir::Shape shape;
  int elem = 1;                 // onnx::TensorProto::DataType
  ir::NodeId node = ir::kNone;          // the graph tensor, once it has one
  KnownPtr known;               // the values, when the reader knows them
  std::string weight;           // the initializer this is (or a view of); "" otherwise
};

class Converter {
 public:
  Converter(const onnx::GraphProto& graph, int opset, const std::string& where, const Binding& binding,
            const std::set<std::string>& shape_only, const models::NetworkOptions& opt);
  /// The forward graph with outputs "logits" (or "output") and a scalar "loss".
  ir::Graph build();
  const Summary& summary() const { return summary_; }

 private:
  friend struct Ops;
  friend struct Fusions;
  friend struct Folds;  // onnx_fold.cpp
  // Errors: "WHERE: node 'NAME' (OP): what".
  [[noreturn]] void refuse(const onnx::NodeProto& n, const std::string& what) const;
  std::string node_label(const onnx::NodeProto& n) const;
  std::string at_node() const;  // "WHERE: node ..." while a node converts; "WHERE" otherwise

  // Inputs, outputs and attributes.
  bool has(const onnx::NodeProto& n, int k) const;
  const Value& in(const onnx::NodeProto& n, int k) const;
  void set(const onnx::NodeProto& n, int k, Value v);
  void set_node(const onnx::NodeProto& n, int k, ir::NodeId id, int elem);
  std::int64_t attr_int(const onnx::NodeProto& n, const char* name, std::int64_t fallback) const;
  double attr_float(const onnx::NodeProto& n, const char* name, double fallback) const;
  std::string attr_string(const onnx::NodeProto& n, const char* name, const std::string& fallback) const;
  std::optional<std::vector<std::int64_t>> attr_ints(const onnx::NodeProto& n, const char* name) const;
  /// A constant integer list from input k (opset >= 13 axes, Reshape's shape ...); refuse when not known.
  std::vector<std::int64_t> known_ints(const onnx::NodeProto& n, int k, const char* what) const;
  /// Axes from the attribute (older opsets) or input k (newer); nullopt when neither is given.
  std::optional<std::vector<std::int64_t>> axes_of(const onnx::NodeProto& n, int k) const;
  /// A Slice's starts, ends, axes and steps: attributes before opset 10, inputs 1-4 from then on, read by
  /// `ints_of(k)` (the folder's known values, or known_ints when building).
  struct SliceArgs {
    std::vector<std::int64_t> starts, ends, axes, steps;
  };
  SliceArgs slice_args(const onnx::NodeProto& n, const std::function<std::vector<std::int64_t>(int)>& ints_of) const;
  int norm_axis(const onnx::NodeProto& n, std::int64_t axis, std::size_t rank) const;
  /// The scalar value of input k when it is a known one-element tensor.
  std::optional<double> scalar(const onnx::NodeProto& n, int k) const;
  std::string name_for(const onnx::NodeProto& n, const std::string& suffix = "");
  ir::DType dtype_for(int elem) const;

  // Tensors in the graph.
  ir::NodeId tensor(const std::string& name);           // materialise a value (weight -> param, known -> const)
  ir::NodeId tensor(const onnx::NodeProto& n, int k) { return tensor(input_name(n, k)); }
  ir::NodeId param_for(const std::string& initializer);
  const std::string& input_name(const onnx::NodeProto& n, int k) const;
  /// The one node that reads `tensor` (none when several do, or it is a graph output).
  const onnx::NodeProto* sole_user(const std::string& tensor) const;
  /// True when a node has the inputs and output a pattern reads of it (a malformed one is refused when its
  /// turn comes, never read by a pattern).
  static bool pattern_ready(const onnx::NodeProto& n);
  void skip(const onnx::NodeProto& n);              // fused into an earlier node
  /// A value, folding its producer now when it is not yet reached but all it needs is known (constants a
  /// pattern reads that the file defines after the pattern starts); nullptr otherwise.
  const Value* lookup(const std::string& name, int depth = 0);
  /// A value's elements, decoding an initializer (or folding again the views of one) only now that something
  /// needs them (a mask compared, a scalar read); nullptr when they cannot be known.
  const Known* values_of(const std::string& name, int depth = 0);
  ir::NodeId view(const std::string& name, ir::NodeId x, const ir::Shape& shape);  // a reshape view (none when equal)

  void convert(int index);
  bool fold(const onnx::NodeProto& n);              // values known: evaluate (or keep a weight view), memoised
  bool fold_values(const onnx::NodeProto& n);       // the evaluation itself (onnx_fold.cpp)
  void build_op(const onnx::NodeProto& n);          // onnx_ops.cpp
  bool fuse(const onnx::NodeProto& n);              // onnx_fusion.cpp
  void check_value_info(const std::string& name, const Value& v) const;

  const onnx::GraphProto& gp_;
  int opset_;
  std::string where_;
  const Binding& binding_;
  const std::set<std::string>& shape_only_;
  models::NetworkOptions opt_;
  ir::Graph g_;
  std::map<std::string, const onnx::TensorProto*> inits_;
  std::map<std::string, Value> vals_;
  std::int64_t kept_elements_ = 0;  // every known tensor's elements, as each is made (kMaxKeptElements)
  /// Counts k's elements against kMaxKeptElements; InputError naming `what` past it.
  void count_kept(const KnownPtr& k, const std::string& what);
  mutable std::int64_t read_elements_ = 0;  // known values read by folds and checks (kMaxReadElements)
  /// Counts `elements` about to be read against kMaxReadElements; InputError naming `what` past it.
  void count_read(std::int64_t elements, const std::string& what) const;
  std::map<std::string, std::vector<int>> users_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, std::vector<const onnx::ValueInfoProto*>> claims_;  // value_info and outputs, by name
  std::map<std::string, ir::NodeId> params_;
  std::set<std::string> frozen_;
  std::map<std::string, ir::NodeId> pre_softmax_;       // a Softmax's output -> its input (the loss takes logits)
  std::vector<bool> done_;                          // converted, folded early, or fused into an earlier node
  std::map<std::string, int> producer_;
  std::map<const onnx::NodeProto*, int> index_;
  struct FoldResult {
    std::vector<KnownPtr> inputs;   // kept alive: their addresses are in the key
    std::vector<Value> outputs;
    bool weight_view = false;
  };
  std::map<std::string, FoldResult> fold_cache_;
  std::set<std::string> unfoldable_;                // lookup(): values it could not fold ahead
  bool depth_capped_ = false;                       // lookup(): the depth limit stopped a walk below
  // onnx_fusion.cpp: a known mask's pattern, worked out once; the mask is kept alive, as its address is in the key
  std::map<std::string, std::pair<KnownPtr, int>> mask_patterns_;
  Summary summary_;
  const onnx::NodeProto* current_ = nullptr;        // the node convert() is on (for messages)
};

// Shape rules shared by folding and building (InputError naming `where` when the file's values are impossible).
/// The ops whose result on an initializer is the same weights seen differently (no kernel runs each step).
bool is_weight_view_op(const std::string& op);
ir::Shape reshape_shape(const ir::Shape& in, const std::vector<std::int64_t>& target, bool allowzero, const std::string& where);
ir::Shape squeeze_shape(const ir::Shape& in, const std::vector<std::int64_t>& axes, const std::string& where);
ir::Shape unsqueeze_shape(const ir::Shape& in, const std::vector<std::int64_t>& axes, const std::string& where);
ir::Shape permute_shape(const ir::Shape& in, std::vector<std::int64_t>& perm, const std::string& where);
/// The sizes of a Split's `outputs` parts of an axis of `dim`: `sizes` as the file gives them, or when it gives
/// none, `parts` (num_outputs) near-equal ones, the last the smaller.
/// `uneven`: opset 18's num_outputs rule (the last part the smaller); before it, no sizes means equal parts.
std::vector<std::int64_t> split_sizes(std::int64_t dim, std::vector<std::int64_t> sizes, std::int64_t parts, int outputs, const std::string& where,
                                      bool uneven = true);
struct SliceSpec {
  std::vector<std::int64_t> starts, steps, axes;
  ir::Shape out;
};
SliceSpec slice_spec(const ir::Shape& in, std::vector<std::int64_t> starts, std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                     std::vector<std::int64_t> steps, const std::string& where);

}  // namespace gpuvs::import::onnx_detail
