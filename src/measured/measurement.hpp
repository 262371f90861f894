// SPDX-License-Identifier: Apache-2.0
// A measurement someone already has: one figure a tool printed on one machine (llama-bench's tokens per
// second, ...), read from the tool's own output and kept as the tool said it. What card and workload it names
// in gpuvs's terms is resolved later, by the commands that use it; a reader only reads.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::measured {

struct Measurement {
  std::string tool;        // "llama-bench", "nccl-tests", "vllm-bench", "tensorboard", or "spec" for a figure typed on the command line
  std::string file;        // a spec's file=: the output whose measurements the spec's keys complete
  std::string where;       // FILE:LINE of the record it came from
  std::string gpu;         // the device as the tool named it ("NVIDIA GeForce RTX 4080"); empty when it printed none
  std::string backend;     // "CUDA", "Metal", "CPU", ...
  std::string model;       // the tool's description of the model ("llama 7B Q4_K - Medium")
  std::string metric;      // what the figure is, where the output names it (a TensorBoard tag: "global_step/sec")
  std::string workload;    // a gpuvs workload (id or model file) where the measurement names one
  std::string precision;   // a gpuvs precision ("bf16", "amp-bf16") where named; `quant` holds a weight format
  std::string framework;   // the software that ran it, in gpuvs's names ("llama.cpp", "vllm", "pytorch"), where known
  int gpus = 1;            // GPUs the figure is over
  int tensor_parallel = 0; // GPUs one model instance is split over (a serving run's TP size), where printed
  std::string model_file;  // the file it loaded, where printed
  std::string quant;       // the weight format in gpuvs's spelling ("q4_k_m", "q8_0", "f16"), empty when unknown
  double model_bytes = 0;  // the weights' size, bytes, where printed
  double model_params = 0; // parameters, where printed
  // What ran: "prefill" (a prompt of prompt_tokens processed in batches), "decode" (gen_tokens generated one at a
  // time), "prefill+decode" (both, one figure over all tokens), "infer" (requests served, in-flight batched),
  // "train", "micro" (a microbenchmark figure: a collective's bus bandwidth).
  std::string mode;
  int prompt_tokens = 0, gen_tokens = 0, depth = 0;  // depth: tokens already in the cache before the test
  int gpu_layers = -1;     // layers offloaded to the GPU (llama.cpp's -ngl); -1 when not printed
  int threads = 0;
  int batch = 0, ubatch = 0;  // llama.cpp's logical and physical batch, in tokens (n_batch, n_ubatch)
  int sequences = 0;          // sequences per step, where the measurement says (a spec's batch=); 0: one
  bool one_wave = false;      // a serving run's requests all sent at once and none after (a benchmark's whole prompt set)
  // A collective (nccl-tests): its message size, the hosts its ranks ran on, the library version that ran it.
  double message_bytes = 0;
  int nodes = 0;
  std::string library_version;  // "2.25.1"
  // A serving benchmark (vLLM's): the request rate it paced requests at (0: all at once, its default "inf") and
  // the latencies it printed, by name ("median_ttft", "p99_tpot", "mean_itl", ...), in milliseconds.
  double request_rate = 0;
  std::map<std::string, double> latency_ms;
  double value = 0;        // the figure, in `unit`
  std::string unit;        // "tokens/s"
  std::optional<double> spread;  // its standard deviation over the repetitions, in `unit`
  std::vector<double> samples;   // the repetitions, where printed
};

}  // namespace gpuvs::measured
