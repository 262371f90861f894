// SPDX-License-Identifier: Apache-2.0
#include "import/onnx/onnx_known.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::import::onnx_detail {

using namespace gpuvs::ir;

namespace {

using TP = onnx::TensorProto;

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw InputError(fmt::format("{}: {}", where, what)); }

std::int64_t mul_checked(std::int64_t a, std::int64_t b, const std::string& where) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail(where, fmt::format("integer overflow in {} x {}", a, b));
  return r;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);  // zero and subnormals
  if (exp == 31) return mant ? std::numeric_limits<float>::quiet_NaN() : (sign ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
  const std::uint32_t bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::size_t raw_size(int elem) {
  switch (elem) {
    case TP::FLOAT: case TP::INT32: case TP::UINT32: return 4;
    case TP::DOUBLE: case TP::INT64: case TP::UINT64: return 8;
    case TP::FLOAT16: case TP::BFLOAT16: case TP::INT16: case TP::UINT16: return 2;
    case TP::INT8: case TP::UINT8: case TP::BOOL: return 1;
    default: return 0;
  }
}

/// Element k of little-endian raw data.
void read_raw(const std::string& raw, int elem, std::int64_t k, Known& out) {
  const std::size_t sz = raw_size(elem);
  const char* p = raw.data() + static_cast<std::size_t>(k) * sz;
  auto u = [&](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (elem) {
    case TP::FLOAT: out.f.push_back(u(float{})); break;
    case TP::DOUBLE: out.f.push_back(u(double{})); break;
    case TP::FLOAT16: out.f.push_back(half_to_float(u(std::uint16_t{}))); break;
    case TP::BFLOAT16: out.f.push_back(bf16_to_float(u(std::uint16_t{}))); break;
    case TP::INT64: out.i.push_back(u(std::int64_t{})); break;
    case TP::INT32: out.i.push_back(u(std::int32_t{})); break;
    case TP::INT16: out.i.push_back(u(std::int16_t{})); break;
    case TP::INT8: out.i.push_back(u(std::int8_t{})); break;
    case TP::UINT32: out.i.push_back(u(std::uint32_t{})); break;
    case TP::UINT16: out.i.push_back(u(std::uint16_t{})); break;
    case TP::UINT8: out.i.push_back(u(std::uint8_t{})); break;
    case TP::BOOL: out.i.push_back(u(std::uint8_t{}) != 0); break;
    case TP::UINT64: {
      const std::uint64_t v = u(std::uint64_t{});
      out.i.push_back(v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? std::numeric_limits<std::int64_t>::max()
                                                                                                 : static_cast<std::int64_t>(v));
      break;
    }
    default: break;
  }
}

bool truthy(double v) { return v != 0.0; }

}  // namespace

std::int64_t Known::int_at(std::int64_t k, const std::string& where) const {
  if (k < 0 || k >= size()) fail(where, fmt::format("expected a value at index {}, the tensor holds {}", k, size()));
  if (!is_float) return i[static_cast<std::size_t>(k)];
  const double v = f[static_cast<std::size_t>(k)];
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9.0e15) fail(where, fmt::format("expected a whole number, got {}", v));
  return static_cast<std::int64_t>(v);
}

std::vector<std::int64_t> Known::ints(const std::string& where) const {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(size()));
  for (std::int64_t k = 0; k < size(); ++k) out.push_back(int_at(k, where));
  return out;
}

Known Known::scalar_int(std::int64_t v) {
  Known k;
  k.i = {v};
  return k;
}

Known Known::ints_1d(const std::vector<std::int64_t>& v) {
  Known k;
  k.shape = {static_cast<std::int64_t>(v.size())};
  k.i = v;
  return k;
}

