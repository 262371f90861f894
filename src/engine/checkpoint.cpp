// SPDX-License-Identifier: Apache-2.0
#include "engine/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/sysmem.hpp"

namespace gpuvs::engine {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'G', 'P', 'U', 'V', 'S', 'C', 'K', 'P'};
constexpr std::uint32_t kVersion = 1;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86-64 and aarch64 hosts are little-endian
  out.append(b, sizeof(T));
}

class Cursor {
 public:
  Cursor(const std::string& bytes, std::size_t limit, const fs::path& file) : b_(bytes), limit_(limit), file_(file) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string take(std::size_t n) {
    need(n);
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  const char* raw(std::size_t n) {
    need(n);
    const char* p = b_.data() + pos_;
    pos_ += n;
    return p;
  }
  bool done() const { return pos_ == limit_; }
  std::size_t left() const { return limit_ - pos_; }

 private:
  void need(std::size_t n) const {
    if (n > limit_ - pos_) throw InputError(fmt::format("checkpoint {} is corrupt: truncated", file_.string()));
  }
  const std::string& b_;
  std::size_t limit_, pos_ = 0;
  const fs::path& file_;
};
}  // namespace

fs::path checkpoint_file(const fs::path& dir) { return dir / "checkpoint.gpuvs"; }

void save_checkpoint(const fs::path& file, const CheckpointMeta& meta, const ParamStore& store) {
  const nlohmann::json header = {{"model_fingerprint", meta.model_fingerprint}, {"model_name", meta.model_name},
                                 {"epochs_done", meta.epochs_done},             {"iterations", meta.iterations},
                                 {"seed", meta.seed},                           {"batch", meta.batch},
                                 {"train_rows", meta.train_rows},               {"val_rows", meta.val_rows},
                                 {"data_source", meta.data_source}};
  const std::string h = header.dump();
  std::string out(kMagic, 8);
  put(out, kVersion);
  put(out, static_cast<std::uint64_t>(h.size()));
  out += h;
  put(out, static_cast<std::uint32_t>(store.tensors().size()));
  for (const auto& [name, t] : store.tensors()) {
    put(out, static_cast<std::uint32_t>(name.size()));
    out += name;
    put(out, static_cast<std::uint8_t>(t.dtype));
    put(out, static_cast<std::uint32_t>(t.shape.size()));
    for (auto d : t.shape) put(out, static_cast<std::int64_t>(d));
    put(out, static_cast<std::uint64_t>(t.bytes()));
    out.append(reinterpret_cast<const char*>(t.buffer.data()), t.bytes());
  }
  put(out, crc32c(out.data(), out.size()));
  files::write_atomic(file, out);
}

CheckpointMeta load_checkpoint(const fs::path& file, ParamStore& into) {
  if (!fs::exists(file)) throw InputError(fmt::format("--resume: no checkpoint at {}", file.string()));
  // Bounded by the memory it would take to hold (a checkpoint is read whole, then its tensors copied out).
  const std::uint64_t cap = std::max<std::uint64_t>(sysmem::available_bytes().value_or(std::uint64_t{16} << 30) / 2, std::uint64_t{1} << 20);
  const std::string bytes = files::read_all(file, "checkpoint", cap);
  const auto corrupt = [&](const std::string& why) {
    return InputError(fmt::format("checkpoint {} is corrupt: {}", file.string(), why));
  };
  if (bytes.size() < 8 + 4 + 8 + 4 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw InputError(fmt::format("{} is not a gpuvs checkpoint (bad magic)", file.string()));
  std::uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  if (crc32c(bytes.data(), bytes.size() - 4) != stored_crc) throw corrupt("checksum mismatch");
  Cursor c(bytes, bytes.size() - 4, file);
  c.raw(8);
  const auto version = c.get<std::uint32_t>();
  if (version != kVersion) throw corrupt(fmt::format("format version {} (this gpuvs reads {})", version, kVersion));
  const auto hlen = c.get<std::uint64_t>();
  CheckpointMeta meta;
  try {
    const auto h = nlohmann::json::parse(c.take(static_cast<std::size_t>(hlen)));
    meta.model_fingerprint = h.at("model_fingerprint").get<std::string>();
    meta.model_name = h.at("model_name").get<std::string>();
    meta.epochs_done = h.at("epochs_done").get<std::int64_t>();
    meta.iterations = h.at("iterations").get<std::int64_t>();
    meta.seed = h.at("seed").get<std::uint64_t>();
    meta.batch = h.at("batch").get<std::int64_t>();
    meta.train_rows = h.at("train_rows").get<std::int64_t>();
    meta.val_rows = h.at("val_rows").get<std::int64_t>();
    meta.data_source = h.at("data_source").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(fmt::format("header: {}", e.what()));
  }
  ParamStore store;
  const auto count = c.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::string name = c.take(c.get<std::uint32_t>());
    const auto dtype = c.get<std::uint8_t>();
    if (dtype > static_cast<std::uint8_t>(ir::DType::i32)) throw corrupt(fmt::format("tensor '{}' dtype", name));
    const auto rank = c.get<std::uint32_t>();
    if (rank > 8) throw corrupt(fmt::format("tensor '{}' rank {}", name, rank));
    ir::Shape shape;
    for (std::uint32_t r = 0; r < rank; ++r) {
      shape.push_back(c.get<std::int64_t>());
      if (shape.back() < 0) throw corrupt(fmt::format("tensor '{}' negative dimension", name));
    }
    const auto nbytes = c.get<std::uint64_t>();
    const auto dt = static_cast<ir::DType>(dtype);
    // The claimed size must be what the dims say and what the file still holds, before anything is allocated.
    const std::int64_t elements = checked::product(shape, fmt::format("checkpoint {}: tensor '{}'", file.string(), name));
    if (nbytes / ir::dtype_size(dt) != static_cast<std::uint64_t>(elements) || nbytes % ir::dtype_size(dt) != 0)
      throw corrupt(fmt::format("tensor '{}' size", name));
    if (nbytes > c.left()) throw corrupt(fmt::format("tensor '{}' claims {} bytes, {} remain", name, nbytes, c.left()));
    HostTensor& t = store.ensure(name, shape, dt);
    std::memcpy(t.buffer.data(), c.raw(static_cast<std::size_t>(nbytes)), static_cast<std::size_t>(nbytes));
  }
  if (!c.done()) throw corrupt("trailing bytes");
  store.iterations = meta.iterations;
  into = std::move(store);
  return meta;
}

}  // namespace gpuvs::engine
