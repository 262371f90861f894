// SPDX-License-Identifier: Apache-2.0
// Tensors whose values the ONNX reader knows while it converts a graph: Constant nodes, initializers small
// enough to read, and the shape arithmetic exporters write (Shape -> Gather -> Unsqueeze -> Concat -> Reshape),
// which becomes concrete once the symbolic dimensions are bound. Not public: used by onnx_*.cpp.
//
// Every size read from a file is checked (dims in [0, 2^40], element counts up to 2^48 by checked products,
// payload lengths against dims) before anything is allocated; integer arithmetic is checked for overflow.
// A violation is an InputError naming `where` (the file and node).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace onnx {
class TensorProto;
}

namespace gpuvs::import::onnx_detail {

/// Largest tensor whose values the reader keeps (a causal mask of 4096 x 4096 fits); larger ones are shapes only.
inline constexpr std::int64_t kMaxKnownElements = std::int64_t{1} << 24;
/// Most values the reader makes for one graph, all its known tensors together (2 GiB as doubles; 16 layers'
/// 4096 x 4096 masks): a chain of 1,000 Reshapes of a 2^24-element constant made 1,000 copies (125 GiB from a
/// 30 KB file).
inline constexpr std::int64_t kMaxKeptElements = std::int64_t{1} << 28;
/// Most known values the reader reads for one graph, its folds' inputs and the fixed indices it checks all
/// together (a 16,384-step model's mask, read by a few dozen folds): a thousand ReduceSums of one 2^24-element
/// Range, each with another attribute so none is a cache hit, each read all of it (minutes from 30 KB).
inline constexpr std::int64_t kMaxReadElements = std::int64_t{1} << 30;
/// Largest dimension and element count a file may claim.
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
/// Largest rank a value may have: exporters write 8 at most; a fuzzed Reshape to 2^24 axes made every shape's
/// text megabytes long (a timeout).
inline constexpr std::size_t kMaxRank = 64;

struct Known {
  ir::Shape shape;
  bool is_float = false;          // values in f; otherwise integers (booleans as 0/1) in i
  std::vector<double> f;
  std::vector<std::int64_t> i;
  std::int64_t size() const { return is_float ? static_cast<std::int64_t>(f.size()) : static_cast<std::int64_t>(i.size()); }
  double at(std::int64_t k) const { return is_float ? f[static_cast<std::size_t>(k)] : static_cast<double>(i[static_cast<std::size_t>(k)]); }
  /// Integer value k; InputError naming `where` when the tensor holds a non-whole float or no value k.
  std::int64_t int_at(std::int64_t k, const std::string& where) const;
  std::vector<std::int64_t> ints(const std::string& where) const;
  static Known scalar_int(std::int64_t v);
  static Known ints_1d(const std::vector<std::int64_t>& v);
};

/// A known tensor shared by the values that hold it (identities, views, the outputs of a Split): copying a
/// Value copies a pointer, not a mask of millions of elements.
class KnownPtr {
 public:
  KnownPtr() = default;
  KnownPtr(Known k) : p_(std::make_shared<const Known>(std::move(k))) {}  // NOLINT: converts as optional does
  KnownPtr(std::optional<Known> k) {                                       // NOLINT
    if (k) p_ = std::make_shared<const Known>(std::move(*k));
  }
  explicit operator bool() const { return p_ != nullptr; }
  /// True when no other value shares the tensor (it was made for this one, not passed on by a view or a cache).
  bool sole() const { return p_.use_count() == 1; }
  const Known& operator*() const { return *p_; }
  const Known* operator->() const { return p_.get(); }

 private:
  std::shared_ptr<const Known> p_;
};

/// Product of dims with at most kMaxRank dims, each in [0, kMaxDim], and the product at most kMaxElements; else
/// InputError.
std::int64_t checked_numel(const ir::Shape& s, const std::string& where);
/// An initializer's or Constant's dims, checked.
ir::Shape tensor_dims(const onnx::TensorProto& t, const std::string& where);
/// True for the ONNX float element types (FLOAT, FLOAT16, BFLOAT16, DOUBLE).
bool is_float_type(int elem);
/// True for the integer and boolean element types.
bool is_int_type(int elem);
/// An ONNX element type's name ("FLOAT", "INT64", ...).
std::string elem_name(int elem);
/// Checks a TensorProto's dims, element type and payload length against each other without reading the
/// values; returns its element count. InputError as decode_tensor's.
std::int64_t check_tensor(const onnx::TensorProto& t, const std::string& where);
/// The values of a TensorProto (raw_data or the typed fields). nullopt when it holds more than
/// kMaxKnownElements or its data is external; InputError when its payload disagrees with its dims or its type
/// is not numeric.
std::optional<Known> decode_tensor(const onnx::TensorProto& t, const std::string& where);

/// NumPy-broadcasting elementwise evaluation of the ops exporters use for shape arithmetic and masks:
/// Add, Sub, Mul, Div, Mod, Pow, Max, Min, Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor
/// (binary), Where (ternary), Neg, Abs, Sqrt, Reciprocal, Floor, Ceil, Not, Exp, Log, Erf (unary). Integers stay
/// integers (overflow and division by zero are InputErrors). Returns nullopt for other ops or when the result
/// would exceed kMaxKnownElements. `c_mod` is Mod's fmod=1: the remainder takes the dividend's sign (C's fmod,
/// which floats require) rather than the divisor's.
std::optional<Known> eval_elementwise(const std::string& op, const std::vector<const Known*>& in, const std::string& where, bool c_mod = false);
/// `op` is one eval_elementwise evaluates.
bool is_evaluable_elementwise(const std::string& op);
/// The broadcast output shape of the inputs; InputError when they do not broadcast.
ir::Shape broadcast_all(const std::vector<ir::Shape>& shapes, const std::string& where);

/// Values reordered by a permutation of the axes.
Known transpose_known(const Known& k, const std::vector<std::int64_t>& perm, const ir::Shape& out_shape);
/// The elements [starts, ends) with steps along `axes` (already clamped and normalised) of k.
Known slice_known(const Known& k, const std::vector<std::int64_t>& starts, const std::vector<std::int64_t>& steps,
                  const std::vector<std::int64_t>& axes, const ir::Shape& out_shape);
/// Gather along `axis` with (normalised, in range) integer indices.
Known gather_known(const Known& data, const Known& indices, int axis, const ir::Shape& out_shape);
/// Concatenation along `axis`.
Known concat_known(const std::vector<const Known*>& parts, int axis, const ir::Shape& out_shape);
/// k broadcast to `shape` (Expand); nullopt when larger than kMaxKnownElements.
std::optional<Known> expand_known(const Known& k, const ir::Shape& shape, const std::string& where);
/// k converted to an element type (Cast): floats truncate toward zero into integers, integers narrower than 64 bits
/// wrap (as NumPy casts); bool is x != 0; into FLOAT, FLOAT16 or BFLOAT16 values round to nearest even in that
/// format (65,520 and up is infinity in FLOAT16). The reader also rounds each folded elementwise result this way
/// into its output's element type.
Known cast_known(const Known& k, int elem);

}  // namespace gpuvs::import::onnx_detail
