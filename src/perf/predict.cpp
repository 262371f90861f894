// SPDX-License-Identifier: Apache-2.0
#include "perf/predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "models/networks.hpp"
#include "perf/achievable.hpp"
#include "perf/band.hpp"
#include "perf/constants.hpp"
#include "perf/device_view.hpp"
#include "perf/framework.hpp"
#include "perf/maturity.hpp"
#include "perf/parallel.hpp"
#include "perf/request_error.hpp"
#include "perf/sequence_lengths.hpp"
#include "perf/serving.hpp"
#include "perf/serving_engine.hpp"
#include "perf/system_facts.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

namespace {
// The last six are the `gpt` workload's shape (models::gpt_shape_keys()), valid with that workload only.
const std::vector<std::string> kOptionKeys = {"seq_len",  "flash_attention", "sharding", "gen_len", "recompute",
                                              "finetune", "lora_rank",       "lora_targets", "sample_len", "layers",   "hidden",  "heads",
                                              "kv_heads", "ffn",             "vocab",    "memory_format",
                                              "tp",       "pp",              "cp",       "vp",      "global_batch",
                                              "network",  "framework",       "sequence_parallel", "tp_overlap", "pp_overlap",
                                              "nvls",     "release",         "lengths",  "bin_size", "param_gather_overlap"};

std::string option_choice(const std::map<std::string, std::string>& o, const std::string& key, const std::string& fallback,
                          const std::vector<std::string>& allowed) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  for (const auto& a : allowed)
    if (a == it->second) return a;
  throw RequestError(fmt::format("option {}={}: expected one of {}", key, strings::printable(it->second),
                               strings::join(allowed, ", ")));
}

// The attention core a selective recompute drops and recomputes (Korthikanti et al. 2022): the score
// matrix, its mask, softmax and dropout.
bool attention_core(const ir::Graph& g, const ir::Node& n) {
  using ir::OpKind;
  if (n.op == OpKind::softmax) return true;
  if (n.op == OpKind::elementwise && n.fn == ir::EwFn::scale_mask) return true;
  if (n.op == OpKind::dropout && g.node(n.inputs[0]).op == OpKind::softmax) return true;
  return n.op == OpKind::batch_matmul && n.trans_b;  // Q.K^T
}
std::int64_t default_batch(models::Family family) { return system_facts().batch_for(family); }

// Full: keep each block's input and repeat the forward pass in backward. Selective: drop and recompute
// the attention core only.
void apply_recompute(Prediction& p, const ir::Graph& g, const models::NetworkInfo& net) {
  const ir::NodeId loss = g.output("loss");
  std::map<ir::NodeId, double> op_seconds;
  for (const auto& op : p.detail.ops) op_seconds[op.id] = op.seconds;
  // Checkpointing covers the blocks (Megatron's full recompute, Hugging Face's gradient checkpointing): the embedding,
  // the head and the loss are neither recomputed nor dropped.
  auto in_blocks = [&](ir::NodeId id) {
    const std::string& name = g.node(id).name;
    return name.rfind("blocks.", 0) == 0 || name.rfind("encoder.", 0) == 0;
  };
  if (p.recompute == "full") {
    for (const auto& [id, sec] : op_seconds)
      if (id <= loss && in_blocks(id)) p.recompute_s += sec;
    const double tokens = static_cast<double>(p.batch * std::max<std::int64_t>(p.seq_len, 1));
    const double boundaries = static_cast<double>(net.layers) * tokens * static_cast<double>(net.hidden) *
                              static_cast<double>(ir::dtype_size(p.plan.activations));
    // The blocks' saved tensors give way to their inputs (and one block's come back while it is recomputed); the
    // embedding's, the head's and the loss's (its FP32 probabilities) stay.
    double blocks = 0, outside = 0;
    for (const SavedTensor& t : saved_tensors(g)) (in_blocks(t.id) ? blocks : outside) += t.bytes;
    p.memory.activations_bytes = boundaries + blocks / net.layers + outside;
  } else {
    for (const SavedTensor& t : saved_tensors(g))
      if (attention_core(g, g.node(t.id))) {
        p.memory.activations_bytes -= t.bytes;
        if (op_seconds.count(t.id)) p.recompute_s += op_seconds[t.id];
      }
  }
  update_peak(p.memory);
  p.detail.step_s += p.recompute_s;
  p.detail.compute_s += p.recompute_s;
}

// Serving a decoder: priced by the serving model (perf/serving.hpp) at this batch — the prompt (seq_len)
// prefilled, then one decode step per generated token over a context growing from the prompt — so
// predict, compare and advise agree with `predict --mode prefill|decode`. 32-bit precisions have no
// serving format and keep the graph's price.
bool apply_serving(Prediction& p, const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& req, std::int64_t gen_len) {
  if (p.plan.precision == Precision::fp32 || p.plan.precision == Precision::tf32) return false;
  ServingRequest s;
  s.workload = req.workload;
  s.gpu = req.gpu;
  s.batch = p.batch;
  s.format = serving_format_for(std::string(precision_name(p.plan.precision)));
  s.calibration = req.calibration;
  s.stack = req.stack;
  for (const auto& key : models::gpt_shape_keys())
    if (req.options.count(key)) s.options[key] = req.options.at(key);
  // A serving engine named is used; PyTorch named for inference means eager transformers; otherwise the
  // serving default.
  const auto fw = req.options.find("framework");
  if (fw != req.options.end()) {
    if (is_serving_engine(fw->second)) s.options["framework"] = fw->second;
    else if (fw->second == "pytorch") s.options["framework"] = "hf-transformers";
  }
  s.options["prompt_len"] = std::to_string(p.seq_len);
  s.mode = "prefill";
  const ServingPrediction prefill = predict_serving(cat, w, s);
  s.mode = "decode";
  s.options["gen_len"] = std::to_string(gen_len);
  const ServingPrediction decode = predict_serving(cat, w, s);
  p.decode = true;
  p.prompt_len = p.seq_len;
  p.gen_len = gen_len;
  p.prefill_s = prefill.ttft_s;
  p.decode_step_s = decode.tpot_s;
  p.kv_cache_bytes = decode.kv_bytes;
  p.framework = decode.engine;
  p.stack_applied = req.stack && req.stack->engine == decode.engine && req.stack->format == decode.format;
  p.framework_unmodelled.clear();
  p.memory.weights_bytes = decode.weight_bytes;
  p.memory.gradients_bytes = p.memory.optimizer_bytes = 0;
  p.memory.activations_bytes = decode.kv_bytes;
  p.memory.transient_bytes = 0;
  p.memory.runtime_bytes = decode.runtime_bytes;
  update_peak(p.memory);
  return true;
}

