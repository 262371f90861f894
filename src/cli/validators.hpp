// SPDX-License-Identifier: Apache-2.0
// Checks on numeric flags, as CLI11 validators: a bad value is a usage error (exit 2) naming the flag before anything
// runs. NaN, infinities, zero and negative numbers never reach a command as a value that silently means "not given",
// and a whole number past its range is refused, not saturated (strtoll's 2^63-1 for "99999999999999999999").
#pragma once
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <thread>
#include <optional>
#include <string>

namespace gpuvs::cli {

namespace detail {
/// The whole text as a double (strtod's syntax: 1e9, 0.5), or nullopt.
inline std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}
}  // namespace detail

/// A finite number above `lo` (or at least `lo` when `inclusive`) and at most `hi`.
inline CLI::Validator number_in(double lo, double hi, bool inclusive_lo, const std::string& what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        const auto v = detail::to_double(s);
        if (!v) return fmt::format("'{}' is not a number", s);
        if (!std::isfinite(*v) || (inclusive_lo ? *v < lo : *v <= lo) || *v > hi) return fmt::format("must be {}, got {}", what, s);
        return {};
      },
      what);
}

/// A finite number > 0 (a quantity, a rate, a time, money).
inline CLI::Validator positive() { return number_in(0, HUGE_VAL, false, "a finite number above 0"); }
/// A finite number >= 0.
inline CLI::Validator non_negative() { return number_in(0, HUGE_VAL, true, "a finite number, 0 or more"); }
/// A share in (0, 1].
inline CLI::Validator fraction() { return number_in(0, 1, false, "a share above 0 and at most 1"); }

/// A whole number in [lo, hi], read exactly (no rounding, no saturation).
inline CLI::Validator whole_in(std::int64_t lo, std::int64_t hi) {
  const std::string what = fmt::format("a whole number from {} to {}", lo, hi);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        std::int64_t v = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && r.ptr == s.data() + s.size() && (v < lo || v > hi)))
          return fmt::format("{} is out of range: {}", s, what);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return fmt::format("'{}' is not {}", s, what);
        return {};
      },
      what);
}

/// Run ids in the history: 1 and up.
inline CLI::Validator run_id() { return whole_in(1, std::numeric_limits<std::int64_t>::max()); }

/// --threads: 0 (every core) up to 4 per hardware thread: more only oversubscribes, and a hundred thousand exhausts
/// the machine before the first op.
inline CLI::Validator threads() {
  const std::int64_t hw = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  CLI::Validator v = whole_in(0, 4 * hw);
  v.description(fmt::format("0 (every core) to {}: 4 per hardware thread", 4 * hw));
  return v;
}

}  // namespace gpuvs::cli
