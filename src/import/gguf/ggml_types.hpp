// SPDX-License-Identifier: Apache-2.0
// ggml's tensor storage types, as a GGUF file names them in each tensor's `type` field: how many elements one
// block holds and how many bytes it takes (data/ggml-types.toml, compiled in, each row cited to ggml's source).
// The GGUF reader sizes every tensor with it; the serving model prices a file's actual tensor mix with it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::import {

struct GgmlType {
  int id = -1;             // ggml_type enum value, as stored in a GGUF file
  std::string name;        // ggml's name: "F32", "Q4_K", "IQ2_XXS"
  int block_elements = 0;  // elements per block (a row's length is a whole number of blocks)
  int block_bytes = 0;     // bytes per block, scales included
  /// Storage bits per element, block overhead included.
  double bits() const { return 8.0 * block_bytes / block_elements; }
};

/// Every type the table lists, in id order (ids ggml removed are absent).
const std::vector<GgmlType>& ggml_types();
/// By enum value; nullptr for an id ggml never had or removed (Q4_2, Q4_0_4_4, ...).
const GgmlType* ggml_type(std::int64_t id);
/// By name, case-insensitive ("q4_k" finds Q4_K); nullptr when unknown.
const GgmlType* ggml_type_named(const std::string& name);

}  // namespace gpuvs::import
