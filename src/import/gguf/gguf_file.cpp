// SPDX-License-Identifier: Apache-2.0
#include "import/gguf/gguf_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "import/gguf/ggml_types.hpp"

namespace gpuvs::import {

static_assert(std::endian::native == std::endian::little, "the GGUF reader reads little-endian files on a little-endian host");

namespace {

constexpr int kString = 8, kArray = 9, kTypeCount = 13;
constexpr std::uint64_t kMaxKeyBytes = 65535;  // gguf.md: keys are at most 65535 bytes
constexpr std::uint64_t kMaxNameBytes = 63;    // src/gguf.cpp: name.length() < GGML_MAX_NAME (64)
constexpr std::uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr std::uint64_t kKeptIntegers = 1 << 16;  // per-layer arrays are a few hundred; longer ones are counted, not kept
constexpr std::uint64_t kWindow = 1 << 20;

const char* type_name(int t) {
  static const char* const names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                      "bool",  "string", "array", "uint64", "int64", "float64"};
  return t >= 0 && t < kTypeCount ? names[t] : "?";
}

std::uint64_t fixed_size(int t) {
  switch (t) {
    case 0: case 1: case 7: return 1;
    case 2: case 3: return 2;
    case 4: case 5: case 6: return 4;
    case 10: case 11: case 12: return 8;
    default: return 0;  // string, array
  }
}

/// Bytes of the file, in order: from memory, or from a file through a window read on demand (a model's weights
/// are never read). Never past the end, never past kMaxGgufHeaderBytes.
class Cursor {
 public:
  Cursor(std::string_view bytes, std::string where) : mem_(bytes), size_(bytes.size()), where_(std::move(where)) {}
  Cursor(int fd, std::uint64_t size, std::string where) : fd_(fd), size_(size), where_(std::move(where)) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t left() const { return size_ - pos_; }
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& what) const { fail_at(what, pos_); }
  [[noreturn]] void fail_at(const std::string& what, std::uint64_t at) const {
    throw InputError(fmt::format("{}: {} (at byte {})", where_, what, at));
  }

  std::string_view take(std::uint64_t n, const std::string& what) {
    if (n > left()) fail(fmt::format("the file ends inside {} ({} bytes needed, {} left)", what, n, left()));
    if (pos_ + n > kMaxGgufHeaderBytes)
      fail(fmt::format("{} reaches past {} MiB: more than a model's header holds", what, kMaxGgufHeaderBytes >> 20));
    std::string_view out;
    if (fd_ < 0) {
      out = mem_.substr(pos_, n);
    } else {
      if (pos_ < window_start_ || pos_ + n > window_start_ + window_.size()) fill(n);
      out = std::string_view(window_).substr(pos_ - window_start_, n);
    }
    pos_ += n;
    return out;
  }
  void skip(std::uint64_t n, const std::string& what) {
    if (n > left()) fail(fmt::format("the file ends inside {} ({} bytes needed, {} left)", what, n, left()));
    if (pos_ + n > kMaxGgufHeaderBytes)
      fail(fmt::format("{} reaches past {} MiB: more than a model's header holds", what, kMaxGgufHeaderBytes >> 20));
    pos_ += n;  // skipped bytes are never read
  }
  template <class T>
  T get(const std::string& what) {
    const std::string_view b = take(sizeof(T), what);
    T v;
    std::memcpy(&v, b.data(), sizeof(T));
    return v;
  }

