// SPDX-License-Identifier: Apache-2.0
// What the text readers of src/measured share: a field's value with its surrounding blanks (spaces, tabs, a
// carriage return) trimmed, and a value read as a finite number or nothing.
#pragma once
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

namespace gpuvs::measured::fields {

inline std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
  return std::string(s.substr(a, b - a));
}

/// The whole of `s` as a finite number ("1.0526E+15" too), else nothing.
inline std::optional<double> number(const std::string& s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace gpuvs::measured::fields