/// Gradient accumulation: `k` micro-batches per optimizer step, the gradients reduced once (in the last
/// micro-batch's backward: DDP's no_sync on the others, as the published BERT and ResNet recipes run it) and the
/// optimizer run once. The step becomes k forward-backward passes and one update.
void apply_accumulation(Prediction& p, const ir::Graph& g, std::int64_t k) {
  double optimizer_s = 0;
  for (const auto& op : p.detail.ops)
    if (g.node(op.id).op == ir::OpKind::adam_update) optimizer_s += op.seconds;
  p.micro_batches = k;
  p.global_batch = k * p.batch * p.gpus;
  p.microbatch_s = p.detail.step_s - optimizer_s;
  p.optimizer_s = optimizer_s;
  p.step_s = static_cast<double>(k) * p.microbatch_s + optimizer_s;
}

/// The link data parallelism over `gpus` reduces over: the server's own inside one (NVLink, PCIe, host-staged),
/// else the network (named by the `network` option, else the one a DGX-class system of this card has, said in
/// p.network_note): its rings cross between nodes on every rank's NIC at once, at the slower of those NICs and the
/// link inside a node (perf/parallel.hpp group_link).
Link data_parallel_link(Prediction& p, const PredictRequest& req, const catalog::Gpu& gpu) {
  const int per_server = system_facts().gpus_per_server;
  const bool nvls = nvls_option(req.options);
  if (p.gpus <= per_server && !req.options.count("network")) return nvls ? link_for(gpu, p.gpus) : without_nvls(link_for(gpu, p.gpus));
  const Fabric& fabric = req.options.count("network") ? fabric_by_id(req.options.at("network")) : default_fabric(gpu, &p.network_note);
  p.network = fabric.id;
  ParallelLayout l;
  l.network = fabric.id;
  l.gpus_per_node = per_server;
  l.nvls = nvls;
  return group_link(gpu, l, p.gpus, 1);
}

/// The Adam update of one rank's 1/n share of the parameters (ZeRO, FSDP): each kernel's traffic and math shrink with
/// the states it updates; its launch and the ramp of its transfer (perf/efficiency.hpp memory_efficiency: a kernel's
/// memory time is its bytes plus mem_half_bytes at the class's rate) do not, so a small model's update, mostly those,
/// gains next to nothing from sharding.
double sharded_optimizer_seconds(const StepPrediction& d, const ir::Graph& g, const EfficiencyParams& eff, double bandwidth, double n) {
  const double ramp_s = eff.mem_half_bytes / (bandwidth * eff.mem_max);
  double seconds = 0;
  for (const auto& op : d.ops) {
    if (g.node(op.id).op != ir::OpKind::adam_update) continue;
    const double memory_s = op.memory_s > 0 ? std::max(0.0, op.memory_s - ramp_s) / n + std::min(op.memory_s, ramp_s) : 0.0;
    seconds += std::max(op.compute_s / n, memory_s) + (op.seconds - std::max(op.compute_s, op.memory_s));
  }
  return seconds;
}

// Data parallel over the card's link (data_parallel_exchange: the collectives each way of sharding runs, and what hides
// them); a sharded update runs on the rank's share (sharded_optimizer_seconds).
void apply_data_parallel(Prediction& p, const PredictRequest& req, const ir::Graph& g, const Link& link, const EfficiencyParams& eff, double bandwidth) {
  p.link = link;
  const double params = static_cast<double>(p.params);
  const double grad_bytes = params * (p.plan.activations == ir::DType::f32 || p.plan.fp32_master ? 4.0 : 2.0);
  const double weight_bytes = params * static_cast<double>(ir::dtype_size(p.plan.activations));
  // What the exchange can hide behind: the backward pass (recomputed forward included) and the forward pass; never the
  // update, which waits for the reduced gradients.
  double backward = p.recompute_s, optimizer = 0;
  const ir::NodeId loss = g.output("loss");
  for (const auto& op : p.detail.ops) {
    if (g.node(op.id).op == ir::OpKind::adam_update) optimizer += op.seconds;
    else if (op.id > loss) backward += op.seconds;
  }
  const DataParallelExchange x = data_parallel_exchange(p.sharding, option_int(req.options, "param_gather_overlap", 0, 0, 1) == 1, grad_bytes, weight_bytes,
                                                        p.detail.step_s - optimizer - backward, backward, system_facts().ddp_bucket_bytes, p.gpus, p.link);
  p.comm_bytes = x.bytes;
  p.comm_s = x.seconds;
  p.comm_exposed_s = x.exposed_s;
  p.step_s += p.comm_exposed_s;
  const double n = p.gpus;
  if (p.sharding != "none") {
    p.optimizer_s = sharded_optimizer_seconds(p.detail, g, eff, bandwidth, n);
    p.step_s -= optimizer - p.optimizer_s;
    p.memory.optimizer_bytes /= n;
  }
  if (p.sharding == "zero2" || p.sharding == "full") p.memory.gradients_bytes /= n;
  if (p.sharding == "full") p.memory.weights_bytes /= n;
  update_peak(p.memory);
}

/// LoRA's frozen base: 16-bit weights (or 32-bit in fp32/tf32); QLoRA: 4-bit NF4 plus double-quantised
/// block scales (data/system.toml's training.qlora_bytes_per_param).
double frozen_bytes_per_param(const Prediction& p) {
  return p.finetune == "qlora" ? system_facts().qlora_bytes_per_param : static_cast<double>(ir::dtype_size(p.plan.activations));
}

/// predict_graph of a workload's graph, remembered: the advisor prices the same stage graphs on the same card
/// for every cluster size it tries, and the fitter every validation row under every candidate constant. Keyed by
/// the graph's serial (never reused) and everything else predict_graph reads: the card's figures, the precision
/// plan, every efficiency parameter, the layout and the active constants' clock headroom (the fitter moves it
/// between calls: a key without it returned the previous candidate's price). Shared by the advisor's threads;
/// emptied when full.
/// The kernels the framework that priced `p` fuses (perf/framework.hpp's fusions); none for a serving engine.
KernelFusion fusion_of(const Prediction& p) {
  KernelFusion k;
  for (const auto& f : frameworks())
    if (f.id == p.framework) {
      k.shared_input_cast = fuses(f, "fp8-shared-input-cast");
      k.norm_cast = fuses(f, "fp8-norm-cast");
      k.activation_cast = fuses(f, "fp8-activation-cast");
      k.scale_mask_softmax = fuses(f, "scale-mask-softmax");
      k.dropout_add = fuses(f, "dropout-add");
      k.add_norm = fuses(f, "add-norm");
      k.gemm_activation = fuses(f, "gemm-activation");
    }
  return k;
}

