// SPDX-License-Identifier: Apache-2.0
// Writes GGUF files for the tests, byte by byte as the spec lays them out (ggml docs/gguf.md: magic, version,
// counts, metadata, tensor directory, padding, data), independently of the reader under test. Tensor data is
// zeros: the reader sizes tensors from their types, it never reads weights.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace gpuvs::test {

/// Bytes per block and elements per block of the ggml types the tests use (ggml-common.h, as in
/// data/ggml-types.toml, written again here so a wrong row there shows up as a test failure).
struct GgmlBlock {
  int id, elements, bytes;
};
inline const std::map<std::string, GgmlBlock>& test_ggml_types() {
  static const std::map<std::string, GgmlBlock> t = {{"F32", {0, 1, 4}},     {"F16", {1, 1, 2}},     {"Q4_0", {2, 32, 18}},
                                                     {"Q5_0", {6, 32, 22}},   {"Q8_0", {8, 32, 34}},  {"Q4_K", {12, 256, 144}},
                                                     {"Q5_K", {13, 256, 176}}, {"Q6_K", {14, 256, 210}}, {"IQ2_XXS", {16, 256, 66}},
                                                     {"BF16", {30, 1, 2}}};
  return t;
}

class GgufBuilder {
 public:
  std::uint32_t version = 3;
  std::uint32_t alignment = 32;
  std::uint64_t second_offset_skew = 0;  // added to the second tensor's offset (a directory ggml's reader refuses)

  template <class T>
  static void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  static void put_string(std::string& out, const std::string& s) {
    put<std::uint64_t>(out, s.size());
    out += s;
  }

