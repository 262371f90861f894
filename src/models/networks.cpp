// SPDX-License-Identifier: Apache-2.0
#include "models/networks.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "ir/autodiff.hpp"
#include "models/builder.hpp"
#include "models/sequential_presets.hpp"

#include <charconv>
#include <cmath>

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {

/// 6738415616 -> "6,738,415,616".
std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

constexpr const char* kSizedRange = "1e7 to 2e12 parameters (10m to 2t)";
constexpr const char* kSizedRule =
    "width = 128 x layers, layers a multiple of 4 from 8 up (head size 128, SwiGLU 8/3 x width rounded up to 256, "
    "RMSNorm, RoPE, no biases, untied embeddings)";

NetworkInfo sized_decoder_info(const std::string& id) {
  const SizedDecoder d = sized_decoder_for_id(id);
  const DecoderConfig cfg = d.config;
  return {id,
          fmt::format("LLaMA-style decoder built to {:g} parameters by the rule {}: {}; {} parameters", d.requested,
                      kSizedRule, describe_shape(cfg), with_commas(d.params)),
          Family::decoder, "sequences", cfg.seq_len, static_cast<double>(d.params),
          fmt::format("built to size by the rule width = 128 x layers (the aspect ratio of LLaMA 7B/13B and GPT-3 "
                      "175B), layers nearest the request: exact count {}",
                      with_commas(d.params)),
          cfg.layers, cfg.hidden, [cfg](const NetworkOptions& o) { return build_decoder(o, cfg); }, cfg};
}

NetworkInfo decoder_info(const std::string& id, const std::string& desc, double published, const std::string& source) {
  const DecoderConfig cfg = decoder_preset(id);
  return {id, desc, Family::decoder, "sequences", cfg.seq_len, published, source, cfg.layers, cfg.hidden,
          [cfg](const NetworkOptions& o) { return build_decoder(o, cfg); }, cfg};
}

// The `gpt` workload's bounds: beyond any published dense model by a wide margin, small enough that every
// count stays exact in 64 bits.
constexpr std::int64_t kGptMaxLayers = 1024, kGptMaxHidden = 1 << 17, kGptMaxHeads = 1 << 14, kGptMaxFfn = 1 << 20,
                       kGptMaxVocab = 1 << 22, kGptMaxSeq = 1 << 20;

std::int64_t gpt_int(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t fallback,
                     std::int64_t hi) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  const std::string& text = it->second;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 1 || v > hi)
    throw InputError(fmt::format("workload {}: option {}={} is not a whole number in [1, {}]", kGptWorkload, key,
                                 strings::printable(text), hi));
  return v;
}

NetworkInfo gpt_info(const DecoderConfig& cfg) {
  const std::int64_t n = decoder_params(cfg);
  return {kGptWorkload,
          fmt::format("Megatron-LM GPT (Narayanan et al. 2021: GELU MLP, LayerNorm and linear biases, learned positions, "
                      "tied embeddings) from its shape options: {}, {} positions; {} parameters",
                      describe_shape(cfg), cfg.seq_len, with_commas(n)),
          Family::decoder, "sequences", cfg.seq_len, static_cast<double>(n),
          fmt::format("built from the shape options: exact count {} (Megatron's 12lh^2(1 + 13/12h + (V+s)/12lh) plus "
                      "the final LayerNorm's 2h)",
                      with_commas(n)),
          cfg.layers, cfg.hidden, [cfg](const NetworkOptions& o) { return build_decoder(o, cfg); }, cfg};
}

