// SPDX-License-Identifier: Apache-2.0
// Structure-aware mutation for fuzz_model_json. Byte edits of JSON mostly break its syntax, and when they do
// not they change a digit or a letter; a model file's bugs lie in its structure (a layer moved into another,
// a shape of the wrong type, a name one layer already has). This mutator parses the input and edits the tree:
// a number set to an edge value, a string swapped for another name in the file or a layer class the reader
// knows, a value's type changed, keys and elements dropped, copied or swapped, a subtree grafted elsewhere.
// A quarter of the time, and whenever the input is not JSON, it leaves the bytes to libFuzzer.
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Json = nlohmann::ordered_json;  // keeps the file's key order, so a mutant differs from its parent only where edited
using Rng = std::mt19937_64;

// The layer classes and Hugging Face model types the readers know, and a few they do not.
constexpr std::array kNames = {
    "Dense", "Conv1D", "Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Dropout", "Flatten", "Reshape", "InputLayer", "Embedding",
    "MultiHeadAttention", "LayerNormalization", "BatchNormalization", "Activation", "Add", "Concatenate", "MaxPooling1D", "MaxPooling2D",
    "AveragePooling1D", "AveragePooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
    "Sequential", "Functional", "Model", "LSTM", "relu", "softmax", "gelu", "silu", "linear", "float16", "bfloat16", "float32", "llama",
    "gpt2", "bert", "mistral", "mixtral", "qwen2", "gemma", "gpt_neox", "same", "valid", "channels_first"};

int below(Rng& r, std::size_t n) { return n == 0 ? 0 : static_cast<int>(std::uniform_int_distribution<std::size_t>(0, n - 1)(r)); }

// Nesting deeper than this is left as it is (the recursion stays shallow whatever the input).
constexpr int kMaxDepth = 64;

void collect(Json& j, std::vector<Json*>& all, int depth = 0) {
  all.push_back(&j);
  if ((j.is_object() || j.is_array()) && depth < kMaxDepth)
    for (auto& v : j) collect(v, all, depth + 1);
}

Json edge_number(Rng& r) {
  switch (below(r, 14)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return 2;
    case 4: return 3;
    case 5: return 8;
    case 6: return 65536;
    case 7: return std::int64_t{1} << 31;
    case 8: return std::int64_t{1} << 53;
    case 9: return std::numeric_limits<std::int64_t>::max();
    case 10: return std::numeric_limits<std::int64_t>::min();
    case 11: return 0.5;
    case 12: return 1e308;
    default: return -1e30;
  }
}

// One edit; pointers into the tree are collected afresh for each.
void mutate_once(Rng& r, Json& root, const std::vector<std::string>& strings, const std::vector<std::string>& keys) {
  std::vector<Json*> all;
  collect(root, all);
  Json& j = *all[static_cast<std::size_t>(below(r, all.size()))];
  const Json& other = *all[static_cast<std::size_t>(below(r, all.size()))];
  switch (below(r, 8)) {
    case 0:
      j = edge_number(r);
      return;
    case 1: {  // another name from the file or the readers' vocabulary, or a name grown from one
      const int what = below(r, 4);
      const std::string base = strings.empty() || what == 0 ? std::string(kNames[static_cast<std::size_t>(below(r, kNames.size()))])
                                                            : strings[static_cast<std::size_t>(below(r, strings.size()))];
      j = what == 3 ? base + (below(r, 2) ? "/grad" : "_1") : base;
      return;
    }
    case 2: {  // another type
      static const std::array<Json, 6> kTypes = {Json(nullptr), Json(true), Json::array(), Json::object(), Json(""), Json::array({1, 2})};
      j = kTypes[static_cast<std::size_t>(below(r, kTypes.size()))];
      return;
    }
    case 3: {  // a subtree grafted in place of another (copied first: `other` may lie inside `j`)
      Json copy = other;
      j = std::move(copy);
      return;
    }
    case 4:  // a key or an element dropped
      if (j.is_object() && !j.empty()) {
        auto it = j.begin();
        std::advance(it, below(r, j.size()));
        j.erase(it);
      } else if (j.is_array() && !j.empty()) {
        j.erase(j.begin() + below(r, j.size()));
      }
      return;
    case 5:  // an element repeated, or two swapped (a layer twice, layers out of order)
      if (j.is_array() && !j.empty()) {
        const auto a = static_cast<std::size_t>(below(r, j.size())), b = static_cast<std::size_t>(below(r, j.size()));
        if (below(r, 2)) {
          Json copy = j[a];
          j.insert(j.begin() + static_cast<std::ptrdiff_t>(b), std::move(copy));
        } else {
          std::swap(j[a], j[b]);
        }
      }
      return;
    case 6:  // a key the file uses elsewhere, given some value from the file
      if (j.is_object() && !keys.empty()) {
        Json copy = other;
        j[keys[static_cast<std::size_t>(below(r, keys.size()))]] = std::move(copy);
      }
      return;
    default:  // a number nudged
      if (j.is_number_integer() && !j.is_number_unsigned()) {
        const auto v = j.get<std::int64_t>();
        j = v > -(std::int64_t{1} << 62) && v < (std::int64_t{1} << 62) ? v + (below(r, 2) ? 1 : -1) : 0;
      } else if (j.is_number_float()) {
        j = j.get<double>() * (below(r, 2) ? 2.0 : -0.5);  // inf prints as null: a value of the wrong type
      } else {
        j = edge_number(r);
      }
      return;
  }
}

void vocabulary(const Json& j, std::vector<std::string>& strings, std::vector<std::string>& keys, int depth = 0) {
  if (j.is_string()) strings.push_back(j.get<std::string>());
  if (depth >= kMaxDepth) return;
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) {
      keys.push_back(it.key());
      vocabulary(it.value(), strings, keys, depth + 1);
    }
  if (j.is_array())
    for (const auto& v : j) vocabulary(v, strings, keys, depth + 1);
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  Rng r(seed);
  if (below(r, 4) == 0) return LLVMFuzzerMutate(data, size, max_size);
  Json root = Json::parse(data, data + size, nullptr, false);
  if (root.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  std::vector<std::string> strings, keys;
  vocabulary(root, strings, keys);
  for (int k = 1 + below(r, 3); k > 0; --k) mutate_once(r, root, strings, keys);
  const std::string out = root.dump(below(r, 2) ? -1 : 1, ' ', false, Json::error_handler_t::replace);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