  GgufBuilder& u32(const std::string& key, std::uint32_t v) { return raw(key, 4, [v](std::string& o) { put(o, v); }); }
  GgufBuilder& u64(const std::string& key, std::uint64_t v) { return raw(key, 10, [v](std::string& o) { put(o, v); }); }
  GgufBuilder& i32(const std::string& key, std::int32_t v) { return raw(key, 5, [v](std::string& o) { put(o, v); }); }
  GgufBuilder& f32(const std::string& key, float v) { return raw(key, 6, [v](std::string& o) { put(o, v); }); }
  GgufBuilder& boolean(const std::string& key, std::uint8_t v) { return raw(key, 7, [v](std::string& o) { put(o, v); }); }
  GgufBuilder& str(const std::string& key, const std::string& v) { return raw(key, 8, [v](std::string& o) { put_string(o, v); }); }
  GgufBuilder& u32_array(const std::string& key, const std::vector<std::uint32_t>& v) {
    return raw(key, 9, [v](std::string& o) {
      put<std::int32_t>(o, 4);
      put<std::uint64_t>(o, v.size());
      for (auto x : v) put(o, x);
    });
  }
  GgufBuilder& str_array(const std::string& key, const std::vector<std::string>& v) {
    return raw(key, 9, [v](std::string& o) {
      put<std::int32_t>(o, 8);
      put<std::uint64_t>(o, v.size());
      for (const auto& x : v) put_string(o, x);
    });
  }
  template <class F>
  GgufBuilder& raw(const std::string& key, std::int32_t type, F value) {
    std::string o;
    put_string(o, key);
    put(o, type);
    value(o);
    drop(key);
    keys_.push_back(key);
    kv_.push_back(o);
    return *this;
  }
  /// Removes a metadata key (setting a key again replaces it: a test changes one value of a fixture).
  void drop(const std::string& key) {
    for (std::size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] == key) {
        keys_.erase(keys_.begin() + static_cast<std::ptrdiff_t>(i));
        kv_.erase(kv_.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  }
  /// Appends a metadata entry as is, a key listed twice included (for refusals).
  void append_raw(const std::string& encoded) {
    keys_.push_back("");
    kv_.push_back(encoded);
  }

  /// A tensor with dims in ggml order (the row first) in a type of test_ggml_types().
  GgufBuilder& tensor(const std::string& name, std::vector<std::uint64_t> dims, const std::string& type) {
    tensors_.push_back({name, std::move(dims), test_ggml_types().at(type)});
    return *this;
  }
  bool has_tensor(const std::string& name) const {
    for (const auto& t : tensors_)
      if (t.name == name) return true;
    return false;
  }
  void drop_tensor(const std::string& name) {
    for (auto it = tensors_.begin(); it != tensors_.end(); ++it)
      if (it->name == name) {
        tensors_.erase(it);
        return;
      }
  }

  static std::uint64_t tensor_bytes(const std::vector<std::uint64_t>& dims, const GgmlBlock& b) {
    std::uint64_t n = 1;
    for (auto d : dims) n *= d;
    return n / static_cast<std::uint64_t>(b.elements) * static_cast<std::uint64_t>(b.bytes);
  }
  std::uint64_t data_bytes() const {
    std::uint64_t total = 0;
    for (const auto& t : tensors_) total += tensor_bytes(t.dims, t.type);
    return total;
  }

  /// The metadata and tensor directory, padded to the alignment: where the data section starts.
  std::string header_bytes() const {
    std::string out = "GGUF";
    put(out, version);
    put<std::uint64_t>(out, tensors_.size());
    put<std::uint64_t>(out, kv_.size());
    for (const auto& kv : kv_) out += kv;
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      const Tensor& t = tensors_[i];
      put_string(out, t.name);
      put<std::uint32_t>(out, static_cast<std::uint32_t>(t.dims.size()));
      for (auto d : t.dims) put<std::uint64_t>(out, d);
      put<std::int32_t>(out, t.type.id);
      put<std::uint64_t>(out, offset + (i == 1 ? second_offset_skew : 0));
      offset += pad(tensor_bytes(t.dims, t.type));
    }
    if (!tensors_.empty()) out.resize(pad(out.size()), '\0');
    return out;
  }
  /// The data section: every tensor padded to the alignment.
  std::uint64_t padded_data_bytes() const {
    std::uint64_t total = 0;
    for (const auto& t : tensors_) total += pad(tensor_bytes(t.dims, t.type));
    return total;
  }
  /// The whole file, the data zeros.
  std::string bytes() const {
    std::string out = header_bytes();
    out.resize(out.size() + padded_data_bytes(), '\0');
    return out;
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    GgmlBlock type;
  };
  std::uint64_t pad(std::uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }
  std::vector<std::string> keys_, kv_;
  std::vector<Tensor> tensors_;
};

/// The shape of a LLaMA-architecture file.
struct LlamaShape {
  int layers = 8;
  std::uint64_t hidden = 256, heads = 4, kv_heads = 2, ffn = 512, vocab = 512, context = 4096;
};

