// SPDX-License-Identifier: Apache-2.0
// CRC-32C (Castagnoli), as TFRecord framing and our checkpoints use. No Debian 12 package ships a
// C/C++ CRC-32C library (abseil's crc32c arrived after 20220623), so this is written here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gpuvs {

/// CRC-32C of `n` bytes, continuing from `crc` (0 to start).
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0) noexcept;
/// TFRecord's masked CRC: rotate right by 15 and add 0xa282ead8.
std::uint32_t masked_crc32c(const void* data, std::size_t n) noexcept;

}  // namespace gpuvs
