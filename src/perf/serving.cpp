// SPDX-License-Identifier: Apache-2.0
#include "perf/serving.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "models/networks.hpp"
#include "perf/achievable.hpp"
#include "perf/band.hpp"
#include "perf/collective.hpp"
#include "perf/constants.hpp"
#include "perf/device_view.hpp"
#include "perf/efficiency.hpp"
#include "perf/maturity.hpp"
#include "perf/predict.hpp"
#include "perf/request_error.hpp"
#include "perf/serving_engine.hpp"
#include "perf/system_facts.hpp"
#include "perf/weight_format.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

namespace {

const std::vector<std::string> kServingKeys = {"prompt_len", "gen_len", "tp", "framework", "kv_dtype", "ngl", "host_gbs", "arrival", "release", "group_size", "bpw"};

// The thresholds and fractions below are data/system.toml's (perf/system_facts.hpp): llama.cpp's
// matrix-vector row limit and ggml's offload threshold, the gap between queued kernels, host STREAM.


/// What one iteration processes on every rank.
struct TokenMix {
  double decode_seqs = 0;     // sequences generating one token
  double decode_context = 0;  // their mean cached context
  double prefill_tokens = 0;  // prompt tokens
  double prefill_span = 0;    // mean causal span a prompt token attends over
  double logits = 0;          // tokens that need the LM head
};

struct Setup {
  models::DecoderConfig d;
  const catalog::Gpu* gpu = nullptr;
  const WeightFormat* format = nullptr;
  const ServingEngine* engine = nullptr;
  int tp = 1;
  int layer_split = 1;  // GPUs the layers are split across: each passes the activations to the next
  double kv_elem_bytes = 2;
  double matrix_peak = 0, attention_peak = 0, vector_peak = 0, bandwidth = 0;
  EfficiencyParams eff;
  // The fraction of DRAM bandwidth the decode-attention kernel reaches reading the KV cache: the streaming
  // fraction, or less where the card's SMs cannot keep enough bytes in flight (perf/constants.hpp).
  double decode_mem_max = 0;
  // The same for an engine's matrix-vector kernels (a few tokens through a weight): the streaming fraction, or
  // ggml's own class (perf/constants.hpp ggml_gemv_bytes_per_sm_cycle).
  double gemv_mem_max = 0;
  // The same for its matrix-vector kernels over a weight-only format (dequantized in registers): gemv_mem_max, or
  // ggml's class where the engine's dequantizing kernels are of it (ServingEngine::dequant_gemv_family).
  double dequant_gemv_mem_max = 0;
  Link link;
  WeightBytes weights;  // whole model (each rank holds 1/tp of the projections and the vocabulary)
  // llama.cpp-style offload: blocks from gpu_layers on run from system RAM (weights and their KV cache),
  // on the CPU for a few rows at a time, or copied over the host link for a batched GEMM on the GPU.
  int gpu_layers = 0;
  double host_bandwidth = 0, host_link = 0;
  double fixed = 1;  // a measured stack's fixed costs per iteration over the engine profile's (StackRatios::fixed)
};

/// Tokens rounded up to the engine's whole KV-cache blocks.
std::int64_t cache_blocks(const ServingEngine& engine, std::int64_t tokens) {
  return (tokens + engine.kv_block_tokens - 1) / engine.kv_block_tokens * engine.kv_block_tokens;
}

/// One projection: m tokens through a k x n weight stored at `bits`.
void price_linear(const Setup& s, double m, double k, double n, double bits, IterationCost& c) {
  if (m <= 0) return;
  const double elems = k * n;
  const double act = s.engine->activation_bytes;
  const double flops = 2.0 * m * k * n;
  const double eff = gemm_efficiency(GemmDims{m, n, k, 1}, s.eff.gemm_max, s.eff, s.gpu->sm_count);
  double compute = flops / (s.matrix_peak * eff);
  double weight_read = elems * bits / 8.0;
  if (s.format->weight_only) {
    // The engine's own quantized kernels (ExLlamaV2's) up to their row limit, whatever the format; else the format's rule.
    const int engine_rows = s.engine->fused_quant_rows;
    const double fused_rows = engine_rows > 0 ? engine_rows : system_facts().vector_kernel_rows;
    if ((engine_rows > 0 || s.format->dequant_pass) && m > fused_rows) {
      // A dequantize kernel reads the packed weights and writes a 16-bit copy; the GEMM reads the copy.
      const double pass = elems * (bits / 8.0 + 2.0);
      const double t = pass / (s.bandwidth * memory_efficiency(pass, s.eff));
      c.dequant_s += t;
      c.seconds += t;
      weight_read = elems * 2.0;
    } else {
      // Dequantized in registers, once per weight per 128-row tile of tokens, on the CUDA cores.
      compute += elems * s.format->dequant_ops * std::ceil(m / s.eff.tile_m) / s.vector_peak;
    }
  }
  double bytes = weight_read + m * (k + n) * act;
  if (act > 2.0 && m > system_facts().vector_kernel_rows) {
    // FP32 activations around a 16-bit batched GEMM: the input converted to FP16 and the result back, each
    // a read and a write by its own kernel.
    const double convert = m * (k + n) * (act + 2.0);
    const double t = convert / (s.bandwidth * memory_efficiency(convert / 2.0, s.eff));
    c.elementwise_s += t;
    c.seconds += t;
    bytes -= m * (k + n) * (act - 2.0);  // the GEMM itself reads and writes FP16
  }
  EfficiencyParams kernel = s.eff;
  if (m <= system_facts().vector_kernel_rows)  // a matrix-vector kernel
    kernel.mem_max = s.format->weight_only ? s.dequant_gemv_mem_max : s.gemv_mem_max;
  const double memory = bytes / (s.bandwidth * memory_efficiency(bytes, kernel));
  c.gemm_s += std::max(compute, memory);
  c.seconds += std::max(compute, memory);
  c.weight_bytes_read += weight_read;
  c.flops += flops;
}

/// The fraction of the format's dense peak the best GEMMs reach on `gpu` (perf/achievable.hpp), scaled by
/// the calibration's GEMM ratio when it measured this card.
double serving_gemm_fraction(const catalog::Catalog& cat, const catalog::Gpu& gpu, const std::string& math, const Calibration* cal) {
  const auto a = achievable(cat, gpu, "gemm-" + math);
  double f = a ? a->fraction : system_facts().bench_gemm_tensor_datacenter;
  if (cal && cal->gpu_id == gpu.id) {
    const Precision p = math == "bf16" ? Precision::bf16 : math == "fp8" ? Precision::amp_fp8 : Precision::fp16;
    if (const auto it = cal->gemm_ratio.find(p); it != cal->gemm_ratio.end()) f *= it->second;
  }
  return std::min(0.98, f);
}

/// One transformer block on every rank: its projections (priced on `s`), attention, elementwise work and
/// tensor-parallel all-reduces; `mem` (when given) prices attention and elementwise work instead (an
/// offloaded block's cache and activations live in system RAM).
void price_block(const Setup& s, int l, const TokenMix& mix, IterationCost& c, const Setup* mem) {
  const auto& d = s.d;
  const double tp = s.tp;
  const double h = static_cast<double>(d.hidden), hd = static_cast<double>(d.head_size());
  const double q_heads = d.heads / tp, kv_heads = std::max(1.0, d.kv_heads / tp);
  const double ffn = static_cast<double>(d.ffn) / tp;
  const double m = mix.decode_seqs + mix.prefill_tokens;
  const Setup& a = mem ? *mem : s;
  auto bits = [&](const char* t) { return tensor_bits(*s.format, t, l, d.layers); };
  // Column-parallel Q, K, V, gate and up; row-parallel output and down projections (Megatron's split).
  price_linear(s, m, h, q_heads * hd, bits("attn_q"), c);
  price_linear(s, m, h, kv_heads * hd, bits("attn_k"), c);
  price_linear(s, m, h, kv_heads * hd, bits("attn_v"), c);
  price_linear(s, m, q_heads * hd, h, bits("attn_output"), c);
  if (d.experts > 0) {
    // Mixture of experts: the router, then each expert a batch of tokens touches. With m tokens each
    // choosing k of E experts at random, E (1 - (1 - k/E)^m) distinct experts have their weights read, and
    // they share the m k token-slots.
    price_linear(s, m, h, d.experts, 16.0, c);
    const double E = d.experts, k = d.experts_per_token;
    const double touched = E * (1.0 - std::pow(1.0 - k / E, m));
    const double rows = m * k / touched;
    IterationCost one;
    if (d.swiglu) price_linear(s, rows, h, ffn, bits("ffn_gate"), one);
    price_linear(s, rows, h, ffn, bits("ffn_up"), one);
    price_linear(s, rows, ffn, h, bits("ffn_down"), one);
    c.gemm_s += one.gemm_s * touched;
    c.dequant_s += one.dequant_s * touched;
    c.elementwise_s += one.elementwise_s * touched;
    c.seconds += one.seconds * touched;
    c.weight_bytes_read += one.weight_bytes_read * touched;
    c.flops += one.flops * touched;
  } else {
    if (d.swiglu) price_linear(s, m, h, ffn, bits("ffn_gate"), c);
    price_linear(s, m, h, ffn, bits("ffn_up"), c);
    price_linear(s, m, ffn, h, bits("ffn_down"), c);
  }
  // Attention. Decode reads every cached K and V of its sequences; prefill does causal FLOPs (and, unfused,
  // writes and reads the score matrix).
  double attn = 0;
  if (mix.decode_seqs > 0) {
    const double kv = mix.decode_seqs * mix.decode_context * 2.0 * kv_heads * hd * s.kv_elem_bytes;
    const double flops = 4.0 * mix.decode_seqs * q_heads * hd * mix.decode_context;
    const double bytes = kv + mix.decode_seqs * 2.0 * q_heads * hd * 2.0;
    EfficiencyParams decode = a.eff;
    if (!mem) decode.mem_max = s.decode_mem_max;  // a cache in system RAM streams at the host's rate
    attn += std::max(flops / (a.attention_peak * a.eff.attention_max), bytes / (a.bandwidth * memory_efficiency(bytes, decode)));
    c.kv_bytes_read += kv;
    c.flops += flops;
  }
  if (mix.prefill_tokens > 0) {
    const double flops = 4.0 * mix.prefill_tokens * q_heads * hd * mix.prefill_span;
    double bytes = mix.prefill_tokens * (2.0 * q_heads + 2.0 * kv_heads) * hd * 2.0 + mix.prefill_tokens * 2.0 * kv_heads * hd * s.kv_elem_bytes;
    if (s.engine->attention == "unfused") bytes += 4.0 * q_heads * mix.prefill_tokens * mix.prefill_span * 2.0;
    attn += std::max(flops / (a.attention_peak * a.eff.attention_max), bytes / (a.bandwidth * memory_efficiency(bytes, a.eff)));
    c.flops += flops;
  }
  // The new tokens' K and V written to the cache.
  const double kv_write = m * 2.0 * kv_heads * hd * s.kv_elem_bytes;
  attn += kv_write / (a.bandwidth * memory_efficiency(kv_write, a.eff));
  c.attention_s += attn;
  c.seconds += attn;
  // Two norms and two residual adds over the hidden state, RoPE on Q and K, the MLP activation.
  const double mlp_width = ffn * (d.experts > 0 ? d.experts_per_token : 1);
  const double ew = m * s.engine->activation_bytes * (2.0 * 2.0 * h + 2.0 * 3.0 * h + 2.0 * (q_heads + kv_heads) * hd + 3.0 * mlp_width);
  const double ew_s = ew / (a.bandwidth * memory_efficiency(ew, a.eff));
  c.elementwise_s += ew_s;
  c.seconds += ew_s;
  // Tensor parallel: the attention output and the MLP output are all-reduced.
  if (s.tp > 1) {
    const double t = 2.0 * allreduce_seconds(m * h * 2.0, s.tp, s.link);
    c.comm_s += t;
    c.seconds += t;
  }
}

IterationCost iteration(const Setup& s, const TokenMix& mix) {
  IterationCost c;
  const auto& d = s.d;
  const double tp = s.tp;
  const double h = static_cast<double>(d.hidden);
  const double m = mix.decode_seqs + mix.prefill_tokens;
  for (int l = 0; l < d.layers; ++l) {
    if (l >= s.gpu_layers) {
      // An offloaded block: its weights and KV cache sit in system RAM. Few rows: the CPU streams them at
      // DDR bandwidth (its arithmetic hides under that); a batch: the weights cross the host link to the
      // GPU for its GEMMs. Norms, attention and the cache stay with the CPU's memory.
      const double before = c.seconds;
      Setup host = s;
      host.bandwidth = s.host_bandwidth;
      host.eff.mem_max = host.gemv_mem_max = host.dequant_gemv_mem_max = system_facts().host_stream_fraction;
      host.eff.mem_half_bytes = 0;
      host.matrix_peak = host.attention_peak = host.vector_peak = 1e30;
      if (m > system_facts().offload_batch_rows) {
        const double copy = s.weights.per_layer[static_cast<std::size_t>(l)] / s.host_link;
        c.seconds += copy;
        price_block(s, l, mix, c, &host);
      } else {
        price_block(host, l, mix, c, &host);
      }
      c.offload_s += c.seconds - before;
      continue;
    }
    price_block(s, l, mix, c, nullptr);
  }
  // The LM head for the tokens that need logits, its vocabulary split over the ranks, then the logits
  // gathered. GGUF files quantize it (output.weight), as EXL2 and MLC's formats do (output_bits); the others keep it in 16 bits.
  if (mix.logits > 0) {
    const double vocab = static_cast<double>(d.vocab);
    Setup head = s;
    WeightFormat f = *s.format;
    double bits = 16.0;
    if (f.output_bits > 0 && !f.embeddings_quantized) {
      bits = f.output_bits;  // the head as the format stores it (a tied table too: MLC quantizes the embedding it reads)
    } else if (f.embeddings_quantized) {
      bits = 8.0 * (d.tied_embeddings ? s.weights.embedding : s.weights.output) / (vocab * h);
    } else {
      f.weight_only = f.dequant_pass = false;
      head.matrix_peak = s.attention_peak;  // 16-bit math
    }
    head.format = &f;
    if (s.gpu_layers < d.layers && mix.logits <= system_facts().offload_batch_rows) {
      // Offloaded: the LM head stays in system RAM with the CPU (llama.cpp moves it last).
      head.bandwidth = s.host_bandwidth;
      head.eff.mem_max = head.gemv_mem_max = head.dequant_gemv_mem_max = system_facts().host_stream_fraction;
      head.eff.mem_half_bytes = 0;
      head.matrix_peak = head.vector_peak = 1e30;
    }
    IterationCost lm;
    price_linear(head, mix.logits, h, vocab / tp, bits, lm);
    double gather = s.tp > 1 ? allgather_seconds(mix.logits * vocab * 4.0, s.tp, s.link) : 0.0;
    c.lm_head_s = lm.seconds;
    c.comm_s += gather;
    c.seconds += lm.seconds + gather;
    c.weight_bytes_read += lm.weight_bytes_read;
    c.flops += lm.flops;
  }
  // Split by layers: each GPU hands the tokens' activations to the next, one copy over the link per boundary.
  if (s.layer_split > 1 && s.link.bus_gbs > 0) {
    const double hop = s.link.latency_s + m * h * s.engine->activation_bytes / (s.link.bus_gbs * 1e9);
    c.comm_s += (s.layer_split - 1) * hop;
    c.seconds += (s.layer_split - 1) * hop;
  }
  // The host launches kernels while the GPU runs earlier ones: the GPU waits only when launching takes
  // longer than the kernels (small batches in eager frameworks), and back-to-back kernels leave a short
  // gap on the GPU. Under CUDA graphs a step is one launch, or one a module's graph (host_launches). Host work per
  // iteration (scheduling, sampling) is serial with the step.
  const double kernels = d.layers * s.engine->kernels_per_layer + 4;
  c.launch_s = kernels * system_facts().kernel_gap_s * s.fixed;
  const double gpu = c.seconds + c.launch_s;
  const double host = host_launches(*s.engine, d.layers, m) * s.engine->host_launch_s * s.fixed;
  c.host_s = s.engine->step_overhead_s * s.fixed + std::max(0.0, host - gpu);
  c.seconds = gpu + c.host_s;
  return c;
}

/// The mean of two kinds of iteration, a share `b_share` of them the second kind.
IterationCost mix_of(const IterationCost& a, const IterationCost& b, double b_share) {
  const auto m = [&](double x, double y) { return (1.0 - b_share) * x + b_share * y; };
  IterationCost c;
  c.seconds = m(a.seconds, b.seconds);
  c.gemm_s = m(a.gemm_s, b.gemm_s);
  c.dequant_s = m(a.dequant_s, b.dequant_s);
  c.attention_s = m(a.attention_s, b.attention_s);
  c.elementwise_s = m(a.elementwise_s, b.elementwise_s);
  c.lm_head_s = m(a.lm_head_s, b.lm_head_s);
  c.comm_s = m(a.comm_s, b.comm_s);
  c.launch_s = m(a.launch_s, b.launch_s);
  c.host_s = m(a.host_s, b.host_s);
  c.offload_s = m(a.offload_s, b.offload_s);
  c.weight_bytes_read = m(a.weight_bytes_read, b.weight_bytes_read);
  c.kv_bytes_read = m(a.kv_bytes_read, b.kv_bytes_read);
  c.flops = m(a.flops, b.flops);
  return c;
}

}  // namespace

