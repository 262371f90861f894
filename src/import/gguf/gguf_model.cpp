// SPDX-License-Identifier: Apache-2.0
#include "import/gguf/gguf_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "import/decoder_network.hpp"
#include "import/gguf/ggml_types.hpp"
#include "import/held_models.hpp"

namespace gpuvs::import {

using models::DecoderConfig;

namespace {

// What sets each architecture apart, as llama.cpp's llama-arch.cpp names its tensors and keys. The rest is
// llama's: RMSNorm, rotary positions, a SwiGLU MLP, Q/K/V and the MLP's gate and up as tensors of their own.
struct ArchRules {
  std::string name;
  bool geglu = false;          // Gemma: the gate through GELU
  bool gated = true;           // false: GPT-2's GELU MLP (ffn_up, ffn_down)
  bool gpt2 = false;           // LayerNorm with a shift, biases on every projection, learned positions
  std::string expert_ffn_key;  // the experts' inner size, where it differs from feed_forward_length (Qwen3-MoE)
  std::string not_modelled;    // said in the description
};

const std::vector<ArchRules>& arch_rules() {
  static const std::vector<ArchRules> rules = [] {
    std::vector<ArchRules> r(9);
    r[0].name = "llama";
    r[1].name = "qwen2";
    r[2].name = "qwen3";
    r[2].not_modelled = "the Q/K norms (a head's width of weights each, per block) are not counted";
    r[3].name = "qwen3moe";
    r[3].expert_ffn_key = "expert_feed_forward_length";
    r[3].not_modelled = r[2].not_modelled;
    r[4].name = "gemma";
    r[4].geglu = true;
    r[5].name = "gemma2";
    r[5].geglu = true;
    r[5].not_modelled = "sliding-window attention on alternate layers is priced as full attention, and the logit soft-capping not at all";
    r[6].name = "gemma3";
    r[6].geglu = true;
    r[6].not_modelled = "sliding-window attention on five layers in six is priced as full attention; the Q/K norms are not counted";
    r[7].name = "phi3";  // its Q/K/V and gate/up fused, as GPT-2's Q/K/V: told by the file's tensors (block_layout)
    r[8].name = "gpt2";
    r[8].gated = false;
    r[8].gpt2 = true;
    return r;
  }();
  return rules;
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> names;
  for (const auto& a : arch_rules()) names.push_back(a.name);
  return names;
}

const std::vector<std::string> kArchitectures = architecture_names();

// The same limits as a Hugging Face config's (hf_config.cpp): far above any real model, and what keeps a crafted
// header from building an endless graph.
constexpr std::int64_t kMaxWidth = 1 << 20, kMaxLayers = 4096, kMaxHeads = 1 << 14, kMaxVocab = 1 << 24, kMaxPositions = 1 << 24;
constexpr std::int64_t kDefaultSeq = 8192;  // as for a config.json: long-context models priced at 8,192 tokens

// A block's projection tensors, by llama.cpp's names (llama-arch.cpp: LLM_TENSOR_ATTN_Q "blk.%d.attn_q", ...), each
// with its shape in ggml order and the projections it holds (a fused tensor holds several, at one type); a mixture
// of experts stores each MLP projection for all experts in one 3-D tensor ("blk.%d.ffn_up_exps").
struct ProjectionTensor {
  std::string suffix;
  std::vector<std::uint64_t> shape;
  std::vector<std::string> roles;  // the names the serving model prices: attn_q ... ffn_down
};

// Which tensors a file fuses is its converter's choice, not the architecture's (llama.cpp loads a merged attn_qkv
// where there is one and separate Q, K and V otherwise): told by block 0, held to every block.
struct Fusion {
  bool qkv = false;      // one blk.N.attn_qkv tensor [hidden, q + 2 kv] (Phi-3, GPT-2)
  bool gate_up = false;  // blk.N.ffn_up holds the gate and then the up projection [hidden, 2 ffn] (Phi-3)
};

std::string dims_text(const std::vector<std::uint64_t>& dims);

struct Reader {
  const GgufHeader& h;
  const std::string& where;
  std::string arch;
  const ArchRules* rules = nullptr;
  Fusion fused;
  std::int64_t layers = 0;  // block_count, once read: a per-layer array must list one value per block