/// A LLaMA-architecture file quantized as llama.cpp's Q4_K_M does it (llama_tensor_get_type): Q4_K projections and
/// token table, Q6_K for attn_v and ffn_down in the first and last eighth of the layers and every third between
/// (use_more_bits), a Q6_K LM head, F32 norms. The vocabulary is `{arch}.vocab_size` (a tokens list is the
/// small files' way: tiny_llama_q4_k_m).
inline GgufBuilder llama_q4_k_m(const LlamaShape& s) {
  GgufBuilder b;
  const std::uint64_t h = s.hidden, kv = s.kv_heads * (s.hidden / s.heads), ffn = s.ffn, vocab = s.vocab;
  const int layers = s.layers;
  b.str("general.architecture", "llama").str("general.name", "Tiny Llama").u32("general.file_type", 15);
  b.u32("llama.context_length", static_cast<std::uint32_t>(s.context)).u32("llama.embedding_length", static_cast<std::uint32_t>(h));
  b.u32("llama.block_count", static_cast<std::uint32_t>(layers)).u32("llama.feed_forward_length", static_cast<std::uint32_t>(ffn));
  b.u32("llama.attention.head_count", static_cast<std::uint32_t>(s.heads)).u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(s.kv_heads));
  b.u32("llama.rope.dimension_count", static_cast<std::uint32_t>(h / s.heads)).f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  b.u32("llama.vocab_size", static_cast<std::uint32_t>(vocab));
  b.u32("general.quantization_version", 2);
  b.tensor("token_embd.weight", {h, vocab}, "Q4_K");
  for (int l = 0; l < layers; ++l) {
    const bool more = l < layers / 8 || l >= 7 * layers / 8 || (l - layers / 8) % 3 == 2;
    const std::string p = std::string("blk.").append(std::to_string(l)).append(".");
    b.tensor(p + "attn_norm.weight", {h}, "F32");
    b.tensor(p + "attn_q.weight", {h, h}, "Q4_K").tensor(p + "attn_k.weight", {h, kv}, "Q4_K");
    b.tensor(p + "attn_v.weight", {h, kv}, more ? "Q6_K" : "Q4_K").tensor(p + "attn_output.weight", {h, h}, "Q4_K");
    b.tensor(p + "ffn_norm.weight", {h}, "F32");
    b.tensor(p + "ffn_gate.weight", {h, ffn}, "Q4_K").tensor(p + "ffn_up.weight", {h, ffn}, "Q4_K");
    b.tensor(p + "ffn_down.weight", {ffn, h}, more ? "Q6_K" : "Q4_K");
  }
  b.tensor("output_norm.weight", {h}, "F32").tensor("output.weight", {h, vocab}, "Q6_K");
  return b;
}

/// The small Q4_K_M file most tests use: 8 layers, width 256, 4 heads / 2 KV (head 64), MLP 512, a list of 512
/// tokens for its vocabulary (no vocab_size key), 4,096 positions.
inline GgufBuilder tiny_llama_q4_k_m(int layers = 8) {
  LlamaShape s;
  s.layers = layers;
  GgufBuilder b = llama_q4_k_m(s);
  b.drop("llama.vocab_size");
  std::vector<std::string> tokens;
  for (std::uint64_t i = 0; i < s.vocab; ++i) tokens.push_back(std::string("t").append(std::to_string(i)));
  b.str_array("tokenizer.ggml.tokens", tokens);
  return b;
}

}  // namespace gpuvs::test

namespace gpuvs::test {

/// A LLaMA file small enough for a fuzzer's seed (a few KB): width 32, 2 heads / 1 KV (head 16), MLP 64,
/// vocabulary 32, every projection in `type` (F16 or Q8_0: rows of 32), F32 norms, the LM head tied when `tied`.
inline GgufBuilder micro_llama(int layers, const std::string& type, bool tied) {
  GgufBuilder b;
  const std::uint64_t h = 32, kv = 16, ffn = 64, vocab = 32;
  b.str("general.architecture", "llama").u32("llama.context_length", 256).u32("llama.embedding_length", h);
  b.u32("llama.block_count", static_cast<std::uint32_t>(layers)).u32("llama.feed_forward_length", ffn);
  b.u32("llama.attention.head_count", 2).u32("llama.attention.head_count_kv", 1);
  b.tensor("token_embd.weight", {h, vocab}, type);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    b.tensor(p + "attn_norm.weight", {h}, "F32").tensor(p + "attn_q.weight", {h, h}, type).tensor(p + "attn_k.weight", {h, kv}, type);
    b.tensor(p + "attn_v.weight", {h, kv}, type).tensor(p + "attn_output.weight", {h, h}, type).tensor(p + "ffn_norm.weight", {h}, "F32");
    b.tensor(p + "ffn_gate.weight", {h, ffn}, type).tensor(p + "ffn_up.weight", {h, ffn}, type).tensor(p + "ffn_down.weight", {ffn, h}, type);
  }
  b.tensor("output_norm.weight", {h}, "F32");
  if (!tied) b.tensor("output.weight", {h, vocab}, type);
  return b;
}

}  // namespace gpuvs::test