/// Whether that framework's attention reads the projections' layout (no permute copies around it).
bool attention_views(const Prediction& p) {
  for (const auto& f : frameworks())
    if (f.id == p.framework) return fuses(f, "attention-views");
  return false;
}

StepPrediction priced(const workload::BuiltGraph& g, const catalog::Gpu& gpu, const PrecisionPlan& plan, const EfficiencyParams& e,
                      ConvLayout layout, const KernelFusion& fusion) {
  static std::mutex mutex;
  static std::map<std::string, StepPrediction> memo;
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}{}{}{}{}{}{}", g.serial, gpu.id, static_cast<int>(plan.precision),
                  plan.matrix_tflops, plan.vector_tflops, plan.tensor_cores, plan.fp32_master, static_cast<int>(plan.activations),
                  e.gemm_max, e.conv_max, e.attention_max, e.vector_max, e.mem_max, e.mem_half_bytes, e.launch_s, e.k_half, e.tile_m,
                  e.tile_n, static_cast<int>(layout), gpu.memory_bandwidth_gbs, gpu.sm_count, active_constants().clock_headroom,
                  gpu.boost_mhz, fusion.shared_input_cast, fusion.norm_cast, fusion.activation_cast, fusion.scale_mask_softmax,
                  fusion.dropout_add, fusion.add_norm, fusion.gemm_activation);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  StepPrediction p = predict_graph(g.graph, gpu, plan, e, layout, fusion);
  const std::lock_guard<std::mutex> lock(mutex);
  if (memo.size() >= 1024) memo.clear();
  memo.emplace(key, p);
  return p;
}

/// A profile whose GEMMs are the tactics it timed on the card (TensorRT): the card's achievable GEMM rate for the plan's
/// math (data/achievable.toml: a published figure, else the rule learned from other cards), as a fraction of the peak at
/// the sustained clock predict_graph prices against; `fallback` where the card has no such figure (FP32 on CUDA cores).
double tuned_gemm_fraction(const catalog::Catalog& cat, const catalog::Gpu& gpu, const PrecisionPlan& plan, double fallback) {
  // FP8 first: its activations are BF16, its GEMMs FP8.
  const char* key = plan.precision == Precision::fp32      ? "gemm-fp32"
                    : plan.precision == Precision::tf32    ? "gemm-tf32"
                    : plan.precision == Precision::amp_fp8 ? "gemm-fp8"
                    : plan.activations == ir::DType::bf16  ? "gemm-bf16"
                                                           : "gemm-fp16";
  const auto a = achievable(cat, gpu, key);
  if (!a) return fallback;
  const double clock = device_view(gpu, plan, nullptr, false).clock;
  return std::min(0.98, a->fraction / clock);
}

/// What the training profile's release date does to its kernels on `gpu` (perf/maturity.hpp), recorded on `p`.
MaturityEffect training_maturity(Prediction& p, const PredictRequest& req, const catalog::Gpu& gpu, bool flash) {
  if (req.native_kernels || is_serving_engine(p.framework)) return {};
  const FrameworkProfile& fw = framework(p.framework);
  MaturityEffect m = maturity_effect(gpu, fw.id, release_of(req.options, fw.released), flash);
  p.maturity_notes = m.notes;
  return m;
}

