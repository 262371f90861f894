#include "perf/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <charconv>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "graph/networks.hpp"
#include "perf/band.hpp"

namespace gpuvs::perf {

namespace {
// The last six are the `gpt` workload's shape (graph::gpt_shape_keys()), valid with that workload only.
const std::vector<std::string> kOptionKeys = {"seq_len",  "flash_attention", "sharding", "gen_len", "recompute",
                                              "finetune", "lora_rank",       "layers",   "hidden",  "heads",
                                              "kv_heads", "ffn",             "vocab",    "memory_format"};

std::string option_choice(const std::map<std::string, std::string>& o, const std::string& key, const std::string& fallback,
                          const std::vector<std::string>& allowed) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  for (const auto& a : allowed)
    if (a == it->second) return a;
  throw InputError(fmt::format("option {}={}: expected one of {}", key, strings::printable(it->second),
                               strings::join(allowed, ", ")));
}

// The attention core a selective recompute drops and recomputes (Korthikanti et al. 2022): the score
// matrix, its mask, softmax and dropout.
bool attention_core(const graph::Graph& g, const graph::Node& n) {
  using graph::OpKind;
  if (n.op == OpKind::softmax) return true;
  if (n.op == OpKind::elementwise && n.fn == graph::EwFn::scale_mask) return true;
  if (n.op == OpKind::dropout && g.node(n.inputs[0]).op == OpKind::softmax) return true;
  return n.op == OpKind::batch_matmul && n.trans_b;  // Q.K^T
}
// PyTorch DDP's default gradient bucket: the last one cannot overlap with backward.
constexpr double kBucketBytes = 25e6;

std::int64_t option_int(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t fallback,
                        std::int64_t lo, std::int64_t hi) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  std::int64_t v = 0;
  const auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (r.ec != std::errc() || r.ptr != it->second.data() + it->second.size() || v < lo || v > hi)
    throw InputError(fmt::format("option {}={}: expected an integer in [{}, {}]", key, strings::printable(it->second), lo, hi));
  return v;
}

std::int64_t default_batch(const std::string& family) {
  if (family == "cnn") return 256;
  if (family == "unet") return 8;
  if (family == "encoder") return 32;
  if (family == "decoder") return 8;
  return 128;
}

// Full: keep each block's input and repeat the forward pass in backward. Selective: drop and recompute
// the attention core only.
void apply_recompute(Prediction& p, const graph::Graph& g, const graph::NetworkInfo& net) {
  const graph::NodeId loss = g.output("loss");
  std::map<graph::NodeId, double> op_seconds;
  for (const auto& op : p.detail.ops) op_seconds[op.id] = op.seconds;
  if (p.recompute == "full") {
    for (const auto& [id, sec] : op_seconds)
      if (id <= loss) p.recompute_s += sec;
    const double tokens = static_cast<double>(p.batch * std::max<std::int64_t>(p.seq_len, 1));
    const double boundaries = static_cast<double>(net.layers) * tokens * static_cast<double>(net.hidden) *
                              static_cast<double>(graph::dtype_size(p.plan.activations));
    p.memory.activations_bytes = boundaries + p.memory.activations_bytes / net.layers;
  } else {
    for (graph::NodeId id : saved_tensors(g))
      if (attention_core(g, g.node(id))) {
        p.memory.activations_bytes -= saved_bytes(g, id);
        if (op_seconds.count(id)) p.recompute_s += op_seconds[id];
      }
  }
  update_peak(p.memory);
  p.detail.step_s += p.recompute_s;
  p.detail.compute_s += p.recompute_s;
}

/// The graph of `net` under `opt`, built once per thread and reused: the fitter and the advisor price the
/// same graphs many times, and building dominates pricing. Keyed by everything that shapes the graph.
const graph::Graph& built(const graph::NetworkInfo& net, const graph::NetworkOptions& opt) {
  thread_local std::map<std::string, std::unique_ptr<const graph::Graph>> cache;
  const auto& d = net.decoder;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", net.id, net.description, net.layers,
                                      net.hidden, d.layers, d.hidden, d.heads, d.kv_heads, d.ffn, d.vocab, d.seq_len, opt.batch,
                                      static_cast<int>(opt.dtype), opt.seq_len, opt.flash_attention, opt.training,
                                      opt.decode_context, opt.lora_rank);
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= 256) cache.clear();
    it = cache.emplace(key, std::make_unique<const graph::Graph>(graph::build_network(net, opt))).first;
  }
  return *it->second;
}

