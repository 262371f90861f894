// SPDX-License-Identifier: Apache-2.0
#include "engine/tfevents.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "tensorboard_event.pb.h"

namespace gpuvs::engine {

namespace {
double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
std::atomic<int> g_file_counter{0};
}  // namespace

std::string tfrecord_frame(std::string_view payload) {
  std::string out;
  const std::uint64_t len = payload.size();
  char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>((len >> (8 * i)) & 0xFF);
  auto put32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  out.append(len_bytes, 8);
  put32(masked_crc32c(len_bytes, 8));
  out.append(payload);
  put32(masked_crc32c(payload.data(), payload.size()));
  return out;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const auto now = static_cast<long long>(wall_time_now());
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}.{}.v2", now, host, ::getpid(), g_file_counter++);
  // A new file, never an existing one (or what a link planted under this name points to).
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0 || (file_ = ::fdopen(fd, "wb")) == nullptr) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw InputError(fmt::format("--logdir: cannot create {}: {}", path_.string(), std::strerror(err)));
  }
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_file_version("brain.Event:2");
  write_record(ev.SerializeAsString());
  flush();
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalar(const std::string& tag, std::int64_t step, double value) {
  tensorflow::Event ev;
  ev.set_wall_time(wall_time_now());
  ev.set_step(step);
  auto* v = ev.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(ev.SerializeAsString());
}

void EventFileWriter::write_record(const std::string& payload) {
  const std::string rec = tfrecord_frame(payload);
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size())
    throw RuntimeFailure(fmt::format("writing {} failed: {}", path_.string(), std::strerror(errno)));
}

void EventFileWriter::flush() {
  if (std::fflush(file_) != 0)
    throw RuntimeFailure(fmt::format("writing {} failed: {}", path_.string(), std::strerror(errno)));
}

}  // namespace gpuvs::engine
