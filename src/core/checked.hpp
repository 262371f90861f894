// SPDX-License-Identifier: Apache-2.0
// Sizes read from files, multiplied and added with overflow checks: a header that claims more than 64-bit
// arithmetic holds is the file's fault, an InputError naming `what`, never a wrapped count that passes a later
// "enough bytes?" check.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace gpuvs::checked {

inline std::int64_t mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw InputError(fmt::format("{}: {} x {} overflows 64-bit sizes", what, a, b));
  return r;
}

inline std::int64_t add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw InputError(fmt::format("{}: {} + {} overflows 64-bit sizes", what, a, b));
  return r;
}

/// The product of `dims` (each >= 0); InputError naming `what` on a negative dim or a product past `limit`.
inline std::int64_t product(const std::vector<std::int64_t>& dims, std::string_view what, std::int64_t limit = std::int64_t{1} << 62) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) throw InputError(fmt::format("{}: negative dimension {}", what, d));
    n = mul(n, d, what);
    if (n > limit) throw InputError(fmt::format("{}: {} elements is more than {}", what, n, limit));
  }
  return n;
}

}  // namespace gpuvs::checked