  [[noreturn]] void fail(const std::string& key, const std::string& what) const { throw InputError(fmt::format("{}: {}: {}", where, key, what)); }

  /// An integer hyperparameter: any integer type, or a per-layer array whose values are all the same (llama.cpp
  /// writes arrays for models whose layers differ, which gpuvs does not build).
  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    const GgufValue* v = h.find(key);
    if (!v) fail(key, "missing");
    std::int64_t n = 0;
    if (v->is_integer()) {
      n = v->integer;
    } else if (v->type == 9 && !v->integers.empty()) {
      if (layers > 0 && static_cast<std::int64_t>(v->integers.size()) != layers)
        fail(key, fmt::format("lists {} values for {} blocks", v->integers.size(), layers));
      n = v->integers.front();
      for (const auto x : v->integers)
        if (x != n) fail(key, fmt::format("differs between layers ({} and {}): layers of different shapes are not built", n, x));
    } else {
      fail(key, "must be an integer");
    }
    if (n < lo || n > hi) fail(key, fmt::format("{} is outside [{}, {}]", n, lo, hi));
    return n;
  }
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
    return h.find(key) ? integer(key, lo, hi) : fallback;
  }
  std::string key(const std::string& suffix) const { return arch + "." + suffix; }

  const GgufTensor& tensor(const std::string& name) const {
    const GgufTensor* t = h.tensor(name);
    if (!t) fail(name, "the tensor is missing");
    return *t;
  }
  /// The tensor's dimensions in ggml order must be `want` (the metadata's shape).
  void check_shape(const GgufTensor& t, const std::vector<std::uint64_t>& want) const {
    if (t.dims != want)
      fail(t.name, fmt::format("shaped {}, but the metadata makes it {}", dims_text(t.dims), dims_text(want)));
  }
};

std::string dims_text(const std::vector<std::uint64_t>& dims) {
  std::vector<std::string> parts;
  for (const auto d : dims) parts.push_back(std::to_string(d));
  return fmt::format("[{}]", strings::join(parts, ", "));
}

std::string type_name(int type) {
  const GgmlType* g = ggml_type(type);
  return g ? g->name : std::to_string(type);
}

double type_bits(int type) { return ggml_type(type)->bits(); }