std::int64_t checked_numel(const Shape& s, const std::string& where) {
  if (s.size() > kMaxRank) fail(where, fmt::format("rank {} is more than {}", s.size(), kMaxRank));
  // The non-zero dims are held to 2^48 together too: [0, 2^40, 2^40] holds nothing, but the strides and row
  // counts of code that walks it (Flatten's rows, a transpose's strides) are products of the rest.
  std::int64_t n = 1, nonzero = 1;
  for (std::int64_t d : s) {
    if (d < 0 || d > kMaxDim) fail(where, fmt::format("dimension {} outside [0, 2^40]", d));
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements || (d > 0 && (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxElements)))
      fail(where, fmt::format("shape {} holds more than 2^48 elements", shape_str(s)));
  }
  return n;
}

Shape tensor_dims(const onnx::TensorProto& t, const std::string& where) {
  Shape s(t.dims().begin(), t.dims().end());
  checked_numel(s, where);
  return s;
}

bool is_float_type(int elem) { return elem == TP::FLOAT || elem == TP::FLOAT16 || elem == TP::BFLOAT16 || elem == TP::DOUBLE; }

bool is_int_type(int elem) {
  switch (elem) {
    case TP::INT8: case TP::INT16: case TP::INT32: case TP::INT64: case TP::UINT8: case TP::UINT16: case TP::UINT32:
    case TP::UINT64: case TP::BOOL:
      return true;
    default:
      return false;
  }
}

std::string elem_name(int elem) {
  if (onnx::TensorProto_DataType_IsValid(elem)) return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem));
  return fmt::format("type {}", elem);
}

std::int64_t check_tensor(const onnx::TensorProto& t, const std::string& where) {
  const Shape dims = tensor_dims(t, where);
  const std::int64_t n = checked_numel(dims, where);
  const int elem = t.data_type();
  if (!is_float_type(elem) && !is_int_type(elem)) fail(where, fmt::format("tensor '{}' has element type {}, not a number", strings::printable(t.name()), elem_name(elem)));
  if (t.data_location() == TP::EXTERNAL) return n;
  // The payload must hold exactly the elements the dims claim: checked before anything is read or allocated.
  std::int64_t have = 0;
  if (t.has_raw_data()) {
    const std::size_t sz = raw_size(elem);
    if (t.raw_data().size() % sz != 0) fail(where, fmt::format("tensor '{}': raw_data of {} bytes is not whole {}-byte elements", strings::printable(t.name()), t.raw_data().size(), sz));
    have = static_cast<std::int64_t>(t.raw_data().size() / sz);
  } else {
    switch (elem) {
      case TP::FLOAT: have = t.float_data_size(); break;
      case TP::DOUBLE: have = t.double_data_size(); break;
      case TP::INT64: have = t.int64_data_size(); break;
      case TP::UINT32: case TP::UINT64: have = t.uint64_data_size(); break;
      default: have = t.int32_data_size(); break;
    }
  }
  if (have != n)
    fail(where, fmt::format("tensor '{}' has dims {} ({} elements) but holds {}", strings::printable(t.name()), shape_str(dims), n, have));
  return n;
}

std::optional<Known> decode_tensor(const onnx::TensorProto& t, const std::string& where) {
  const std::int64_t n = check_tensor(t, where);
  if (t.data_location() == TP::EXTERNAL || n > kMaxKnownElements) return std::nullopt;
  const int elem = t.data_type();
  Known k;
  k.shape = tensor_dims(t, where);
  k.is_float = is_float_type(elem);
  (k.is_float ? k.f.reserve(static_cast<std::size_t>(n)) : k.i.reserve(static_cast<std::size_t>(n)));
  for (std::int64_t e = 0; e < n; ++e) {
    if (t.has_raw_data()) {
      read_raw(t.raw_data(), elem, e, k);
      continue;
    }
    const int idx = static_cast<int>(e);
    switch (elem) {
      case TP::FLOAT: k.f.push_back(t.float_data(idx)); break;
      case TP::DOUBLE: k.f.push_back(t.double_data(idx)); break;
      case TP::FLOAT16: k.f.push_back(half_to_float(static_cast<std::uint16_t>(t.int32_data(idx)))); break;
      case TP::BFLOAT16: k.f.push_back(bf16_to_float(static_cast<std::uint16_t>(t.int32_data(idx)))); break;
      case TP::INT64: k.i.push_back(t.int64_data(idx)); break;
      case TP::UINT32: case TP::UINT64: {
        const std::uint64_t v = t.uint64_data(idx);
        k.i.push_back(v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? std::numeric_limits<std::int64_t>::max()
                                                                                                 : static_cast<std::int64_t>(v));
        break;
      }
      case TP::BOOL: k.i.push_back(t.int32_data(idx) != 0); break;
      default: k.i.push_back(t.int32_data(idx)); break;
    }
  }
  return k;
}

