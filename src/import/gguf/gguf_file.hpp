// SPDX-License-Identifier: Apache-2.0
// The header of a GGUF file (llama.cpp's model format): its metadata and its tensor directory, read without
// reading the weights. Follows the spec (ggml docs/gguf.md) and the checks of ggml's reference reader
// (src/gguf.cpp), cited in docs/research/gguf-safetensors-hf-cache.md: versions 2 and 3, little-endian; every
// count checked against the bytes left before anything is allocated; every tensor sized from its type
// (data/ggml-types.toml) and found inside the file, so a partial download is named, not priced.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuvs::import {

/// One metadata value. Scalars keep their value; an array keeps its element type and count, and its elements
/// when they are integers (per-layer hyperparameters); strings inside arrays (a vocabulary) are skipped.
struct GgufValue {
  int type = -1;                   // gguf_type: 0 u8 .. 12 f64 (8 string, 9 array)
  std::int64_t integer = 0;        // integer types and bool (u64 above 2^63 - 1 is refused)
  double real = 0;                 // f32, f64
  std::string text;                // string
  int element_type = -1;           // arrays
  std::uint64_t count = 0;         // arrays: elements
  std::vector<std::int64_t> integers;  // arrays of integers
  bool is_integer() const { return type <= 5 || type == 10 || type == 11; }
};

struct GgufTensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // ggml order: dims[0] is the row (fastest-varying), the reverse of PyTorch's shape
  int type = 0;                     // ggml_type
  std::uint64_t offset = 0;         // from the start of the data section
  std::uint64_t elements = 0, bytes = 0;
};

struct GgufHeader {
  std::uint32_t version = 0;
  std::uint32_t alignment = 32;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;  // in file order
  std::unordered_map<std::string, std::size_t> tensor_index;  // name -> position in `tensors`
  std::uint64_t data_start = 0, file_size = 0;

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* tensor(const std::string& name) const;
};

/// Most bytes the metadata and tensor directory may take: a vocabulary of 256 K tokens with its merges is about
/// 10 MB; more is not a model header.
inline constexpr std::uint64_t kMaxGgufHeaderBytes = std::uint64_t{256} << 20;
/// Most metadata pairs and tensors a header may list: real models have under a hundred keys and a few thousand
/// tensors (a 61-layer mixture of experts, about 1,100); a crafted header claiming millions is refused up front.
inline constexpr std::int64_t kMaxGgufKeys = 1 << 16, kMaxGgufTensors = 1 << 20;

/// Reads the header of the GGUF file at `path` (under the input policy: a regular file, noted as an input).
/// InputError "PATH: what (at byte N)" for anything the format does not allow or gpuvs cannot size.
GgufHeader read_gguf_file(const std::string& path);
/// The same from bytes in memory (a held model, a fuzz input); `where` names them in errors.
GgufHeader read_gguf_bytes(std::string_view bytes, const std::string& where);

/// True when `bytes` start with the GGUF magic.
bool has_gguf_magic(std::string_view bytes);

}  // namespace gpuvs::import
