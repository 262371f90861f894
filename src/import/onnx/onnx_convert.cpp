// SPDX-License-Identifier: Apache-2.0
#include "import/onnx/onnx_convert.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::import::onnx_detail {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {
using TP = onnx::TensorProto;
// Ops whose result on an initializer is the same weights seen differently: no kernel runs each step.
// Float initializers decoded up front: scalars, biases, normalisation weights, small masks.
constexpr std::int64_t kEagerElements = std::int64_t{1} << 16;
const std::set<std::string> kViewOps = {"Identity", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten", "Cast", "Slice", "Gather", "Split"};
}  // namespace

bool is_weight_view_op(const std::string& op) { return kViewOps.count(op) > 0; }

// ---- shape rules ------------------------------------------------------------------------------------------

Shape reshape_shape(const Shape& in, const std::vector<std::int64_t>& target, bool allowzero, const std::string& where) {
  // The rank first: the messages below quote the target, which a ConstantOfShape can make millions long.
  if (target.size() > kMaxRank) throw InputError(fmt::format("{}: rank {} is more than {}", where, target.size(), kMaxRank));
  Shape out;
  int infer = -1;
  std::int64_t known = 1;  // the product of the target's non-zero sizes
  for (std::size_t d = 0; d < target.size(); ++d) {
    std::int64_t t = target[d];
    if (t == 0 && !allowzero) {
      if (d >= in.size()) throw InputError(fmt::format("{}: Reshape copies dimension {} that the input {} lacks", where, d, shape_str(in)));
      t = in[d];
    }
    if (t == -1) {
      if (infer >= 0) throw InputError(fmt::format("{}: Reshape target {} infers more than one dimension", where, fmt::join(target, ",")));
      infer = static_cast<int>(d);
      out.push_back(1);
      continue;
    }
    if (t < 0) throw InputError(fmt::format("{}: Reshape target {} has a negative size", where, fmt::join(target, ",")));
    out.push_back(t);
    checked_numel(out, where);
    // Checked apart from the shape's: once a size is 0 the shape holds nothing, whatever the others multiply to.
    if (t > 0 && (__builtin_mul_overflow(known, t, &known) || known > kMaxElements))
      throw InputError(fmt::format("{}: Reshape target {} holds more than 2^48 elements", where, fmt::join(target, ",")));
  }
  const std::int64_t n = checked_numel(in, where);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      throw InputError(fmt::format("{}: Reshape cannot make {} ({} elements) into {}", where, shape_str(in), n, fmt::join(target, ",")));
    out[static_cast<std::size_t>(infer)] = n / known;
  }
  if (checked_numel(out, where) != n)
    throw InputError(fmt::format("{}: Reshape target {} holds a different number of elements than {}", where, shape_str(out), shape_str(in)));
  return out;
}

