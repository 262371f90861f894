// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files: TFRecord framing (u64 length, masked CRC-32C of the length, payload, masked
// CRC-32C of the payload) around serialized tensorflow.Event protos. The first record carries
// file_version "brain.Event:2"; scalars are Summary.Value.simple_value under Keras's tags.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpuvs::engine {

/// One TFRecord: the framing around `payload`.
std::string tfrecord_frame(std::string_view payload);

class EventFileWriter {
 public:
  /// Creates DIR/events.out.tfevents.<unix time>.<host>.<pid>.<n>.v2 and writes the file_version record.
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;
  void add_scalar(const std::string& tag, std::int64_t step, double value);
  /// Pushes buffered records to the OS (called at each epoch end, so TensorBoard sees progress).
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace gpuvs::engine
