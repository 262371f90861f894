// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files built by hand for the tests (test_measured, test_cli): the protocol-buffer wire format
// and TFRecord framing, written from the formats (tensorflow/core/util/event.proto, summary.proto, tensor.proto;
// tensorflow/core/lib/io/record_writer.cc), independently of src/measured/tfevents and src/engine/tfevents.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/crc32c.hpp"

namespace gpuvs::test::tfevents {

namespace pb {
inline std::string varint(std::uint64_t v) {
  std::string s;
  do {
    s.push_back(static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0)));
    v >>= 7;
  } while (v);
  return s;
}
inline std::string key(int field, int type) { return varint(static_cast<std::uint64_t>(field) << 3 | static_cast<unsigned>(type)); }
inline std::string len(int field, const std::string& s) { return key(field, 2) + varint(s.size()) + s; }
template <typename T>
inline std::string raw(const T& v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
}  // namespace pb

inline std::string frame(const std::string& payload) {
  const std::uint64_t n = payload.size();
  std::string out = pb::raw(n);
  out += pb::raw(gpuvs::masked_crc32c(out.data(), 8));
  return out + payload + pb::raw(gpuvs::masked_crc32c(payload.data(), payload.size()));
}
// Summary.Value: PyTorch's SummaryWriter and TF 1 write simple_value (field 2, a float).
inline std::string simple_value(const std::string& tag, float v) { return pb::len(1, pb::len(1, tag) + pb::key(2, 5) + pb::raw(v)); }
// TF 2's tf.summary.scalar: a scalar TensorProto (field 8): dtype DT_FLOAT, an empty shape, float_val packed.
inline std::string tensor_value(const std::string& tag, float v) {
  const std::string tensor = pb::key(1, 0) + pb::varint(1) + pb::len(2, "") + pb::len(5, pb::raw(v));
  return pb::len(1, pb::len(1, tag) + pb::len(8, tensor));
}
// The same as tensor_content, a double (DT_DOUBLE).
inline std::string content_value(const std::string& tag, double v) {
  const std::string tensor = pb::key(1, 0) + pb::varint(2) + pb::len(2, "") + pb::len(4, pb::raw(v));
  return pb::len(1, pb::len(1, tag) + pb::len(8, tensor));
}
inline std::string event(double wall, std::int64_t step, const std::string& values) {
  return pb::key(1, 1) + pb::raw(wall) + pb::key(2, 0) + pb::varint(static_cast<std::uint64_t>(step)) + pb::len(5, values);
}
inline std::string events_file(const std::vector<std::string>& events) {
  std::string f = frame(pb::key(1, 1) + pb::raw(1.7e9) + pb::len(3, "brain.Event:2"));
  for (const auto& e : events) f += frame(e);
  return f;
}

// A Trainer-like run: a loss every 10 steps, 4 s before the first (tracing, warm-up), then 0.25 s a step.
inline std::vector<std::string> loss_series(const std::string& tag, int events = 8) {
  std::vector<std::string> out;
  for (int i = 0; i < events; ++i) out.push_back(event(1.7e9 + 4.0 + 2.5 * i, 10 * (i + 1), simple_value(tag, 2.0f / static_cast<float>(i + 1))));
  return out;
}

}  // namespace gpuvs::test::tfevents
