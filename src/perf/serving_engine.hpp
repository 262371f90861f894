// SPDX-License-Identifier: Apache-2.0
// Serving engines as data (data/serving-engines.toml, compiled in): what the software that runs a
// decoder's inference does around the math — kernel launches per block and their cost, host work per
// iteration, the attention kernel, FP16 accumulation, KV-cache blocks, how much memory it takes for the
// KV cache, and its batching limits. Selected with `framework=` in the serving modes; every serving
// prediction names the profile that priced it.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gpuvs::perf {

struct ServingEngine {
  std::string id, name, source;
  double kernels_per_layer = 0;   // kernel launches per transformer block in one forward step
  double host_launch_s = 0;       // host time to launch one kernel (the GPU waits when kernels are shorter)
  bool cuda_graphs = false;       // a step's kernels replayed as graphs: one launch per iteration ...
  double graph_launches_per_layer = 0;  // ... or, where each module is its own graph (ExLlamaV2), this many host launches a block
  int graph_max_tokens = 0;       // iterations of more tokens run eagerly (ExLlamaV2: MAX_Q_GEMM_ROWS; TGI: its largest captured batch); 0: any
  // Tokens an iteration up to which the engine's own quantized matmuls read any weight-only format packed; past it each
  // layer is dequantized to a 16-bit copy for a cuBLAS GEMM (ExLlamaV2: MAX_Q_GEMM_ROWS, for EXL2 and GPTQ alike).
  // 0: the format's rule (perf/weight_format.hpp dequant_pass, above serving.vector_kernel_rows).
  int fused_quant_rows = 0;
  double step_overhead_s = 0;     // host work per iteration (scheduling, sampling) the GPU waits for
  std::string attention;          // flash | paged | unfused (scores materialized in memory)
  // Whose memory-bound kernels it runs: "" (its own or its framework's, streaming at a microbenchmark's
  // fraction of the DRAM rate) or "ggml" (ggml's CUDA kernels, which keep fewer bytes in flight per SM:
  // perf/constants.hpp ggml_bytes_per_sm_cycle).
  std::string kernel_family;
  // Whose kernels dequantize a weight-only format's weights for a few tokens (a matrix-vector product that unpacks in
  // registers): "" (a tuned GEMV streaming like the 16-bit ones) or "ggml" (ggml's MMVQ class: few bytes in flight
  // per SM, ggml_gemv_bytes_per_sm_cycle). A kernel_family engine's are its family's.
  std::string dequant_gemv_family;
  bool fp16_accumulate = false;   // FP16 GEMMs accumulate in FP16 (cuBLAS COMPUTE_16F)
  // Bytes per activation element between ops: 2 (16-bit), or 4 where activations stay FP32 (ggml) and
  // each batched GEMM converts its input to FP16 and its result back.
  double activation_bytes = 2;
  int kv_block_tokens = 1;        // KV cache allocated in blocks of this many tokens
  double memory_utilization = 1;  // share of the card the engine may use
  double kv_free_fraction = 1;    // share of what weights and runtime leave that becomes KV cache
  int max_batch = 1;              // sequences in flight at once
  int max_num_tokens = 0;         // tokens one iteration processes (prefill chunk + decodes)
  double runtime_bytes = 0;       // CUDA context, workspaces, activations of one iteration
  bool inflight_batching = false; // requests join and leave between iterations (continuous batching)
  bool fp8_kv_cache = false;
  bool layer_split = false;       // several GPUs hold one model split by layers (llama.cpp's -sm layer, its default), not replicas
  bool layer_offload = false;     // can run blocks from system RAM when the GPU is too small (llama.cpp's -ngl)      // an FP8 weight format brings an FP8 KV cache unless kv_dtype says otherwise
  std::vector<std::string> formats;  // weight formats it runs
  int released = 0;                  // the release it describes, perf/maturity.hpp's parse_month (0: undated, today's)
  int line = 0;
};

const std::vector<ServingEngine>& builtin_engines();
/// Kernel launches the host makes for one forward step of `layers` blocks over `tokens` tokens: one a kernel (eager,
/// or a step past the engine's graph_max_tokens), one a step (a whole-step CUDA graph), or graph_launches_per_layer a
/// block (a graph per module). The 4 are the embedding, the final norm, the LM head and sampling.
double host_launches(const ServingEngine& e, int layers, double tokens);

/// A product that serves with one of the engines above and picks which by the card (NVIDIA NIM: its optimized
/// profiles are TensorRT-LLM engines NVIDIA builds for data-centre cards, its generic ones vLLM): `framework=ID`
/// prices the engine it picks on each card and says which and why.
struct ServingFront {
  std::string id, name, source;
  std::string optimized, generic;            // engine ids
  std::vector<std::string> optimized_segments;  // catalog segments (datacenter, workstation, geforce) it ships optimized profiles for
  int line = 0;
};
const std::vector<ServingFront>& builtin_fronts();
/// Parses the file's [[front]] tables (the [[engine]] ones are parse_engines'); InputError "WHERE:LINE: ..." for unknown keys,
/// missing fields, an engine id that `engines` lacks, an unknown segment, an id that is also an engine's.
std::vector<ServingFront> parse_fronts(const std::string& text, const std::string& where, const std::vector<ServingEngine>& engines);
/// The front named `id`, or nullptr.
const ServingFront* serving_front(const std::string& id);
/// The engine `front` runs on a card of `segment`, and a line saying which and why.
std::pair<const ServingEngine*, std::string> front_engine(const ServingFront& front, const std::string& segment);
/// The built-in engines' ids, then the fronts', in data/serving-engines.toml's order, joined by `separator` (for help and messages).
std::string engine_ids(const std::string& separator);
/// Parses engine TOML; InputError "WHERE:LINE: ..." for unknown keys or impossible values.
std::vector<ServingEngine> parse_engines(const std::string& text, const std::string& where);
/// Whether `id` names a serving engine (vllm, trt-llm, ...) or a front (nim) rather than, say, a training framework profile.
bool is_serving_engine(const std::string& id);
/// By id; InputError listing the engines when unknown.
const ServingEngine& serving_engine(const std::string& id);
/// The engine a serving prediction uses when none is named: vllm, or what a ScopedServingEngine installed (a
/// user's preferred engine, advise/user_config.hpp).
std::string default_serving_engine();

/// Installs `id` (a serving engine; InputError listing them when it is not one) as the default engine for the
/// scope's life. Process-wide, not per thread: a command installs it once, before any work starts.
class ScopedServingEngine {
 public:
  explicit ScopedServingEngine(const std::string& id);
  ~ScopedServingEngine();
  ScopedServingEngine(const ScopedServingEngine&) = delete;
  ScopedServingEngine& operator=(const ScopedServingEngine&) = delete;

 private:
  std::string previous_;
};

}  // namespace gpuvs::perf
