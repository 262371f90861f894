// SPDX-License-Identifier: Apache-2.0
// The constant folder: what each ONNX op computes on values known while converting (shapes, masks,
// positions, weights seen through views). Converter::fold_values decides whether a node can fold (its
// inputs known, what it reads counted) and finds the op's function in one table, as cost.cpp's switch finds
// an IR op's cost: one function per op (or family), not a chain of string comparisons.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string_view>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "import/onnx/onnx_convert.hpp"

namespace gpuvs::import::onnx_detail {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {
using TP = onnx::TensorProto;
}  // namespace

/// One node being folded: what fold_values found out about it, and the op functions; a friend of Converter.
struct Folds {
  Converter& conv;
  const onnx::NodeProto& n;
  const std::string& here;     // "WHERE: node 'NAME' (OP)"
  const Value& x;              // input 0
  std::function<const Known*(int)> known;  // input k's elements (nullptr when not known)
  bool weight_view = false;    // a weight seen differently (no kernel each step)
  bool comparison = false;     // a comparison or logic op: a mask being made
  bool outputs_set = false;    // the function set the outputs itself (Split)
  const Known* xk = known(0);

  /// Input k's elements; refused when not known.
  const Known& need(int k) const {
    const Known* p = known(k);
    if (!p) conv.refuse(n, fmt::format("the values of input {} are not known", k));
    return *p;
  }