bool is_serving_mode(const std::string& mode) { return mode == "prefill" || mode == "decode" || mode == "infer"; }

const std::vector<std::string>& serving_option_keys() { return kServingKeys; }

std::vector<ServingPrediction> serving_load_curve(const catalog::Catalog& cat, ServingRequest req) {
  const workload::Workload w(req.workload, req.options);
  return serving_load_curve(cat, w, std::move(req));
}

std::vector<ServingPrediction> serving_load_curve(const catalog::Catalog& cat, const workload::Workload& w, ServingRequest req) {
  if (req.mode != "infer") throw RequestError("a load curve is for --mode infer (whole requests)");
  req.batch = 0;
  const ServingPrediction top = predict_serving(cat, w, req);
  std::vector<ServingPrediction> out;
  for (std::int64_t c = 1; c < top.batch; c *= 2) {
    req.batch = c;
    out.push_back(predict_serving(cat, w, req));
  }
  out.push_back(top);
  return out;
}

std::vector<std::string> serving_assumed(const ServingRequest& req, const ServingPrediction& p, bool format_named) {
  std::vector<std::string> out;
  const auto given = [&](const char* key) { return req.options.count(key) > 0; };
  const bool default_is_front = serving_front(default_serving_engine()) != nullptr;
  if (!given("framework"))
    out.push_back(p.engine == default_serving_engine() || default_is_front
                      ? fmt::format("engine {} (the default{}; --options framework={} for another)", p.engine,
                                    default_is_front ? fmt::format(", {}'s choice on this card", default_serving_engine()) : "", engine_ids("|"))
                      : fmt::format("engine {} ({}, the default, does not run {} weights)", p.engine, default_serving_engine(), p.format));
  if (!format_named)
    out.push_back(fmt::format("weights {} (no --precision: the default rule, {}, serves its 16-bit weights; a model file its own)", p.format,
                              kDefaultPrecisionRule));
  if (p.mode != "decode" && !given("prompt_len")) out.push_back(fmt::format("prompts of {} tokens (the default for --mode {})", p.prompt_len, p.mode));
  if (p.mode == "decode" && !given("prompt_len")) out.push_back("an empty context before the first generated token (prompt_len=0, the default for --mode decode)");
  if (p.mode != "prefill" && !given("gen_len")) out.push_back(fmt::format("{} generated tokens per request (the default)", p.gen_len));
  if (req.batch == 0)
    out.push_back(p.mode == "infer" ? fmt::format("{} requests in flight (the most that fit: {})", p.batch, p.batch_limit)
                                    : fmt::format("{} sequence(s) per step (the default)", p.batch));
  if (p.group_size > 0 && !given("group_size") && p.quantized_from.empty())
    out.push_back(fmt::format("{} weights in groups of {} (the format's default; --options group_size=32|64|128)", p.format, p.group_size));
  if (p.variable_bits && !given("bpw"))
    out.push_back(fmt::format("{} weights at {:.3g} bits a weight (the format's default; --options bpw=N names a checkpoint's rate)", p.format, p.bits_per_weight));
  if (!given("kv_dtype")) out.push_back(fmt::format("KV cache in {} (the engine's default for {} weights)", p.kv_dtype, p.format));
  if (p.gpus > 1 && !given("tp"))
    out.push_back(p.layer_split > 1 ? fmt::format("one model split by layers over {} GPUs (the engine's default)", p.layer_split)
                                    : fmt::format("tensor parallel {} x {} replica(s) (the default: tp=1; --options tp=N)", p.tp, p.replicas));
  if (p.mode == "infer" && !given("arrival")) out.push_back("requests arrive steadily, one joining as one leaves (arrival=steady, the default)");
  return out;
}