Shape squeeze_shape(const Shape& in, const std::vector<std::int64_t>& axes, const std::string& where) {
  std::vector<bool> drop(in.size(), false);
  if (axes.empty()) {
    for (std::size_t d = 0; d < in.size(); ++d) drop[d] = in[d] == 1;
  }
  for (std::int64_t a : axes) {
    const std::int64_t ax = a < 0 ? a + static_cast<std::int64_t>(in.size()) : a;
    if (ax < 0 || ax >= static_cast<std::int64_t>(in.size()) || in[static_cast<std::size_t>(ax)] != 1)
      throw InputError(fmt::format("{}: Squeeze axis {} of {} is not a dimension of size 1", where, a, shape_str(in)));
    drop[static_cast<std::size_t>(ax)] = true;
  }
  Shape out;
  for (std::size_t d = 0; d < in.size(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  return out;
}

Shape unsqueeze_shape(const Shape& in, const std::vector<std::int64_t>& axes, const std::string& where) {
  const auto rank = static_cast<std::int64_t>(in.size() + axes.size());
  std::vector<bool> add(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : axes) {
    const std::int64_t ax = a < 0 ? a + rank : a;
    if (ax < 0 || ax >= rank || add[static_cast<std::size_t>(ax)])
      throw InputError(fmt::format("{}: Unsqueeze axis {} is out of range or repeated for rank {}", where, a, rank));
    add[static_cast<std::size_t>(ax)] = true;
  }
  Shape out;
  std::size_t k = 0;
  for (std::int64_t d = 0; d < rank; ++d) out.push_back(add[static_cast<std::size_t>(d)] ? 1 : in[k++]);
  return out;
}

Shape permute_shape(const Shape& in, std::vector<std::int64_t>& perm, const std::string& where) {
  if (perm.empty())
    for (std::size_t d = in.size(); d-- > 0;) perm.push_back(static_cast<std::int64_t>(d));
  if (perm.size() != in.size()) throw InputError(fmt::format("{}: Transpose perm of {} axes for rank {}", where, perm.size(), in.size()));
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (std::int64_t p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(in.size()) || seen[static_cast<std::size_t>(p)])
      throw InputError(fmt::format("{}: Transpose perm {} is not a permutation of {} axes", where, fmt::join(perm, ","), in.size()));
    seen[static_cast<std::size_t>(p)] = true;
    out.push_back(in[static_cast<std::size_t>(p)]);
  }
  return out;
}

SliceSpec slice_spec(const Shape& in, std::vector<std::int64_t> starts, std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                     std::vector<std::int64_t> steps, const std::string& where) {
  if (axes.empty())
    for (std::size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw InputError(fmt::format("{}: Slice starts, ends, axes and steps differ in length", where));
  SliceSpec s;
  s.out = in;
  const auto rank = static_cast<std::int64_t>(in.size());
  std::vector<bool> seen(in.size(), false);
  for (std::size_t j = 0; j < axes.size(); ++j) {
    std::int64_t ax = axes[j] < 0 ? axes[j] + rank : axes[j];
    if (ax < 0 || ax >= rank || seen[static_cast<std::size_t>(ax)])
      throw InputError(fmt::format("{}: Slice axis {} is out of range or repeated for rank {}", where, axes[j], rank));
    seen[static_cast<std::size_t>(ax)] = true;
    const std::int64_t dim = in[static_cast<std::size_t>(ax)], step = steps[j];
    if (step == 0 || step > kMaxDim || step < -kMaxDim) throw InputError(fmt::format("{}: Slice step {} outside [-2^40, 2^40] or 0", where, step));
    if (dim == 0) {  // nothing to take, either way (stepping back, the clamps below would give [0, -1]: one element)
      s.axes.push_back(ax);
      s.starts.push_back(0);
      s.steps.push_back(step);
      s.out[static_cast<std::size_t>(ax)] = 0;
      continue;
    }
    // ONNX's rule: negative indices count from the end, then clamp to [0, dim] stepping forward and to
    // [0, dim - 1] (start) and [-1, dim - 1] (end) stepping back.
    auto norm = [&](std::int64_t v) { return v < 0 ? v + dim : v; };
    const std::int64_t b = step > 0 ? std::clamp<std::int64_t>(norm(starts[j]), 0, dim) : std::clamp<std::int64_t>(norm(starts[j]), 0, dim - 1);
    const std::int64_t e = step > 0 ? std::clamp<std::int64_t>(norm(ends[j]), 0, dim) : std::clamp<std::int64_t>(norm(ends[j]), -1, dim - 1);
    const std::int64_t len = step > 0 ? (e > b ? (e - b - 1) / step + 1 : 0) : (b > e ? (b - e - 1) / (-step) + 1 : 0);
    s.axes.push_back(ax);
    s.starts.push_back(b);
    s.steps.push_back(step);
    s.out[static_cast<std::size_t>(ax)] = len;
  }
  return s;
}

namespace {
/// Sizes for a message: the first eight, then how many in all (a node of a million outputs quoted them all).
std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  constexpr std::size_t kShown = 8;
  if (sizes.size() <= kShown) return fmt::format("{}", fmt::join(sizes, ","));
  return fmt::format("{},... ({} in all)", fmt::join(sizes.begin(), sizes.begin() + kShown, ","), sizes.size());
}
}  // namespace

std::vector<std::int64_t> split_sizes(std::int64_t dim, std::vector<std::int64_t> sizes, std::int64_t parts, int outputs, const std::string& where,
                                      bool uneven) {
  if (sizes.empty()) {
    // ONNX's num_outputs names as many parts as the node has outputs (checked before the loop it bounds).
    if (parts != outputs) throw InputError(fmt::format("{}: Split num_outputs {} for {} outputs", where, parts, outputs));
    if (parts < 1) throw InputError(fmt::format("{}: Split into no parts", where));
    if (!uneven && dim % parts != 0)
      throw InputError(fmt::format("{}: Split of dimension {} into {} equal parts (uneven parts need opset 18)", where, dim, parts));
    const std::int64_t each = (dim + parts - 1) / parts;  // the last part is the smaller
    for (std::int64_t p = 0, left = dim; p < parts; ++p, left -= std::min(each, left)) sizes.push_back(std::min(each, left));
  }
  if (sizes.size() != static_cast<std::size_t>(outputs))
    throw InputError(fmt::format("{}: Split gives {} sizes for {} outputs", where, sizes.size(), outputs));
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0 || s > dim - total)  // each in range, and the sum never past the axis (nor past 64 bits)
      throw InputError(fmt::format("{}: Split sizes {} do not fit dimension {}", where, sizes_text(sizes), dim));
    total += s;
  }
  if (total != dim) throw InputError(fmt::format("{}: Split sizes {} do not cover dimension {}", where, sizes_text(sizes), dim));
  return sizes;
}

