// SPDX-License-Identifier: Apache-2.0
// Writes safetensors files for the tests as the format lays them out (huggingface/safetensors README, "Format"):
// an 8-byte little-endian header length, the JSON header padded with spaces to 8 bytes, then the byte buffer.
// Tensor data is zeros; the reader never reads it.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gpuvs::test {

struct StTensor {
  std::string name, dtype;
  std::vector<std::uint64_t> shape;
};

inline std::uint64_t st_dtype_bits(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 32;
  if (dtype == "F16" || dtype == "BF16") return 16;
  if (dtype == "F8_E4M3" || dtype == "U8") return 8;
  if (dtype == "F4") return 4;
  return 64;
}

/// The header JSON of `tensors` laid out in order, and the buffer's size.
inline nlohmann::json st_header(const std::vector<StTensor>& tensors, std::uint64_t& buffer, const nlohmann::json& metadata = nullptr) {
  nlohmann::json h = nlohmann::json::object();
  if (!metadata.is_null()) h["__metadata__"] = metadata;
  buffer = 0;
  for (const auto& t : tensors) {
    std::uint64_t n = 1;
    for (auto d : t.shape) n *= d;
    const std::uint64_t bytes = n * st_dtype_bits(t.dtype) / 8;
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {buffer, buffer + bytes}}};
    buffer += bytes;
  }
  return h;
}

/// A whole file from a header's text and the buffer's size.
inline std::string st_file(std::string header_text, std::uint64_t buffer) {
  while (header_text.size() % 8 != 0) header_text += ' ';
  std::string out(8, '\0');
  const std::uint64_t n = header_text.size();
  std::memcpy(out.data(), &n, 8);
  out += header_text;
  out.resize(out.size() + buffer, '\0');
  return out;
}

inline std::string st_file(const std::vector<StTensor>& tensors, const nlohmann::json& metadata = nullptr) {
  std::uint64_t buffer = 0;
  const nlohmann::json h = st_header(tensors, buffer, metadata);
  return st_file(h.dump(), buffer);
}

/// The tensors of a Hugging Face LLaMA checkpoint (transformers' names) of the given shape, in `dtype`.
inline std::vector<StTensor> hf_llama_tensors(int layers, std::uint64_t hidden, std::uint64_t kv, std::uint64_t ffn, std::uint64_t vocab,
                                              const std::string& dtype = "BF16") {
  std::vector<StTensor> t = {{"model.embed_tokens.weight", dtype, {vocab, hidden}}};
  for (int l = 0; l < layers; ++l) {
    const std::string p = std::string("model.layers.").append(std::to_string(l)).append(".");
    t.push_back({p + "input_layernorm.weight", dtype, {hidden}});
    t.push_back({p + "self_attn.q_proj.weight", dtype, {hidden, hidden}});
    t.push_back({p + "self_attn.k_proj.weight", dtype, {kv, hidden}});
    t.push_back({p + "self_attn.v_proj.weight", dtype, {kv, hidden}});
    t.push_back({p + "self_attn.o_proj.weight", dtype, {hidden, hidden}});
    t.push_back({p + "post_attention_layernorm.weight", dtype, {hidden}});
    t.push_back({p + "mlp.gate_proj.weight", dtype, {ffn, hidden}});
    t.push_back({p + "mlp.up_proj.weight", dtype, {ffn, hidden}});
    t.push_back({p + "mlp.down_proj.weight", dtype, {hidden, ffn}});
  }
  t.push_back({"model.norm.weight", dtype, {hidden}});
  t.push_back({"lm_head.weight", dtype, {vocab, hidden}});
  return t;
}

}  // namespace gpuvs::test