std::string serving_format_for(const std::string& named) {
  // None named: the default precision's format (amp-bf16's weights are bf16), as every command assumes.
  const std::string precision = named.empty() ? "bf16" : canonical_precision_name(named);
  if (precision == "amp-bf16") return "bf16";
  if (precision == "amp-fp16" || precision == "amp") return "fp16";
  if (precision == "amp-fp8") return "fp8";
  return precision;
}

std::optional<std::string> serving_format_on(const catalog::Gpu& gpu, const std::string& named, std::string* note) {
  Precision policy{};
  if (named.empty()) {
    policy = default_precision(gpu);
  } else {
    try {
      policy = parse_precision(named);
    } catch (const InputError&) {
      return weight_format(named).id;  // InputError naming the formats when it is neither
    }
  }
  const auto p = precision_run(policy, gpu, nullptr);
  if (!p) return std::nullopt;
  const std::string format = serving_format_for(std::string(precision_name(*p)));
  const std::string wanted = serving_format_for(std::string(precision_name(policy)));
  if (note && format != wanted) *note = fmt::format("the nearest to {} weights that {} runs", wanted, gpu.id);
  return format;
}

ServingPrediction predict_serving(const catalog::Catalog& cat, const ServingRequest& req) {
  if (!is_serving_mode(req.mode))
    throw RequestError(fmt::format("mode '{}' is not a serving mode (prefill, decode, infer)", strings::printable(req.mode)));
  cat.find(req.gpu);  // an unknown card is named before the workload is read
  return predict_serving(cat, workload::Workload(req.workload, req.options), req);
}