 private:
  void fill(std::uint64_t n) {
    const std::uint64_t len = std::min(left(), std::max(n, kWindow));
    window_.resize(len);
    std::uint64_t done = 0;
    while (done < len) {
      const ssize_t got = ::pread(fd_, window_.data() + done, len - done, static_cast<off_t>(pos_ + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        throw InputError(fmt::format("{}: cannot read at byte {}: {}", where_, pos_ + done, got < 0 ? std::strerror(errno) : "the file shrank"));
      done += static_cast<std::uint64_t>(got);
    }
    window_start_ = pos_;
  }

  std::string_view mem_;
  int fd_ = -1;
  std::uint64_t size_ = 0, pos_ = 0;
  std::string window_;
  std::uint64_t window_start_ = 0;
  std::string where_;
};

std::string read_string(Cursor& c, const std::string& what, std::uint64_t max_len) {
  const auto at = c.pos();
  const auto len = c.get<std::uint64_t>(what + "'s length");
  if (len > max_len) c.fail_at(fmt::format("{} is {} bytes long, more than {}", what, len, max_len), at);
  return std::string(c.take(len, what));
}

std::int64_t read_integer(Cursor& c, int type, const std::string& what) {
  switch (type) {
    case 0: return c.get<std::uint8_t>(what);
    case 1: return c.get<std::int8_t>(what);
    case 2: return c.get<std::uint16_t>(what);
    case 3: return c.get<std::int16_t>(what);
    case 4: return c.get<std::uint32_t>(what);
    case 5: return c.get<std::int32_t>(what);
    case 10: {
      const auto v = c.get<std::uint64_t>(what);
      // A count this large is refused where it is used; kept as the largest signed value, not wrapped negative.
      return v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? std::numeric_limits<std::int64_t>::max()
                                                                                       : static_cast<std::int64_t>(v);
    }
    default: return c.get<std::int64_t>(what);
  }
}

GgufValue read_value(Cursor& c, int type, const std::string& key) {
  GgufValue v;
  v.type = type;
  const std::string what = "the value of " + key;
  if (type == kString) {
    v.text = read_string(c, what, c.left());
  } else if (type == 6) {
    v.real = c.get<float>(what);
  } else if (type == 12) {
    v.real = c.get<double>(what);
  } else if (type == 7) {
    const auto b = c.get<std::uint8_t>(what);
    if (b > 1) c.fail(fmt::format("{} is a bool of {} (0 or 1 allowed)", key, b));
    v.integer = b;
  } else if (type == kArray) {
    const auto at = c.pos();
    v.element_type = c.get<std::int32_t>(key + "'s element type");
    if (v.element_type == kArray) c.fail_at(fmt::format("{} is an array of arrays (ggml's reader refuses them too)", key), at);
    if (v.element_type < 0 || v.element_type >= kTypeCount) c.fail_at(fmt::format("{} has element type {}, not a GGUF type", key, v.element_type), at);
    v.count = c.get<std::uint64_t>(key + "'s length");
    const std::uint64_t each = fixed_size(v.element_type);
    // Checked before anything is kept or skipped: a string takes at least its 8-byte length.
    if (v.count > c.left() / (each ? each : 8))
      c.fail(fmt::format("{} claims {} {} elements, more than the {} bytes left hold", key, v.count, type_name(v.element_type), c.left()));
    if (v.element_type == kString) {
      for (std::uint64_t i = 0; i < v.count; ++i) {
        const auto len = c.get<std::uint64_t>(key + "'s string length");
        c.skip(len, fmt::format("{}[{}]", key, i));
      }
    } else if (v.element_type == 6 || v.element_type == 12 || v.element_type == 7 || v.count > kKeptIntegers) {
      c.skip(v.count * each, what);
    } else {
      v.integers.reserve(v.count);
      for (std::uint64_t i = 0; i < v.count; ++i) v.integers.push_back(read_integer(c, v.element_type, what));
    }
  } else {
    v.integer = read_integer(c, type, what);
  }
  return v;
}

void read_tensor_info(Cursor& c, GgufHeader& h, std::uint64_t index, std::uint64_t& expected_offset) {
  GgufTensor t;
  const auto at = c.pos();
  t.name = read_string(c, fmt::format("tensor {}'s name", index), kMaxNameBytes);
  if (t.name.empty()) c.fail_at(fmt::format("tensor {} has an empty name", index), at);
  const std::string name = fmt::format("tensor '{}'", strings::printable(t.name));
  if (h.tensor_index.count(t.name)) c.fail_at(name + " is listed twice", at);
  const auto n_dims = c.get<std::uint32_t>(name + "'s dimension count");
  if (n_dims > kMaxDims) c.fail(fmt::format("{} has {} dimensions, more than ggml's {}", name, n_dims, kMaxDims));
  t.elements = 1;
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    const auto n = c.get<std::int64_t>(name + "'s dimensions");
    if (n < 0) c.fail(fmt::format("{} has a negative dimension ({})", name, n));
    t.dims.push_back(static_cast<std::uint64_t>(n));
    if (n != 0 && t.elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / static_cast<std::uint64_t>(n))
      c.fail(name + "'s dimensions multiply past 2^63 elements");
    t.elements *= static_cast<std::uint64_t>(n);
  }
  const auto type_at = c.pos();
  const auto type = c.get<std::int32_t>(name + "'s type");
  const GgmlType* g = ggml_type(type);
  if (!g) c.fail_at(fmt::format("{} has type {}, not a ggml type gpuvs knows (one ggml removed, or newer than data/ggml-types.toml)", name, type), type_at);
  t.type = type;
  const std::uint64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % static_cast<std::uint64_t>(g->block_elements) != 0)
    c.fail_at(fmt::format("{}: a row of {} elements is not a whole number of {} blocks ({} elements each)", name, row, g->name, g->block_elements), type_at);
  const std::uint64_t blocks = t.elements / static_cast<std::uint64_t>(g->block_elements);
  if (blocks > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(g->block_bytes)) c.fail(name + "'s size overflows 64 bits");
  t.bytes = blocks * static_cast<std::uint64_t>(g->block_bytes);
  const auto offset_at = c.pos();
  t.offset = c.get<std::uint64_t>(name + "'s offset");
  // ggml's reader: each tensor starts where the previous one ended, padded to the alignment.
  if (t.offset != expected_offset)
    c.fail_at(fmt::format("{} has offset {}, expected {} (tensors follow each other, padded to {} bytes)", name, t.offset, expected_offset, h.alignment),
              offset_at);
  const std::uint64_t padded = (t.bytes + h.alignment - 1) / h.alignment * h.alignment;
  if (padded < t.bytes || expected_offset > std::numeric_limits<std::uint64_t>::max() - padded) c.fail(name + "'s offset overflows 64 bits");
  expected_offset += padded;
  h.tensor_index.emplace(t.name, h.tensors.size());
  h.tensors.push_back(std::move(t));
}