// ---- the converter's plumbing -----------------------------------------------------------------------------

Converter::Converter(const onnx::GraphProto& graph, int opset, const std::string& where, const Binding& binding,
                     const std::set<std::string>& shape_only, const NetworkOptions& opt)
    : gp_(graph), opset_(opset), where_(where), binding_(binding), shape_only_(shape_only), opt_(opt) {
  for (const auto& t : gp_.initializer()) inits_[t.name()] = &t;
  for (const auto& o : gp_.output()) graph_outputs_.insert(o.name());
  // By name once: a value's claims are looked up each time one is made (scanning them all was quadratic).
  for (const auto& vi : gp_.value_info()) claims_[vi.name()].push_back(&vi);
  for (const auto& vi : gp_.output()) claims_[vi.name()].push_back(&vi);
  for (int i = 0; i < gp_.node_size(); ++i) {
    index_[&gp_.node(i)] = i;
    for (const auto& name : gp_.node(i).input())
      if (!name.empty()) users_[name].push_back(i);
    for (const auto& name : gp_.node(i).output())
      if (!name.empty()) producer_.emplace(name, i);
  }
  done_.assign(static_cast<std::size_t>(gp_.node_size()), false);
}

std::string Converter::node_label(const onnx::NodeProto& n) const {
  const auto it = index_.find(&n);
  const std::string id = !n.name().empty() ? fmt::format("'{}'", strings::printable(n.name()))
                                           : fmt::format("#{}", it == index_.end() ? -1 : it->second);
  return fmt::format("node {} ({})", id, strings::printable(n.op_type()));
}

std::string Converter::at_node() const { return current_ ? fmt::format("{}: {}", where_, node_label(*current_)) : where_; }

void Converter::refuse(const onnx::NodeProto& n, const std::string& what) const {
  throw InputError(fmt::format("{}: {}: {}", where_, node_label(n), what));
}

bool Converter::has(const onnx::NodeProto& n, int k) const { return k < n.input_size() && !n.input(k).empty(); }

const std::string& Converter::input_name(const onnx::NodeProto& n, int k) const {
  if (!has(n, k)) refuse(n, fmt::format("input {} is missing", k));
  return n.input(k);
}

const Value& Converter::in(const onnx::NodeProto& n, int k) const {
  const auto it = vals_.find(input_name(n, k));
  if (it == vals_.end()) refuse(n, fmt::format("input '{}' is not produced before this node (ONNX graphs are in topological order)", strings::printable(n.input(k))));
  return it->second;
}

void Converter::count_kept(const KnownPtr& k, const std::string& what) {
  if (!k || !k.sole()) return;  // shared (an Identity's, a cache hit's): made and counted once already
  kept_elements_ += k->size();  // each at most kMaxKnownElements: no overflow before the check
  if (kept_elements_ > kMaxKeptElements)
    throw InputError(fmt::format("{}: the values the reader keeps pass 2^28 elements in all (constants, masks and the shape arithmetic over them)", what));
}

