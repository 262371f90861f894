// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files (src/measured/tfevents): the raw bytes as a file, and, so that mutations reach the Event
// parser past the CRCs that would refuse almost all of them, the input split at "\x00REC" into payloads framed as
// TFRecords with their CRCs computed here, after a valid file_version record.
#include <cmath>
#include <string>
#include <string_view>

#include "core/crc32c.hpp"
#include "fuzz_util.hpp"
#include "measured/tfevents.hpp"

namespace {

std::string frame(std::string_view payload) {
  std::string out(12, '\0');
  const std::uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  const std::uint32_t len_crc = gpuvs::masked_crc32c(out.data(), 8);
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(8 + i)] = static_cast<char>((len_crc >> (8 * i)) & 0xFF);
  out.append(payload);
  const std::uint32_t data_crc = gpuvs::masked_crc32c(payload.data(), payload.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((data_crc >> (8 * i)) & 0xFF));
  return out;
}

void check(const std::vector<gpuvs::measured::Measurement>& ms) {
  for (const auto& m : ms)  // what a reader returns is a usable figure
    if (!(m.value > 0) || !std::isfinite(m.value) || m.mode != "train" || (m.unit != "samples/s" && m.unit != "steps/s")) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  const std::string raw(reinterpret_cast<const char*>(data), size);
  fuzz::expect_clean([&] { check(measured::read_tfevents(raw, "fuzz.out")); });
  // file_version "brain.Event:2" (Event field 3), then each chunk as a record.
  std::string file = frame(std::string("\x1a\x0d") + "brain.Event:2");
  constexpr std::string_view kMark("\0REC", 4);
  for (std::size_t at = 0; at <= raw.size();) {
    const std::size_t next = raw.find(kMark, at);
    file += frame(std::string_view(raw).substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + kMark.size();
  }
  fuzz::expect_clean([&] { check(measured::read_tfevents(file, "fuzz.out")); });
  return 0;
}