  /// Constant: the value of its attribute (a tensor, or a float, an int, a list of them).
  static bool constant(Converter& conv, const onnx::NodeProto& n, const std::string& here) {
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
        conv.refuse(n, fmt::format("a Constant's {} is not read", strings::printable(a.name())));
      }
    }
    if (!v.known && v.shape.empty()) conv.refuse(n, "a Constant needs a value");
    if (v.known) v.shape = v.known->shape;
    conv.set(n, 0, std::move(v));
    return true;
  }

  /// Shape (with start and end) and Size: read from the input's shape alone, whatever is known of its values.
  static bool shape_or_size(Converter& conv, const onnx::NodeProto& n, const std::string& here) {
    const std::string& op = n.op_type();
    ++conv.summary_.folded;
    const Shape& s = conv.in(n, 0).shape;
    if (op == "Size") {
      Value v;
      v.elem = TP::INT64;
      v.known = Known::scalar_int(checked_numel(s, here));
      conv.set(n, 0, std::move(v));
      return true;
    }
    const auto rank = static_cast<std::int64_t>(s.size());
    std::int64_t b = conv.attr_int(n, "start", 0), e = conv.attr_int(n, "end", rank);
    b = std::clamp<std::int64_t>(b < 0 ? b + rank : b, 0, rank);
    e = std::clamp<std::int64_t>(e < 0 ? e + rank : e, 0, rank);
    Value v;
    v.elem = TP::INT64;
    v.known = Known::ints_1d(std::vector<std::int64_t>(s.begin() + b, s.begin() + std::max(b, e)));
    v.shape = v.known->shape;
    conv.set(n, 0, std::move(v));
    return true;
  }

  /// Identity: the value itself.
  bool identity(Value& out) {
    out.shape = x.shape;
    out.known = x.known;
    return true;
  }

  /// Cast: the elements in the target type (numbers and booleans); a weight cast to integers is not a view.
  bool cast(Value& out) {
    const std::int64_t to_attr = conv.attr_int(n, "to", 0);
    if (to_attr < 0 || to_attr > std::numeric_limits<int>::max() || (!is_float_type(static_cast<int>(to_attr)) && !is_int_type(static_cast<int>(to_attr))))
      conv.refuse(n, fmt::format("a Cast to {} is not read (numbers and booleans are)", to_attr));
    const int to = static_cast<int>(to_attr);
    if (weight_view && !is_float_type(to)) return false;
    out.elem = to;
    out.shape = x.shape;
    if (xk) out.known = cast_known(*xk, to);
    return true;
  }

  /// Reshape, Flatten, Squeeze, Unsqueeze: the same elements in a new shape.
  bool reshape_like(Value& out) {
    const std::string& op = n.op_type();
    const auto K = [this](int k) -> const Known& { return need(k); };
    if (op == "Reshape") {
      out.shape = reshape_shape(x.shape, K(1).ints(here), conv.attr_int(n, "allowzero", 0) != 0, here);
    } else if (op == "Flatten") {
      const auto rank = static_cast<std::int64_t>(x.shape.size());
      std::int64_t axis = conv.attr_int(n, "axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) conv.refuse(n, fmt::format("axis {} is outside rank {}", conv.attr_int(n, "axis", 1), rank));
      std::int64_t a = 1, b = 1;
      for (std::size_t d = 0; d < x.shape.size(); ++d) (static_cast<std::int64_t>(d) < axis ? a : b) *= x.shape[d];
      out.shape = {a, b};
    } else if (op == "Squeeze") {
      out.shape = squeeze_shape(x.shape, conv.axes_of(n, 1).value_or(std::vector<std::int64_t>{}), here);
    } else {
      const auto axes = conv.axes_of(n, 1);
      if (!axes) conv.refuse(n, "Unsqueeze needs axes");
      out.shape = unsqueeze_shape(x.shape, *axes, here);
    }
    if (xk) {
      Known k = *xk;
      k.shape = out.shape;
      out.known = std::move(k);
    }
    return true;
  }

  /// Transpose: the elements permuted.
  bool transpose(Value& out) {
    auto perm = conv.attr_ints(n, "perm").value_or(std::vector<std::int64_t>{});
    out.shape = permute_shape(x.shape, perm, here);
    if (xk) out.known = transpose_known(*xk, perm, out.shape);
    return true;
  }

  /// Slice: starts, ends, axes and steps from attributes (opset < 10) or inputs.
  bool slice(Value& out) {
    const Converter::SliceArgs a = conv.slice_args(n, [this](int k) { return need(k).ints(here); });
    const SliceSpec s = slice_spec(x.shape, a.starts, a.ends, a.axes, a.steps, here);
    out.shape = s.out;
    if (xk) out.known = slice_known(*xk, s.starts, s.steps, s.axes, s.out);
    return true;
  }

  /// Gather: picks along an axis; of a weight, only rows 0..n-1 of axis 0 are a view (positions).
  bool gather(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    const int axis = conv.norm_axis(n, conv.attr_int(n, "axis", 0), x.shape.size());
    const Known& idx = K(1);
    const std::vector<std::int64_t> ids = idx.ints(here);
    const std::int64_t extent = x.shape[static_cast<std::size_t>(axis)];
    for (std::int64_t i : ids)
      if (i < -extent || i >= extent) conv.refuse(n, fmt::format("index {} is outside dimension {} of size {}", i, axis, extent));
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
    return true;
  }

  /// Split: each output a slice, set here; a weight's parts are slices of its param instead (build_op).
  bool split(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    if (weight_view) return false;  // parts of a weight at their offsets: slices of its param (build_op)
    const int axis = conv.norm_axis(n, conv.attr_int(n, "axis", 0), x.shape.size());
    std::vector<std::int64_t> sizes = conv.attr_ints(n, "split").value_or(std::vector<std::int64_t>{});
    if (sizes.empty() && conv.has(n, 1)) sizes = K(1).ints(here);
    sizes = split_sizes(x.shape[static_cast<std::size_t>(axis)], sizes, conv.attr_int(n, "num_outputs", n.output_size()), n.output_size(), here, conv.opset_ >= 18);
    std::int64_t start = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      Value part = out;
      const SliceSpec s = slice_spec(x.shape, {start}, {start + sizes[static_cast<std::size_t>(k)]}, {axis}, {1}, here);
      part.shape = s.out;
      if (xk) part.known = slice_known(*xk, s.starts, s.steps, s.axes, s.out);
      conv.set(n, k, std::move(part));
      start += sizes[static_cast<std::size_t>(k)];
    }
    ++conv.summary_.folded;
    outputs_set = true;
    return true;
  }

  /// Concat: the inputs joined along the axis.
  bool concat(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    const int axis = conv.norm_axis(n, conv.attr_int(n, "axis", 0), x.shape.size());
    Shape s = x.shape;
    std::vector<const Known*> parts;
    for (int k = 0; k < n.input_size(); ++k) {
      const Known* p = &K(k);
      if (p->shape.size() != s.size()) conv.refuse(n, "inputs differ in rank");
      for (std::size_t d = 0; d < s.size(); ++d)
        if (static_cast<int>(d) != axis && p->shape[d] != s[d]) conv.refuse(n, "inputs differ off the axis");
      if (k > 0 && (s[static_cast<std::size_t>(axis)] += p->shape[static_cast<std::size_t>(axis)]) > kMaxDim)
        conv.refuse(n, "the inputs add up past 2^40 along the axis");
      parts.push_back(p);
    }
    out.shape = s;
    if (checked_numel(s, here) > kMaxKnownElements) return false;
    out.known = concat_known(parts, axis, s);
    return true;
  }

  /// Expand: broadcast to a shape.
  bool expand(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    out.shape = broadcast_all({x.shape, Shape(K(1).ints(here))}, here);
    out.known = expand_known(K(0), out.shape, here);
    return true;
  }

  /// ConstantOfShape: a shape filled with one value (ONNX's default: a float 0).
  bool constant_of_shape(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    const std::vector<std::int64_t> dims = K(0).ints(here);
    out.shape = Shape(dims.begin(), dims.end());
    checked_numel(out.shape, here);
    Known fill{{}, true, {0.0}, {}};  // ONNX's default: a float 0
    out.elem = TP::FLOAT;
    for (const auto& a : n.attribute())
      if (a.name() == "value") {
        if (!a.has_t()) conv.refuse(n, "its value must be a tensor");
        auto k = decode_tensor(a.t(), here);
        if (!k || k->size() != 1) conv.refuse(n, "its value must be a tensor of one element");
        fill = *k;
        out.elem = a.t().data_type();
      }
    fill.shape = {};
    out.known = expand_known(fill, out.shape, here);
    return true;
  }

  /// Range: start, limit and delta of one type; integers counted in integers.
  bool range(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    // The three inputs are looked up once: the loop below runs up to kMaxKnownElements times.
    const Known &k_start = K(0), &k_limit = K(1), &k_delta = K(2);
    // ONNX's Range takes three scalars of one type; the integer loop reads start and delta as integers.
    for (const Known* k : {&k_start, &k_limit, &k_delta})
      if (k->size() != 1 || k->is_float != k_start.is_float) conv.refuse(n, "Range needs three one-element inputs of one type");
    const double start = k_start.at(0), limit = k_limit.at(0), delta = k_delta.at(0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) conv.refuse(n, "Range needs a finite, non-zero step");
    Known r;
    r.is_float = k_start.is_float;
    std::int64_t count = 0;
    if (r.is_float) {
      const double c = std::max(0.0, std::ceil((limit - start) / delta));
      if (c > static_cast<double>(kMaxKnownElements)) conv.refuse(n, fmt::format("Range of {} elements", c));
      count = static_cast<std::int64_t>(c);
    } else {
      // In integers: doubles round values past 2^53, and the count with them.
      const std::int64_t step = k_delta.i[0];
      std::int64_t diff = 0;
      if (__builtin_sub_overflow(k_limit.i[0], k_start.i[0], &diff) || (diff == std::numeric_limits<std::int64_t>::min() && step == -1)) conv.refuse(n, "Range overflows 64-bit integers");
      count = diff / step;
      if (diff % step != 0 && (diff < 0) == (step < 0)) ++count;  // ceil of a positive quotient
      count = std::max<std::int64_t>(count, 0);
      if (count > kMaxKnownElements) conv.refuse(n, fmt::format("Range of {} elements", count));
    }
    r.shape = {count};
    if (r.is_float) r.f.reserve(static_cast<std::size_t>(count));
    else r.i.reserve(static_cast<std::size_t>(count));
    for (std::int64_t k = 0; k < r.shape[0]; ++k) {
      std::int64_t v = 0;
      if (r.is_float) r.f.push_back(start + static_cast<double>(k) * delta);
      else if (__builtin_mul_overflow(k, k_delta.i[0], &v) || __builtin_add_overflow(v, k_start.i[0], &v)) conv.refuse(n, "Range overflows 64-bit integers");
      else r.i.push_back(v);
    }
    out.shape = r.shape;
    out.known = r;
    return true;
  }

  /// Trilu: the triangle of the last two axes (causal masks built at export time).
  bool trilu(Value& out) {
    const auto K = [this](int k) -> const Known& { return need(k); };
    // The triangle of the last two axes (causal masks built at export time): kept where j - i >= k (upper) or
    // j - i <= k (lower), zero elsewhere.
    if (x.shape.size() < 2) conv.refuse(n, "Trilu needs at least two axes");
    const std::int64_t k = conv.has(n, 1) ? K(1).int_at(0, here) : 0;
    const bool upper = conv.attr_int(n, "upper", 1) != 0;
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
    return true;
  }

  /// ReduceProd, ReduceSum, ReduceMax, ReduceMin: shape arithmetic on 1-D integers only.
  bool reduce(Value& out) {
    const std::string& op = n.op_type();
    const auto K = [this](int k) -> const Known& { return need(k); };
    if (x.shape.size() != 1 || K(0).is_float) return false;  // shape arithmetic only: 1-D integers
    // Over axis 0, the only one: from the attribute, or input 1 (opset 18; ReduceSum from 13). No axes reduce
    // every axis, unless noop_with_empty_axes says to pass the input through.
    const bool axes_input = conv.opset_ >= 18 || (op == "ReduceSum" && conv.opset_ >= 13);
    const std::vector<std::int64_t> axes = axes_input ? (conv.has(n, 1) ? K(1).ints(here) : std::vector<std::int64_t>{})
                                                      : conv.attr_ints(n, "axes").value_or(std::vector<std::int64_t>{});
    for (std::int64_t a : axes) (void)conv.norm_axis(n, a, 1);
    if (axes.empty() && axes_input && conv.attr_int(n, "noop_with_empty_axes", 0) != 0) {
      out.shape = x.shape;
      out.known = K(0);
    } else {
      const std::vector<std::int64_t>& v = K(0).i;
      if (v.empty() && (op == "ReduceMax" || op == "ReduceMin")) conv.refuse(n, fmt::format("{} of no elements", op));
      const bool prod = op == "ReduceProd", sum = op == "ReduceSum", max = op == "ReduceMax";  // not compared per element
      std::int64_t r = prod ? 1 : sum ? 0 : v[0];
      for (std::int64_t e : v) {
        if (prod && __builtin_mul_overflow(r, e, &r)) conv.refuse(n, "ReduceProd overflows 64-bit integers");
        else if (sum && __builtin_add_overflow(r, e, &r)) conv.refuse(n, "ReduceSum overflows 64-bit integers");
        else if (!prod && !sum) r = max ? std::max(r, e) : std::min(r, e);
      }
      out.known = conv.attr_int(n, "keepdims", 1) ? Known::ints_1d({r}) : Known::scalar_int(r);
      out.shape = out.known->shape;
    }
    return true;
  }

  /// The evaluable elementwise ops (onnx_known.hpp), each result in the output's element type.
  bool elementwise(Value& out) {
    const std::string& op = n.op_type();
    const auto K = [this](int k) -> const Known& { return need(k); };
    std::vector<const Known*> ins;
    for (int k = 0; k < n.input_size(); ++k) ins.push_back(&K(k));
    std::vector<Shape> shapes;
    for (const Known* k : ins) shapes.push_back(k->shape);
    out.shape = broadcast_all(shapes, here);
    out.known = eval_elementwise(op, ins, here, op == "Mod" && conv.attr_int(n, "fmod", 0) != 0);
    if (comparison || op == "Not") out.elem = TP::BOOL;
    if (op == "Where") out.elem = conv.in(n, 1).elem;
    // Each result as the output's element type holds it, as ONNX Runtime computes in that type: float32 rounds
    // 0.7f x 10 to exactly 7 (in doubles, 6.99999988, whose Floor is 6), uint8 wraps 200 + 100 to 44. One
    // rounding of the double result is float32's own for + - x / and sqrt (53 >= 2 x 24 + 2 bits).
    if (out.known && !comparison && op != "Not") out.known = cast_known(*out.known, out.elem);
    out.weight.clear();
    return true;
  }
};