void Converter::count_read(std::int64_t elements, const std::string& what) const {
  read_elements_ += elements;  // each read at most a few kMaxKnownElements: no overflow before the check
  if (read_elements_ > kMaxReadElements)
    throw InputError(fmt::format("{}: working out the file's constants reads more than 2^30 values in all", what));
}

void Converter::set(const onnx::NodeProto& n, int k, Value v) {
  if (k >= n.output_size() || n.output(k).empty()) return;  // an optional output nobody named
  checked_numel(v.shape, fmt::format("{}: {}", where_, node_label(n)));
  count_kept(v.known, at_node());
  check_value_info(n.output(k), v);
  vals_[n.output(k)] = std::move(v);
}

void Converter::set_node(const onnx::NodeProto& n, int k, NodeId id, int elem) {
  Value v;
  v.shape = g_.node(id).shape;
  v.elem = elem;
  v.node = id;
  set(n, k, std::move(v));
}

std::int64_t Converter::attr_int(const onnx::NodeProto& n, const char* name, std::int64_t fallback) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::INT) refuse(n, fmt::format("attribute {} must be an integer", name));
      return a.i();
    }
  return fallback;
}

double Converter::attr_float(const onnx::NodeProto& n, const char* name, double fallback) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::FLOAT) refuse(n, fmt::format("attribute {} must be a float", name));
      return a.f();
    }
  return fallback;
}

std::string Converter::attr_string(const onnx::NodeProto& n, const char* name, const std::string& fallback) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::STRING) refuse(n, fmt::format("attribute {} must be a string", name));
      return a.s();
    }
  return fallback;
}

std::optional<std::vector<std::int64_t>> Converter::attr_ints(const onnx::NodeProto& n, const char* name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) {
      if (a.type() != onnx::AttributeProto::INTS) refuse(n, fmt::format("attribute {} must be a list of integers", name));
      return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    }
  return std::nullopt;
}

std::vector<std::int64_t> Converter::known_ints(const onnx::NodeProto& n, int k, const char* what) const {
  const Value& v = in(n, k);
  if (!v.known) refuse(n, fmt::format("its {} (input {}) is computed from data at run time; gpuvs needs it constant", what, k));
  const std::string here = fmt::format("{}: {}: {}", where_, node_label(n), what);
  count_read(v.known->size(), here);
  return v.known->ints(here);
}

Converter::SliceArgs Converter::slice_args(const onnx::NodeProto& n, const std::function<std::vector<std::int64_t>(int)>& ints_of) const {
  SliceArgs s;
  if (opset_ < 10) {
    s.starts = attr_ints(n, "starts").value_or(s.starts);
    s.ends = attr_ints(n, "ends").value_or(s.ends);
    s.axes = attr_ints(n, "axes").value_or(s.axes);
  } else {
    s.starts = ints_of(1);
    s.ends = ints_of(2);
    if (has(n, 3)) s.axes = ints_of(3);
    if (has(n, 4)) s.steps = ints_of(4);
  }
  return s;
}

std::optional<std::vector<std::int64_t>> Converter::axes_of(const onnx::NodeProto& n, int k) const {
  if (auto a = attr_ints(n, "axes")) return a;
  if (has(n, k)) return known_ints(n, k, "axes");
  return std::nullopt;
}

int Converter::norm_axis(const onnx::NodeProto& n, std::int64_t axis, std::size_t rank) const {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) refuse(n, fmt::format("axis {} is outside rank {}", axis, rank));
  return static_cast<int>(a);
}

std::optional<double> Converter::scalar(const onnx::NodeProto& n, int k) const {
  if (!has(n, k)) return std::nullopt;
  const auto it = vals_.find(n.input(k));
  if (it == vals_.end() || !it->second.known || it->second.known->size() != 1) return std::nullopt;
  return it->second.known->at(0);
}

std::string Converter::name_for(const onnx::NodeProto& n, const std::string& suffix) {
  std::string base = !n.name().empty() ? n.name() : n.output_size() > 0 && !n.output(0).empty() ? n.output(0) : n.op_type();
  return g_.unique_name(strings::printable(base) + suffix);
}

DType Converter::dtype_for(int elem) const { return is_float_type(elem) ? opt_.dtype : DType::i32; }