std::vector<NetworkInfo> make_networks() {
  std::vector<NetworkInfo> v;
  v.push_back({"seed-mlp", "Keras Dense(128, relu, input 780) -> Dropout(0.2) -> Dense(10, softmax)", Family::mlp, "samples",
               0, 101258, "Keras model.summary() of the seed model (780 inputs)", 0, 0, [](const NetworkOptions& o) {
                 BuildOptions b{o.batch, o.dtype, o.training ? Mode::train : Mode::eval, false};
                 return build_graph(sequential_preset("seed-mlp"), b);
               }});
  v.push_back({"resnet50", "ResNet-50 v1.5, ImageNet 224x224, 1000 classes", Family::cnn, "images", 0, 25557032,
               "torchvision resnet50 (25,557,032 parameters)", 0, 0,
               [](const NetworkOptions& o) { return build_resnet(o, {3, 4, 6, 3}); }});
  v.push_back({"resnet152", "ResNet-152 v1.5, ImageNet 224x224, 1000 classes", Family::cnn, "images", 0, 60192808,
               "torchvision resnet152 (60,192,808 parameters)", 0, 0,
               [](const NetworkOptions& o) { return build_resnet(o, {3, 8, 36, 3}); }});
  v.push_back({"vgg16", "VGG-16, ImageNet 224x224, 1000 classes", Family::cnn, "images", 0, 138357544,
               "torchvision vgg16 (138,357,544 parameters)", 0, 0, [](const NetworkOptions& o) { return build_vgg16(o); }});
  v.push_back({"bert-base", "BERT-base (12 layers, 768 hidden) with a SQuAD span head", Family::encoder, "sequences", 384,
               110e6, "Devlin et al. 2018: BERT-base 110M", 12, 768,
               [](const NetworkOptions& o) { return build_bert(o, 12, 768, 12); }});
  v.push_back({"bert-large", "BERT-large (24 layers, 1024 hidden) with a SQuAD span head", Family::encoder, "sequences", 384,
               335141888, "bert-large-uncased with pooler, 335,141,888 (Hugging Face); Devlin et al.: 340M", 24, 1024,
               [](const NetworkOptions& o) { return build_bert(o, 24, 1024, 16); }});
  v.push_back({"sd15-unet", "Stable Diffusion 1.5 denoiser (UNet, 512x512 images as 64x64x4 latents, 77 text tokens)",
               Family::unet, "latents", 0, 859520964, "diffusers UNet2DConditionModel for SD 1.5: 859,520,964", 0, 0,
               [](const NetworkOptions& o) { return build_sd15_unet(o); }});
  v.push_back(decoder_info("mpt-125m", "MPT 125M (llm-foundry: 12 layers, d 768)", 125e6,
                           "llm-foundry mpt-125m.yaml: nominal 125M (its benchmarking README's NumParams, 125,311,488 "
                           "at 2048 tokens, also counts learned positions and biases)"));
  v.push_back(decoder_info("mpt-760m", "MPT 760M (llm-foundry: 24 layers, d 1536)", 760e6, "llm-foundry MPT 760M"));
  v.push_back(decoder_info("mpt-1b", "MPT 1B (llm-foundry: 24 layers, d 2048)", 1.3e9, "mosaicml mpt-1b: 1.3B"));
  v.push_back(decoder_info("mpt-3b", "MPT 3B (llm-foundry: 32 layers, d 2560)", 2.7e9, "llm-foundry MPT 3B: 2.7B"));
  v.push_back(decoder_info("mpt-7b", "MPT 7B (32 layers, d 4096)", 6.7e9, "mosaicml/mpt-7b: 6.7B"));
  v.push_back(decoder_info("mpt-13b", "MPT 13B (40 layers, d 5120)", 13e9, "llm-foundry MPT 13B"));
  v.push_back(decoder_info("mpt-30b", "MPT 30B (48 layers, d 7168)", 30e9, "mosaicml/mpt-30b: 30B"));
  v.push_back(decoder_info("mpt-70b", "MPT 70B (llm-foundry mpt-70b.yaml: 80 layers, d 8192, 64 heads)", 64862437376,
                           "llm-foundry scripts/train/benchmarking/README.md: NumParams 64,862,437,376 at 2048 tokens "
                           "(nominal 70B; that count includes learned positions and biases, 23,994,368 more than this "
                           "shape)"));
  v.push_back(decoder_info("llama-7b", "LLaMA 7B (32 layers, d 4096, SwiGLU 11008)", 6738415616, "LLaMA-7B: 6,738,415,616"));
  v.push_back(decoder_info("llama3-8b", "Llama 3 8B (32 layers, d 4096, 8 KV heads, vocab 128256)", 8030261248,
                           "Meta-Llama-3-8B: 8,030,261,248"));
  v.push_back(decoder_info("llama-13b", "LLaMA 13B (40 layers, d 5120)", 13015864320, "LLaMA-13B: 13,015,864,320"));
  v.push_back(decoder_info("llama-70b", "Llama 2 70B (80 layers, d 8192, 8 KV heads)", 68976648192,
                           "Llama-2-70b: 68,976,648,192"));
  v.push_back(decoder_info("llama2-7b", "Llama 2 7B (32 layers, d 4096, SwiGLU 11008, 4096 tokens)", 6738415616,
                           "Llama-2-7b-hf: 6,738,415,616"));
  v.push_back(decoder_info("llama2-70b", "Llama 2 70B (80 layers, d 8192, 8 KV heads, 4096 tokens; as llama-70b)",
                           68976648192, "Llama-2-70b-hf: 68,976,648,192"));
  v.push_back(decoder_info("llama3-70b", "Llama 3 70B (80 layers, d 8192, 8 KV heads, vocab 128256, 8192 tokens)",
                           70553706496, "Meta-Llama-3-70B: 70,553,706,496"));
  v.push_back(decoder_info("llama3.1-8b", "Llama 3.1 8B (the Llama 3 8B shape; RoPE scaled to 128K positions)", 8030261248,
                           "Meta-Llama-3.1-8B (Hugging Face config, the Llama 3 8B shape): 8,030,261,248"));
  v.push_back(decoder_info("llama3.1-70b", "Llama 3.1 70B (the Llama 3 70B shape; RoPE scaled to 128K positions)", 70553706496,
                           "Meta-Llama-3.1-70B (Hugging Face config, the Llama 3 70B shape): 70,553,706,496"));
  v.push_back(decoder_info("llama3.3-70b", "Llama 3.3 70B (the Llama 3.1 70B architecture, new weights)", 70553706496,
                           "Llama-3.3-70B-Instruct (Hugging Face config, the Llama 3.1 70B shape): 70,553,706,496"));
  v.push_back(decoder_info("llama3.1-405b",
                           "Llama 3.1 405B (126 layers, d 16384, 128 heads, 8 KV heads, SwiGLU 53248, vocab 128256, "
                           "8192 tokens)",
                           405853388800, "Meta-Llama-3.1-405B (Hugging Face config): 405,853,388,800"));
  v.push_back(decoder_info("mistral-7b",
                           "Mistral 7B (32 layers, d 4096, 8 KV heads, SwiGLU 14336, 8192 tokens; its 4096-token "
                           "sliding window is priced as full causal attention)",
                           7241732096, "Mistral-7B-v0.1: 7,241,732,096"));
  v.push_back(decoder_info("mixtral-8x7b",
                           "Mixtral 8x7B (32 layers, d 4096, 8 KV heads, 8 SwiGLU experts of 14336, 2 per token, "
                           "vocab 32000; 12.9 B parameters active per token)",
                           46702792704, "Mixtral-8x7B-v0.1 (Hugging Face config): 46,702,792,704"));
  v.push_back(decoder_info("gpt2-124m", "GPT-2 124M (12 layers, d 768, 1024 learned positions)", 124439808,
                           "Hugging Face gpt2 (GPT2LMHeadModel, head tied): 124,439,808"));
  v.push_back(decoder_info("gpt2-350m", "GPT-2 medium 350M (24 layers, d 1024, 1024 learned positions)", 354823168,
                           "Hugging Face gpt2-medium (GPT2LMHeadModel, head tied): 354,823,168"));
  v.push_back(decoder_info("gpt2-774m", "GPT-2 large 774M (36 layers, d 1280, 1024 learned positions)", 774030080,
                           "Hugging Face gpt2-large (GPT2LMHeadModel, head tied): 774,030,080"));
  v.push_back(decoder_info("gpt2-1558m", "GPT-2 XL 1.5B (48 layers, d 1600, 25 heads, 1024 learned positions)",
                           1557611200, "Hugging Face gpt2-xl (GPT2LMHeadModel, head tied): 1,557,611,200"));
  v.push_back(decoder_info("gpt3-175b",
                           "GPT-3 175B (96 layers, d 12288, 96 heads, 2048 learned positions, tied embeddings; its "
                           "alternating locally banded sparse layers are priced as dense causal attention)",
                           175e9, "Brown et al. 2020: 175B (this shape counts 174,604,259,328)"));
  return v;
}

}  // namespace

