// SPDX-License-Identifier: Apache-2.0
// Units: GB = 1e9 bytes and GiB = 2^30 bytes are different quantities and are never mixed.
#pragma once
#include <cstdint>
#include <string>

namespace gpuvs::units {

inline constexpr double kGB = 1e9;
inline constexpr double kGiB = 1073741824.0;
inline constexpr double kMiB = 1048576.0;

inline double to_gb(double bytes) { return bytes / kGB; }
inline double to_gib(double bytes) { return bytes / kGiB; }

/// "123 B", "4.0 KiB", "1.50 MiB", "2.25 GiB": binary prefixes for memory sizes.
std::string format_bytes_binary(double bytes);
/// "1.23 ms", "45.6 µs", "2.00 s".
std::string format_seconds(double seconds);
/// "12.3 k", "4.56 M", "1.23 P" with SI prefixes (k to E, 1e3 apart) for rates and counts such as samples/s or FLOPs.
std::string format_si(double value);
/// `sig` significant digits, never exponent notation for a figure of this world: SI prefixes ("1.23 M") from 10^sig
/// up to E, plain decimals for tiny values ("0.00001972"); past 1e21, exponent notation ("1e+300").
std::string format_plain(double value, int sig = 3);
/// Money in plain decimals: "$1234", "$12.35", "$0.0683", "$0.0000232" (three significant digits below $1); past
/// 1e21 dollars, exponent notation ("$1e+300") rather than hundreds of digits.
std::string format_usd(double usd);

}  // namespace gpuvs::units
