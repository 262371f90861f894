// SPDX-License-Identifier: Apache-2.0
// Structure-aware mutation for fuzz_model_onnx. libFuzzer's byte edits of a protobuf mostly break its
// framing, so they seldom make a new well-formed graph: a million of them never fed Range an integer start and
// a float step, nor Trilu an empty k (both read past an empty vector, found by reading the code). This mutator
// parses the input as a ModelProto and edits the graph — an op type, an input's wiring, an attribute, a
// tensor's dims, type or values, a node added, dropped or moved — then writes it back. A quarter of the time,
// and whenever the input is not a model, it leaves the bytes to libFuzzer's own mutations.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Rng = std::mt19937_64;

// The operators the reader builds or folds, a few it refuses by name, and one it does not know.
constexpr std::array kOps = {
    "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Div", "Dropout", "Equal",
    "Erf", "Exp", "Expand", "Flatten", "Gather", "Gemm", "Gelu", "GlobalAveragePool", "GlobalMaxPool", "GroupNormalization", "Identity",
    "InstanceNormalization", "LayerNormalization", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg", "Pad", "Pow",
    "Range", "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Size",
    "Slice", "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Tile", "Transpose", "Trilu", "Unsqueeze", "Where", "Less", "Greater",
    "Not", "And", "Or", "Mod", "Abs", "Floor", "Ceil", "Einsum"};
constexpr std::array kIntAttrs = {"axis", "keepdims", "transA", "transB", "upper", "to", "allowzero", "num_outputs", "group", "start", "end",
                                  "ceil_mode", "count_include_pad", "noop_with_empty_axes"};
constexpr std::array kIntsAttrs = {"perm", "axes", "starts", "ends", "kernel_shape", "strides", "pads", "dilations", "split"};
constexpr std::array kFloatAttrs = {"alpha", "beta", "epsilon", "min", "max", "value_float", "ratio"};
// The element types a file may declare: FLOAT, UINT8, INT8, INT32, INT64, BOOL, FLOAT16, DOUBLE, BFLOAT16, STRING.
constexpr std::array kElemTypes = {1, 2, 3, 6, 7, 9, 10, 11, 16, 8};

template <typename T, std::size_t N>
const T& pick(Rng& r, const std::array<T, N>& a) {
  return a[std::uniform_int_distribution<std::size_t>(0, N - 1)(r)];
}

int below(Rng& r, int n) { return n <= 0 ? 0 : std::uniform_int_distribution<int>(0, n - 1)(r); }

// Small values, the edges of a shape's range, and a rare large one.
std::int64_t some_int(Rng& r) {
  static constexpr std::array<std::int64_t, 12> kEdges = {0, 1, -1, 2, -2, 3, 4, 8, 16, 1 << 20, std::int64_t{1} << 40, INT64_MIN};
  return below(r, 4) == 0 ? std::uniform_int_distribution<std::int64_t>(-64, 64)(r) : kEdges[static_cast<std::size_t>(below(r, 12))];
}

// Every value name a node could read: graph inputs, initializers and node outputs.
std::vector<std::string> names(const onnx::GraphProto& g) {
  std::vector<std::string> out;
  for (const auto& v : g.input()) out.push_back(v.name());
  for (const auto& t : g.initializer()) out.push_back(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) out.push_back(o);
  return out;
}