// Serving: the prompt (seq_len) is prefilled once; each generated token is one decode step reading every
// weight and the whole KV cache, priced at the generation's mean context.
void apply_decode(Prediction& p, const graph::NetworkInfo& net, const catalog::Gpu& gpu, const EfficiencyParams& eff,
                  bool flash, std::int64_t gen_len) {
  p.decode = true;
  p.prompt_len = p.seq_len;
  p.gen_len = gen_len;
  p.prefill_s = p.detail.step_s;
  graph::NetworkOptions d{p.batch, p.plan.activations, p.seq_len, flash, false};
  d.decode_context = p.prompt_len + p.gen_len / 2;
  p.detail = predict_graph(built(net, d), gpu, p.plan, eff);
  p.decode_step_s = p.detail.step_s;
  p.kv_cache_bytes = graph::kv_cache_bytes(net.decoder, p.prompt_len + p.gen_len, p.batch, p.plan.activations);
  p.memory.activations_bytes = p.kv_cache_bytes;
  update_peak(p.memory);
}

// Data parallel: gradients reduced every step over the link, hidden behind the backward pass but for the
// last bucket; sharding splits the states and, fully sharded (FSDP), gathers the weights in forward and
// backward.
void apply_data_parallel(Prediction& p, const graph::Graph& g, const catalog::Gpu& gpu) {
  p.link = link_for(gpu, p.gpus);
  const double params = static_cast<double>(p.params);
  const double grad_bytes = params * (p.plan.activations == graph::DType::f32 || p.plan.fp32_master ? 4.0 : 2.0);
  const double weight_bytes = params * static_cast<double>(graph::dtype_size(p.plan.activations));
  double overlap_window = 0;
  const graph::NodeId loss = g.output("loss");
  for (const auto& op : p.detail.ops)
    if (op.id > loss) overlap_window += op.seconds;  // backward and optimizer
  if (p.sharding == "full") {
    p.comm_bytes = 2.0 * weight_bytes + grad_bytes;  // two all-gathers of weights, one reduce-scatter
    p.comm_s = 2.0 * allgather_seconds(weight_bytes, p.gpus, p.link) + allgather_seconds(grad_bytes, p.gpus, p.link);
    overlap_window = p.detail.step_s;  // prefetching overlaps gathers with forward and backward
  } else {
    p.comm_bytes = 2.0 * grad_bytes;
    p.comm_s = allreduce_seconds(grad_bytes, p.gpus, p.link);
  }
  const double last_bucket = allreduce_seconds(std::min(kBucketBytes, grad_bytes), p.gpus, p.link);
  p.comm_exposed_s = std::max(0.0, p.comm_s - overlap_window) + std::min(last_bucket, p.comm_s);
  p.step_s += p.comm_exposed_s;
  const double n = p.gpus;
  if (p.sharding != "none") p.memory.optimizer_bytes /= n;
  if (p.sharding == "zero2" || p.sharding == "full") p.memory.gradients_bytes /= n;
  if (p.sharding == "full") p.memory.weights_bytes /= n;
  update_peak(p.memory);
}

}  // namespace

std::map<std::string, std::string> parse_option_pairs(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(';', pos);
    if (end == std::string::npos) end = text.size();
    std::string pair = text.substr(pos, end - pos);
    pair.erase(0, pair.find_first_not_of(" \t"));
    pair.erase(pair.find_last_not_of(" \t") + 1);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos || eq == 0)
        throw InputError(fmt::format("--options: '{}' is not key=value", strings::printable(pair)));
      std::string key = pair.substr(0, eq), value = pair.substr(eq + 1);
      key.erase(key.find_last_not_of(" \t") + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      out[key] = value;
    }
    pos = end + 1;
  }
  return out;
}

const std::vector<std::string>& prediction_option_keys() { return kOptionKeys; }

std::map<std::string, std::string> parse_options(const std::string& text) {
  auto out = parse_option_pairs(text);
  for (const auto& [key, value] : out)
    if (std::find(kOptionKeys.begin(), kOptionKeys.end(), key) == kOptionKeys.end())
      throw InputError(fmt::format("--options: unknown key '{}' (known: {})", strings::printable(key),
                                   strings::join(kOptionKeys, ", ")));
  return out;
}