Shape broadcast_all(const std::vector<Shape>& shapes, const std::string& where) {
  for (const Shape& s : shapes)  // before any shape is written out: an Expand's target can have millions of axes
    if (s.size() > kMaxRank) fail(where, fmt::format("rank {} is more than {}", s.size(), kMaxRank));
  Shape out;
  for (const Shape& s : shapes) {
    try {
      out = broadcast_shapes(out, s, "broadcast");
    } catch (const std::invalid_argument&) {
      std::vector<std::string> all;
      for (const Shape& x : shapes) all.push_back(shape_str(x));
      fail(where, fmt::format("shapes {} do not broadcast", fmt::join(all, " and ")));
    }
  }
  return out;
}

namespace {

/// Index into a broadcast input for output element `o` of shape `out`.
std::int64_t source_index(std::int64_t o, const Shape& out, const Shape& in) {
  std::int64_t idx = 0, stride = 1;
  for (std::size_t d = 0; d < out.size(); ++d) {
    const std::size_t od = out.size() - 1 - d;
    const std::int64_t coord = o % out[od];
    o /= out[od];
    if (d < in.size()) {
      const std::int64_t extent = in[in.size() - 1 - d];
      if (extent != 1) idx += coord * stride;
      stride *= extent;
    }
  }
  return idx;
}

// The evaluable ops, named once per node: the loops below run up to kMaxKnownElements times, and comparing
// op names there cost more than the arithmetic (a fuzzed mask of 2^24 elements took 36 s under ASan).
enum class Ew { add, sub, mul, div, mod, pow, max, min, equal, less, less_eq, greater, greater_eq, and_, or_, xor_,
                neg, abs, sqrt, reciprocal, floor, ceil, not_, exp, log, erf };
constexpr std::array<std::pair<std::string_view, Ew>, 16> kBinary = {{{"Add", Ew::add}, {"Sub", Ew::sub}, {"Mul", Ew::mul},
    {"Div", Ew::div}, {"Mod", Ew::mod}, {"Pow", Ew::pow}, {"Max", Ew::max}, {"Min", Ew::min}, {"Equal", Ew::equal}, {"Less", Ew::less},
    {"LessOrEqual", Ew::less_eq}, {"Greater", Ew::greater}, {"GreaterOrEqual", Ew::greater_eq}, {"And", Ew::and_}, {"Or", Ew::or_},
    {"Xor", Ew::xor_}}};
constexpr std::array<std::pair<std::string_view, Ew>, 10> kUnary = {{{"Neg", Ew::neg}, {"Abs", Ew::abs}, {"Sqrt", Ew::sqrt},
    {"Reciprocal", Ew::reciprocal}, {"Floor", Ew::floor}, {"Ceil", Ew::ceil}, {"Not", Ew::not_}, {"Exp", Ew::exp}, {"Log", Ew::log},
    {"Erf", Ew::erf}}};
template <std::size_t N>
std::optional<Ew> find_op(const std::array<std::pair<std::string_view, Ew>, N>& l, const std::string& op) {
  for (const auto& [name, e] : l)
    if (name == op) return e;
  return std::nullopt;
}
bool is_comparison(Ew op) { return (op >= Ew::equal && op <= Ew::xor_) || op == Ew::not_; }

std::int64_t int_binary(Ew op, std::int64_t a, std::int64_t b, bool c_mod, const std::string& where) {
  std::int64_t r = 0;
  switch (op) {
    case Ew::add:
      if (__builtin_add_overflow(a, b, &r)) fail(where, fmt::format("integer overflow in {} + {}", a, b));
      return r;
    case Ew::sub:
      if (__builtin_sub_overflow(a, b, &r)) fail(where, fmt::format("integer overflow in {} - {}", a, b));
      return r;
    case Ew::mul: return mul_checked(a, b, where);
    case Ew::div:
    case Ew::mod: {
      if (b == 0) fail(where, "integer division by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) fail(where, "integer overflow in division");
      if (op == Ew::div) return a / b;  // ONNX integer Div truncates, as C does
      const std::int64_t m = a % b;     // fmod=1: the dividend's sign, as C; fmod=0: the divisor's, as Python
      return !c_mod && m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
    }
    case Ew::pow: {
      if (b < 0) fail(where, "integer power with a negative exponent");
      if (a == 0 || a == 1) return b == 0 ? 1 : a;
      if (a == -1) return b % 2 == 0 ? 1 : -1;
      std::int64_t x = 1;  // |a| >= 2 overflows within 63 multiplications: the loop is short either way
      for (std::int64_t k = 0; k < b; ++k) x = mul_checked(x, a, where);
      return x;
    }
    case Ew::max: return std::max(a, b);
    case Ew::min: return std::min(a, b);
    default: return 0;
  }
}

double float_binary(Ew op, double a, double b) {
  switch (op) {
    case Ew::add: return a + b;
    case Ew::sub: return a - b;
    case Ew::mul: return a * b;
    case Ew::div: return a / b;
    case Ew::mod: return std::fmod(a, b);
    case Ew::pow: return std::pow(a, b);
    case Ew::max: return std::max(a, b);
    case Ew::min: return std::min(a, b);
    default: return 0;
  }
}

// In the inputs' own type: integers past 2^53 compare exactly.
template <typename T>
std::int64_t compare(Ew op, T a, T b) {
  switch (op) {
    case Ew::equal: return a == b;
    case Ew::less: return a < b;
    case Ew::less_eq: return a <= b;
    case Ew::greater: return a > b;
    case Ew::greater_eq: return a >= b;
    case Ew::and_: return a != 0 && b != 0;
    case Ew::or_: return a != 0 || b != 0;
    case Ew::xor_: return (a != 0) != (b != 0);
    default: return 0;
  }
}

double float_unary(Ew op, double a) {
  switch (op) {
    case Ew::neg: return -a;
    case Ew::abs: return std::fabs(a);
    case Ew::sqrt: return std::sqrt(a);
    case Ew::reciprocal: return 1.0 / a;
    case Ew::floor: return std::floor(a);
    case Ew::ceil: return std::ceil(a);
    case Ew::exp: return std::exp(a);
    case Ew::log: return std::log(a);
    default: return std::erf(a);
  }
}

}  // namespace

bool is_evaluable_elementwise(const std::string& op) { return find_op(kBinary, op) || find_op(kUnary, op) || op == "Where"; }

std::optional<Known> eval_elementwise(const std::string& op_name, const std::vector<const Known*>& in, const std::string& where, bool c_mod) {
  const std::optional<Ew> bin = find_op(kBinary, op_name), un = find_op(kUnary, op_name);
  const bool binary = bin.has_value(), unary = un.has_value(), ternary = op_name == "Where";
  if (!binary && !unary && !ternary) return std::nullopt;
  const std::size_t arity = unary ? 1 : binary ? 2 : 3;
  if (in.size() != arity) fail(where, fmt::format("{} takes {} inputs, got {}", op_name, arity, in.size()));
  std::vector<Shape> shapes;
  for (const Known* k : in) shapes.push_back(k->shape);
  const Shape out = broadcast_all(shapes, where);
  const std::int64_t n = checked_numel(out, where);
  if (n > kMaxKnownElements) return std::nullopt;
  Known r;
  r.shape = out;
  // Inputs of the output's size or of one element (masks against a scalar) index directly.
  const bool direct = std::all_of(in.begin(), in.end(), [&](const Known* k) { return k->size() == n || k->size() == 1; });
  auto src = [&](std::int64_t o, const Known* k) { return direct ? (k->size() == 1 ? 0 : o) : source_index(o, out, k->shape); };
  if (ternary) {
    r.is_float = in[1]->is_float || in[2]->is_float;
    (r.is_float ? r.f.reserve(static_cast<std::size_t>(n)) : r.i.reserve(static_cast<std::size_t>(n)));
    for (std::int64_t o = 0; o < n; ++o) {
      const bool c = truthy(in[0]->at(src(o, in[0])));
      const Known* pick = c ? in[1] : in[2];
      const std::int64_t s = src(o, pick);
      if (r.is_float) r.f.push_back(pick->at(s));
      else r.i.push_back(pick->i[static_cast<std::size_t>(s)]);
    }
    return r;
  }
  const Ew op = binary ? *bin : *un;
  const bool ints = std::all_of(in.begin(), in.end(), [](const Known* k) { return !k->is_float; });
  if (op == Ew::mod && !ints && !c_mod) fail(where, "a floating-point Mod needs fmod=1");
  r.is_float = !ints && !is_comparison(op);
  if (unary && ints && (op == Ew::sqrt || op == Ew::reciprocal || op == Ew::exp || op == Ew::log || op == Ew::erf)) r.is_float = true;
  (r.is_float ? r.f.reserve(static_cast<std::size_t>(n)) : r.i.reserve(static_cast<std::size_t>(n)));
  for (std::int64_t o = 0; o < n; ++o) {
    const double a = in[0]->at(src(o, in[0]));
    if (unary) {
      if (op == Ew::not_) {
        r.i.push_back(!truthy(a));
      } else if (!r.is_float) {  // integers in, integers out: Neg, Abs (Floor and Ceil of a whole number are itself)
        const std::int64_t v = in[0]->i[static_cast<std::size_t>(src(o, in[0]))];
        if (v == std::numeric_limits<std::int64_t>::min() && (op == Ew::neg || op == Ew::abs)) fail(where, "integer overflow in negation");
        r.i.push_back(op == Ew::neg ? -v : op == Ew::abs ? std::abs(v) : v);
      } else {
        r.f.push_back(float_unary(op, a));
      }
      continue;
    }
    const std::int64_t sb = src(o, in[1]);
    if (is_comparison(op) && ints) r.i.push_back(compare(op, in[0]->i[static_cast<std::size_t>(src(o, in[0]))], in[1]->i[static_cast<std::size_t>(sb)]));
    else if (is_comparison(op)) r.i.push_back(compare(op, a, in[1]->at(sb)));
    else if (ints) r.i.push_back(int_binary(op, in[0]->i[static_cast<std::size_t>(src(o, in[0]))], in[1]->i[static_cast<std::size_t>(sb)], c_mod, where));
    else r.f.push_back(float_binary(op, a, in[1]->at(sb)));
  }
  return r;
}

Known transpose_known(const Known& k, const std::vector<std::int64_t>& perm, const Shape& out_shape) {
  Known r;
  r.shape = out_shape;
  r.is_float = k.is_float;
  const std::int64_t n = k.size();
  std::vector<std::int64_t> in_strides(k.shape.size(), 1);
  for (std::size_t d = k.shape.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * k.shape[d];
  for (std::int64_t o = 0; o < n; ++o) {
    std::int64_t rem = o, src = 0;
    for (std::size_t d = out_shape.size(); d-- > 0;) {
      const std::int64_t coord = rem % out_shape[d];
      rem /= out_shape[d];
      src += coord * in_strides[static_cast<std::size_t>(perm[d])];
    }
    if (r.is_float) r.f.push_back(k.f[static_cast<std::size_t>(src)]);
    else r.i.push_back(k.i[static_cast<std::size_t>(src)]);
  }
  return r;
}

Known slice_known(const Known& k, const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& steps,
                  const std::vector<std::int64_t>& axes, const Shape& out_shape) {
  Known r;
  r.shape = out_shape;
  r.is_float = k.is_float;
  const std::size_t rank = k.shape.size();
  if (rank == 0) return k;  // a scalar has no axis to cut (the loops below count axes down from rank - 1)
  std::vector<std::int64_t> start(rank, 0), step(rank, 1), in_strides(rank, 1);
  for (std::size_t j = 0; j < axes.size(); ++j) {
    start[static_cast<std::size_t>(axes[j])] = starts[j];
    step[static_cast<std::size_t>(axes[j])] = steps[j];
  }
  for (std::size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * k.shape[d];
  std::int64_t n = 1;
  for (std::int64_t d : out_shape) n *= d;
  if (n == 0) return r;
  (r.is_float ? r.f.reserve(static_cast<std::size_t>(n)) : r.i.reserve(static_cast<std::size_t>(n)));
  // Whole runs of the innermost axis at a time (a mask's rows).
  const std::int64_t run = rank == 0 ? 1 : out_shape[rank - 1], inner_step = rank == 0 ? 1 : step[rank - 1];
  for (std::int64_t o = 0; o < n; o += run) {
    std::int64_t rem = o / run, base = rank == 0 ? 0 : start[rank - 1] * in_strides[rank - 1];
    for (std::size_t d = rank - 1; d-- > 0;) {
      const std::int64_t coord = rem % out_shape[d];
      rem /= out_shape[d];
      base += (start[d] + coord * step[d]) * in_strides[d];
    }
    for (std::int64_t e = 0; e < run; ++e) {
      const auto at = static_cast<std::size_t>(base + e * inner_step);
      if (r.is_float) r.f.push_back(k.f[at]);
      else r.i.push_back(k.i[at]);
    }
  }
  return r;
}

Known gather_known(const Known& data, const Known& indices, int axis, const Shape& out_shape) {
  Known r;
  r.shape = out_shape;
  r.is_float = data.is_float;
  // Nothing to gather: [2^40, 2, 0] walked its 2^40 empty rows (a 200-byte file running for hours).
  if (std::find(out_shape.begin(), out_shape.end(), 0) != out_shape.end()) return r;
  const auto ax = static_cast<std::size_t>(axis);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= data.shape[d];
  for (std::size_t d = ax + 1; d < data.shape.size(); ++d) inner *= data.shape[d];
  const std::int64_t extent = data.shape[ax];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < indices.size(); ++j) {
      std::int64_t idx = indices.i[static_cast<std::size_t>(j)];
      if (idx < 0) idx += extent;
      for (std::int64_t e = 0; e < inner; ++e) {
        const auto src = static_cast<std::size_t>((o * extent + idx) * inner + e);
        if (r.is_float) r.f.push_back(data.f[src]);
        else r.i.push_back(data.i[src]);
      }
    }
  return r;
}

Known concat_known(const std::vector<const Known*>& parts, int axis, const Shape& out_shape) {
  Known r;
  r.shape = out_shape;
  r.is_float = std::any_of(parts.begin(), parts.end(), [](const Known* k) { return k->is_float; });
  if (std::find(out_shape.begin(), out_shape.end(), 0) != out_shape.end()) return r;  // as in gather_known
  // Empty parts add nothing: skipped, so the work is the output's elements, not its rows times the inputs.
  std::vector<const Known*> full;
  for (const Known* k : parts)
    if (k->size() > 0) full.push_back(k);
  const auto ax = static_cast<std::size_t>(axis);
  std::int64_t outer = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= out_shape[d];
  for (std::int64_t o = 0; o < outer; ++o)
    for (const Known* k : full) {
      std::int64_t block = 1;
      for (std::size_t d = ax; d < k->shape.size(); ++d) block *= k->shape[d];
      for (std::int64_t e = 0; e < block; ++e) {
        const std::int64_t src = o * block + e;
        if (r.is_float) r.f.push_back(k->at(src));
        else r.i.push_back(k->i[static_cast<std::size_t>(src)]);
      }
    }
  return r;
}

std::optional<Known> expand_known(const Known& k, const Shape& shape, const std::string& where) {
  const Shape out = broadcast_all({k.shape, shape}, where);
  const std::int64_t n = checked_numel(out, where);
  if (n > kMaxKnownElements) return std::nullopt;
  Known r;
  r.shape = out;
  r.is_float = k.is_float;
  // One value (ConstantOfShape's fill, a scalar broadcast) fills the tensor: exporters build masks of
  // millions of elements this way, and the index arithmetic below costs a division per axis per element.
  if (k.size() == 1) {
    if (r.is_float) r.f.assign(static_cast<std::size_t>(n), k.f[0]);
    else r.i.assign(static_cast<std::size_t>(n), k.i[0]);
    return r;
  }
  if (r.is_float) r.f.reserve(static_cast<std::size_t>(n));
  else r.i.reserve(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < n; ++o) {
    const std::int64_t s = source_index(o, out, k.shape);
    if (r.is_float) r.f.push_back(k.f[static_cast<std::size_t>(s)]);
    else r.i.push_back(k.i[static_cast<std::size_t>(s)]);
  }
  return r;
}

namespace {
/// A 64-bit integer narrowed to `elem`'s width, wrapping as two's complement does (as NumPy's astype).
std::int64_t narrow(std::int64_t v, int elem) {
  const auto u = static_cast<std::uint64_t>(v);
  switch (elem) {
    case TP::INT8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(u));
    case TP::UINT8: return static_cast<std::uint8_t>(u);
    case TP::INT16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(u));
    case TP::UINT16: return static_cast<std::uint16_t>(u);
    case TP::INT32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(u));
    case TP::UINT32: return static_cast<std::uint32_t>(u);
    default: return v;  // INT64; UINT64 values are held as int64 (decode_tensor saturates those past 2^63)
  }
}

