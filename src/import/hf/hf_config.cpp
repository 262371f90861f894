// SPDX-License-Identifier: Apache-2.0
#include "import/hf/hf_config.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"
#include "import/decoder_network.hpp"

namespace gpuvs::import {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {

using json = nlohmann::json;

const std::vector<std::string> kArchitectures = {"LlamaForCausalLM",    "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                                                 "GemmaForCausalLM",    "GPT2LMHeadModel",    "GPTNeoXForCausalLM", "BertModel",
                                                 "BertForQuestionAnswering"};

// The default training sequence when a config allows more positions: long-context models (128 K) are
// priced at 8,192 tokens unless --options seq_len says otherwise.
constexpr std::int64_t kDefaultSeq = 8192;

struct Reader {
  const json& j;
  const std::string& where;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}: $.{}: {}", where, key, what));
  }
  bool has(const std::string& key) const { return j.contains(key) && !j[key].is_null(); }
  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    if (!has(key)) fail(key, "missing");
    const json& v = j[key];
    if (!v.is_number_integer()) fail(key, fmt::format("must be an integer, got {}", strings::printable(v.dump())));
    const auto n = v.get<std::int64_t>();
    if (n < lo || n > hi) fail(key, fmt::format("{} is outside [{}, {}]", n, lo, hi));
    return n;
  }
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
    return has(key) ? integer(key, lo, hi) : fallback;
  }
  std::string text_or(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) fail(key, "must be a string");
    return j[key].get<std::string>();
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) fail(key, "must be true or false");
    return j[key].get<bool>();
  }
};

constexpr std::int64_t kMaxWidth = 1 << 20, kMaxLayers = 4096, kMaxHeads = 1 << 14, kMaxVocab = 1 << 24, kMaxPositions = 1 << 24;

/// LLaMA-family decoders: RMSNorm, RoPE, gated MLP, no biases (Qwen2: Q/K/V biases), GQA.
DecoderConfig llama_family(const Reader& r, const std::string& arch, std::vector<std::string>& notes) {
  DecoderConfig c;
  c.hidden = r.integer("hidden_size", 1, kMaxWidth);
  c.layers = static_cast<int>(r.integer("num_hidden_layers", 1, kMaxLayers));
  c.heads = static_cast<int>(r.integer("num_attention_heads", 1, kMaxHeads));
  c.kv_heads = static_cast<int>(r.integer_or("num_key_value_heads", c.heads, 1, kMaxHeads));
  if (c.heads % c.kv_heads != 0) r.fail("num_key_value_heads", fmt::format("{} does not divide the {} attention heads", c.kv_heads, c.heads));
  c.ffn = r.integer("intermediate_size", 1, kMaxWidth);
  c.vocab = r.integer("vocab_size", 1, kMaxVocab);
  c.head_dim = r.integer_or("head_dim", 0, 0, kMaxWidth);
  if (c.head_dim == 0 && c.hidden % c.heads != 0) r.fail("num_attention_heads", fmt::format("{} does not divide hidden_size {}", c.heads, c.hidden));
  if (c.hidden % c.heads == 0 && c.head_dim == c.hidden / c.heads) c.head_dim = 0;  // the default, said again
  c.swiglu = true;
  c.rms_norm = true;
  c.rope = true;
  const bool gemma = arch == "GemmaForCausalLM";
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", gemma);
  const std::string act = r.text_or("hidden_activation", r.text_or("hidden_act", gemma ? "gelu_pytorch_tanh" : "silu"));
  if (act == "gelu" || act == "gelu_pytorch_tanh" || act == "gelu_new") c.geglu = true;
  else if (act != "silu" && act != "swish") r.fail(r.has("hidden_activation") ? "hidden_activation" : "hidden_act", fmt::format("activation '{}' is not built (silu or gelu)", strings::printable(act)));
  c.qkv_bias = arch == "Qwen2ForCausalLM";
  if (r.boolean_or("attention_bias", false)) {
    c.qkv_bias = true;
    notes.push_back("attention_bias: Q/K/V biases built; an output-projection bias, if the model has one, is not counted");
  }
  if (r.boolean_or("mlp_bias", false)) r.fail("mlp_bias", "MLP biases are not built for this family");
  if (arch == "MixtralForCausalLM") {
    c.experts = static_cast<int>(r.integer("num_local_experts", 2, 4096));
    c.experts_per_token = static_cast<int>(r.integer("num_experts_per_tok", 1, c.experts));
  } else if (r.has("num_local_experts")) {
    r.fail("num_local_experts", fmt::format("experts in a {} config are not built", arch));
  }
  const std::int64_t positions = r.integer_or("max_position_embeddings", 4096, 1, kMaxPositions);
  c.max_positions = positions;
  c.seq_len = std::min(positions, kDefaultSeq);
  if (positions > kDefaultSeq)
    notes.push_back(fmt::format("{} positions: priced at {} tokens unless --options seq_len=N", positions, kDefaultSeq));
  if (r.has("sliding_window") && r.j["sliding_window"].is_number() && r.j["sliding_window"].get<double>() < static_cast<double>(positions))
    notes.push_back(fmt::format("sliding-window attention ({} tokens) is priced as full causal attention", r.j["sliding_window"].dump()));
  return c;
}