NodeId Converter::param_for(const std::string& initializer) {
  const auto it = params_.find(initializer);
  if (it != params_.end()) return it->second;
  const TP& t = *inits_.at(initializer);
  const Shape s = tensor_dims(t, where_);
  const NodeId id = g_.param(g_.unique_name(strings::printable(initializer)), s, dtype_for(t.data_type()),
                             !frozen_.count(initializer) && is_float_type(t.data_type()));
  params_[initializer] = id;
  return id;
}

NodeId Converter::view(const std::string& name, NodeId x, const Shape& shape) {
  if (g_.node(x).shape == shape) return x;
  return g_.reshape(g_.unique_name(name), x, shape);
}

NodeId Converter::tensor(const std::string& name) {
  Value& v = vals_.at(name);
  if (v.node != kNone) return v.node;
  // Shapes may hold zeros (shape arithmetic, empty index lists); a tensor the model computes with may not: every
  // size the IR derives (rows = elements / width, heads, groups) assumes one element at least.
  if (numel(v.shape) == 0)
    throw InputError(fmt::format("{}: value '{}' {} holds no elements: an empty tensor is not built", at_node(), strings::printable(name), shape_str(v.shape)));
  if (!v.weight.empty()) {
    const NodeId p = param_for(v.weight);
    const Shape& src = g_.node(p).shape;
    if (src == v.shape) {
      v.node = p;
    } else if (numel(src) == numel(v.shape)) {
      v.node = view(name + "/view", p, v.shape);
    } else {
      // A part of a weight (a slice of a positional table): the slice along the one axis that shrank.
      std::vector<std::size_t> differ;
      if (src.size() == v.shape.size())
        for (std::size_t d = 0; d < src.size(); ++d)
          if (src[d] != v.shape[d]) differ.push_back(d);
      if (differ.size() != 1)
        throw InputError(fmt::format("{}: initializer '{}' {} is used as {}: a part gpuvs cannot take as one slice", where_,
                                     strings::printable(v.weight), shape_str(src), shape_str(v.shape)));
      v.node = g_.slice(g_.unique_name(name + "/part"), p, static_cast<int>(differ[0]), 0, v.shape[differ[0]]);
    }
    return v.node;
  }
  if (v.known) {
    const DType dt = v.known->is_float ? opt_.dtype : DType::i32;
    v.node = v.known->size() == 1 ? g_.fill(g_.unique_name("const:" + name), v.shape, dt, v.known->at(0))
                                  : g_.param(g_.unique_name("const:" + name), v.shape, dt, false);
    return v.node;
  }
  // Known only by its shape (too large to hold): a constant tensor the runtime keeps.
  v.node = g_.param(g_.unique_name("const:" + name), v.shape, dtype_for(v.elem), false);
  return v.node;
}

const onnx::NodeProto* Converter::sole_user(const std::string& tensor) const {
  if (graph_outputs_.count(tensor)) return nullptr;
  const auto it = users_.find(tensor);
  if (it == users_.end() || it->second.size() != 1) return nullptr;
  const onnx::NodeProto& u = gp_.node(it->second[0]);
  return pattern_ready(u) ? &u : nullptr;
}

bool Converter::pattern_ready(const onnx::NodeProto& n) {
  static const std::map<std::string, int> kInputs = {{"Add", 2}, {"Sub", 2}, {"Mul", 2}, {"Div", 2}, {"Pow", 2}, {"MatMul", 2}, {"Where", 3}};
  const auto need = kInputs.find(n.op_type());
  return n.output_size() >= 1 && !n.output(0).empty() && n.input_size() >= 1 && (need == kInputs.end() || n.input_size() == need->second);
}

void Converter::skip(const onnx::NodeProto& n) { done_[static_cast<std::size_t>(index_.at(&n))] = true; }

