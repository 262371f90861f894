// SPDX-License-Identifier: Apache-2.0
#include "core/rng.hpp"

#include <cmath>

namespace gpuvs {
double CounterRng::normal(std::uint64_t i) const noexcept {
  const auto b = block(i);
  const double u1 = (static_cast<double>(b[0]) + 1.0) * 0x1.0p-32;  // (0, 1]
  const double u2 = static_cast<double>(b[1]) * 0x1.0p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}
}  // namespace gpuvs