DecoderConfig gpt2(const Reader& r) {
  DecoderConfig c;
  c.hidden = r.integer("n_embd", 1, kMaxWidth);
  c.layers = static_cast<int>(r.integer("n_layer", 1, kMaxLayers));
  c.heads = static_cast<int>(r.integer("n_head", 1, kMaxHeads));
  if (c.hidden % c.heads != 0) r.fail("n_head", fmt::format("{} does not divide n_embd {}", c.heads, c.hidden));
  c.kv_heads = c.heads;
  c.ffn = r.integer_or("n_inner", 4 * c.hidden, 1, kMaxWidth);
  c.vocab = r.integer("vocab_size", 1, kMaxVocab);
  c.seq_len = c.max_positions = r.integer("n_positions", 1, kMaxPositions);  // also the learned position table's rows
  const std::string act = r.text_or("activation_function", "gelu_new");
  if (act.rfind("gelu", 0) != 0) r.fail("activation_function", fmt::format("'{}' is not built (GPT-2 uses gelu_new)", strings::printable(act)));
  c.norm_bias = true;
  c.linear_bias = true;
  c.learned_positions = true;
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", true);
  return c;
}

DecoderConfig gpt_neox(const Reader& r, std::vector<std::string>& notes) {
  DecoderConfig c;
  c.hidden = r.integer("hidden_size", 1, kMaxWidth);
  c.layers = static_cast<int>(r.integer("num_hidden_layers", 1, kMaxLayers));
  c.heads = static_cast<int>(r.integer("num_attention_heads", 1, kMaxHeads));
  if (c.hidden % c.heads != 0) r.fail("num_attention_heads", fmt::format("{} does not divide hidden_size {}", c.heads, c.hidden));
  c.kv_heads = c.heads;
  c.ffn = r.integer("intermediate_size", 1, kMaxWidth);
  c.vocab = r.integer("vocab_size", 1, kMaxVocab);
  const std::string act = r.text_or("hidden_act", "gelu");
  if (act.rfind("gelu", 0) != 0) r.fail("hidden_act", fmt::format("'{}' is not built (GPT-NeoX uses gelu)", strings::printable(act)));
  c.norm_bias = true;
  c.linear_bias = r.boolean_or("attention_bias", true);
  if (!c.linear_bias) r.fail("attention_bias", "GPT-NeoX without biases is not built");
  c.rope = true;
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  const std::int64_t positions = r.integer_or("max_position_embeddings", 2048, 1, kMaxPositions);
  c.max_positions = positions;
  c.seq_len = std::min(positions, kDefaultSeq);
  if (r.boolean_or("use_parallel_residual", true))
    notes.push_back("parallel residual (attention and MLP from the same input): the same parameters and FLOPs as sequential blocks");
  return c;
}

BertConfig bert(const Reader& r, bool qa) {
  BertConfig c;
  c.hidden = r.integer("hidden_size", 1, kMaxWidth);
  c.layers = static_cast<int>(r.integer("num_hidden_layers", 1, kMaxLayers));
  c.heads = static_cast<int>(r.integer("num_attention_heads", 1, kMaxHeads));
  if (c.hidden % c.heads != 0) r.fail("num_attention_heads", fmt::format("{} does not divide hidden_size {}", c.heads, c.hidden));
  c.intermediate = r.integer("intermediate_size", 1, kMaxWidth);
  c.vocab = r.integer("vocab_size", 1, kMaxVocab);
  c.max_positions = r.integer_or("max_position_embeddings", 512, 1, kMaxPositions);
  c.type_vocab = r.integer_or("type_vocab_size", 2, 1, 1 << 16);
  // relative_key(_query) adds a distance table per layer and a query-distance product per head: other
  // weights and work than the absolute positions built.
  if (const std::string pos = r.text_or("position_embedding_type", "absolute"); pos != "absolute")
    r.fail("position_embedding_type", fmt::format("'{}' is not built (absolute is)", strings::printable(pos)));
  if (r.boolean_or("add_cross_attention", false)) r.fail("add_cross_attention", "cross-attention layers are not built");
  const std::string act = r.text_or("hidden_act", "gelu");
  if (act.rfind("gelu", 0) != 0) r.fail("hidden_act", fmt::format("'{}' is not built (BERT uses gelu)", strings::printable(act)));
  c.pooler = !qa;  // BertForQuestionAnswering builds its encoder without the pooler
  c.qa_head = qa;
  return c;
}

}  // namespace

const std::vector<std::string>& hf_architectures() { return kArchitectures; }

bool is_hf_config(const json& j) { return j.is_object() && (j.contains("architectures") || j.contains("model_type")); }

NetworkInfo hf_network_json(const json& j, const std::string& where);

NetworkInfo hf_network(const std::string& text, const std::string& where) { return hf_network_parsed(parse_json(text, where), where); }