namespace {
using FoldFn = bool (Folds::*)(Value&);
// By op type; the evaluable elementwise ops (onnx_known.hpp) go to Folds::elementwise.
const std::map<std::string_view, FoldFn> kFolders = {
      {"Identity", &Folds::identity},
      {"Cast", &Folds::cast},
      {"Reshape", &Folds::reshape_like},
      {"Flatten", &Folds::reshape_like},
      {"Squeeze", &Folds::reshape_like},
      {"Unsqueeze", &Folds::reshape_like},
      {"Transpose", &Folds::transpose},
      {"Slice", &Folds::slice},
      {"Gather", &Folds::gather},
      {"Split", &Folds::split},
      {"Concat", &Folds::concat},
      {"Expand", &Folds::expand},
      {"ConstantOfShape", &Folds::constant_of_shape},
      {"Range", &Folds::range},
      {"Trilu", &Folds::trilu},
      {"ReduceProd", &Folds::reduce},
      {"ReduceSum", &Folds::reduce},
      {"ReduceMax", &Folds::reduce},
      {"ReduceMin", &Folds::reduce}};
}  // namespace

bool Converter::fold_values(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string here = fmt::format("{}: {}", where_, node_label(n));
  if (op == "Constant") return Folds::constant(*this, n, here);
  // Which inputs are known, and whether a weight is among them.
  bool all_known = true, any_weight = false;
  for (int k = 0; k < n.input_size(); ++k) {
    if (n.input(k).empty()) continue;
    const Value& v = in(n, k);
    if (!v.weight.empty()) any_weight = true;
    if (!v.known && v.weight.empty()) all_known = false;
  }
  if (op == "Shape" || op == "Size") return Folds::shape_or_size(*this, n, here);
  if (!all_known) return false;
  const Value& x = in(n, 0);
  const bool weight_view = any_weight && !x.weight.empty() && is_weight_view_op(op);
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

  Folds f{*this, n, here, x, known_of, weight_view, comparison};
  Value out;
  out.elem = x.elem;
  out.weight = weight_view ? x.weight : "";
  const auto handler = kFolders.find(op);
  if (handler != kFolders.end() ? !(f.*(handler->second))(out) : !is_evaluable_elementwise(op) || !f.elementwise(out)) return false;
  if (f.outputs_set) return true;
  if (weight_view) ++summary_.weight_views;
  else ++summary_.folded;
  set(n, 0, std::move(out));
  return true;
}

}  // namespace gpuvs::import::onnx_detail