const Known* Converter::values_of(const std::string& name, int depth) {
  const auto it = vals_.find(name);
  if (it == vals_.end()) return nullptr;
  if (it->second.known) return &*it->second.known;
  if (depth > 32 || it->second.weight.empty()) return nullptr;
  if (const auto t = inits_.find(name); t != inits_.end()) {
    if (shape_only_.count(name)) return nullptr;
    const std::string what = fmt::format("{}: initializer '{}'", where_, strings::printable(name));
    it->second.known = decode_tensor(*t->second, what);
    count_kept(it->second.known, what);
    return it->second.known ? &*it->second.known : nullptr;
  }
  // A view of a weight: fold the view again now that its input's values are known, keeping any graph tensor
  // already made from it.
  const auto p = producer_.find(name);
  if (p == producer_.end()) return nullptr;
  const onnx::NodeProto& n = gp_.node(p->second);
  if (!kViewOps.count(n.op_type()) || n.input_size() < 1 || !values_of(n.input(0), depth + 1)) return nullptr;
  std::map<std::string, NodeId> made;
  for (const auto& o : n.output())
    if (const auto v = vals_.find(o); v != vals_.end()) made[o] = v->second.node;
  const Summary before = summary_;
  if (!fold(n)) return nullptr;
  summary_ = before;
  for (const auto& [o, id] : made)
    if (vals_.count(o)) vals_[o].node = id;
  const auto again = vals_.find(name);
  return again != vals_.end() && again->second.known ? &*again->second.known : nullptr;
}

const Value* Converter::lookup(const std::string& name, int depth) {
  if (const auto it = vals_.find(name); it != vals_.end()) return &it->second;
  // What cannot be folded ahead now cannot later (its inputs are computed, or not foldable): said once, not
  // walked again for each pattern that asks, at any depth, unless the depth limit was the reason somewhere
  // below (from nearer the top it may fold). Remembered only at the top, a bias look-ahead per MatMul walked
  // one wide Concat again each time: quadratic.
  if (unfoldable_.count(name)) return nullptr;
  if (depth > 32) {
    depth_capped_ = true;
    return nullptr;
  }
  const bool capped_outside = depth_capped_;
  depth_capped_ = false;
  auto cannot = [&]() -> const Value* {
    if (!depth_capped_) unfoldable_.insert(name);
    depth_capped_ = depth_capped_ || capped_outside;
    return nullptr;
  };
  const auto p = producer_.find(name);
  if (p == producer_.end() || done_[static_cast<std::size_t>(p->second)]) return cannot();
  const onnx::NodeProto& n = gp_.node(p->second);
  if (!n.domain().empty() && n.domain() != "ai.onnx") return cannot();
  for (const auto& in : n.input())
    if (!in.empty() && !lookup(in, depth + 1)) return cannot();
  if (!fold(n)) return cannot();
  done_[static_cast<std::size_t>(p->second)] = true;
  ++summary_.ops[n.op_type()];
  depth_capped_ = depth_capped_ || capped_outside;
  const auto it = vals_.find(name);
  return it == vals_.end() ? nullptr : &it->second;
}

void Converter::check_value_info(const std::string& name, const Value& v) const {
  if (v.node != kNone && numel(v.shape) == 0)  // as tensor() refuses an empty input, an op may not make an empty output
    throw InputError(fmt::format("{}: value '{}' {} holds no elements: an empty tensor is not built", at_node(), strings::printable(name), shape_str(v.shape)));
  // The file's own shape claims (value_info, outputs) must agree with what the graph computes.
  const auto claimed = claims_.find(name);
  if (claimed == claims_.end()) return;
  auto check = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    const auto& dims = vi.type().tensor_type().shape().dim();
    if (dims.size() != static_cast<int>(v.shape.size()))
      throw InputError(fmt::format("{}: value '{}': the file says rank {}, the graph computes {}", at_node(), strings::printable(name), dims.size(),
                                   shape_str(v.shape)));
    for (int d = 0; d < dims.size(); ++d) {
      std::int64_t want = 0;
      if (dims[d].has_dim_value() && dims[d].dim_value() > 0) want = dims[d].dim_value();
      else if (dims[d].has_dim_param() && binding_.batch_dims.count(dims[d].dim_param())) want = opt_.batch;
      else if (dims[d].has_dim_param() && binding_.dims.count(dims[d].dim_param())) want = binding_.dims.at(dims[d].dim_param());
      if (want > 0 && want != v.shape[static_cast<std::size_t>(d)])
        throw InputError(fmt::format("{}: value '{}': the file says dimension {} is {}, the graph computes {}", at_node(), strings::printable(name), d,
                                     want, shape_str(v.shape)));
    }
  };
  for (const onnx::ValueInfoProto* vi : claimed->second) check(*vi);
}

