// SPDX-License-Identifier: Apache-2.0
// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011): the value at (key, counter) is a pure
// function, so dropout masks and initial weights are reproducible on any backend, thread count or resume point.
#pragma once
#include <array>
#include <cstdint>

namespace gpuvs {

struct Philox4x32 {
  static std::array<std::uint32_t, 4> block(std::array<std::uint32_t, 4> ctr, std::array<std::uint32_t, 2> key) noexcept {
    constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
      const std::uint64_t p0 = std::uint64_t{kM0} * ctr[0];
      const std::uint64_t p1 = std::uint64_t{kM1} * ctr[2];
      ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
             static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
      key[0] += kW0;
      key[1] += kW1;
    }
    return ctr;
  }

  /// 16 consecutive blocks (counters lo64 = first..first+15, hi64 = `high`) at once, in structure-of-arrays
  /// form so the compiler vectorises the rounds; out[w][l] = word w of block first + l. Same values as block().
  static void blocks16(std::uint64_t first, std::uint64_t high, std::array<std::uint32_t, 2> key,
                       std::uint32_t (&out)[4][16]) noexcept {
    constexpr std::uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
    // 32-bit words held in 64-bit lanes: x86 multiplies 32x32->64 per 64-bit lane (vpmuludq).
    std::uint64_t c0[16], c1[16], c2[16], c3[16];
    for (int l = 0; l < 16; ++l) {
      const std::uint64_t ctr = first + static_cast<std::uint64_t>(l);
      c0[l] = ctr & 0xFFFFFFFFu;
      c1[l] = ctr >> 32;
      c2[l] = high & 0xFFFFFFFFu;
      c3[l] = high >> 32;
    }
    std::uint64_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; ++round) {
      for (int l = 0; l < 16; ++l) {
        const std::uint64_t p0 = kM0 * c0[l];
        const std::uint64_t p1 = kM1 * c2[l];
        c0[l] = ((p1 >> 32) ^ c1[l] ^ k0) & 0xFFFFFFFFu;
        c1[l] = p1 & 0xFFFFFFFFu;
        c2[l] = ((p0 >> 32) ^ c3[l] ^ k1) & 0xFFFFFFFFu;
        c3[l] = p0 & 0xFFFFFFFFu;
      }
      k0 = (k0 + kW0) & 0xFFFFFFFFu;
      k1 = (k1 + kW1) & 0xFFFFFFFFu;
    }
    for (int l = 0; l < 16; ++l) {
      out[0][l] = static_cast<std::uint32_t>(c0[l]);
      out[1][l] = static_cast<std::uint32_t>(c1[l]);
      out[2][l] = static_cast<std::uint32_t>(c2[l]);
      out[3][l] = static_cast<std::uint32_t>(c3[l]);
    }
  }
};

/// A stream of uniform numbers for one (seed, stream id) pair; `skip` jumps to any position in O(1).
class CounterRng {
 public:
  CounterRng(std::uint64_t seed, std::uint64_t stream) noexcept
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}, stream_(stream) {}
  /// The 4 words at block index `i` of this stream.
  std::array<std::uint32_t, 4> block(std::uint64_t i) const noexcept {
    return Philox4x32::block({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32),
                              static_cast<std::uint32_t>(stream_), static_cast<std::uint32_t>(stream_ >> 32)},
                             key_);
  }
  /// Blocks i .. i+15 at once (see Philox4x32::blocks16).
  void blocks16(std::uint64_t i, std::uint32_t (&out)[4][16]) const noexcept {
    Philox4x32::blocks16(i, stream_, key_, out);
  }
  /// Uniform double in [0, 1) from 53 random bits.
  double uniform(std::uint64_t i) const noexcept {
    const auto b = block(i);
    const std::uint64_t bits = (std::uint64_t{b[0]} << 32 | b[1]) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53;
  }
  /// Standard normal (Box-Muller on two uniforms of block i).
  double normal(std::uint64_t i) const noexcept;

 private:
  std::array<std::uint32_t, 2> key_;
  std::uint64_t stream_;
};

}  // namespace gpuvs