namespace {

/// What a checked request runs: the engine, the format, and (a front such as NIM named) which engine it picked and why.
struct Checked {
  const ServingEngine* engine = nullptr;
  WeightFormat format;
  std::string front_note;
};

/// The request checked against the workload, the engine and the format, on `gpu` (a front picks its engine by the card).
Checked check_request(const models::NetworkInfo& net, const catalog::Gpu& gpu, const ServingRequest& req) {
  if (net.family != models::Family::decoder)
    throw RequestError(fmt::format("--mode {} prices decoders (LLMs); {} is a {} (use --mode infer without serving options)", req.mode, net.id,
                                 models::family_name(net.family)));
  for (const auto& [k, v] : req.options) {
    const auto& shape = models::gpt_shape_keys();
    if (std::find(kServingKeys.begin(), kServingKeys.end(), k) == kServingKeys.end() && std::find(shape.begin(), shape.end(), k) == shape.end())
      throw RequestError(fmt::format("option '{}' is not a serving option{} (known: {})", strings::printable(k),
                                   k == "seq_len" ? ": a prompt is prompt_len" : "", strings::join(kServingKeys, ", ")));
  }
  const auto fw = req.options.find("framework");
  // A file that stores its weights (GGUF) is priced as stored, by the kernels of its main type, on the engine that
  // reads it unless another is named; a quantized format asked for besides is another model's (the 16-bit
  // defaults are taken as not asked: the prediction names the format it priced).
  const models::StoredWeights* stored = net.stored_weights ? &*net.stored_weights : nullptr;
  // A checkpoint quantized by a method serving prices (a Hugging Face quantization_config) is priced in that format,
  // in its own groups; another quantized format or grouping asked for besides is another model's.
  const auto& quantized = net.quantized;
  if (quantized && strings::lower(req.format) != quantized->format && req.format != "bf16" && req.format != "fp16")
    throw RequestError(fmt::format("{} is quantized as {} ({}); --precision {} names other weights: drop it, or quantize the model again", net.id,
                                 quantized->format, quantized->source, strings::printable(req.format)));
  WeightFormat format = stored ? stored_weight_format(*stored) : weight_format(quantized ? quantized->format : req.format);
  // AWQ and GPTQ checkpoints come in groups of 32, 64 or 128 weights: smaller groups carry more scales. The range here
  // only makes it an integer; with_group_size says which sizes are priced.
  const std::optional<std::int64_t> asked_group =
      req.options.count("group_size") ? std::optional(option_int(req.options, "group_size", 0, -(1LL << 40), 1LL << 40)) : std::nullopt;
  if (quantized && quantized->group_size > 0) {
    if (asked_group && *asked_group != quantized->group_size)
      throw RequestError(fmt::format("option group_size={}: {} is quantized in groups of {} ({})", *asked_group, net.id, quantized->group_size,
                                   quantized->source));
    format = with_group_size(format, quantized->group_size);
    format.name += fmt::format(" (from {})", quantized->source);
  } else if (asked_group) {
    format = with_group_size(format, *asked_group);
  }
  // EXL2 checkpoints come at any average rate from 2 to 8 bits a weight; the name of one says which (4.0bpw, 4.65bpw).
  if (const auto bpw = req.options.find("bpw"); bpw != req.options.end()) {
    double rate = 0;
    const auto r = std::from_chars(bpw->second.data(), bpw->second.data() + bpw->second.size(), rate);
    if (r.ec != std::errc() || r.ptr != bpw->second.data() + bpw->second.size())
      throw RequestError(fmt::format("option bpw={}: expected a number of bits a weight", strings::printable(bpw->second)));
    format = with_bits_per_weight(format, rate);
  }
  if (stored && strings::lower(req.format) != format.id && req.format != "bf16" && req.format != "fp16")
    throw RequestError(fmt::format("{} stores its weights ({}, run as {}); --precision {} names other weights: drop it, or quantize the file again",
                                 stored->source, stored->summary, format.id, strings::printable(req.format)));
  const auto runs = [&](const ServingEngine& e) { return std::find(e.formats.begin(), e.formats.end(), format.id) != e.formats.end(); };
  const std::string named = fw != req.options.end() ? fw->second : stored && !stored->engine.empty() ? stored->engine : default_serving_engine();
  std::string front_note;  // a front (NIM) picks its engine by the card, and says which
  const ServingEngine* chosen = nullptr;
  if (const ServingFront* front = serving_front(named)) std::tie(chosen, front_note) = front_engine(*front, gpu.segment);
  else chosen = &serving_engine(named);
  // No engine named and the default does not run the format (a GGUF quantization): the engine that does, said
  // in the prediction's notes; a named engine that does not run it is the request's error.
  if (fw == req.options.end() && !runs(*chosen))
    for (const auto& e : builtin_engines())
      if (runs(e)) {
        chosen = &e;
        break;
      }
  const ServingEngine& engine = *chosen;
  if (!runs(engine)) {
    const std::string why = fmt::format("{} does not run the {} format (it runs {})", engine.id, format.id, strings::join(engine.formats, ", "));
    if (!front_note.empty()) throw InputError(why);  // the engine a front picked for this card: a finding about the card
    throw RequestError(why);
  }
  if (req.gpus < 1 || req.gpus > 4096) throw RequestError(fmt::format("--gpus must be in [1, 4096], got {}", req.gpus));
  if (req.batch < 0 || req.batch > (1 << 20)) throw RequestError(fmt::format("--batch must be in [0, 1048576], got {}", req.batch));
  return {&engine, format, front_note};
}

/// What the request asks for, resolved into the prediction: tensor parallelism and replicas, prompt and
/// generation lengths, the KV cache's element type.
void resolve_shape(const catalog::Gpu& gpu, const models::NetworkInfo& net, const ServingEngine& engine, const WeightFormat& format,
                   const ServingRequest& req, ServingPrediction& p) {
  const auto& d = net.decoder;
  p.tp = static_cast<int>(option_int(req.options, "tp", 1, 1, 64));
  if (engine.layer_split && req.gpus > 1) {
    // One model over every GPU, split by layers (llama.cpp's -sm layer, its default), not replicas: each token passes
    // every card in turn. Its tensor split (-sm row) is another layout.
    if (p.tp > 1) throw RequestError(fmt::format("{} with tp={}: its tensor split (-sm row) is not priced; its layer split (-sm layer) is, without tp",
                                               engine.id, p.tp));
    if (req.gpus > d.layers) throw RequestError(fmt::format("{} splits {}'s {} blocks by layers: at most {} GPUs, not {}", engine.id, net.id,
                                                          d.layers, d.layers, req.gpus));
    p.layer_split = req.gpus;
  }
  if (req.gpus % p.tp != 0) throw RequestError(fmt::format("tp={} does not divide --gpus {}", p.tp, req.gpus));
  if (d.heads % p.tp != 0) throw RequestError(fmt::format("tp={} does not divide {}'s {} attention heads", p.tp, net.id, d.heads));
  if (p.tp > system_facts().gpus_per_server && !gpu.has_nvlink())
    throw RequestError(fmt::format("tp={} spans more than one server; serving is priced inside one node", p.tp));
  p.replicas = req.gpus / p.tp / p.layer_split;
  const std::int64_t max_len = std::int64_t{1} << 22;
  p.prompt_len = option_int(req.options, "prompt_len", req.mode == "decode" ? 0 : req.mode == "prefill" ? 512 : 128, req.mode == "decode" ? 0 : 1, max_len);
  p.gen_len = option_int(req.options, "gen_len", 128, 1, max_len);
  if (req.mode == "prefill" && req.options.count("gen_len")) throw RequestError("option gen_len does not apply to --mode prefill");
  const std::int64_t request_len = p.prompt_len + (req.mode == "prefill" ? 0 : p.gen_len);
  if (d.max_positions > 0 && request_len > d.max_positions)
    throw RequestError(fmt::format("a request of {} tokens (prompt_len {} + gen_len {}) is past {}'s {} positions", request_len, p.prompt_len,
                                 req.mode == "prefill" ? 0 : p.gen_len, net.id, d.max_positions));
  p.kv_dtype = req.options.count("kv_dtype") ? req.options.at("kv_dtype") : engine.fp8_kv_cache && format.math == "fp8" ? "fp8" : "fp16";
  if (p.kv_dtype != "fp16" && p.kv_dtype != "bf16" && p.kv_dtype != "fp8")
    throw RequestError(fmt::format("option kv_dtype={}: expected fp16, bf16 or fp8", strings::printable(p.kv_dtype)));
  if (p.kv_dtype == "fp8" && !gpu.fp8_fp32acc.present())
    throw InputError(fmt::format("{} ({}) has no FP8 support for an fp8 KV cache", gpu.id, gpu.arch));
}

/// What the engine's release does to its kernels on `gpu` (perf/maturity.hpp): the release the request names or the
/// profile's; nothing when the request prices native kernels.
MaturityEffect serving_maturity(const catalog::Gpu& gpu, const ServingEngine& engine, const ServingRequest& req) {
  if (req.native_kernels) return {};
  return maturity_effect(gpu, engine.id, release_of(req.options, engine.released), engine.attention != "unfused");
}

/// One rank's view of the card and the model for the iteration pricer.
Setup rank_setup(const catalog::Catalog& cat, const catalog::Gpu& gpu, const models::DecoderConfig& d, const ServingEngine& engine,
                 const WeightFormat& format, const ServingRequest& req, const ServingPrediction& p) {
  Setup s;
  s.d = d;
  s.gpu = &gpu;
  s.format = &format;
  s.engine = &engine;
  s.tp = p.tp;
  s.kv_elem_bytes = p.kv_dtype == "fp8" ? 1.0 : 2.0;
  PrecisionPlan plan;
  plan.tensor_cores = true;
  plan.matrix_tflops = format_matrix_peak(format, gpu, engine.fp16_accumulate);
  plan.vector_tflops = gpu.fp32_tflops;
  plan.activations = format.math == "bf16" ? ir::DType::bf16 : ir::DType::f16;
  // The card as the graph roofline sees it for inference (perf/device_view.hpp): the same clock, bandwidth
  // and fractions, memory-bound kernels at the streaming fraction.
  const DeviceView view = device_view(gpu, plan, req.calibration, false);
  s.eff = view.eff;
  // Serving engines run tuned cuBLASLt/CUTLASS GEMMs: their ceiling is the card's achievable GEMM rate
  // for the format's math (published max-achievable figures, else the stated rule; perf/achievable.hpp),
  // which already includes the clock the card sustains, times the shape's waves and K ramp. Training's
  // fitted GEMM fraction is not used: fitted with these rows it fell below what training reaches and
  // made every training source worse held out, so the two are different quantities.
  s.matrix_peak = plan.matrix_tflops * 1e12;
  s.eff.gemm_max = serving_gemm_fraction(cat, gpu, format.math, req.calibration);
  WeightFormat sixteen = format;
  sixteen.math = format.math == "bf16" ? "bf16" : "fp16";
  s.attention_peak = format_matrix_peak(sixteen, gpu, engine.fp16_accumulate) * 1e12 * view.clock;
  s.vector_peak = view.vector_peak;
  s.bandwidth = view.bandwidth;
  if (engine.attention == "unfused") s.eff.attention_max *= 0.5;  // scores through memory: two GEMMs and a softmax apart
  // ggml's kernels keep few bytes in flight per SM: on a card with wide HBM and few SMs they stop on the SMs' side
  // of Little's law, not the DRAM's. Two classes: the matrix-vector kernels that read the weights for a few tokens
  // (MMVQ and its F16 sibling, and the products over the cache at decode), and the rest (dequantize, conversion
  // and elementwise passes), whose threads each hold a few bytes.
  const double stream = s.eff.mem_max;
  // A matrix-vector product over 16-bit weights (a few tokens through each weight) is a memory-bound decode kernel
  // like the cache read: as many bytes in flight per SM (Little's law, decode_bytes_per_sm_cycle).
  s.gemv_mem_max = std::min(stream, memory_fraction(gpu, active_constants().decode_bytes_per_sm_cycle));
  if (engine.kernel_family == "ggml") {
    const auto& k = active_constants();
    s.eff.mem_max = std::min(stream, memory_fraction(gpu, k.ggml_bytes_per_sm_cycle));
    s.gemv_mem_max = std::min(stream, memory_fraction(gpu, k.ggml_gemv_bytes_per_sm_cycle));
    // ggml's batched products (a weight dequantized to FP16, then cuBLAS with FP16 compute on the micro-batch, or
    // its own MMQ kernels) reach a share of the card's best GEMM, whatever the card: the engine's, not the card's.
    s.eff.gemm_max *= k.ggml_gemm_share;
  }
  // An engine whose weight-only matrix-vector kernels unpack and scale each weight in registers before the dot keeps
  // fewer loads in flight per SM than one streaming 16-bit weights: ggml's MMVQ class, carried to such engines.
  s.dequant_gemv_mem_max = s.gemv_mem_max;
  if (engine.dequant_gemv_family == "ggml")
    s.dequant_gemv_mem_max = std::min(stream, memory_fraction(gpu, active_constants().ggml_gemv_bytes_per_sm_cycle));
  // An engine released before this card's native kernels runs them at the shares data/software-maturity.toml gives.
  apply_maturity(s.eff, serving_maturity(gpu, engine, req));
  // A measured stack (the same engine and format on some card) moves its kernels' efficiencies, not the card's
  // physics; its memory-bound kernels, the matrix-vector and decode-attention ones among them, by the same ratio.
  double memory_ratio = 1;
  if (apply_stack(s.eff, req.stack, engine.id, format.id, gpu.id)) {
    const StackRatios on = carried_to(*req.stack, gpu.id);
    s.fixed = on.fixed;
    memory_ratio = on.memory;
  }
  s.gemv_mem_max = std::min(0.98, s.gemv_mem_max * memory_ratio);  // apply_stack's ceiling
  s.dequant_gemv_mem_max = std::min(0.98, s.dequant_gemv_mem_max * memory_ratio);
  // The decode-attention kernel's own class; ggml's (products over the cache) are its matrix-vector kernels.
  s.decode_mem_max = engine.kernel_family == "ggml"
                         ? s.gemv_mem_max
                         : std::min(s.eff.mem_max, memory_fraction(gpu, active_constants().decode_bytes_per_sm_cycle) * memory_ratio);
  // Serving engines reduce their tensor-parallel activations with their own kernels over peer-to-peer memory
  // (TensorRT-LLM's custom all-reduce, vLLM's custom_all_reduce), a ring's traffic, not through NVLink SHARP.
  s.link = without_nvls(link_for(gpu, std::max(p.tp, p.layer_split)));
  s.layer_split = p.layer_split;
  s.weights = weight_bytes(d, format);
  return s;
}

/// Memory on one rank: its share of the weights (projections and vocabulary split over tp, norms
/// replicated), the runtime, and what is left for the KV cache. Blocks on the GPU: all, or (an engine that
/// offloads) those asked for with ngl, or the most that fit with the KV cache of the batch asked for; the
/// rest, the embedding table and the LM head stay in system RAM.
void place_weights_and_cache(const catalog::Catalog& cat, const catalog::Gpu& gpu, const ServingEngine& engine, const ServingRequest& req,
                             Setup& s, ServingPrediction& p) {
  const auto& d = s.d;
  p.layers = d.layers;
  p.runtime_bytes = engine.runtime_bytes;
  p.capacity_bytes = gpu.memory_bytes();
  const double usable = p.capacity_bytes * engine.memory_utilization;
  const double kv_heads = std::max(1.0, static_cast<double>(d.kv_heads) / p.tp);
  const double kv_per_layer_token = 2.0 * kv_heads * static_cast<double>(d.head_size()) * s.kv_elem_bytes;
  const std::int64_t request_tokens = cache_blocks(engine, p.prompt_len + (req.mode == "prefill" ? 0 : p.gen_len));
  // Split by layers, each GPU holds 1/layer_split of the blocks and of their cache (the embedding table and LM head
  // counted evenly too: a few percent of a large model).
  const double split = p.layer_split;
  const auto gpu_weight_bytes = [&](int n) {
    if (n >= d.layers) return s.weights.total() / p.tp / split;
    double b = 0;
    for (int l = 0; l < n; ++l) b += s.weights.per_layer[static_cast<std::size_t>(l)];
    return b;
  };
  const double needed_tokens = static_cast<double>(request_tokens) * static_cast<double>(std::max<std::int64_t>(req.batch, 1));
  const auto fits_with = [&](int n) { return gpu_weight_bytes(n) + p.runtime_bytes + kv_per_layer_token * n / split * needed_tokens <= usable; };
  p.gpu_layers = d.layers;
  if (req.options.count("ngl") || req.options.count("host_gbs")) {
    if (!engine.layer_offload) throw RequestError(fmt::format("{} does not run layers from system RAM (ngl, host_gbs are llama.cpp's)", engine.id));
    p.host_gbs = static_cast<double>(option_int(req.options, "host_gbs", 90, 1, 100000));
  }
  if (p.layer_split > 1 && req.options.count("ngl"))
    throw RequestError(fmt::format("offloading layers to system RAM (ngl) is priced on one GPU, not split over {}", p.layer_split));
  if (req.options.count("ngl")) {
    p.gpu_layers = static_cast<int>(option_int(req.options, "ngl", d.layers, 0, 100000));
    p.gpu_layers = std::min(p.gpu_layers, d.layers);
  } else if (engine.layer_offload && p.layer_split == 1 && !fits_with(d.layers)) {
    int n = d.layers;
    while (n > 0 && !fits_with(n)) --n;
    p.gpu_layers = n;
  }
  if (p.gpu_layers < d.layers) {
    if (p.tp > 1) throw RequestError("offloading layers to system RAM (ngl) is priced on one GPU, not with tp");
    p.host_gbs = static_cast<double>(option_int(req.options, "host_gbs", 90, 1, 100000));
    s.gpu_layers = p.gpu_layers;
    s.host_bandwidth = p.host_gbs * 1e9;
    const auto h2d = achievable(cat, gpu, "h2d");
    s.host_link = (h2d ? h2d->value : pcie_x16_gbs(gpu.pcie_gen) * system_facts().copy_engine) * 1e9;
    p.notes.push_back(fmt::format(
        "{} of {} blocks on the GPU (ngl {}); the other {:.1f} GiB of weights and their KV cache run from system RAM at {:g} GB/s "
        "(host_gbs; 90 is dual-channel DDR5-5600, 89.6 GB/s), crossing the host link at {:.0f} GB/s for batched GEMMs",
        p.gpu_layers, d.layers, p.gpu_layers, (s.weights.total() - gpu_weight_bytes(p.gpu_layers)) / units::kGiB, p.host_gbs, s.host_link / 1e9));
  } else {
    s.gpu_layers = d.layers;
  }
  p.weight_bytes = gpu_weight_bytes(p.gpu_layers);
  p.kv_bytes_per_token = kv_per_layer_token * (p.gpu_layers < d.layers ? p.gpu_layers : d.layers) / split;
  const double kv_per_token_all = kv_per_layer_token * d.layers;
  p.kv_budget_bytes = std::max(0.0, (usable - p.weight_bytes - p.runtime_bytes) * engine.kv_free_fraction);
  const double per_token = p.gpu_layers > 0 ? p.kv_bytes_per_token : kv_per_token_all;
  p.max_concurrency = static_cast<std::int64_t>(p.kv_budget_bytes / (per_token * static_cast<double>(request_tokens)));
  p.max_context = static_cast<std::int64_t>(p.kv_budget_bytes / per_token) / engine.kv_block_tokens * engine.kv_block_tokens;
  p.context_limited_by_model = d.max_positions > 0 && p.max_context > d.max_positions;
  if (p.context_limited_by_model) p.max_context = d.max_positions;  // the cache could hold more than the model attends to
}

/// --mode prefill or decode: a fixed batch of sequences, one prefill or the mean decode step.
void price_fixed_batch(const Setup& s, const ServingEngine& engine, const ServingRequest& req, ServingPrediction& p) {
  p.batch = req.batch > 0 ? req.batch : 1;
  const double sequences = static_cast<double>(p.batch);
  const double prompt = static_cast<double>(p.prompt_len), generated = static_cast<double>(p.gen_len);
  if (req.mode == "prefill") {
    // Chunks of at most max_num_tokens (llama.cpp's micro-batch); each re-reads the weights. The mean causal
    // span over the prompt is half of it, whatever the chunking.
    const double tokens = sequences * prompt;
    const double chunks = std::ceil(tokens / engine.max_num_tokens);
    TokenMix mix;
    mix.prefill_tokens = tokens / chunks;
    mix.prefill_span = prompt / 2.0;
    mix.logits = sequences / chunks;
    p.step = iteration(s, mix);
    p.ttft_s = p.ttft_p99_s = p.step.seconds * chunks;
    p.throughput = tokens / p.ttft_s * p.replicas;
    p.unit = "tokens/s";
    p.request_s = p.request_p99_s = p.ttft_s;
  } else {
    // Decode: every step generates one token per sequence; attention over the cache is linear in the
    // context, so the mean step is the step at the mean context.
    TokenMix mix;
    mix.decode_seqs = sequences;
    mix.decode_context = prompt + generated / 2.0;
    mix.logits = sequences;
    p.step = iteration(s, mix);
    p.tpot_s = p.step.seconds;
    p.throughput = sequences / p.tpot_s * p.replicas;
    p.unit = "tokens/s";
    p.request_s = p.request_p99_s = p.tpot_s * generated;
  }
  p.kv_bytes = p.kv_bytes_per_token * static_cast<double>(cache_blocks(engine, p.prompt_len + (req.mode == "prefill" ? 0 : p.gen_len))) * sequences;
  p.fits = p.weight_bytes + p.runtime_bytes + p.kv_bytes <= p.capacity_bytes * engine.memory_utilization;
}

/// --mode infer: whole requests. In-flight batching keeps `in_flight` requests going: every iteration each
/// generates a token and in_flight / gen_len of them finish, so as many prompts join (chunked context);
/// requests enter and leave between iterations. Without it (static batches) a batch is prefilled, then
/// decoded to the end, then the next starts. With no batch asked for, the most the cache and the engine allow.
void price_requests(const Setup& s, const models::NetworkInfo& net, const catalog::Gpu& gpu, const WeightFormat& format,
                    const ServingEngine& engine, const ServingRequest& req, ServingPrediction& p) {
  const double prompt = static_cast<double>(p.prompt_len), generated = static_cast<double>(p.gen_len);
  std::int64_t in_flight = req.batch;
  if (in_flight == 0) {
    in_flight = std::min<std::int64_t>(p.max_concurrency, engine.max_batch);
    p.batch_limit = in_flight == engine.max_batch ? fmt::format("the engine's max batch ({})", engine.max_batch) : "the KV-cache budget";
    if (engine.inflight_batching) {
      const auto by_tokens = static_cast<std::int64_t>(engine.max_num_tokens / (1.0 + prompt / generated));
      if (by_tokens < in_flight) {
        in_flight = by_tokens;
        p.batch_limit = fmt::format("the engine's tokens per iteration ({})", engine.max_num_tokens);
      }
    }
    p.batch_chosen = true;
    if (in_flight < 1)
      throw InputError(fmt::format("{} in {} leaves no room for one request of {} tokens on {} (weights {:.1f} GiB per GPU, KV budget {:.2f} GiB)",
                                   net.id, format.id, p.prompt_len + p.gen_len, gpu.id, p.weight_bytes / units::kGiB,
                                   p.kv_budget_bytes / units::kGiB));
  }
  p.batch = in_flight;
  const double requests = static_cast<double>(in_flight);
  // arrival=wave: the requests all arrive at once and none after (a benchmark's whole prompt set sent together):
  // their prompts are prefilled in the engine's token budget, then they decode together to the end; no steady state
  // of requests joining as others leave.
  const std::string arrival = req.options.count("arrival") ? req.options.at("arrival") : "steady";
  if (arrival != "steady" && arrival != "wave")
    throw RequestError(fmt::format("option arrival={}: expected steady (requests join as others leave) or wave (all at once, none after)",
                                 strings::printable(arrival)));
  if (arrival == "wave" && engine.inflight_batching && in_flight > p.max_concurrency)
    throw InputError(fmt::format("arrival=wave: {} requests at once do not fit {}'s KV cache on {} (at most {})", in_flight, engine.id, gpu.id,
                                 p.max_concurrency));
  if (arrival == "wave" && engine.inflight_batching) {
    const double tokens = requests * prompt;
    const double chunks = std::ceil(tokens / engine.max_num_tokens);
    TokenMix pre;
    pre.prefill_tokens = tokens / chunks;
    pre.prefill_span = prompt / 2.0;
    pre.logits = requests / chunks;
    const double prefill_s = iteration(s, pre).seconds * chunks;
    TokenMix dec;
    dec.decode_seqs = requests;
    dec.decode_context = prompt + generated / 2.0;
    dec.logits = requests;
    p.step = iteration(s, dec);
    p.tpot_s = p.step.seconds;
    // A request's first token comes when the chunk holding the end of its prompt is done: on average half-way.
    p.ttft_s = 0.5 * prefill_s + p.step.seconds;
    p.ttft_p99_s = 0.99 * prefill_s + p.step.seconds;
    p.throughput = requests * generated / (prefill_s + generated * p.step.seconds) * p.replicas;
  } else if (engine.inflight_batching) {
    // Every iteration each request generates a token and requests / gen_len of them finish, so as many
    // prompt tokens join on average. They join in lumps, not evenly: a whole prompt (or all the room the
    // decodes leave in the token budget) in one iteration, and only a share of iterations carry one when
    // requests are few. A lump of prompt tokens is compute-bound where the decodes it rides with only read
    // the weights, so its cost is not hidden under theirs: the mean iteration is the mix of the two kinds.
    const double room = std::max(1.0, engine.max_num_tokens - requests);
    const double joining_per_iteration = requests * prompt / generated;
    // (More joining than the room holds, at a batch the user set, is priced as it comes.)
    const double lump = std::max(joining_per_iteration, std::min(room, prompt));
    const double carrying = joining_per_iteration / lump;  // the share of iterations that carry a lump
    TokenMix decode;
    decode.decode_seqs = requests;
    decode.decode_context = prompt + generated / 2.0;
    decode.logits = requests;
    TokenMix join = decode;
    join.prefill_tokens = lump;
    join.prefill_span = prompt / 2.0;
    join.logits = requests + lump / prompt;
    const IterationCost join_step = iteration(s, join);
    p.step = carrying >= 1.0 ? join_step : mix_of(iteration(s, decode), join_step, carrying);
    p.tpot_s = p.step.seconds;
    p.throughput = requests / p.step.seconds * p.replicas;
    // Latency under this load: a request arrives at a uniformly random moment of an iteration, waits for
    // the next one, and its prompt is prefilled in lumps, in as many iterations as the room takes.
    const double prefill_iterations = std::ceil(std::max(prompt, joining_per_iteration) / room);
    p.ttft_s = 0.5 * p.step.seconds + prefill_iterations * join_step.seconds;
    p.ttft_p99_s = 0.99 * p.step.seconds + prefill_iterations * join_step.seconds;
  } else {
    TokenMix pre;
    pre.prefill_tokens = requests * prompt;
    pre.prefill_span = prompt / 2.0;
    pre.logits = requests;
    const IterationCost prefill = iteration(s, pre);
    TokenMix dec;
    dec.decode_seqs = requests;
    dec.decode_context = prompt + generated / 2.0;
    dec.logits = requests;
    p.step = iteration(s, dec);
    // Static batches: a request waits for the batch in flight to finish (uniformly, up to a whole batch's
    // time), then its own batch's prefill.
    const double batch_s = prefill.seconds + generated * p.step.seconds;
    p.ttft_s = 0.5 * batch_s + prefill.seconds;
    p.ttft_p99_s = 0.99 * batch_s + prefill.seconds;
    p.tpot_s = p.step.seconds;
    p.throughput = requests * generated / batch_s * p.replicas;
  }
  p.request_s = p.ttft_s + generated * p.tpot_s;
  p.request_p99_s = p.ttft_p99_s + generated * p.tpot_s;
  p.unit = "output tokens/s";
  p.kv_bytes = p.kv_bytes_per_token * static_cast<double>(cache_blocks(engine, p.prompt_len + p.gen_len)) * requests;
  p.fits = p.weight_bytes + p.runtime_bytes <= p.capacity_bytes * engine.memory_utilization && in_flight <= p.max_concurrency;
}

}  // namespace