// ---- folding ----------------------------------------------------------------------------------------------

namespace {
constexpr std::size_t kMaxFoldKey = std::size_t{1} << 16;  // bytes
}  // namespace

bool Converter::fold(const onnx::NodeProto& n) {
  // Exporters repeat the same arithmetic per block (each block slices and compares the same mask buffer): a
  // node with the same op, attributes and known inputs as one folded before gets its outputs again.
  const std::string& op = n.op_type();
  if (op == "Constant" || op == "Shape" || op == "Size") return fold_values(n);
  // The key holds everything the outputs depend on: the attributes, which outputs are named, and per input its
  // element type, the weight it is (a view of a weight stays that weight) and its values. Strings from the file
  // go in with their lengths, so no two keys read alike.
  std::string key = op;
  std::vector<KnownPtr> keep;
  for (const auto& a : n.attribute()) {
    const std::string bytes = a.SerializeAsString();
    key += fmt::format("|a{}:", bytes.size());
    key += bytes;
  }
  key += "|o";
  for (const auto& o : n.output()) key += o.empty() ? '-' : '+';
  for (int k = 0; k < n.input_size(); ++k) {
    if (n.input(k).empty()) {
      key += "|-";
      continue;
    }
    const auto it = vals_.find(n.input(k));
    if (it == vals_.end()) return fold_values(n);  // fold_values says what is missing
    const Value& v = it->second;
    key += fmt::format("|e{}w{}:", v.elem, v.weight.size());
    key += v.weight;
    if (v.known && v.known->size() <= 64) {  // small (shapes, indices, scalars): by value
      key += "|v";
      key += shape_str(v.known->shape);
      key += v.known->is_float ? 'f' : 'i';
      for (std::int64_t e = 0; e < v.known->size(); ++e)
        key += v.known->is_float ? fmt::format(",{}", v.known->f[static_cast<std::size_t>(e)]) : fmt::format(",{}", v.known->i[static_cast<std::size_t>(e)]);
    } else if (v.known) {  // large: by identity (shared by the identities and views of one tensor)
      key += fmt::format("|k{}", static_cast<const void*>(v.known.operator->()));
      keep.push_back(v.known);
    } else if (!v.weight.empty()) {
      key += shape_str(v.shape);
    } else {
      return fold_values(n);  // a computed tensor: nothing to reuse
    }
    // A million inputs naming one small constant wrote it out a million times (gigabytes of key): a node this
    // wide is folded uncached.
    if (key.size() > kMaxFoldKey) return fold_values(n);
  }
  if (const auto hit = fold_cache_.find(key); hit != fold_cache_.end()) {
    for (int k = 0; k < n.output_size() && k < static_cast<int>(hit->second.outputs.size()); ++k) set(n, k, hit->second.outputs[k]);
    ++(hit->second.weight_view ? summary_.weight_views : summary_.folded);
    return true;
  }
  const Summary before = summary_;
  if (!fold_values(n)) return false;
  FoldResult r;
  r.inputs = std::move(keep);
  r.weight_view = summary_.weight_views != before.weight_views;
  for (const auto& o : n.output()) {
    Value v = vals_.count(o) ? vals_.at(o) : Value{};
    v.node = kNone;
    r.outputs.push_back(std::move(v));
  }
  fold_cache_.emplace(std::move(key), std::move(r));
  return true;
}


// ---- the pass ---------------------------------------------------------------------------------------------

void Converter::convert(int index) {
  const onnx::NodeProto& n = gp_.node(index);
  if (done_[static_cast<std::size_t>(index)]) return;
  done_[static_cast<std::size_t>(index)] = true;
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    refuse(n, fmt::format("operators of domain '{}' are not built (only the standard ONNX operators are)", strings::printable(n.domain())));
  if (n.output_size() < 1 || n.output(0).empty()) refuse(n, "a node needs an output");
  ++summary_.ops[n.op_type()];
  for (int k = 0; k < n.input_size(); ++k)
    if (!n.input(k).empty()) (void)in(n, k);
  current_ = &n;
  try {
    if (fold(n)) return;
    if (fuse(n)) return;
    build_op(n);
  } catch (const std::invalid_argument& e) {
    refuse(n, strings::printable(e.what()));  // the IR's own shape checks: the file's shapes
  }
  current_ = nullptr;
}