std::string_view family_name(Family f) {
  switch (f) {
    case Family::mlp: return "mlp";
    case Family::cnn: return "cnn";
    case Family::encoder: return "encoder";
    case Family::decoder: return "decoder";
    case Family::unet: return "unet";
    case Family::keras: return "keras";
    case Family::onnx: return "onnx";
  }
  return "?";
}

std::string_view lora_targets_name(LoraTargets t) {
  switch (t) {
    case LoraTargets::all: return "all";
    case LoraTargets::qkv: return "qkv";
    case LoraTargets::attention: return "attention";
    case LoraTargets::mlp: return "mlp";
  }
  return "?";
}

const std::vector<NetworkInfo>& networks() {
  static const std::vector<NetworkInfo> v = make_networks();
  return v;
}

const NetworkInfo& network(const std::string& id) {
  for (const auto& n : networks())
    if (n.id == id) return n;
  std::vector<std::string> ids;
  for (const auto& n : networks()) ids.push_back(n.id);
  throw InputError(fmt::format(
      "unknown workload '{}' (closest: {}; or decoder-<size> such as decoder-7b; or gpt with layers, hidden and heads "
      "options; or give a .toml/.json model file)",
      strings::printable(id), strings::join(strings::closest(id, ids), ", ")));
}

const std::vector<std::string>& gpt_shape_keys() {
  static const std::vector<std::string> keys = {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab"};
  return keys;
}

DecoderConfig gpt_config(const std::map<std::string, std::string>& options) {
  std::vector<std::string> missing;
  for (const char* key : {"layers", "hidden", "heads"})
    if (!options.count(key)) missing.push_back(key);
  if (!missing.empty())
    throw InputError(fmt::format("workload {} needs its shape as options: {} missing (Megatron's 1.7B, for example: "
                                 "--options 'layers=24;hidden=2304;heads=24')",
                                 kGptWorkload, strings::join(missing, ", ")));
  DecoderConfig c;
  c.layers = static_cast<int>(gpt_int(options, "layers", 0, kGptMaxLayers));
  c.hidden = gpt_int(options, "hidden", 0, kGptMaxHidden);
  c.heads = static_cast<int>(gpt_int(options, "heads", 0, kGptMaxHeads));
  c.kv_heads = static_cast<int>(gpt_int(options, "kv_heads", c.heads, kGptMaxHeads));
  c.ffn = gpt_int(options, "ffn", 4 * c.hidden, kGptMaxFfn);
  c.vocab = gpt_int(options, "vocab", 51200, kGptMaxVocab);
  c.seq_len = gpt_int(options, "seq_len", 2048, kGptMaxSeq);
  if (c.hidden % c.heads != 0)
    throw InputError(fmt::format("workload {}: hidden={} does not split into heads={} (hidden must be a multiple of heads)",
                                 kGptWorkload, c.hidden, c.heads));
  if (c.heads % c.kv_heads != 0)
    throw InputError(fmt::format("workload {}: heads={} does not split into kv_heads={} groups (heads must be a "
                                 "multiple of kv_heads)",
                                 kGptWorkload, c.heads, c.kv_heads));
  c.norm_bias = true;
  c.linear_bias = true;
  c.learned_positions = true;
  c.tied_embeddings = true;
  return c;
}

NetworkInfo sequential_network(const ModelSpec& spec, const std::string& description) {
  return {spec.name, description, Family::mlp, "samples", 0, static_cast<double>(spec.param_count()),
          "the model file", 0, 0, [spec](const NetworkOptions& o) {
            return build_graph(spec, {o.batch, o.dtype, o.training ? Mode::train : Mode::eval, false});
          }};
}

NetworkInfo builtin_network(const std::string& id, const std::map<std::string, std::string>& options) {
  if (id == kGptWorkload) return gpt_info(gpt_config(options));
  for (const auto& key : gpt_shape_keys())
    if (options.count(key))
      throw InputError(fmt::format("option {} sets the shape of workload {} only; workload '{}' has its own shape", key,
                                   kGptWorkload, strings::printable(id)));
  for (const auto& n : networks())
    if (n.id == id) return n;
  if (is_sized_decoder_id(id)) return sized_decoder_info(id);
  return network(id);  // unknown id: the closest-ids error
}

std::int64_t tp_padded_vocab(std::int64_t vocab, int tp) {
  if (tp <= 1) return vocab;
  const std::int64_t multiple = 128 * static_cast<std::int64_t>(tp);
  return (vocab + multiple - 1) / multiple * multiple;
}

void require_whole_model(const NetworkOptions& opt, const std::string& builder) {
  auto refuse = [&](const std::string& what) {
    throw InputError(fmt::format("{} is for decoders only: {} builds the whole model on one rank", what,
                                 strings::printable(builder)));
  };
  if (opt.tensor_parallel != 1) refuse(fmt::format("tensor_parallel {}", opt.tensor_parallel));
  if (opt.stage_layers != 0) refuse(fmt::format("stage_layers {}", opt.stage_layers));
  if (!opt.first_stage) refuse("first_stage false");
  if (!opt.last_stage) refuse("last_stage false");
}

Graph build_network(const NetworkInfo& net, const NetworkOptions& opt) {
  if (opt.batch < 1) throw InputError(fmt::format("batch must be at least 1, got {}", opt.batch));
  if (opt.seq_len < 0) throw InputError(fmt::format("seq_len must be positive, got {}", opt.seq_len));
  // Decoders check their own parallel layout (build_decoder); the other builders have none.
  if (net.family != Family::decoder) require_whole_model(opt, net.id);
  // The IR's own checks, in the forward pass or the training step (a packed attention gradient past 2^56
  // elements), are the file's sizes or the options' (a decoder whose width the heads do not split).
  Graph g;
  try {
    g = net.forward(opt);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: {}", net.id, strings::printable(e.what())));
  }
  try {
    if (opt.training) append_training_step(g, AdamConfig{});
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: training cannot be priced: {}", net.id, strings::printable(e.what())));
  }
  return g;
}

DecoderConfig sized_decoder_config(int layers) {
  DecoderConfig c;
  c.layers = layers;
  c.hidden = 128 * static_cast<std::int64_t>(layers);
  c.heads = c.kv_heads = layers;  // head size 128
  c.ffn = (8 * c.hidden + 3 * 256 - 1) / (3 * 256) * 256;  // ceil(8/3 x width) to a multiple of 256
  c.swiglu = true;
  c.vocab = 32000;
  c.seq_len = 2048;
  c.rms_norm = true;
  c.rope = true;
  return c;
}

std::int64_t decoder_params(const DecoderConfig& c) {
  const std::int64_t d = c.hidden, hd = c.head_size(), q = c.heads * hd, kv = c.kv_heads * hd, f = c.ffn;
  const std::int64_t norm = c.norm_bias ? 2 * d : d;
  const std::int64_t experts = c.experts > 0 ? c.experts : 1;
  std::int64_t block = d * q + 2 * d * kv + q * d + experts * (c.swiglu ? 3 : 2) * d * f + 2 * norm;
  if (c.experts > 0) block += d * c.experts;  // the router
  if (c.linear_bias) block += q + 2 * kv + d + (c.swiglu ? 2 * f : f) + d;
  else if (c.qkv_bias) block += q + 2 * kv;
  // Each term fits 64 bits for the sizes a config may give (widths to 2^20, 4,096 experts, a vocabulary of
  // 2^24); the layers times a block may not (4,096 layers of 2^54): the sum is checked.
  std::int64_t total = 0;
  const bool over = __builtin_mul_overflow(std::int64_t{c.layers}, block, &total) || __builtin_add_overflow(total, norm, &total) ||
                    __builtin_add_overflow(total, c.vocab * d * (c.tied_embeddings ? 1 : 2), &total) ||
                    __builtin_add_overflow(total, c.learned_positions ? c.seq_len * d : 0, &total);
  if (over || total > (std::int64_t{1} << 62))
    throw InputError(fmt::format("a decoder of {} layers, width {}, FFN {}{}: more than 2^62 parameters", c.layers, d, f,
                                 c.experts > 0 ? fmt::format(", {} experts", c.experts) : ""));
  return total;
}

SizedDecoder sized_decoder(double params, const std::string& what) {
  if (!(params >= kSizedDecoderMinParams && params <= kSizedDecoderMaxParams))
    throw InputError(fmt::format("{}: {:g} parameters is outside the sizes a decoder is built to, {}", what, params,
                                 kSizedRange));
  SizedDecoder best;
  best.requested = params;
  double best_dist = HUGE_VAL;
  // The count grows with the layers (about 196608 x layers^3), so the nearest is where it crosses the request.
  // From 8 layers up only multiples of 4 are built, so tensor- and pipeline-parallel plans can split them
  // (heads = layers under this rule) as real model families are shaped.
  for (int layers = 1;; layers += layers < 8 ? 1 : 4) {
    const DecoderConfig cfg = sized_decoder_config(layers);
    const std::int64_t n = decoder_params(cfg);
    const double dist = std::fabs(std::log(static_cast<double>(n) / params));
    if (dist < best_dist) {
      best_dist = dist;
      best.config = cfg;
      best.params = n;
    }
    if (static_cast<double>(n) >= params) break;
  }
  return best;
}

double parse_decoder_size(const std::string& text, const std::string& what) {
  double scale = 1;
  std::string_view num = text;
  if (!num.empty()) {
    switch (num.back()) {
      case 'k': case 'K': scale = 1e3; break;
      case 'm': case 'M': scale = 1e6; break;
      case 'b': case 'B': scale = 1e9; break;
      case 't': case 'T': scale = 1e12; break;
      default: break;
    }
    if (scale != 1) num.remove_suffix(1);
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (num.empty() || ec != std::errc() || end != num.data() + num.size() || !std::isfinite(v))
    throw InputError(fmt::format("{}: '{}' is not a size (a number with an optional k, m, b or t suffix, such as 7b, "
                                 "1.3b, 500m, 7e9), from {}",
                                 what, strings::printable(text), kSizedRange));
  v *= scale;
  if (!(v >= kSizedDecoderMinParams && v <= kSizedDecoderMaxParams))
    throw InputError(fmt::format("{}: {:g} parameters is outside the sizes a decoder is built to, {}", what, v,
                                 kSizedRange));
  return v;
}

bool is_sized_decoder_id(const std::string& id) {
  return id.size() >= 8 && strings::lower(id.substr(0, 8)) == "decoder-";
}

SizedDecoder sized_decoder_for_id(const std::string& id) {
  if (!is_sized_decoder_id(id)) throw InputError(fmt::format("'{}' is not a decoder-<size> id", strings::printable(id)));
  const std::string what = fmt::format("workload '{}'", strings::printable(id));
  return sized_decoder(parse_decoder_size(id.substr(8), what), what);
}

std::string sized_decoder_id(double params) {
  static const std::pair<double, const char*> scales[] = {{1e12, "t"}, {1e9, "b"}, {1e6, "m"}, {1e3, "k"}};
  for (const auto& [scale, suffix] : scales)
    if (params >= scale) return fmt::format("decoder-{}{}", params / scale, suffix);
  return fmt::format("decoder-{}", params);
}

std::string describe_shape(const DecoderConfig& c) {
  return fmt::format("{} layer{}, width {}, {} head{}{}, {} {}, vocabulary {}", c.layers, c.layers == 1 ? "" : "s",
                     c.hidden, c.heads, c.heads == 1 ? "" : "s",
                     c.kv_heads != c.heads ? fmt::format(" ({} KV)", c.kv_heads) : "", c.swiglu ? "SwiGLU" : "GELU MLP",
                     c.ffn, c.vocab);
}

std::int64_t param_count(const Graph& g, bool trainable_only) {
  std::int64_t n = 0;
  for (const auto& node : g.nodes())
    if (node.op == OpKind::param && (node.trainable || !trainable_only)) n += numel(node.shape);
  return n;
}

}  // namespace gpuvs::models