NetworkInfo hf_network_parsed(const json& j, const std::string& where) {
  try {
    return hf_network_json(j, where);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a setting has the wrong type ({})", where, strings::printable(e.what())));
  }
}

namespace {

// A checkpoint's quantization_config (transformers' AwqConfig, GPTQConfig, FbgemmFp8Config, FineGrainedFP8Config) as
// the weight format serving prices. A method or width gpuvs does not price is refused by name: pricing the model at
// 16 bits instead would be another model's answer.
NetworkInfo::Quantized quantization(const Reader& r) {
  const json& q = r.j["quantization_config"];
  if (!q.is_object()) r.fail("quantization_config", "must be an object");
  const Reader qr{q, r.where};
  const auto fail = [&](const std::string& key, const std::string& what) { r.fail("quantization_config." + key, what); };
  if (!qr.has("quant_method")) fail("quant_method", "missing");
  const std::string method = strings::lower(qr.text_or("quant_method", ""));
  NetworkInfo::Quantized out;
  if (method == "awq" || method == "gptq") {
    if (!qr.has("bits")) fail("bits", "missing");
    const auto bits = qr.integer("bits", 1, 16);
    if (bits != 4) fail("bits", fmt::format("{}-bit {} weights are not priced (4-bit are: int4-{})", bits, method, method));
    const auto group = qr.integer_or("group_size", 128, -1, 1 << 20);
    if (group == -1 || group == 0) fail("group_size", fmt::format("{}: one scale per output channel is not priced (groups of 16 to 1024 weights are)", group));
    if (group < 16 || group > 1024 || (group & (group - 1)) != 0)
      fail("group_size", fmt::format("{}: expected a power of two from 16 to 1024", group));
    out.format = "int4-" + method;
    out.group_size = static_cast<int>(group);
    out.source = fmt::format("its quantization_config (quant_method {}, bits 4, group_size {})", method, group);
  } else if (method == "fbgemm_fp8" || method == "fp8") {
    out.format = "fp8";
    out.source = fmt::format("its quantization_config (quant_method {})", method);
  } else {
    fail("quant_method", fmt::format("'{}' is not priced (priced: awq and gptq at 4 bits, fbgemm_fp8, fp8)", strings::printable(method)));
  }
  return out;
}

}  // namespace

NetworkInfo hf_network_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: $: a config must be a JSON object", where));
  const Reader r{j, where};
  if (!j.contains("architectures")) r.fail("architectures", "missing (gpuvs needs the model class, e.g. [\"LlamaForCausalLM\"])");
  if (!j["architectures"].is_array() || j["architectures"].empty() || !j["architectures"][0].is_string())
    r.fail("architectures", "must be a list naming the model class");
  const std::string arch = j["architectures"][0].get<std::string>();
  if (std::find(kArchitectures.begin(), kArchitectures.end(), arch) == kArchitectures.end())
    r.fail("architectures[0]", fmt::format("'{}' is not read (read: {})", strings::printable(arch), strings::join(kArchitectures, ", ")));
  const std::string stem = std::filesystem::path(where).parent_path().filename().string();
  const std::string name = stem.empty() ? std::filesystem::path(where).stem().string() : stem + "/" + std::filesystem::path(where).filename().string();
  std::vector<std::string> notes;
  NetworkInfo n;
  n.id = where;
  n.params_source = "the config's shape (no published figure in the file)";
  if (arch == "BertModel" || arch == "BertForQuestionAnswering") {
    const BertConfig c = bert(r, arch == "BertForQuestionAnswering");
    n.family = models::Family::encoder;
    n.sample_unit = "sequences";
    n.default_seq_len = std::min<std::int64_t>(384, c.max_positions);
    n.layers = c.layers;
    n.hidden = c.hidden;
    n.forward = [c](const NetworkOptions& o) { return build_bert(o, c); };
    n.description = fmt::format("{} from {} ({} layers, hidden {}, {} heads, MLP {}, vocabulary {})", arch, name, c.layers, c.hidden, c.heads,
                                c.intermediate, c.vocab);
  } else {
    DecoderConfig c = arch == "GPT2LMHeadModel" ? gpt2(r) : arch == "GPTNeoXForCausalLM" ? gpt_neox(r, notes) : llama_family(r, arch, notes);
    const std::string description = fmt::format(
        "{} from {} ({} layers, hidden {}, {} heads / {} KV, MLP {}{}, vocabulary {})", arch, name, c.layers, c.hidden, c.heads, c.kv_heads, c.ffn,
        c.experts > 0 ? fmt::format(" x {} experts, {} per token", c.experts, c.experts_per_token) : "", c.vocab);
    NetworkInfo d = decoder_network(c, where, description, "$.num_local_experts");
    d.params_source = n.params_source;
    n = std::move(d);
  }
  if (!notes.empty()) n.description += "; approximated: " + strings::join(notes, "; ");
  if (r.has("quantization_config")) n.quantized = quantization(r);
  return n;
}

}  // namespace gpuvs::import