Graph Converter::build() {
  // Inputs: each real input (not an initializer) with its dims bound.
  for (const auto& t : gp_.initializer()) {
    Value v;
    v.elem = t.data_type();
    v.shape = tensor_dims(t, where_);
    if (is_float_type(t.data_type())) v.weight = t.name();  // integer initializers are constants (indices, shapes)
    // Integers and small tensors now (shapes, scalars, biases); large weights when something needs their values.
    if (!shape_only_.count(t.name()) && (!is_float_type(t.data_type()) || numel(v.shape) <= kEagerElements)) {
      const std::string what = fmt::format("{}: initializer '{}'", where_, strings::printable(t.name()));
      v.known = decode_tensor(t, what);
      count_kept(v.known, what);
    }
    vals_[t.name()] = std::move(v);
  }
  for (const auto& vi : gp_.input()) {
    if (inits_.count(vi.name())) continue;
    const auto& tt = vi.type().tensor_type();
    Shape s;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0) s.push_back(dim.dim_value());
      else if (binding_.batch_dims.count(dim.dim_param())) s.push_back(opt_.batch);
      else s.push_back(binding_.dims.at(dim.dim_param()));
    }
    if (binding_.fixed_batch > 0 && opt_.batch != binding_.fixed_batch)
      throw InputError(fmt::format("{}: the model's batch is fixed at {} (input '{}' dimension 0); price it with --batch {}, or export it "
                                   "with a dynamic batch axis",
                                   where_, binding_.fixed_batch, strings::printable(vi.name()), binding_.fixed_batch));
    checked_numel(s, fmt::format("{}: input '{}'", where_, strings::printable(vi.name())));  // before the IR sees it
    Value v;
    v.elem = tt.elem_type();
    v.shape = s;
    v.node = g_.input(g_.unique_name(strings::printable(vi.name())), s, dtype_for(v.elem));
    vals_[vi.name()] = std::move(v);
  }
  for (int i = 0; i < gp_.node_size(); ++i) convert(i);
  current_ = nullptr;  // the head below belongs to no node of the file
  // The model's output: class scores over its last axis train with cross-entropy on the logits.
  const std::string& out_name = gp_.output(0).name();
  if (!vals_.count(out_name)) throw InputError(fmt::format("{}: output '{}' is not produced by any node", where_, strings::printable(out_name)));
  const Value& ov = vals_.at(out_name);
  if (!is_float_type(ov.elem)) throw InputError(fmt::format("{}: output '{}' is not floating point", where_, strings::printable(out_name)));
  const auto pre = pre_softmax_.find(out_name);
  NodeId y = pre != pre_softmax_.end() ? pre->second : tensor(out_name);
  const Shape s = g_.node(y).shape;
  // The head's nodes take names the file's own nodes left free (a node may be called "loss"); the graph's
  // outputs are found by their output names, not their node names.
  if (s.size() >= 2 && s.size() <= 3 && s.back() > 1) {
    const std::int64_t rows = numel(s) / s.back();
    if (s.size() == 3) y = g_.reshape(g_.unique_name("output/rows"), y, {rows, s.back()});
    g_.set_output("logits", y);
    const NodeId labels = g_.input(g_.unique_name("labels"), {rows}, DType::i32);
    g_.set_output("loss", opt_.training ? g_.softmax_xent_fp32(g_.unique_name("loss"), y, labels)
                                        : g_.softmax_xent(g_.unique_name("loss"), y, labels));
  } else {
    summary_.notes.insert(fmt::format("training is priced with a squared-error loss on output '{}' {} (not class scores)",
                                      strings::printable(out_name), shape_str(s)));
    g_.set_output("output", y);
    const NodeId target = g_.input(g_.unique_name("target"), s, g_.node(y).dtype);
    g_.set_output("loss", g_.mse_loss(g_.unique_name("loss"), y, target));
  }
  return std::move(g_);
}

}  // namespace gpuvs::import::onnx_detail