namespace {

ServingPrediction priced_serving(const catalog::Catalog& cat, const workload::Workload& w, const ServingRequest& req) {
  if (!is_serving_mode(req.mode))
    throw RequestError(fmt::format("mode '{}' is not a serving mode (prefill, decode, infer)", strings::printable(req.mode)));
  w.check_is(req.workload, req.options);
  const catalog::Gpu& gpu = cat.find(req.gpu);
  const models::NetworkInfo& net = w.network();
  const Checked checked = check_request(net, gpu, req);
  const ServingEngine* engine = checked.engine;
  const WeightFormat* format = &checked.format;
  ServingPrediction p;
  p.workload = net.id;
  p.gpu_id = gpu.id;
  p.gpu_name = gpu.name;
  p.format = format->id;
  p.format_name = format->name;
  p.group_size = format->group_size;
  p.variable_bits = format->min_bits > 0;
  p.bits_per_weight = format->bits;
  if (net.quantized) {
    p.quantized_from = net.quantized->source;
    p.notes.push_back(fmt::format("weights priced as {}, as {} says", net.quantized->weights(), net.quantized->source));
  }
  p.engine = engine->id;
  p.engine_name = engine->name;
  if (!checked.front_note.empty()) p.notes.push_back(checked.front_note);
  if (net.stored_weights)
    p.notes.push_back(fmt::format("weights as stored in {} ({}), run by {}'s {} kernels", net.stored_weights->source, net.stored_weights->summary,
                                  engine->id, format->id));
  else if (!req.options.count("framework") && engine->id != default_serving_engine() && checked.front_note.empty())
    p.notes.push_back(fmt::format("engine {}: {} (the default engine) does not run the {} format, {} does (framework=... names another)",
                                  engine->id, default_serving_engine(), format->id, engine->id));
  p.mode = req.mode;
  p.gpus = req.gpus;
  resolve_shape(gpu, net, *engine, *format, req, p);
  Setup s = rank_setup(cat, gpu, net.decoder, *engine, *format, req, p);
  place_weights_and_cache(cat, gpu, *engine, req, s, p);
  if (req.mode == "prefill" || req.mode == "decode") price_fixed_batch(s, *engine, req, p);
  else price_requests(s, net, gpu, *format, *engine, req, p);
  if (!p.fits)
    p.notes.push_back(fmt::format("does not fit: weights {:.1f} GiB + runtime {:.1f} GiB + KV cache {:.1f} GiB per GPU against {:.1f} GiB usable",
                                  p.weight_bytes / units::kGiB, p.runtime_bytes / units::kGiB, p.kv_bytes / units::kGiB,
                                  p.capacity_bytes * engine->memory_utilization / units::kGiB));
  p.band_low = serving_band().low(p.throughput);
  p.band_high = serving_band().high(p.throughput);
  return p;
}

}  // namespace

ServingPrediction predict_serving(const catalog::Catalog& cat, const workload::Workload& w, const ServingRequest& req) {
  ServingPrediction p = priced_serving(cat, w, req);
  const MaturityEffect m = serving_maturity(cat.find(req.gpu), serving_engine(p.engine), req);
  if (!m.applies()) return p;
  // Older than this card's native kernels: as uncertain as that step, the band reaching a native engine's figure
  // above and as far again below (as perf/predict.cpp does for training).
  for (const auto& note : m.notes) p.notes.push_back(note);
  ServingRequest native = req;
  native.native_kernels = true;
  const double r = std::max(1.0, priced_serving(cat, w, native).throughput / p.throughput);
  p.band_low /= r;
  p.band_high *= r;
  return p;
}

}  // namespace gpuvs::perf