/// Decoder training over tp x pp x cp x dp GPUs (perf/parallel.hpp): one rank's first and last stage graphs
/// priced per micro-batch, the slower setting the pace, then the collectives, bubble and DP reduction.
void predict_parallel(Prediction& p, const PredictRequest& req, const workload::Workload& w, const catalog::Gpu& gpu, bool flash) {
  const models::NetworkInfo& net = w.network();
  if (net.family != models::Family::decoder || !req.training)
    throw InputError(fmt::format("tp, pp, cp, vp, global_batch, network and more than {} GPUs apply to decoder training",
                                 system_facts().gpus_per_server));
  const bool adapters = p.finetune != "full";
  p.sharding = option_choice(req.options, "sharding", "none", {"none", "zero1"});
  const int tp = static_cast<int>(option_int(req.options, "tp", 1, 1, 512));
  const int pp = static_cast<int>(option_int(req.options, "pp", 1, 1, 4096));
  const int cp = static_cast<int>(option_int(req.options, "cp", 1, 1, 4096));
  const int vp = static_cast<int>(option_int(req.options, "vp", 1, 1, 4096));
  const std::int64_t global = option_int(req.options, "global_batch", 0, 1, std::int64_t{1} << 40);
  const Fabric& fabric = req.options.count("network") ? fabric_by_id(req.options.at("network")) : default_fabric(gpu, &p.network_note);
  const auto& dec = net.decoder;
  ParallelLayout l = make_layout(req.gpus, tp, pp, cp, vp, p.batch, global, dec.layers, dec.heads, p.seq_len, fabric.id);
  l.nvls = nvls_option(req.options);
  // LoRA/QLoRA adapters over data parallelism with accumulation are priced; inside tensor or pipeline
  // splits the stage graphs lack the adapters' input gradients at stage boundaries, so not yet.
  if (adapters && (l.tp > 1 || l.pp > 1 || l.cp > 1))
    throw InputError(fmt::format("finetune={} with tp/pp/cp splits is not modelled yet (data parallelism with accumulation is)", p.finetune));
  // Context parallelism over packed samples splits each sample across the ranks (THD layout): not priced.
  if (p.sample_len > 0 && l.cp > 1) throw InputError("option sample_len with cp > 1 is not modelled yet (tp, pp and dp are)");
  p.parallel = true;
  p.gpus = req.gpus;
  p.tp = l.tp, p.pp = l.pp, p.cp = l.cp, p.vp = l.vp, p.dp = l.dp;
  p.global_batch = l.global_batch;
  p.micro_batches = l.micro_batches;
  p.network = fabric.id;
  EfficiencyParams eff = device_view(gpu, p.plan, req.calibration, true).eff;
  p.calibrated = req.calibration && req.calibration->gpu_id == gpu.id;
  apply_maturity(eff, training_maturity(p, req, gpu, flash));
  p.stack_applied = apply_stack(eff, req.stack, p.framework, precision_name(p.plan.precision), gpu.id);
  models::NetworkInfo stage_net = net;
  stage_net.layers = dec.layers / l.pp;
  struct Stage {
    Prediction pred;
    StageCost cost;
  };
  auto price_stage = [&](bool first, bool last) {
    models::NetworkOptions o{p.batch, p.plan.activations, p.seq_len / l.cp, flash, true};
    o.tensor_parallel = l.tp;
    o.stage_layers = l.pp > 1 ? stage_net.layers : 0;
    o.first_stage = first;
    o.last_stage = last;
    o.lora_rank = p.lora_rank;
    o.lora_targets = p.lora_targets;
    o.sample_len = p.sample_len;
    o.head_copies = !attention_views(p);
    const auto built = w.graph(o);
    const ir::Graph& g = built->graph;
    Stage s;
    s.pred = p;
    s.pred.seq_len = p.seq_len / l.cp;
    s.pred.params = models::param_count(g);
    s.pred.frozen_params = models::param_count(g, false) - s.pred.params;
    s.pred.detail = priced(*built, gpu, p.plan, eff, ConvLayout::nhwc, fusion_of(p));
    s.pred.memory = estimate_memory(g, s.pred.params, p.plan, true, gpu, s.pred.frozen_params, frozen_bytes_per_param(p));
    if (p.recompute != "none") apply_recompute(s.pred, g, stage_net);
    const ir::NodeId loss = g.output("loss");
    for (const auto& op : s.pred.detail.ops) {
      const ir::Node& n = g.node(op.id);
      if (n.op == ir::OpKind::adam_update) s.cost.optimizer_s += op.seconds;
      else if (op.id > loss) s.cost.backward_s += op.seconds;
      if (n.op == ir::OpKind::attention || n.op == ir::OpKind::attention_grad) s.cost.attention_s += op.seconds;
      if (n.op == ir::OpKind::matmul || n.op == ir::OpKind::batch_matmul) s.cost.gemm_s += op.seconds;
      if ((n.op == ir::OpKind::normalize || n.op == ir::OpKind::normalize_grad || n.op == ir::OpKind::add ||
           n.op == ir::OpKind::dropout || n.op == ir::OpKind::dropout_grad) &&
          n.name.rfind("blocks.", 0) == 0)
        s.cost.replicated_s += op.seconds;
    }
    s.cost.backward_s += s.pred.recompute_s;  // the recomputed forward runs in the backward pass, as on one server
    s.cost.compute_s = s.pred.detail.step_s - s.cost.optimizer_s;
    s.cost.params = static_cast<double>(s.pred.params);
    if (p.sharding != "none") s.cost.optimizer_s = sharded_optimizer_seconds(s.pred.detail, g, eff, device_view(gpu, p.plan, eff).bandwidth, l.dp);
    return s;
  };
  const Stage first = price_stage(true, l.pp == 1);
  std::optional<Stage> last_stage;
  if (l.pp > 1) last_stage = price_stage(false, true);
  const Stage& slow = last_stage && last_stage->cost.compute_s > first.cost.compute_s ? *last_stage : first;
  TrafficShape t;
  t.tokens = static_cast<double>(p.batch) * static_cast<double>(p.seq_len / l.cp);
  t.hidden = static_cast<double>(dec.hidden);
  t.act_bytes = static_cast<double>(ir::dtype_size(p.plan.activations));
  const double head_dim = static_cast<double>(dec.head_size());
  t.kv_bytes_per_token = 2.0 * std::max(1, dec.kv_heads / l.tp) * head_dim * t.act_bytes;
  t.stage_layers = stage_net.layers;
  t.recompute_full = p.recompute == "full";
  t.grad_bytes_per_param = p.plan.activations == ir::DType::f32 || p.plan.fp32_master ? 4.0 : 2.0;
  t.sequence_parallel = option_int(req.options, "sequence_parallel", 0, 0, 1) == 1;
  t.tp_overlap = option_int(req.options, "tp_overlap", 0, 0, 1) == 1;
  t.pp_overlap = option_int(req.options, "pp_overlap", 0, 0, 1) == 1;
  t.sharding = p.sharding;
  t.param_gather_overlap = option_int(req.options, "param_gather_overlap", 0, 0, 1) == 1;
  t.weight_bytes_per_param = static_cast<double>(ir::dtype_size(p.plan.activations));
  const ParallelStep st = parallel_step(gpu, l, slow.cost, t);
  p.params = slow.pred.params;
  p.frozen_params = slow.pred.frozen_params;
  p.detail = slow.pred.detail;
  p.recompute_s = slow.pred.recompute_s;
  p.single_gpu_step_s = slow.pred.detail.step_s;
  p.microbatch_s = st.microbatch_s;
  p.tp_comm_s = st.tp_s;
  p.cp_exposed_s = st.cp_exposed_s;
  p.pp_comm_s = st.pp_s;
  p.bubble_s = st.bubble_s;
  p.dp_comm_s = st.dp_s;
  p.dp_exposed_s = st.dp_exposed_s;
  p.optimizer_s = st.optimizer_s;
  p.comm_s = st.dp_s + static_cast<double>(l.micro_batches) * (st.tp_s + st.pp_s);
  p.comm_exposed_s = st.dp_exposed_s + static_cast<double>(l.micro_batches) * (st.tp_s + st.pp_s + st.cp_exposed_s);
  p.tp_link = st.tp_link.description;
  p.dp_link = st.dp_link.description;
  p.pp_link = st.pp_link.description;
  p.link = st.dp_link;
  p.step_s = st.step_s;
  p.unit = "tokens/s";
  p.throughput = static_cast<double>(l.global_batch) * static_cast<double>(p.seq_len) / p.step_s / req.gpus;
  // Memory on the heavier stage: its weights, gradients and optimizer (the optimizer sharded over dp with
  // zero1, Megatron's distributed optimizer) and its activations in flight: with 1F1B up to pp micro-batches on the
  // first stage (interleaving adds (pp - 1) / vp more), one on the last.
  auto stage_memory = [&](const Stage& s, double in_flight) {
    MemoryEstimate m = s.pred.memory;
    if (p.sharding == "zero1") m.optimizer_bytes /= l.dp;
    m.activations_bytes *= std::min<double>(in_flight, static_cast<double>(l.micro_batches));
    update_peak(m);
    return m;
  };
  const double in_flight = l.pp > 1 ? l.pp + static_cast<double>(l.pp - 1) / l.vp * (l.vp > 1 ? 1.0 : 0.0) : 1.0;
  MemoryEstimate m = stage_memory(first, in_flight);
  if (last_stage) {
    const MemoryEstimate tail = stage_memory(*last_stage, 1.0);
    if (tail.peak_bytes > m.peak_bytes) m = tail;
  }
  p.memory = m;
  p.band_low = model_band().low(p.throughput);
  p.band_high = model_band().high(p.throughput);
}

}  // namespace