GgufHeader parse(Cursor& c) {
  GgufHeader h;
  h.file_size = c.size();
  const std::string_view magic = c.take(4, "the magic");
  if (magic != "GGUF") c.fail_at(fmt::format("not a GGUF file: it starts with '{}', not 'GGUF'", strings::printable(magic)), 0);
  h.version = c.get<std::uint32_t>("the version");
  if (h.version == 0) c.fail_at("GGUF version 0 is not a version", 4);
  if ((h.version & 0xFFFF) == 0) c.fail_at(fmt::format("GGUF version {:#x} reads byte-swapped: a big-endian file, which gpuvs does not read", h.version), 4);
  if (h.version == 1) c.fail_at("GGUF version 1 (2023) is not read (ggml's reader refuses it too): convert the model again with a current llama.cpp", 4);
  if (h.version > 3) c.fail_at(fmt::format("GGUF version {} is newer than gpuvs reads (2 and 3)", h.version), 4);
  const auto n_tensors = c.get<std::int64_t>("the tensor count");
  const auto n_kv = c.get<std::int64_t>("the metadata count");
  if (n_tensors < 0) c.fail_at(fmt::format("the tensor count is negative ({})", n_tensors), 8);
  if (n_kv < 0) c.fail_at(fmt::format("the metadata count is negative ({})", n_kv), 16);
  // A metadata pair is at least 13 bytes (key length, a one-byte key, type, a one-byte value); a tensor's entry 24.
  if (static_cast<std::uint64_t>(n_kv) > c.left() / 13) c.fail_at(fmt::format("the metadata count {} is more than the file's {} bytes hold", n_kv, c.size()), 16);
  if (n_kv > kMaxGgufKeys) c.fail_at(fmt::format("the metadata count {} is more than {}, far past any model's", n_kv, kMaxGgufKeys), 16);
  if (n_tensors > kMaxGgufTensors) c.fail_at(fmt::format("the tensor count {} is more than {}, far past any model's", n_tensors, kMaxGgufTensors), 8);
  std::uint64_t alignment_at = 0;
  for (std::int64_t i = 0; i < n_kv; ++i) {
    const auto at = c.pos();
    std::string key = read_string(c, fmt::format("metadata key {}", i), kMaxKeyBytes);
    if (key.empty()) c.fail_at(fmt::format("metadata key {} is empty", i), at);
    const std::string shown = fmt::format("'{}'", strings::printable(key));
    if (h.metadata.count(key)) c.fail_at(fmt::format("metadata key {} is listed twice", shown), at);
    const auto type_at = c.pos();
    const auto type = c.get<std::int32_t>(shown + "'s type");
    if (type < 0 || type >= kTypeCount) c.fail_at(fmt::format("metadata key {} has type {}, not a GGUF type", shown, type), type_at);
    GgufValue v = read_value(c, type, shown);
    if (key == "general.alignment") alignment_at = at;
    h.metadata.emplace(std::move(key), std::move(v));
  }
  if (const GgufValue* a = h.find("general.alignment")) {
    if (a->type != 4) c.fail_at(fmt::format("general.alignment is a {}, not a uint32", type_name(a->type)), alignment_at);
    if (a->integer == 0 || (a->integer & (a->integer - 1)) != 0)
      c.fail_at(fmt::format("general.alignment {} is not a power of two", a->integer), alignment_at);
    h.alignment = static_cast<std::uint32_t>(a->integer);
  }
  if (static_cast<std::uint64_t>(n_tensors) > c.left() / 24)
    c.fail_at(fmt::format("the tensor count {} is more than the file's {} bytes hold", n_tensors, c.size()), 8);
  std::uint64_t expected_offset = 0;
  for (std::int64_t i = 0; i < n_tensors; ++i) read_tensor_info(c, h, static_cast<std::uint64_t>(i), expected_offset);
  h.data_start = c.pos();
  if (n_tensors > 0) h.data_start = (h.data_start + h.alignment - 1) / h.alignment * h.alignment;
  for (const auto& t : h.tensors)
    if (h.data_start > c.size() || t.offset > c.size() - h.data_start || t.bytes > c.size() - h.data_start - t.offset)
      throw InputError(fmt::format("{}: tensor '{}' ends at byte {}, past the end of the file ({} bytes): a partial download or a truncated copy?",
                                   c.where(), strings::printable(t.name), h.data_start + t.offset + t.bytes, c.size()));
  return h;
}

}  // namespace

const GgufValue* GgufHeader::find(const std::string& key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensor* GgufHeader::tensor(const std::string& name) const {
  const auto it = tensor_index.find(name);
  return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

bool has_gguf_magic(std::string_view bytes) { return bytes.substr(0, 4) == "GGUF"; }

GgufHeader read_gguf_file(const std::string& path) {
  files::InputFile in(path, "GGUF model");
  Cursor c(in.fd(), in.size(), path);
  return parse(c);
}

GgufHeader read_gguf_bytes(std::string_view bytes, const std::string& where) {
  Cursor c(bytes, where);
  return parse(c);
}

}  // namespace gpuvs::import
