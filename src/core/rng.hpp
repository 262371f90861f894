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
