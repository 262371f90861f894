// SPDX-License-Identifier: Apache-2.0
// The header of a safetensors file (Hugging Face's weight format) and of a sharded checkpoint's index
// (model.safetensors.index.json): every tensor's name, dtype and shape, read without reading the weights. Held to
// the checks of the reference parser (huggingface/safetensors src/tensor.rs, cited in
// docs/research/gguf-safetensors-hf-cache.md): a header of at most 100,000,000 bytes that is a JSON object,
// tensors that index the byte buffer whole (no gaps, no overlaps) with sizes their shape and dtype make, and a
// buffer that ends where the file does, so a partial download is named.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::import {

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                 // as the file spells it: "BF16", "F8_E4M3", ...
  std::vector<std::uint64_t> shape;  // PyTorch's order
  std::uint64_t begin = 0, end = 0;  // in the byte buffer after the header
  std::uint64_t elements = 0;
  std::string file;                  // the file that holds it (a shard of a sharded checkpoint)
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;  // __metadata__: strings only
  std::vector<SafetensorsTensor> tensors;       // by offset
  std::uint64_t tensor_bytes = 0;               // the byte buffers, all files
  std::vector<std::string> files;               // one, or an index's shards
  /// Elements by dtype, and the parameter count.
  std::map<std::string, std::uint64_t> elements_by_dtype() const;
  std::uint64_t parameters() const;
};

/// Most bytes a header may take (the reference parser's MAX_HEADER_SIZE).
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100000000;

/// The bits one element of `dtype` takes; 0 for a dtype gpuvs does not know.
int safetensors_dtype_bits(const std::string& dtype);

/// The header of the file at `path` (under the input policy). InputError "PATH: what" for what the format does
/// not allow.
SafetensorsHeader read_safetensors_file(const std::string& path);
/// The same from bytes: the 8-byte length, the JSON header and at least as many bytes as it indexes after it
/// (`file_size` is the whole file's size when `bytes` holds only its beginning).
SafetensorsHeader read_safetensors_bytes(std::string_view bytes, std::uint64_t file_size, const std::string& where);

/// A sharded checkpoint: the index's weight_map read, each shard it names (in the index's folder) read, and the
/// two held to each other: every tensor the map names is in the shard it names, and every shard's tensors are in
/// the map.
SafetensorsHeader read_safetensors_index(const std::string& path);

/// The shard file names a sharded checkpoint's index names (each a plain name in its folder), read without the
/// shards.
std::vector<std::string> safetensors_index_shards(const std::string& path);

}  // namespace gpuvs::import
