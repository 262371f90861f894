// SPDX-License-Identifier: Apache-2.0
#include "core/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpuvs::units {

std::string format_bytes_binary(double bytes) {
  if (!std::isfinite(bytes) || std::fabs(bytes) >= 1e21) return fmt::format("{:.3g} B", bytes);
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (std::fabs(bytes) >= 1024.0 && i < 4) {
    bytes /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, names[i]);
}

std::string format_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.1f} us", s * 1e6);
  return fmt::format("{:.0f} ns", s * 1e9);
}

std::string format_si(double v) {
  if (!std::isfinite(v) || std::fabs(v) >= 1e21) return fmt::format("{:.3g}", v);  // no 300-digit decimals
  if (std::fabs(v) >= 1e18) return fmt::format("{:.2f} E", v / 1e18);
  if (std::fabs(v) >= 1e15) return fmt::format("{:.2f} P", v / 1e15);
  if (std::fabs(v) >= 1e12) return fmt::format("{:.2f} T", v / 1e12);
  if (std::fabs(v) >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (std::fabs(v) >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (std::fabs(v) >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.1f}", v);
}

std::string format_plain(double v, int sig) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  const double a = std::fabs(v);
  if (a >= std::pow(10.0, sig)) {
    const char* prefixes[] = {"k", "M", "G", "T", "P", "E"};
    double scaled = v / 1e3;
    int i = 0;
    while (std::fabs(scaled) >= 1e3 && i < 5) scaled /= 1e3, ++i;
    // Past a thousand E (1e21) no figure is human: exponent notation, not a 300-digit decimal.
    if (std::fabs(scaled) >= 1e3) return fmt::format("{:.{}g}", v, std::max(sig, 3));
    return fmt::format("{:.{}g} {}", scaled, std::max(sig, 3), prefixes[i]);
  }
  if (a != 0 && a < 1e-3) return fmt::format("{:.{}f}", v, std::min(20, sig - 1 - static_cast<int>(std::floor(std::log10(a)))));
  return fmt::format("{:.{}g}", v, sig);
}

std::string format_usd(double v) {
  if (!std::isfinite(v)) return fmt::format("${}", v);
  const double a = std::fabs(v);
  if (a >= 1e21) return fmt::format("${:.3g}", v);  // past 1e21 dollars: exponent notation, not 300 digits
  if (a >= 10000) {  // thousands grouped: $3,380,761, not $3380761
    std::string digits = fmt::format("{:.0f}", a), grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
      grouped += digits[i];
    }
    return (v < 0 ? "-$" : "$") + grouped;
  }
  if (a >= 100) return fmt::format("${:.0f}", v);
  if (a >= 1) return fmt::format("${:.2f}", v);
  if (a == 0) return "$0";
  const int decimals = std::min(12, 2 - static_cast<int>(std::floor(std::log10(a))));
  return fmt::format("${:.{}f}", v, decimals);
}

}  // namespace gpuvs::units