Prediction predict(const catalog::Catalog& cat, const PredictRequest& req) {
  const catalog::Gpu& gpu = cat.find(req.gpu);
  const graph::NetworkInfo net = graph::resolve_network(req.workload, req.options);  // `gpt`: its shape from options
  if (req.gpus < 1 || req.gpus > 1024) throw InputError(fmt::format("--gpus must be in [1, 1024], got {}", req.gpus));
  if (req.gpus > 8)
    throw InputError(fmt::format("--gpus {}: more than one 8-GPU server (inter-node networks) is not modelled yet",
                                 req.gpus));
  if (req.batch < 0) throw InputError(fmt::format("--batch must be positive, got {}", req.batch));
  for (const auto& [k, v] : req.options) {
    bool known = false;
    for (const auto& key : kOptionKeys) known = known || key == k;
    if (!known) throw InputError(fmt::format("option '{}' is unknown (known: {})", k, strings::join(kOptionKeys, ", ")));
  }
  Prediction p;
  p.plan = plan_precision(req.precision, gpu);
  p.workload = net.id;
  p.gpu_id = gpu.id;
  p.gpu_name = gpu.name;
  p.training = req.training;
  p.batch = req.batch > 0 ? req.batch : default_batch(net.family);
  p.seq_len = net.default_seq_len > 0 ? option_int(req.options, "seq_len", net.default_seq_len, 1, 1 << 20) : 0;
  // Frameworks' defaults: the published encoder (BERT) implementations use unfused attention; decoder
  // training stacks (llm-foundry, Megatron) use FlashAttention.
  const bool flash = option_int(req.options, "flash_attention", net.family == "decoder" ? 1 : 0, 0, 1) == 1;
  p.finetune = option_choice(req.options, "finetune", "full", {"full", "lora", "qlora"});
  p.recompute = option_choice(req.options, "recompute", "none", {"none", "full", "selective"});
  if (p.finetune != "full") {
    if (net.layers == 0) throw InputError(fmt::format("finetune={} applies to transformer workloads, not {}", p.finetune, net.id));
    if (!req.training) throw InputError(fmt::format("finetune={} needs --mode train", p.finetune));
    p.lora_rank = option_int(req.options, "lora_rank", 16, 1, 4096);
  } else if (req.options.count("lora_rank")) {
    throw InputError("option lora_rank needs finetune=lora or finetune=qlora");
  }
  if (p.recompute != "none" && (!req.training || net.layers == 0))
    throw InputError(fmt::format("recompute={} applies to training transformer workloads", p.recompute));
  graph::NetworkOptions nopt{p.batch, p.plan.activations, p.seq_len, flash, req.training};
  nopt.lora_rank = p.lora_rank;
  const graph::Graph& g = built(net, nopt);
  p.params = graph::param_count(g);
  p.frozen_params = graph::param_count(g, false) - p.params;
  const EfficiencyParams eff = calibrated_params(gpu, p.plan, req.calibration);
  p.calibrated = req.calibration && req.calibration->gpu_id == gpu.id;
  // Convolution layout: channels-last (the model's default, what NVIDIA's reference implementations train
  // with on tensor cores) or channels-first, which adds cuDNN's transposes around tensor-core convolutions.
  const std::string layout = option_choice(req.options, "memory_format", "nhwc", {"nhwc", "nchw"});
  if (req.options.count("memory_format") && net.family != "cnn" && net.family != "unet")
    throw InputError(fmt::format("option memory_format applies to convolutional workloads, not {}", net.id));
  p.memory_format = layout;
  p.detail = predict_graph(g, gpu, p.plan, eff, layout == "nchw" ? ConvLayout::nchw : ConvLayout::nhwc);
  // LoRA's frozen base: 16-bit weights (or 32-bit in fp32/tf32); QLoRA: 4-bit NF4 plus double-quantised
  // block scales, 0.516 bytes per parameter (Dettmers et al. 2023).
  const double frozen_bytes = p.finetune == "qlora" ? 0.516 : static_cast<double>(graph::dtype_size(p.plan.activations));
  p.memory = estimate_memory(g, p.params, p.plan, req.training, gpu, p.frozen_params, frozen_bytes);
  if (p.recompute != "none") apply_recompute(p, g, net);
  if (!req.training && net.family == "decoder") {
    apply_decode(p, net, gpu, eff, flash, option_int(req.options, "gen_len", 128, 1, 1 << 20));
  } else if (req.options.count("gen_len")) {
    throw InputError("option gen_len applies to decoder inference (--mode infer)");
  }
  p.single_gpu_step_s = p.detail.step_s;
  p.step_s = p.detail.step_s;
  p.sharding = option_choice(req.options, "sharding", "none", {"none", "zero1", "zero2", "full"});
  p.gpus = req.gpus;
  if (p.gpus > 1 && req.training) {
    apply_data_parallel(p, g, gpu);
  } else if (p.sharding != "none") {
    throw InputError("option sharding needs --gpus > 1 and training");
  }
  if (p.decode) {
    p.throughput = static_cast<double>(p.batch) / p.step_s;  // generated tokens per second
    p.unit = "tokens/s";
  } else if (net.family == "decoder") {
    p.throughput = static_cast<double>(p.batch * p.seq_len) / p.step_s;
    p.unit = "tokens/s";
  } else {
    p.throughput = static_cast<double>(p.batch) / p.step_s;
    p.unit = net.sample_unit + "/s";
  }
  p.band_low = model_band().low(p.throughput);
  p.band_high = model_band().high(p.throughput);
  return p;
}

}  // namespace gpuvs::perf
