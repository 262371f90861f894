// SPDX-License-Identifier: Apache-2.0
// LLM serving on one GPU or a tensor-parallel group: a decoder's prompt prefill, token decode and
// whole requests under in-flight batching, for a weight format (perf/weight_format.hpp) and a serving
// engine (perf/serving_engine.hpp). Priced per iteration, op by op, with the roofline pieces the
// training model uses (perf/efficiency.hpp: wave-quantized GEMM efficiency, memory-stream ramp; the
// fitted GEMM fraction and the microbenchmark streaming fraction; clocks under the power limit):
//   - each projection reads its weights at the format's bits (a separate dequantize pass where the
//     format's large-batch path writes a 16-bit copy) and runs 2mnk FLOPs at the format's tensor math;
//   - attention reads every cached K and V in decode and does causal FLOPs in prefill;
//   - norms, residual adds, RoPE and the MLP activation stream their tensors;
//   - tensor parallelism splits heads, the MLP and the vocabulary over tp ranks and adds two all-reduces
//     of the activations per block on the node's link (latency-bound at small batch);
//   - the engine adds its launches per block and host work per iteration.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/calibration.hpp"
#include "perf/stack.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

/// Modes: prefill (prompt tokens/s at a batch), decode (generated tokens/s at a batch over a context
/// growing from prompt_len to prompt_len + gen_len), infer (output tokens/s of whole requests at the
/// engine's largest concurrency, or the one asked for).
bool is_serving_mode(const std::string& mode);

struct ServingRequest {
  std::string workload;          // a decoder preset, decoder-<size> or gpt with shape options
  std::string gpu;
  int gpus = 1;                  // tp x replicas
  std::string format = "bf16";   // weight format id
  std::string mode = "infer";
  std::int64_t batch = 0;        // prefill/decode: sequences per step (0: 1); infer: concurrency (0: the largest that fits)
  std::map<std::string, std::string> options;  // prompt_len, gen_len, tp, framework, kv_dtype, ngl, host_gbs, gpt shape keys
  const Calibration* calibration = nullptr;
  const StackRatios* stack = nullptr;  // a measured stack's efficiencies, applied on every card when engine and format match
  bool native_kernels = false;  // price as if the engine's kernels were native on every architecture (perf/maturity.hpp)
};

/// One iteration on one rank, by part (seconds).
struct IterationCost {
  double seconds = 0;
  double gemm_s = 0, dequant_s = 0, attention_s = 0, elementwise_s = 0, lm_head_s = 0, comm_s = 0, launch_s = 0, host_s = 0;
  double offload_s = 0;  // blocks run from system RAM (llama.cpp's layer offload), all their parts
  double weight_bytes_read = 0, kv_bytes_read = 0, flops = 0;
};

struct ServingPrediction {
  std::string workload, gpu_id, gpu_name, format, format_name, engine, engine_name, mode;
  int gpus = 1, tp = 1, replicas = 1;
  int group_size = 0;              // weights a quantization group (AWQ, GPTQ; option group_size), 0 where not grouped
  bool variable_bits = false;      // a format quantized to any rate in a range (EXL2; option bpw)
  double bits_per_weight = 16;     // the linear layers' storage a weight, scales included
  std::string quantized_from;      // where a checkpoint's own quantization was read (its quantization_config), or empty
  int layer_split = 1;             // GPUs one model's layers are split across (llama.cpp's -sm layer), each token through all in turn
  std::int64_t prompt_len = 0, gen_len = 0;
  std::int64_t batch = 0;          // sequences per step (prefill, decode) or requests in flight (infer)
  bool batch_chosen = false;       // infer: the concurrency was chosen (largest the KV cache and engine allow)
  std::string batch_limit;         // what set a chosen concurrency
  double throughput = 0;           // per system (all replicas)
  std::string unit;                // tokens/s (prefill: prompt tokens; decode: generated) or output tokens/s
  // Latency: time to first token, per output token, whole request. Infer: at this load (mean, and the 99th
  // percentile from when in an iteration (or a static batch) a request arrives); prefill and decode: one
  // batch, no queue.
  double ttft_s = 0, tpot_s = 0, request_s = 0;
  double ttft_p99_s = 0, request_p99_s = 0;
  IterationCost step;              // the iteration priced (infer: one steady-state iteration)
  // Memory on one rank.
  double weight_bytes = 0, kv_bytes_per_token = 0, kv_budget_bytes = 0, kv_bytes = 0, runtime_bytes = 0, capacity_bytes = 0;
  bool fits = false;
  std::int64_t max_concurrency = 0;  // requests of prompt_len + gen_len the KV budget holds
  std::int64_t max_context = 0;      // tokens one sequence can hold, alone: the cache's room, capped at the model's positions
  bool context_limited_by_model = false;  // max_context is the model's positions, not the cache's room
  std::string kv_dtype = "fp16";
  int layers = 0, gpu_layers = 0;  // blocks in the model; on the GPU (the rest offloaded to system RAM)
  double host_gbs = 0;             // system-RAM bandwidth assumed for offloaded blocks
  double band_low = 0, band_high = 0;
  std::vector<std::string> notes;
};

/// InputError (one line) for a workload that is not a decoder, an unknown format or engine, a format the
/// engine or card cannot run, tp that does not divide the GPUs or the heads, or impossible lengths.
ServingPrediction predict_serving(const catalog::Catalog& cat, const ServingRequest& req);
/// The same with the workload resolved by the caller: `w` must be what req.workload under req.options resolves
/// to (std::logic_error otherwise).
ServingPrediction predict_serving(const catalog::Catalog& cat, const workload::Workload& w, const ServingRequest& req);

/// Latency against load for mode infer: the prediction at 1, 2, 4, ... requests in flight up to the largest
/// the KV budget and the engine allow (and that largest itself), in order.
std::vector<ServingPrediction> serving_load_curve(const catalog::Catalog& cat, ServingRequest req);
std::vector<ServingPrediction> serving_load_curve(const catalog::Catalog& cat, const workload::Workload& w, ServingRequest req);

/// The weight format a training-style precision name stands for when serving (amp-bf16 serves in bf16,
/// amp-fp16 in fp16, amp-fp8 in fp8); any other name is taken as a format id.
std::string serving_format_for(const std::string& precision);
/// The weight format a served decoder runs in on `gpu` when a command resolves --precision `named` on it: a precision
/// policy's weights as precision_run resolves the policy on the card (none named: default_precision's, bf16 or fp16
/// weights), `note` saying where it fell back ("the nearest to fp8 weights that a100-80gb-sxm runs"); any other name the weight format it names (InputError listing the
/// formats when it is neither). nullopt when the card runs neither the policy nor its fallback.
std::optional<std::string> serving_format_on(const catalog::Gpu& gpu, const std::string& named, std::string* note);

/// What `p` took for what `req` left unsaid, one line each, as every command resolves it: the engine, the weight
/// format (`format_named`: the caller named one), the prompt and generated lengths, the batch, the KV cache's type,
/// tensor parallelism over several GPUs, how requests arrive.
std::vector<std::string> serving_assumed(const ServingRequest& req, const ServingPrediction& p, bool format_named);

/// The option keys serving understands (beyond the gpt shape keys).
const std::vector<std::string>& serving_option_keys();

}  // namespace gpuvs::perf