/// v rounded to nearest, ties to even, into a binary format of `p` significant bits (the leading one included)
/// and exponents [emin, emax]: subnormals below 2^emin, infinity past the largest finite value. Exact: every
/// step scales by powers of two.
double round_to_format(double v, int p, int emin, int emax) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int x = 0;
  (void)std::frexp(std::fabs(v), &x);  // |v| = m 2^x, m in [0.5, 1): its leading bit is 2^(x-1)
  const double quantum = std::ldexp(1.0, std::max(x - 1, emin) - (p - 1));
  double r = std::nearbyint(std::fabs(v) / quantum) * quantum;
  if (r > std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax)) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, v);
}

/// A value as the float element type holds it (Known keeps floats as doubles).
double as_float_type(double v, int elem) {
  switch (elem) {
    case TP::FLOAT: return round_to_format(v, 24, -126, 127);
    case TP::FLOAT16: return round_to_format(v, 11, -14, 15);
    case TP::BFLOAT16: return round_to_format(v, 8, -126, 127);
    default: return v;  // DOUBLE
  }
}
}  // namespace

Known cast_known(const Known& k, int elem) {
  Known r;
  r.shape = k.shape;
  r.is_float = is_float_type(elem);
  for (std::int64_t e = 0; e < k.size(); ++e) {
    const double v = k.at(e);
    if (r.is_float) r.f.push_back(as_float_type(v, elem));
    else if (elem == TP::BOOL) r.i.push_back(v != 0.0);
    else if (!k.is_float) r.i.push_back(narrow(k.i[static_cast<std::size_t>(e)], elem));
    else if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) r.i.push_back(narrow(v < 0 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max(), elem));
    else r.i.push_back(narrow(static_cast<std::int64_t>(v), elem));
  }
  return r;
}

}  // namespace gpuvs::import::onnx_detail