void mutate_attribute(Rng& r, onnx::NodeProto& n) {
  if (n.attribute_size() > 0 && below(r, 4) == 0) {
    n.mutable_attribute()->DeleteSubrange(below(r, n.attribute_size()), 1);
    return;
  }
  onnx::AttributeProto* a = nullptr;
  const int kind = below(r, 3);
  const std::string name = kind == 0 ? pick(r, kIntAttrs) : kind == 1 ? pick(r, kIntsAttrs) : pick(r, kFloatAttrs);
  for (auto& existing : *n.mutable_attribute())
    if (existing.name() == name) a = &existing;
  if (!a) a = n.add_attribute();
  a->Clear();
  a->set_name(name);
  if (kind == 0) {
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(name == "to" ? pick(r, kElemTypes) : some_int(r));
  } else if (kind == 1) {
    a->set_type(onnx::AttributeProto::INTS);
    for (int k = below(r, 6); k > 0; --k) a->add_ints(some_int(r));
  } else {
    a->set_type(onnx::AttributeProto::FLOAT);
    static constexpr std::array<float, 6> kFloats = {0.0f, 1.0f, -1.0f, 0.5f, 1e-5f, 1e30f};
    a->set_f(kFloats[static_cast<std::size_t>(below(r, 6))]);
  }
}

void mutate_tensor(Rng& r, onnx::TensorProto& t) {
  switch (below(r, 4)) {
    case 0:  // a dim changed, added or dropped
      if (t.dims_size() > 0 && below(r, 3) > 0) t.set_dims(below(r, t.dims_size()), some_int(r));
      else if (t.dims_size() > 0 && below(r, 2)) t.mutable_dims()->RemoveLast();
      else t.add_dims(some_int(r) & 15);
      break;
    case 1:  // another element type for the same payload
      t.set_data_type(pick(r, kElemTypes));
      break;
    case 2:  // values added or cut
      if (t.data_type() == onnx::TensorProto::INT64 || below(r, 2)) {
        if (t.int64_data_size() > 0 && below(r, 2)) t.mutable_int64_data()->RemoveLast();
        else t.add_int64_data(some_int(r));
      } else {
        if (t.float_data_size() > 0 && below(r, 2)) t.mutable_float_data()->RemoveLast();
        else t.add_float_data(static_cast<float>(some_int(r)));
      }
      break;
    default:  // one value changed
      if (t.int64_data_size() > 0) t.set_int64_data(below(r, t.int64_data_size()), some_int(r));
      else if (t.float_data_size() > 0) t.set_float_data(below(r, t.float_data_size()), static_cast<float>(some_int(r)));
      else t.add_int64_data(some_int(r));
  }
}

void mutate_value_info(Rng& r, onnx::ValueInfoProto& v) {
  auto* tt = v.mutable_type()->mutable_tensor_type();
  if (below(r, 4) == 0) {
    tt->set_elem_type(pick(r, kElemTypes));
    return;
  }
  auto* s = tt->mutable_shape();
  if (s->dim_size() == 0 || below(r, 4) == 0) {
    s->add_dim()->set_dim_value(some_int(r) & 15);
    return;
  }
  auto* d = s->mutable_dim(below(r, s->dim_size()));
  if (below(r, 3) == 0) d->set_dim_param(below(r, 2) ? "batch" : "N");
  else d->set_dim_value(some_int(r));
}