std::string option_pairs_text(const std::map<std::string, std::string>& options) {
  std::string out;
  for (const auto& [k, v] : options) out += (out.empty() ? "" : ";") + k + "=" + v;
  return out;
}

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
        throw RequestError(fmt::format("--options: '{}' is not key=value", strings::printable(pair)));
      std::string key = pair.substr(0, eq), value = pair.substr(eq + 1);
      key.erase(key.find_last_not_of(" \t") + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (!out.emplace(key, value).second)
        throw RequestError(fmt::format("--options: '{}' is given twice ({} and {}); give it once", strings::printable(key),
                                     strings::printable(out[key]), strings::printable(value)));
    }
    pos = end + 1;
  }
  return out;
}

std::int64_t option_int(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t fallback,
                        std::int64_t lo, std::int64_t hi) {
  auto it = o.find(key);
  if (it == o.end()) return fallback;
  std::int64_t v = 0;
  const auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (r.ec != std::errc() || r.ptr != it->second.data() + it->second.size() || v < lo || v > hi)
    throw RequestError(fmt::format("option {}={}: expected an integer in [{}, {}]", key, strings::printable(it->second), lo, hi));
  return v;
}

const std::vector<std::string>& prediction_option_keys() { return kOptionKeys; }

namespace {

/// "k=v;..." with every key one of the prediction options or of `more`.
std::map<std::string, std::string> options_with_keys(const std::string& text, const std::vector<std::string>& more) {
  auto out = parse_option_pairs(text);
  std::vector<std::string> keys = kOptionKeys;
  keys.insert(keys.end(), more.begin(), more.end());
  for (const auto& [key, value] : out)
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw RequestError(fmt::format("--options: unknown key '{}' (known: {})", strings::printable(key), strings::join(keys, ", ")));
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_options(const std::string& text) { return options_with_keys(text, {}); }

std::map<std::string, std::string> parse_options(const std::string& text, const workload::Workload& w) {
  return options_with_keys(text, w.network().shape_options);  // an ONNX file's symbolic dims are options too
}

std::vector<std::string> assumed(const PredictRequest& req, const Prediction& p) {
  std::vector<std::string> out;
  if (req.batch == 0) out.push_back(fmt::format("batch {} per GPU (the workload's default)", p.batch));
  if (!p.quantized_as.empty())
    out.push_back(fmt::format("the model's shape at {}, not its checkpoint's {} weights (a prediction of the dequantized model{})",
                              precision_name(p.plan.precision), p.quantized_as,
                              p.finetune == "qlora" ? "; finetune=qlora keeps 4-bit frozen weights" : "; --mode prefill, decode or infer price them as stored"));
  if (!req.precision) out.push_back(fmt::format("precision {} (the default rule: {})", precision_name(p.plan.precision), kDefaultPrecisionRule));
  if (p.seq_len > 0 && !req.options.count("seq_len") && !p.lengths.empty())
    out.push_back(fmt::format("sequence {} tokens (what lengths={} was made for)", p.seq_len, p.lengths));
  else if (p.seq_len > 0 && !req.options.count("seq_len"))
    out.push_back(p.prompt_cut_to_positions ? fmt::format("prompt {} tokens (the model's positions less the generated tokens)", p.seq_len)
                                            : fmt::format("sequence {} tokens (the model's default)", p.seq_len));
  if (!p.memory_format.empty() && !req.options.count("memory_format"))
    out.push_back(fmt::format("convolution layout {} (the {} profile's default; --options memory_format={} for the other)", p.memory_format,
                              p.framework, p.memory_format == "nchw" ? "nhwc" : "nchw"));
  const bool profile_without_nvls = !is_serving_engine(p.framework) && framework(p.framework).defaults.count("nvls") &&
                                    framework(p.framework).defaults.at("nvls") == "0";
  if (p.gpus > 1 && req.training && !req.options.count("nvls") && !profile_without_nvls)
    out.push_back("all-reduce through NVLink SHARP where a board's NVSwitch has it and it beats the rings (NCCL 2.17 and later: HGX "
                  "H100/H200, B200; --options nvls=0 for rings only)");
  return out;
}

Prediction predict(const catalog::Catalog& cat, const PredictRequest& request) {
  cat.find(request.gpu);  // an unknown card is named before the workload is read
  return predict(cat, workload::Workload(request.workload, request.options), request);  // `gpt`: its shape from options
}

namespace {

/// The request as priced: the framework profile's defaults filled in, every option known, and whether the plan
/// goes beyond plain data parallelism inside one server.
struct ResolvedRequest {
  PredictRequest req;
  const FrameworkProfile* fw = nullptr;
  bool parallel = false;
  std::int64_t accumulation = 1;  // micro-batches per optimizer step on the plain data-parallel path
};

ResolvedRequest resolve_request(const models::NetworkInfo& net, const PredictRequest& request) {
  // The framework profile fills in the options the caller left to it.
  // A serving engine (vllm, trt-llm, ...) names the software of decoder inference; the training profiles
  // (pytorch, ...) everything else.
  const auto fw_it = request.options.find("framework");
  const bool serving_engine_named =
      fw_it != request.options.end() && workload::pricer_for(request.training ? "train" : "infer", net.family) == workload::Pricer::serving &&
      is_serving_engine(fw_it->second);
  ResolvedRequest r;
  r.fw = &framework(fw_it == request.options.end() || serving_engine_named ? "pytorch" : fw_it->second);
  r.req = request;
  PredictRequest& req = r.req;
  if (r.fw->inference_only && request.training)
    throw InputError(fmt::format("framework={} builds inference engines: --mode infer, not train", r.fw->id));
  req.options = with_framework_defaults(*r.fw, request.options, net.family, request.gpus, request.training);
  if (req.gpus < 1 || req.gpus > 65536) throw InputError(fmt::format("--gpus must be in [1, 65536], got {}", req.gpus));
  // A plan beyond plain data parallelism inside one server: model splits, gradient accumulation, a named
  // network, or more GPUs than a server holds. tp = pp = cp = vp = 1 and a global batch of batch x GPUs
  // say nothing beyond the plain path.
  // Model splits are decoders' (perf/parallel); past one server, other workloads train data parallel over the
  // network (apply_data_parallel), decoders through the same plans as with splits.
  bool splits = false;
  for (const char* k : {"tp", "pp", "cp", "vp"}) splits = splits || option_int(req.options, k, 1, 1, 4096) != 1;
  const bool beyond = req.gpus > system_facts().gpus_per_server || req.options.count("network") > 0;
  const bool decoder_training = net.family == models::Family::decoder && req.training;
  if (splits && !decoder_training) throw InputError("tp, pp, cp and vp are modelled for decoder training only");
  if (request.options.count("nvls") && (req.gpus < 2 || !req.training))
    throw InputError("option nvls needs --gpus > 1 and training (it chooses how the GPUs all-reduce)");
  if (request.options.count("param_gather_overlap")) {
    if (req.gpus < 2 || !req.training)
      throw InputError("option param_gather_overlap needs --gpus > 1 and training (it says when a sharded optimizer's updated weights are gathered)");
    option_int(req.options, "param_gather_overlap", 0, 0, 1);
    const auto sharding = req.options.find("sharding");
    if (sharding == req.options.end() || (sharding->second != "zero1" && sharding->second != "zero2"))
      throw InputError("option param_gather_overlap applies to sharding=zero1 or zero2: only they gather the updated weights after the update");
  }
  if (beyond && !req.training)
    throw InputError(fmt::format("more than {} GPUs and a network are modelled for training only", system_facts().gpus_per_server));
  r.parallel = decoder_training && (splits || beyond);
  if (req.options.count("global_batch")) {
    if (!req.training) throw InputError("option global_batch applies to training (--mode train)");
    const std::int64_t b = req.batch > 0 ? req.batch : net.fixed_batch > 0 ? net.fixed_batch : default_batch(net.family);
    const std::int64_t global = option_int(req.options, "global_batch", 1, 1, std::int64_t{1} << 40);
    // Decoders' plans lay accumulation out with their splits (perf/parallel); other workloads accumulate on the
    // plain data-parallel path: a whole number of batch x GPUs per optimizer step.
    if (net.family == models::Family::decoder) {
      r.parallel = r.parallel || global != b * req.gpus;
    } else {
      if (global % (b * req.gpus) != 0)
        throw InputError(fmt::format("global_batch {} is not a whole number of micro-batches of batch {} x {} GPU(s)", global, b, req.gpus));
      r.accumulation = global / (b * req.gpus);
    }
  }
  if (req.batch < 0) throw InputError(fmt::format("--batch must be positive, got {}", req.batch));
  for (const auto& [k, v] : req.options) {
    bool known = false;
    for (const auto& key : kOptionKeys) known = known || key == k;
    for (const auto& key : net.shape_options) known = known || key == k;  // an ONNX file's symbolic dims
    if (!known) {
      std::vector<std::string> keys = kOptionKeys;
      keys.insert(keys.end(), net.shape_options.begin(), net.shape_options.end());
      throw InputError(fmt::format("option '{}' is unknown (known: {})", strings::printable(k), strings::join(keys, ", ")));
    }
  }
  return r;
}

/// What every path shares: the plan, batch, sequence and the fine-tuning and recompute choices.
Prediction plan_of(const ResolvedRequest& r, const models::NetworkInfo& net, const catalog::Gpu& gpu) {
  const PredictRequest& req = r.req;
  Prediction p;
  p.framework = r.fw->id;
  p.framework_unmodelled = r.fw->unmodelled;
  p.plan = plan_precision(precision_on(req.precision, gpu), gpu);
  p.workload = net.id;
  p.gpu_id = gpu.id;
  p.gpu_name = gpu.name;
  p.training = req.training;
  if (net.quantized) p.quantized_as = net.quantized->weights();
  p.batch = req.batch > 0 ? req.batch : net.fixed_batch > 0 ? net.fixed_batch : default_batch(net.family);
  p.seq_len = net.default_seq_len > 0 ? option_int(req.options, "seq_len", net.default_seq_len, 1, models::kMaxSeqLen) : 0;
  p.finetune = option_choice(req.options, "finetune", "full", {"full", "lora", "qlora"});
  p.recompute = option_choice(req.options, "recompute", "none", {"none", "full", "selective"});
  if (p.finetune != "full") {
    if (net.layers == 0) throw InputError(fmt::format("finetune={} applies to transformer workloads, not {}", p.finetune, net.id));
    if (!req.training) throw InputError(fmt::format("finetune={} needs --mode train", p.finetune));
    p.lora_rank = option_int(req.options, "lora_rank", 16, 1, 4096);
    const std::string targets = option_choice(req.options, "lora_targets", "all", {"all", "qkv", "attention", "mlp"});
    for (auto t : {models::LoraTargets::all, models::LoraTargets::qkv, models::LoraTargets::attention, models::LoraTargets::mlp})
      if (models::lora_targets_name(t) == targets) p.lora_targets = t;
  } else {
    for (const char* key : {"lora_rank", "lora_targets"})
      if (req.options.count(key)) throw InputError(fmt::format("option {} needs finetune=lora or finetune=qlora", key));
  }
  if (req.options.count("sample_len")) {
    if (net.family != models::Family::decoder || !req.training)
      throw InputError(fmt::format("option sample_len (samples packed into each sequence) applies to training decoder workloads, not {}{}",
                                   net.id, req.training ? "" : " inference"));
    p.sample_len = option_int(req.options, "sample_len", 0, 1, models::kMaxSeqLen);
    if (p.sample_len > p.seq_len)
      throw InputError(fmt::format("option sample_len={} is longer than the sequence (seq_len {})", p.sample_len, p.seq_len));
  }
  if (p.recompute != "none" && (!req.training || net.layers == 0))
    throw InputError(fmt::format("recompute={} applies to training transformer workloads", p.recompute));
  // A served decoder's prompt and generation fit its positions: the default prompt leaves the generation room
  // (GPT-2's 1024 positions hold a 896-token prompt and 128 generated); a prompt the user named past it is refused.
  const std::int64_t positions = net.family == models::Family::decoder ? net.decoder.max_positions : 0;
  if (!req.training && positions > 0) {
    const std::int64_t gen = option_int(req.options, "gen_len", 128, 1, 1 << 20);
    if (p.seq_len + gen > positions) {
      if (req.options.count("seq_len") || gen >= positions)
        throw InputError(fmt::format("a request of {} tokens (seq_len {} + gen_len {}) is past {}'s {} positions", p.seq_len + gen, p.seq_len,
                                     gen, net.id, positions));
      p.seq_len = positions - gen;
      p.prompt_cut_to_positions = true;
    }
  }
  return p;
}

/// Beyond one server's plain data parallelism. With no micro-batch given: the one a practitioner would pick, the
/// fastest of 1, 2, 4, 8 that fits (and divides the global batch), else the smallest that can be laid out.
Prediction predict_beyond_one_server(const Prediction& p, const PredictRequest& req, const workload::Workload& w, const catalog::Gpu& gpu, bool flash) {
  if (req.batch > 0) {
    Prediction q = p;
    predict_parallel(q, req, w, gpu, flash);
    return q;
  }
  std::optional<Prediction> best;
  std::string why;
  for (const std::int64_t b : {1, 2, 4, 8}) {
    Prediction q = p;
    q.batch = b;
    try {
      predict_parallel(q, req, w, gpu, flash);
    } catch (const InputError& e) {
      if (why.empty()) why = e.what();
      continue;
    }
    if (!best || (q.memory.fits && (!best->memory.fits || q.throughput > best->throughput))) best = q;
  }
  if (!best) throw InputError(why);
  return *best;
}

/// A decoder served in FP32/TF32, which no serving engine runs: the graph's prefill, and a decode graph at the
/// generation's mean context.
void price_decode_as_graph(Prediction& p, const workload::Workload& w, const catalog::Gpu& gpu, const EfficiencyParams& eff, bool flash,
                           std::int64_t gen_len) {
  p.decode = true;
  p.prompt_len = p.seq_len;
  p.gen_len = gen_len;
  p.prefill_s = p.detail.step_s;
  models::NetworkOptions d{p.batch, p.plan.activations, p.seq_len, flash, false};
  d.decode_context = p.prompt_len + p.gen_len / 2;
  p.detail = predict_graph(w.graph(d)->graph, gpu, p.plan, eff);
  p.decode_step_s = p.detail.step_s;
  p.kv_cache_bytes = models::kv_cache_bytes(w.network().decoder, p.prompt_len + p.gen_len, p.batch, p.plan.activations);
  p.memory.activations_bytes = p.kv_cache_bytes;
  update_peak(p.memory);
}

void set_throughput(Prediction& p, const models::NetworkInfo& net) {
  if (p.decode) {
    p.step_s = p.decode_step_s;
    p.throughput = static_cast<double>(p.batch) / p.step_s;  // generated tokens per second
    p.unit = "tokens/s";
  } else if (net.family == models::Family::decoder) {
    p.throughput = static_cast<double>(p.batch * p.seq_len) / p.step_s;
    p.unit = "tokens/s";
  } else {
    p.throughput = static_cast<double>(p.batch * p.micro_batches) / p.step_s;  // micro_batches: accumulated per optimizer step
    p.unit = net.sample_unit + "/s";
  }
  p.band_low = model_band().low(p.throughput);
  p.band_high = model_band().high(p.throughput);
}

}  // namespace

namespace {

Prediction priced_padded(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& request) {
  w.check_is(request.workload, request.options);
  const catalog::Gpu& gpu = cat.find(request.gpu);
  const models::NetworkInfo& net = w.network();
  const ResolvedRequest resolved = resolve_request(net, request);
  const PredictRequest& req = resolved.req;
  Prediction p = plan_of(resolved, net, gpu);
  // Frameworks' defaults: the published encoder (BERT) implementations use unfused attention; decoder
  // training stacks (llm-foundry, Megatron) use FlashAttention.
  const bool flash = option_int(req.options, "flash_attention", net.family == models::Family::decoder ? 1 : 0, 0, 1) == 1;
  if (resolved.parallel) return predict_beyond_one_server(p, req, w, gpu, flash);
  models::NetworkOptions nopt{p.batch, p.plan.activations, p.seq_len, flash, req.training};
  nopt.lora_rank = p.lora_rank;
  nopt.lora_targets = p.lora_targets;
  nopt.sample_len = p.sample_len;
  nopt.head_copies = !attention_views(p);  // a profile whose attention reads the projections' layout (Megatron Core, TensorRT)
  nopt.fused_qkv = fuses(framework(p.framework), "fused-qkv");
  const auto built = w.graph(nopt);
  const ir::Graph& g = built->graph;
  p.params = models::param_count(g);
  p.frozen_params = models::param_count(g, false) - p.params;
  EfficiencyParams eff = device_view(gpu, p.plan, req.calibration, req.training).eff;
  p.calibrated = req.calibration && req.calibration->gpu_id == gpu.id;
  if (resolved.fw->tuned_gemms) eff.gemm_max = tuned_gemm_fraction(cat, gpu, p.plan, eff.gemm_max);
  apply_maturity(eff, training_maturity(p, req, gpu, flash));
  p.stack_applied = apply_stack(eff, req.stack, p.framework, precision_name(p.plan.precision), gpu.id);
  // Convolution layout: the framework profile's (PyTorch's contiguous NCHW unless a script converts to
  // channels-last) or the caller's; NCHW adds cuDNN's transposes around tensor-core convolutions.
  const std::string layout = option_choice(req.options, "memory_format", "nhwc", {"nhwc", "nchw"});
  if (request.options.count("memory_format") && net.family != models::Family::cnn && net.family != models::Family::unet)
    throw InputError(fmt::format("option memory_format applies to convolutional workloads, not {}", net.id));
  if (net.family == models::Family::cnn || net.family == models::Family::unet) p.memory_format = layout;
  p.detail = predict_graph(g, gpu, p.plan, eff, layout == "nchw" ? ConvLayout::nchw : ConvLayout::nhwc, fusion_of(p));
  p.memory = estimate_memory(g, p.params, p.plan, req.training, gpu, p.frozen_params, frozen_bytes_per_param(p));
  if (p.recompute != "none") apply_recompute(p, g, net);
  if (workload::pricer_for(req.training ? "train" : "infer", net.family) == workload::Pricer::serving) {  // one rule: workload.hpp
    const std::int64_t gen_len = option_int(req.options, "gen_len", 128, 1, 1 << 20);
    if (!apply_serving(p, cat, w, req, gen_len)) price_decode_as_graph(p, w, gpu, eff, flash, gen_len);
  } else if (req.options.count("gen_len")) {
    throw InputError("option gen_len applies to decoder inference (--mode infer)");
  }
  p.step_s = p.detail.step_s;
  p.sharding = option_choice(req.options, "sharding", "none", {"none", "zero1", "zero2", "full"});
  p.gpus = req.gpus;
  if (resolved.accumulation > 1) apply_accumulation(p, g, resolved.accumulation);
  p.single_gpu_step_s = p.step_s;
  if (p.gpus > 1 && req.training) {
    apply_data_parallel(p, req, g, data_parallel_link(p, req, gpu), eff, device_view(gpu, p.plan, eff).bandwidth);
  } else if (p.sharding != "none") {
    throw InputError("option sharding needs --gpus > 1 and training");
  }
  set_throughput(p, net);
  return p;
}

/// Every time a prediction holds, added into `into` at weight `w` (one of several predictions of the same graph
/// structure at other sequence lengths: their mean).
void add_times(Prediction& into, const Prediction& part, double w) {
  for (auto [to, from] : {std::pair{&into.step_s, part.step_s}, {&into.single_gpu_step_s, part.single_gpu_step_s}, {&into.comm_s, part.comm_s},
                          {&into.comm_exposed_s, part.comm_exposed_s}, {&into.recompute_s, part.recompute_s},
                          {&into.microbatch_s, part.microbatch_s}, {&into.optimizer_s, part.optimizer_s}})
    *to += w * from;
  StepPrediction& d = into.detail;
  const StepPrediction& s = part.detail;
  for (auto [to, from] : {std::pair{&d.step_s, s.step_s}, {&d.compute_s, s.compute_s}, {&d.memory_s, s.memory_s}, {&d.latency_s, s.latency_s},
                          {&d.launch_s, s.launch_s}, {&d.matrix_flops, s.matrix_flops}, {&d.vector_flops, s.vector_flops}, {&d.bytes, s.bytes}})
    *to += w * from;
  if (d.ops.size() != s.ops.size()) throw std::logic_error("add_times: predictions of different graphs");
  for (std::size_t i = 0; i < d.ops.size(); ++i) {
    d.ops[i].seconds += w * s.ops[i].seconds;
    d.ops[i].compute_s += w * s.ops[i].compute_s;
    d.ops[i].memory_s += w * s.ops[i].memory_s;
  }
}

void zero_times(Prediction& p) {
  Prediction zero = p;
  add_times(p, zero, -1.0);
}

/// Samples of a data set's lengths, each batch padded to its longest (options lengths and bin_size): the mean over
/// the bins' batches of the prediction at the length each is padded to. A step's time is linear in its batches'
/// times, so the mean time is exact where the batches of one step come from several bins; throughput is then the
/// samples over that mean. Memory must hold the longest bin's batches: the full sequence's prediction.
Prediction priced_binned(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& request) {
  const models::NetworkInfo& net = w.network();
  const auto lengths_it = request.options.find("lengths");
  if (lengths_it == request.options.end()) {
    std::vector<std::string> known;
    for (const auto& h : length_histograms()) known.push_back(h.id);
    throw InputError(fmt::format("option bin_size needs lengths=ID, the data set whose sample lengths the batches hold (known: {})",
                                 strings::join(known, ", ")));
  }
  const LengthHistogram& h = length_histogram(lengths_it->second);
  if (!request.options.count("bin_size"))
    throw InputError(fmt::format("option lengths needs bin_size=N, how batches are padded: bin_size={} pads each batch to its longest sample, "
                                 "a smaller one draws each batch from one bin of that many lengths (NVIDIA's LDDL)",
                                 h.max_len));
  if (net.family != models::Family::encoder)
    throw InputError(fmt::format("options lengths and bin_size apply to encoder workloads (BERT), not {}{}", net.id,
                                 net.family == models::Family::decoder ? " (decoders pack samples into sequences with sample_len)" : ""));
  PredictRequest padded = request;
  padded.options.erase("lengths");
  padded.options.erase("bin_size");
  if (!request.options.count("seq_len")) padded.options["seq_len"] = std::to_string(h.max_len);
  const Prediction full = priced_padded(cat, w, padded);  // every other option checked here
  if (full.seq_len != h.max_len)
    throw InputError(fmt::format("option lengths={} holds samples made for {} tokens; seq_len is {} (a data set made for another length has "
                                 "other lengths)",
                                 h.id, h.max_len, full.seq_len));
  const std::int64_t bin = option_int(request.options, "bin_size", 0, 1, full.seq_len);
  if (full.seq_len % bin != 0)
    throw InputError(fmt::format("option bin_size={} must split the {}-token sequence into whole bins", bin, full.seq_len));
  Prediction mixed = full;
  zero_times(mixed);
  double padded_len = 0;
  for (const PaddedBin& b : padded_bins(h, bin, full.batch)) {
    const std::int64_t len = std::clamp<std::int64_t>(std::llround(b.padded_len), 1, full.seq_len);
    padded_len += b.share * static_cast<double>(len);
    if (len == full.seq_len) {
      add_times(mixed, full, b.share);
      continue;
    }
    PredictRequest at = padded;
    at.options["seq_len"] = std::to_string(len);
    add_times(mixed, priced_padded(cat, w, at), b.share);
  }
  mixed.lengths = h.id;
  mixed.bin_size = bin;
  mixed.real_len = h.mean_len();
  mixed.padded_len = padded_len;
  set_throughput(mixed, net);
  return mixed;
}

Prediction priced(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& request) {
  if (request.options.count("lengths") || request.options.count("bin_size")) return priced_binned(cat, w, request);
  return priced_padded(cat, w, request);
}

}  // namespace

Prediction predict(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& request) {
  Prediction p = priced(cat, w, request);
  if (p.maturity_notes.empty()) return p;
  // A stack older than this card's native kernels: priced at the shares data/software-maturity.toml gives, and as
  // uncertain as that step, so the band reaches a native stack's throughput above and as far again below.
  PredictRequest native = request;
  native.native_kernels = true;
  p.native_throughput = priced(cat, w, native).throughput;
  const double r = std::max(1.0, p.native_throughput / p.throughput);
  p.band_low = model_band().low(p.throughput) / r;
  p.band_high = model_band().high(p.throughput) * r;
  return p;
}

}  // namespace gpuvs::perf