DecoderConfig decoder_shape(Reader& r, std::vector<std::string>& notes) {
  DecoderConfig c;
  c.hidden = r.integer(r.key("embedding_length"), 1, kMaxWidth);
  c.layers = static_cast<int>(r.integer(r.key("block_count"), 1, kMaxLayers));
  r.layers = c.layers;
  c.heads = static_cast<int>(r.integer(r.key("attention.head_count"), 1, kMaxHeads));
  c.kv_heads = static_cast<int>(r.integer_or(r.key("attention.head_count_kv"), c.heads, 1, kMaxHeads));
  if (c.heads % c.kv_heads != 0)
    r.fail(r.key("attention.head_count_kv"), fmt::format("{} does not divide the {} attention heads", c.kv_heads, c.heads));
  c.ffn = r.integer(r.key("feed_forward_length"), 1, kMaxWidth);
  if (!r.rules->expert_ffn_key.empty() && r.h.find(r.key(r.rules->expert_ffn_key)))  // the experts' own width
    c.ffn = r.integer(r.key(r.rules->expert_ffn_key), 1, kMaxWidth);
  // The head width: attention.key_length when given (Gemma: 256 at width 3072), else width / heads.
  const std::int64_t key_length = r.integer_or(r.key("attention.key_length"), 0, 1, kMaxWidth);
  if (key_length == 0 && c.hidden % c.heads != 0)
    r.fail(r.key("attention.head_count"), fmt::format("{} does not divide embedding_length {}", c.heads, c.hidden));
  if (r.h.find(r.key("attention.value_length")) &&
      r.integer(r.key("attention.value_length"), 1, kMaxWidth) != (key_length ? key_length : c.hidden / c.heads))
    r.fail(r.key("attention.value_length"), "differs from the key length: attention with other value widths is not built");
  if (key_length > 0 && key_length != c.hidden / c.heads) c.head_dim = key_length;
  if (r.rules->gpt2) {  // GPT-2: LayerNorm with a shift, biases everywhere, learned positions, a GELU MLP
    c.norm_bias = c.linear_bias = c.learned_positions = true;
    const GgufTensor& positions = r.tensor("position_embd.weight");
    if (positions.dims.size() != 2 || positions.dims[0] != static_cast<std::uint64_t>(c.hidden))
      r.fail(positions.name, fmt::format("shaped {}, but a table of {}-wide positions is [{}, positions]", dims_text(positions.dims), c.hidden, c.hidden));
  } else {
    c.swiglu = c.rms_norm = c.rope = true;
    c.geglu = r.rules->geglu;
  }
  c.experts = static_cast<int>(r.integer_or(r.key("expert_count"), 0, 0, 4096));
  if (c.experts == 1) r.fail(r.key("expert_count"), "1 expert: a mixture needs at least 2");
  if (c.experts > 0) c.experts_per_token = static_cast<int>(r.integer(r.key("expert_used_count"), 1, c.experts));
  else if (r.integer_or(r.key("expert_used_count"), 0, 0, kMaxLayers) != 0) r.fail(r.key("expert_used_count"), "set without expert_count");
  const std::int64_t positions = r.integer(r.key("context_length"), 1, kMaxPositions);
  c.max_positions = positions;
  c.seq_len = std::min(positions, kDefaultSeq);
  if (positions > kDefaultSeq) notes.push_back(fmt::format("{} positions: priced at {} tokens unless --options seq_len=N", positions, kDefaultSeq));
  // The vocabulary: the key llama.cpp reads first, else the token list's length, else the embedding table.
  const GgufTensor& embed = r.tensor("token_embd.weight");
  if (r.h.find(r.key("vocab_size"))) c.vocab = r.integer(r.key("vocab_size"), 1, kMaxVocab);
  else if (const GgufValue* tokens = r.h.find("tokenizer.ggml.tokens"); tokens && tokens->type == 9) c.vocab = static_cast<std::int64_t>(tokens->count);
  else if (embed.dims.size() == 2) c.vocab = static_cast<std::int64_t>(embed.dims[1]);
  if (c.vocab < 1 || c.vocab > kMaxVocab) r.fail("tokenizer.ggml.tokens", fmt::format("a vocabulary of {} tokens is outside [1, {}]", c.vocab, kMaxVocab));
  c.tied_embeddings = r.h.tensor("output.weight") == nullptr;
  r.fused.qkv = r.h.tensor("blk.0.attn_qkv.weight") != nullptr;
  r.fused.gate_up = r.rules->gated && !r.h.tensor("blk.0.ffn_gate.weight") && !r.h.tensor("blk.0.ffn_gate_exps.weight") &&
                    r.h.tensor("blk.0.ffn_up.weight") != nullptr;
  if (!r.rules->gpt2) {
    c.qkv_bias = r.h.tensor(r.fused.qkv ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias") != nullptr;
    if (c.qkv_bias && r.arch != "qwen2") notes.push_back("Q/K/V biases in the file: built; an output-projection bias, if any, is not counted");
  }
  if (c.experts > 0 && !r.rules->gated) r.fail(r.key("expert_count"), fmt::format("experts in a {} file are not built", r.arch));
  if (!r.rules->not_modelled.empty()) notes.push_back(r.rules->not_modelled);
  return c;
}

/// The projection tensors of one block of this architecture, shape and fusion.
std::vector<ProjectionTensor> block_layout(const ArchRules& a, const Fusion& fused, const DecoderConfig& c) {
  const auto h = static_cast<std::uint64_t>(c.hidden), hd = static_cast<std::uint64_t>(c.head_size());
  const auto q = static_cast<std::uint64_t>(c.heads) * hd, kv = static_cast<std::uint64_t>(c.kv_heads) * hd, ffn = static_cast<std::uint64_t>(c.ffn);
  const auto e = static_cast<std::uint64_t>(c.experts);
  // ggml order: a PyTorch weight [out, in] is stored [in, out]; experts are the third dimension.
  auto mlp = [&](std::uint64_t in, std::uint64_t out) { return e ? std::vector<std::uint64_t>{in, out, e} : std::vector<std::uint64_t>{in, out}; };
  std::vector<ProjectionTensor> t;
  if (fused.qkv) t.push_back({"attn_qkv", {h, q + 2 * kv}, {"attn_q", "attn_k", "attn_v"}});
  else t.insert(t.end(), {{"attn_q", {h, q}, {"attn_q"}}, {"attn_k", {h, kv}, {"attn_k"}}, {"attn_v", {h, kv}, {"attn_v"}}});
  t.push_back({"attn_output", {q, h}, {"attn_output"}});
  if (fused.gate_up) t.push_back({"ffn_up", {h, 2 * ffn}, {"ffn_gate", "ffn_up"}});
  else if (a.gated) t.insert(t.end(), {{"ffn_gate", mlp(h, ffn), {"ffn_gate"}}, {"ffn_up", mlp(h, ffn), {"ffn_up"}}});
  else t.push_back({"ffn_up", {h, ffn}, {"ffn_up"}});
  t.push_back({"ffn_down", mlp(ffn, h), {"ffn_down"}});
  return t;
}

/// Every block's projections are there and shaped as the metadata says: their bits per weight, block by block.
std::vector<std::map<std::string, double>> projection_bits(const Reader& r, const DecoderConfig& c) {
  const std::vector<ProjectionTensor> layout = block_layout(*r.rules, r.fused, c);
  std::vector<std::map<std::string, double>> out;
  for (int l = 0; l < c.layers; ++l) {
    std::map<std::string, double> bits;
    for (const auto& p : layout) {
      const bool expert = c.experts > 0 && p.suffix.rfind("ffn_", 0) == 0;
      const std::string name = fmt::format("blk.{}.{}{}.weight", l, p.suffix, expert ? "_exps" : "");
      if (expert && !r.h.tensor(name) && r.h.tensor(fmt::format("blk.{}.{}.0.weight", l, p.suffix)))
        r.fail(name, "missing: this file stores each expert in a tensor of its own (converted before llama.cpp merged them); convert it again");
      const GgufTensor& t = r.tensor(name);
      r.check_shape(t, p.shape);
      for (const auto& role : p.roles) bits[role] = type_bits(t.type);
    }
    out.push_back(std::move(bits));
  }
  return out;
}

models::StoredWeights stored_weights(const Reader& r, const DecoderConfig& c) {
  models::StoredWeights w;
  w.source = r.where;
  w.engine = "llama.cpp";
  w.layer_bits = projection_bits(r, c);
  const std::vector<ProjectionTensor> layout = block_layout(*r.rules, r.fused, c);
  const GgufTensor& embed = r.tensor("token_embd.weight");
  r.check_shape(embed, {static_cast<std::uint64_t>(c.hidden), static_cast<std::uint64_t>(c.vocab)});
  w.embedding_bits = type_bits(embed.type);
  const GgufTensor* output = r.h.tensor("output.weight");
  if (output) r.check_shape(*output, {static_cast<std::uint64_t>(c.hidden), static_cast<std::uint64_t>(c.vocab)});
  w.output_bits = output ? type_bits(output->type) : w.embedding_bits;
  if (const GgufTensor* norm = r.h.tensor("blk.0.attn_norm.weight")) w.small_bits = type_bits(norm->type);
  // What the file holds, by type: the summary, and the type most projection weights are in (it picks the kernels).
  std::map<std::string, std::uint64_t> tensors_of, projection_elements;
  for (const auto& t : r.h.tensors) {
    if (t.name.rfind("blk.", 0) == 0) {
      // A block past block_count is a model other than the one the metadata describes.
      const std::string number = t.name.substr(4, t.name.find('.', 4) - 4);
      if (number.empty() || number.size() > 6 || number.find_first_not_of("0123456789") != std::string::npos || std::stoi(number) >= c.layers)
        r.fail(t.name, fmt::format("not a block of the {} the metadata's block_count makes", c.layers));
    }
    ++tensors_of[type_name(t.type)];
    w.file_bytes += static_cast<double>(t.bytes);
    if (t.name.rfind("blk.", 0) == 0)
      for (const auto& p : layout)
        if (t.name.find("." + p.suffix + ".weight") != std::string::npos || t.name.find("." + p.suffix + "_exps.weight") != std::string::npos)
          projection_elements[type_name(t.type)] += t.elements;
  }
  std::vector<std::pair<std::string, std::uint64_t>> by_count(tensors_of.begin(), tensors_of.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [name, n] : by_count) parts.push_back(fmt::format("{} {}", name, n));
  w.summary = strings::join(parts, ", ") + " tensors";
  const auto main = std::max_element(projection_elements.begin(), projection_elements.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  w.main_type = strings::lower(main->first);
  return w;
}

}  // namespace

const std::vector<std::string>& gguf_architectures() { return kArchitectures; }

models::NetworkInfo gguf_network(const GgufHeader& h, const std::string& where) {
  Reader r{h, where, {}, nullptr, {}, 0};
  const GgufValue* arch = h.find("general.architecture");
  if (!arch) r.fail("general.architecture", "missing (the spec requires it)");
  if (arch->type != 8) r.fail("general.architecture", "must be a string");
  r.arch = arch->text;
  for (const auto& a : arch_rules())
    if (a.name == r.arch) r.rules = &a;
  if (!r.rules)
    r.fail("general.architecture", fmt::format("'{}' is not read (read: {})", strings::printable(r.arch), strings::join(kArchitectures, ", ")));
  std::vector<std::string> notes;
  const DecoderConfig c = decoder_shape(r, notes);
  models::StoredWeights w = stored_weights(r, c);
  const std::string file = std::filesystem::path(where).filename().string();
  const GgufValue* name = h.find("general.name");
  std::string description = fmt::format(
      "{} (GGUF {}) from {} ({} layers, hidden {}, {} heads / {} KV, MLP {}{}, vocabulary {}); weights as stored: {}",
      name && name->type == 8 && !name->text.empty() ? strings::printable(name->text) : r.arch, r.arch, file, c.layers, c.hidden, c.heads, c.kv_heads,
      c.ffn, c.experts > 0 ? fmt::format(" x {} experts, {} per token", c.experts, c.experts_per_token) : "", c.vocab, w.summary);
  if (!notes.empty()) description += "; approximated: " + strings::join(notes, "; ");
  models::NetworkInfo n = decoder_network(c, where, description, r.key("expert_count"));
  double elements = 0;
  for (const auto& t : h.tensors) elements += static_cast<double>(t.elements);
  n.published_params = elements;
  n.params_source = "the file's tensors";
  n.stored_weights = std::move(w);
  return n;
}

models::NetworkInfo gguf_network_from(const std::string& path) {
  if (const std::string* held = held_model(path)) return gguf_network(read_gguf_bytes(*held, path), path);
  return gguf_network(read_gguf_file(path), path);
}

}  // namespace gpuvs::import