// One structural edit of the graph; false when the graph offers nothing to edit that way.
bool mutate_graph(Rng& r, onnx::GraphProto& g) {
  const std::vector<std::string> all = names(g);
  const int nodes = g.node_size();
  switch (below(r, 10)) {
    case 0:
      if (nodes == 0) return false;
      g.mutable_node(below(r, nodes))->set_op_type(pick(r, kOps));
      return true;
    case 1: {  // an input rewired to another value, emptied (an optional input skipped), added or dropped
      if (nodes == 0 || all.empty()) return false;
      onnx::NodeProto& n = *g.mutable_node(below(r, nodes));
      const std::string& other = all[static_cast<std::size_t>(below(r, static_cast<int>(all.size())))];
      const int what = below(r, 4);
      if (what == 0 || n.input_size() == 0) n.add_input(other);
      else if (what == 1) n.mutable_input()->RemoveLast();
      else if (what == 2) n.set_input(below(r, n.input_size()), "");
      else n.set_input(below(r, n.input_size()), other);
      return true;
    }
    case 2:
      if (nodes == 0) return false;
      mutate_attribute(r, *g.mutable_node(below(r, nodes)));
      return true;
    case 3:
      if (g.initializer_size() == 0) return false;
      mutate_tensor(r, *g.mutable_initializer(below(r, g.initializer_size())));
      return true;
    case 4: {  // a Constant's tensor, or a new Constant feeding some node
      for (auto& n : *g.mutable_node())
        if (n.op_type() == "Constant" && n.attribute_size() > 0 && n.attribute(0).has_t() && below(r, 2)) {
          mutate_tensor(r, *n.mutable_attribute(0)->mutable_t());
          return true;
        }
      onnx::NodeProto* c = g.add_node();
      c->set_op_type("Constant");
      const std::string out = "fuzz_const_" + std::to_string(g.node_size());
      c->add_output(out);
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      const bool is_float = below(r, 2) == 0;
      t->set_data_type(is_float ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
      const int count = below(r, 4);
      for (int k = 0; k < count; ++k) {
        if (is_float) t->add_float_data(static_cast<float>(some_int(r)));
        else t->add_int64_data(some_int(r));
      }
      if (count != 1 || below(r, 2)) t->add_dims(count);  // one value: a scalar or a 1-D tensor
      for (int k = g.node_size() - 1; k > 0; --k) g.mutable_node()->SwapElements(k, k - 1);  // first, so any node may read it
      if (nodes > 0) g.mutable_node(1 + below(r, nodes))->add_input(out);
      return true;
    }
    case 5: {  // a new node of any op reading existing values, its output made the graph's
      if (all.empty()) return false;
      onnx::NodeProto* n = g.add_node();
      n->set_op_type(pick(r, kOps));
      n->set_name("fuzz_" + std::to_string(g.node_size()));
      for (int k = 1 + below(r, 3); k > 0; --k) n->add_input(all[static_cast<std::size_t>(below(r, static_cast<int>(all.size())))]);
      n->add_output("fuzz_out_" + std::to_string(g.node_size()));
      if (below(r, 2)) mutate_attribute(r, *n);
      if (g.output_size() > 0 && below(r, 2)) g.mutable_output(0)->set_name(n->output(0));
      return true;
    }
    case 6:
      if (nodes < 2) return false;
      if (below(r, 2)) g.mutable_node()->SwapElements(below(r, nodes), below(r, nodes));
      else g.mutable_node()->DeleteSubrange(below(r, nodes), 1);
      return true;
    case 7:
      if (nodes == 0) return false;
      g.add_node()->CopyFrom(g.node(below(r, nodes)));
      return true;
    case 8: {
      const int n_in = g.input_size(), n_vi = g.value_info_size(), n_out = g.output_size();
      if (n_in + n_vi + n_out == 0) return false;
      const int k = below(r, n_in + n_vi + n_out);
      mutate_value_info(r, k < n_in ? *g.mutable_input(k) : k < n_in + n_vi ? *g.mutable_value_info(k - n_in) : *g.mutable_output(k - n_in - n_vi));
      return true;
    }
    default:  // an output renamed to a value inside the graph, or one more output
      if (all.empty()) return false;
      if (g.output_size() == 0 || below(r, 3) == 0) g.add_output()->set_name(all[static_cast<std::size_t>(below(r, static_cast<int>(all.size())))]);
      else g.mutable_output(below(r, g.output_size()))->set_name(all[static_cast<std::size_t>(below(r, static_cast<int>(all.size())))]);
      return true;
  }
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  Rng r(seed);
  onnx::ModelProto m;
  if (below(r, 4) == 0 || !m.ParseFromArray(data, static_cast<int>(size))) return LLVMFuzzerMutate(data, size, max_size);
  if (below(r, 8) == 0 && m.opset_import_size() > 0) m.mutable_opset_import(0)->set_version(6 + below(r, 17));
  bool changed = false;
  for (int k = 1 + below(r, 3); k > 0; --k) changed |= mutate_graph(r, *m.mutable_graph());
  if (!changed) return LLVMFuzzerMutate(data, size, max_size);
  const std::string out = m.SerializeAsString();
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
