// SPDX-License-Identifier: Apache-2.0
// An independent TensorBoard event-file decoder for tests: TFRecord framing with masked CRC-32C (computed
// bit by bit here) and a hand-written protobuf wire-format parser for Event and Summary.Value.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace gpuvs::test {

inline std::uint32_t masked_crc_bitwise(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  c = ~c;
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

struct DecodedEvent {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::string tag;
  float value = 0;
  bool has_value = false;
};

class Wire {
 public:
  Wire(const std::string& s, std::size_t b, std::size_t e) : s_(s), p_(b), end_(e) {}
  bool more() const { return p_ < end_; }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<unsigned char>(s_[p_++]);
      v |= std::uint64_t{byte & 0x7Fu} << shift;
      if (!(byte & 0x80)) return v;
    }
    throw std::runtime_error("varint too long");
  }
  template <class T>
  T fixed() {
    if (p_ + sizeof(T) > end_) throw std::runtime_error("truncated fixed field");
    T v;
    std::memcpy(&v, s_.data() + p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::pair<std::size_t, std::size_t> bytes() {
    const auto n = static_cast<std::size_t>(varint());
    if (p_ + n > end_) throw std::runtime_error("truncated length-delimited field");
    const auto b = p_;
    p_ += n;
    return {b, p_};
  }
  void skip(unsigned wire_type) {
    if (wire_type == 0) varint();
    else if (wire_type == 1) fixed<std::uint64_t>();
    else if (wire_type == 2) bytes();
    else if (wire_type == 5) fixed<std::uint32_t>();
    else throw std::runtime_error("bad wire type");
  }

 private:
  const std::string& s_;
  std::size_t p_, end_;
};

inline DecodedEvent decode_event(const std::string& s, std::size_t b, std::size_t e) {
  DecodedEvent ev;
  Wire w(s, b, e);
  while (w.more()) {
    const auto key = w.varint();
    const auto field = key >> 3;
    const auto type = static_cast<unsigned>(key & 7);
    if (field == 1 && type == 1) ev.wall_time = w.fixed<double>();
    else if (field == 2 && type == 0) ev.step = static_cast<std::int64_t>(w.varint());
    else if (field == 3 && type == 2) {
      const auto [vb, ve] = w.bytes();
      ev.file_version = s.substr(vb, ve - vb);
    } else if (field == 5 && type == 2) {  // Summary
      const auto [sb, se] = w.bytes();
      Wire sw(s, sb, se);
      while (sw.more()) {
        const auto sk = sw.varint();
        if ((sk >> 3) == 1 && (sk & 7) == 2) {  // Summary.Value
          const auto [vb, ve] = sw.bytes();
          Wire vw(s, vb, ve);
          while (vw.more()) {
            const auto vk = vw.varint();
            if ((vk >> 3) == 1 && (vk & 7) == 2) {
              const auto [tb, te] = vw.bytes();
              ev.tag = s.substr(tb, te - tb);
            } else if ((vk >> 3) == 2 && (vk & 7) == 5) {
              ev.value = vw.fixed<float>();
              ev.has_value = true;
            } else {
              vw.skip(static_cast<unsigned>(vk & 7));
            }
          }
        } else {
          sw.skip(static_cast<unsigned>(sk & 7));
        }
      }
    } else {
      w.skip(type);
    }
  }
  return ev;
}

/// Every event of a file; throws std::runtime_error on a bad length, CRC or proto.
inline std::vector<DecodedEvent> read_event_file(const std::filesystem::path& file) {
  const std::string s = slurp(file);
  std::vector<DecodedEvent> out;
  std::size_t p = 0;
  while (p < s.size()) {
    if (p + 12 > s.size()) throw std::runtime_error("truncated record header");
    std::uint64_t len;
    std::uint32_t len_crc;
    std::memcpy(&len, s.data() + p, 8);
    std::memcpy(&len_crc, s.data() + p + 8, 4);
    if (len_crc != masked_crc_bitwise(s.data() + p, 8)) throw std::runtime_error("length CRC mismatch");
    if (p + 12 + len + 4 > s.size()) throw std::runtime_error("truncated record");
    std::uint32_t data_crc;
    std::memcpy(&data_crc, s.data() + p + 12 + len, 4);
    if (data_crc != masked_crc_bitwise(s.data() + p + 12, len)) throw std::runtime_error("data CRC mismatch");
    out.push_back(decode_event(s, p + 12, p + 12 + len));
    p += 12 + len + 4;
  }
  return out;
}

}  // namespace gpuvs::test
