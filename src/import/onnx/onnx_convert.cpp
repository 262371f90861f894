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

bool Converter::fold_values(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string here = fmt::format("{}: {}", where_, node_label(n));
  if (op == "Constant") {
    Value v;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.has_t()) {
        v.elem = a.t().data_type();
        v.shape = tensor_dims(a.t(), here);
        v.known = decode_tensor(a.t(), here);
      } else if (a.name() == "value_float") {
        v.elem = TP::FLOAT;
        v.known = Known{{}, true, {a.f()}, {}};
      } else if (a.name() == "value_floats") {
        v.elem = TP::FLOAT;
        v.known = Known{{a.floats_size()}, true, {a.floats().begin(), a.floats().end()}, {}};
      } else if (a.name() == "value_int") {
        v.elem = TP::INT64;
        v.known = Known::scalar_int(a.i());
      } else if (a.name() == "value_ints") {
        v.elem = TP::INT64;
        v.known = Known::ints_1d({a.ints().begin(), a.ints().end()});
      } else {
        refuse(n, fmt::format("a Constant's {} is not read", strings::printable(a.name())));
      }
    }
    if (!v.known && v.shape.empty()) refuse(n, "a Constant needs a value");
    if (v.known) v.shape = v.known->shape;
    set(n, 0, std::move(v));
    return true;
  }
  // Which inputs are known, and whether a weight is among them.
  bool all_known = true, any_weight = false;
  for (int k = 0; k < n.input_size(); ++k) {
    if (n.input(k).empty()) continue;
    const Value& v = in(n, k);
    if (!v.weight.empty()) any_weight = true;
    if (!v.known && v.weight.empty()) all_known = false;
  }
  if (op == "Shape" || op == "Size") {
    ++summary_.folded;
    const Shape& s = in(n, 0).shape;
    if (op == "Size") {
      Value v;
      v.elem = TP::INT64;
      v.known = Known::scalar_int(checked_numel(s, here));
      set(n, 0, std::move(v));
      return true;
    }
    const auto rank = static_cast<std::int64_t>(s.size());
    std::int64_t b = attr_int(n, "start", 0), e = attr_int(n, "end", rank);
    b = std::clamp<std::int64_t>(b < 0 ? b + rank : b, 0, rank);
    e = std::clamp<std::int64_t>(e < 0 ? e + rank : e, 0, rank);
    Value v;
    v.elem = TP::INT64;
    v.known = Known::ints_1d(std::vector<std::int64_t>(s.begin() + b, s.begin() + std::max(b, e)));
    v.shape = v.known->shape;
    set(n, 0, std::move(v));
    return true;
  }
  if (!all_known) return false;
  const Value& x = in(n, 0);
  const bool weight_view = any_weight && !x.weight.empty() && kViewOps.count(op);
  const bool comparison = op == "Equal" || op == "Less" || op == "LessOrEqual" || op == "Greater" || op == "GreaterOrEqual" || op == "Not" ||
                          op == "And" || op == "Or";
  // A weight read by arithmetic is a tensor the graph computes with (its param is trained), not a constant;
  // compared, or cut to a triangle, it is a mask being made.
  if (any_weight && !weight_view && !comparison && op != "Trilu") return false;
  // Values of weights too large to hold are shapes only.
  // A weight seen through a view keeps what is known of it; anything else computed from values decodes them.
  auto known_of = [&](int k) -> const Known* {
    if (weight_view && k == 0) {
      const Value& v = in(n, k);
      return v.known ? &*v.known : nullptr;
    }
    (void)in(n, k);
    return values_of(n.input(k));
  };
  std::int64_t reads = 0;
  for (int k = 0; k < n.input_size(); ++k) {
    if (n.input(k).empty()) continue;
    const Known* v = known_of(k);
    if (!v && !(weight_view && k == 0)) return false;
    if (v) reads += v->size();
  }
  count_read(reads, here);  // before reading: a node of a hundred inputs naming one large constant reads it a hundred times

  auto K = [&](int k) -> const Known& {
    const Known* p = known_of(k);
    if (!p) refuse(n, fmt::format("the values of input {} are not known", k));
    return *p;
  };
  Value out;
  out.elem = x.elem;
  out.weight = weight_view ? x.weight : "";
  const Known* xk = known_of(0);
  if (op == "Identity") {
    out.shape = x.shape;
    out.known = x.known;
  } else if (op == "Cast") {
    const std::int64_t to_attr = attr_int(n, "to", 0);
    if (to_attr < 0 || to_attr > std::numeric_limits<int>::max() || (!is_float_type(static_cast<int>(to_attr)) && !is_int_type(static_cast<int>(to_attr))))
      refuse(n, fmt::format("a Cast to {} is not read (numbers and booleans are)", to_attr));
    const int to = static_cast<int>(to_attr);
    if (weight_view && !is_float_type(to)) return false;
    out.elem = to;
    out.shape = x.shape;
    if (xk) out.known = cast_known(*xk, to);
  } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    if (op == "Reshape") {
      out.shape = reshape_shape(x.shape, K(1).ints(here), attr_int(n, "allowzero", 0) != 0, here);
    } else if (op == "Flatten") {
      const auto rank = static_cast<std::int64_t>(x.shape.size());
      std::int64_t axis = attr_int(n, "axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) refuse(n, fmt::format("axis {} is outside rank {}", attr_int(n, "axis", 1), rank));
      std::int64_t a = 1, b = 1;
      for (std::size_t d = 0; d < x.shape.size(); ++d) (static_cast<std::int64_t>(d) < axis ? a : b) *= x.shape[d];
      out.shape = {a, b};
    } else if (op == "Squeeze") {
      out.shape = squeeze_shape(x.shape, axes_of(n, 1).value_or(std::vector<std::int64_t>{}), here);
    } else {
      const auto axes = axes_of(n, 1);
      if (!axes) refuse(n, "Unsqueeze needs axes");
      out.shape = unsqueeze_shape(x.shape, *axes, here);
    }
    if (xk) {
      Known k = *xk;
      k.shape = out.shape;
      out.known = std::move(k);
    }
  } else if (op == "Transpose") {
    auto perm = attr_ints(n, "perm").value_or(std::vector<std::int64_t>{});
    out.shape = permute_shape(x.shape, perm, here);
    if (xk) out.known = transpose_known(*xk, perm, out.shape);
  } else if (op == "Slice") {
    std::vector<std::int64_t> starts, ends, axes, steps;
    if (opset_ < 10) {
      starts = attr_ints(n, "starts").value_or(starts);
      ends = attr_ints(n, "ends").value_or(ends);
      axes = attr_ints(n, "axes").value_or(axes);
    } else {
      starts = K(1).ints(here);
      ends = K(2).ints(here);
      if (has(n, 3)) axes = K(3).ints(here);
      if (has(n, 4)) steps = K(4).ints(here);
    }
    const SliceSpec s = slice_spec(x.shape, starts, ends, axes, steps, here);
    out.shape = s.out;
    if (xk) out.known = slice_known(*xk, s.starts, s.steps, s.axes, s.out);
  } else if (op == "Gather") {
    const int axis = norm_axis(n, attr_int(n, "axis", 0), x.shape.size());
    const Known& idx = K(1);
    const std::vector<std::int64_t> ids = idx.ints(here);
    const std::int64_t extent = x.shape[static_cast<std::size_t>(axis)];
    for (std::int64_t i : ids)
      if (i < -extent || i >= extent) refuse(n, fmt::format("index {} is outside dimension {} of size {}", i, axis, extent));
    Shape s(x.shape.begin(), x.shape.begin() + axis);
    s.insert(s.end(), idx.shape.begin(), idx.shape.end());
    s.insert(s.end(), x.shape.begin() + axis + 1, x.shape.end());
    out.shape = s;
    if (weight_view) {
      // Rows 0..n-1 of a table (positions) are a slice of the weight; other picks are a gather each step.
      bool leading = axis == 0 && idx.shape.size() == 1;
      for (std::size_t k = 0; leading && k < ids.size(); ++k) leading = ids[k] == static_cast<std::int64_t>(k);
      if (!leading) return false;
    }
    if (xk) {
      Known ik = idx;
      ik.i = ids;
      ik.is_float = false;
      if (checked_numel(s, here) > kMaxKnownElements) return false;
      out.known = gather_known(*xk, ik, axis, s);
    }
  } else if (op == "Split") {
    if (weight_view) return false;  // parts of a weight at their offsets: slices of its param (build_op)
    const int axis = norm_axis(n, attr_int(n, "axis", 0), x.shape.size());
    std::vector<std::int64_t> sizes = attr_ints(n, "split").value_or(std::vector<std::int64_t>{});
    if (sizes.empty() && has(n, 1)) sizes = K(1).ints(here);
    sizes = split_sizes(x.shape[static_cast<std::size_t>(axis)], sizes, attr_int(n, "num_outputs", n.output_size()), n.output_size(), here, opset_ >= 18);
    std::int64_t start = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      Value part = out;
      const SliceSpec s = slice_spec(x.shape, {start}, {start + sizes[static_cast<std::size_t>(k)]}, {axis}, {1}, here);
      part.shape = s.out;
      if (xk) part.known = slice_known(*xk, s.starts, s.steps, s.axes, s.out);
      set(n, k, std::move(part));
      start += sizes[static_cast<std::size_t>(k)];
    }
    ++summary_.folded;
    return true;
  } else if (op == "Concat") {
    const int axis = norm_axis(n, attr_int(n, "axis", 0), x.shape.size());
    Shape s = x.shape;
    std::vector<const Known*> parts;
    for (int k = 0; k < n.input_size(); ++k) {
      const Known* p = &K(k);
      if (p->shape.size() != s.size()) refuse(n, "inputs differ in rank");
      for (std::size_t d = 0; d < s.size(); ++d)
        if (static_cast<int>(d) != axis && p->shape[d] != s[d]) refuse(n, "inputs differ off the axis");
      if (k > 0 && (s[static_cast<std::size_t>(axis)] += p->shape[static_cast<std::size_t>(axis)]) > kMaxDim)
        refuse(n, "the inputs add up past 2^40 along the axis");
      parts.push_back(p);
    }
    out.shape = s;
    if (checked_numel(s, here) > kMaxKnownElements) return false;
    out.known = concat_known(parts, axis, s);
  } else if (op == "Expand") {
    out.shape = broadcast_all({x.shape, Shape(K(1).ints(here))}, here);
    out.known = expand_known(K(0), out.shape, here);
  } else if (op == "ConstantOfShape") {
    const std::vector<std::int64_t> dims = K(0).ints(here);
    out.shape = Shape(dims.begin(), dims.end());
    checked_numel(out.shape, here);
    Known fill{{}, true, {0.0}, {}};  // ONNX's default: a float 0
    out.elem = TP::FLOAT;
    for (const auto& a : n.attribute())
      if (a.name() == "value") {
        if (!a.has_t()) refuse(n, "its value must be a tensor");
        auto k = decode_tensor(a.t(), here);
        if (!k || k->size() != 1) refuse(n, "its value must be a tensor of one element");
        fill = *k;
        out.elem = a.t().data_type();
      }
    fill.shape = {};
    out.known = expand_known(fill, out.shape, here);
  } else if (op == "Range") {
    // The three inputs are looked up once: the loop below runs up to kMaxKnownElements times.
    const Known &k_start = K(0), &k_limit = K(1), &k_delta = K(2);
    // ONNX's Range takes three scalars of one type; the integer loop reads start and delta as integers.
    for (const Known* k : {&k_start, &k_limit, &k_delta})
      if (k->size() != 1 || k->is_float != k_start.is_float) refuse(n, "Range needs three one-element inputs of one type");
    const double start = k_start.at(0), limit = k_limit.at(0), delta = k_delta.at(0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) refuse(n, "Range needs a finite, non-zero step");
    Known r;
    r.is_float = k_start.is_float;
    std::int64_t count = 0;
    if (r.is_float) {
      const double c = std::max(0.0, std::ceil((limit - start) / delta));
      if (c > static_cast<double>(kMaxKnownElements)) refuse(n, fmt::format("Range of {} elements", c));
      count = static_cast<std::int64_t>(c);
    } else {
      // In integers: doubles round values past 2^53, and the count with them.
      const std::int64_t step = k_delta.i[0];
      std::int64_t diff = 0;
      if (__builtin_sub_overflow(k_limit.i[0], k_start.i[0], &diff) || (diff == std::numeric_limits<std::int64_t>::min() && step == -1)) refuse(n, "Range overflows 64-bit integers");
      count = diff / step;
      if (diff % step != 0 && (diff < 0) == (step < 0)) ++count;  // ceil of a positive quotient
      count = std::max<std::int64_t>(count, 0);
      if (count > kMaxKnownElements) refuse(n, fmt::format("Range of {} elements", count));
    }
    r.shape = {count};
    if (r.is_float) r.f.reserve(static_cast<std::size_t>(count));
    else r.i.reserve(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < r.shape[0]; ++k) {
      std::int64_t v = 0;
      if (r.is_float) r.f.push_back(start + static_cast<double>(k) * delta);
      else if (__builtin_mul_overflow(k, k_delta.i[0], &v) || __builtin_add_overflow(v, k_start.i[0], &v)) refuse(n, "Range overflows 64-bit integers");
      else r.i.push_back(v);
    }
    out.shape = r.shape;
    out.known = r;
  } else if (op == "Trilu") {
    // The triangle of the last two axes (causal masks built at export time): kept where j - i >= k (upper) or
    // j - i <= k (lower), zero elsewhere.
    if (x.shape.size() < 2) refuse(n, "Trilu needs at least two axes");
    const std::int64_t k = has(n, 1) ? K(1).int_at(0, here) : 0;
    const bool upper = attr_int(n, "upper", 1) != 0;
    Known r = K(0);
    const std::int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    for (std::int64_t e = 0; e < r.size(); ++e) {
      const std::int64_t i = (e / cols) % rows, j = e % cols;
      if (upper ? j - i >= k : j - i <= k) continue;
      if (r.is_float) r.f[static_cast<std::size_t>(e)] = 0;
      else r.i[static_cast<std::size_t>(e)] = 0;
    }
    out.shape = x.shape;
    out.known = std::move(r);
  } else if (op == "ReduceProd" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    if (x.shape.size() != 1 || K(0).is_float) return false;  // shape arithmetic only: 1-D integers
    // Over axis 0, the only one: from the attribute, or input 1 (opset 18; ReduceSum from 13). No axes reduce
    // every axis, unless noop_with_empty_axes says to pass the input through.
    const bool axes_input = opset_ >= 18 || (op == "ReduceSum" && opset_ >= 13);
    const std::vector<std::int64_t> axes = axes_input ? (has(n, 1) ? K(1).ints(here) : std::vector<std::int64_t>{})
                                                      : attr_ints(n, "axes").value_or(std::vector<std::int64_t>{});
    for (std::int64_t a : axes) (void)norm_axis(n, a, 1);
    if (axes.empty() && axes_input && attr_int(n, "noop_with_empty_axes", 0) != 0) {
      out.shape = x.shape;
      out.known = K(0);
    } else {
      const std::vector<std::int64_t>& v = K(0).i;
      if (v.empty() && (op == "ReduceMax" || op == "ReduceMin")) refuse(n, fmt::format("{} of no elements", op));
      const bool prod = op == "ReduceProd", sum = op == "ReduceSum", max = op == "ReduceMax";  // not compared per element
      std::int64_t r = prod ? 1 : sum ? 0 : v[0];
      for (std::int64_t e : v) {
        if (prod && __builtin_mul_overflow(r, e, &r)) refuse(n, "ReduceProd overflows 64-bit integers");
        else if (sum && __builtin_add_overflow(r, e, &r)) refuse(n, "ReduceSum overflows 64-bit integers");
        else if (!prod && !sum) r = max ? std::max(r, e) : std::min(r, e);
      }
      out.known = attr_int(n, "keepdims", 1) ? Known::ints_1d({r}) : Known::scalar_int(r);
      out.shape = out.known->shape;
    }
  } else if (is_evaluable_elementwise(op)) {
    std::vector<const Known*> ins;
    for (int k = 0; k < n.input_size(); ++k) ins.push_back(&K(k));
    std::vector<Shape> shapes;
    for (const Known* k : ins) shapes.push_back(k->shape);
    out.shape = broadcast_all(shapes, here);
    out.known = eval_elementwise(op, ins, here, op == "Mod" && attr_int(n, "fmod", 0) != 0);
    if (comparison || op == "Not") out.elem = TP::BOOL;
    if (op == "Where") out.elem = in(n, 1).elem;
    // Each result as the output's element type holds it, as ONNX Runtime computes in that type: float32 rounds
    // 0.7f x 10 to exactly 7 (in doubles, 6.99999988, whose Floor is 6), uint8 wraps 200 + 100 to 44. One
    // rounding of the double result is float32's own for + - x / and sqrt (53 >= 2 x 24 + 2 bits).
    if (out.known && !comparison && op != "Not") out.known = cast_known(*out.known, out.elem);
    out.weight.clear();
  } else {
    return false;
  }
  if (weight_view) ++summary_.weight_views;
  else ++summary_.folded;
  set(n, 0, std::move(out));
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
    g_.set_output("loss", g_.softmax_xent(g_.unique_name("loss"), y, labels));
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
