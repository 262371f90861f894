// SPDX-License-Identifier: Apache-2.0
// Workload-level predictions: build the workload's graph for a precision and batch, price it on a catalog
// GPU, and express the result as throughput in the workload's own unit.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "models/networks.hpp"
#include "perf/calibration.hpp"
#include "perf/collective.hpp"
#include "perf/memory.hpp"
#include "perf/precision.hpp"
#include "perf/roofline.hpp"
#include "perf/stack.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

struct PredictRequest {
  std::string workload;
  std::string gpu;
  int gpus = 1;
  std::int64_t batch = 0;  // per GPU; 0 = the workload family's default
  std::optional<Precision> precision;  // none named: default_precision(the card), the rule every command shares
  bool training = true;
  std::map<std::string, std::string> options;  // seq_len, flash_attention, sharding, gen_len, recompute,
                                               // finetune, lora_rank, lora_targets, sample_len, memory_format, framework, lengths,
                                               // bin_size; decoder training
                                               // plans: tp, pp, cp, vp, global_batch, network; for
                                               // workload gpt its shape: layers, hidden, heads, kv_heads,
                                               // ffn, vocab
  const Calibration* calibration = nullptr;    // measured corrections for one device (gpuvs bench --save)
  const StackRatios* stack = nullptr;  // a measured stack's kernel efficiencies (perf/stack.hpp), applied on any card when
                                       // the framework profile and precision are the ones measured
  bool native_kernels = false;  // price as if the profile's kernels were native on every architecture (perf/maturity.hpp):
                                // the band's far end for a stack older than its card's native kernels
};

struct Prediction {
  std::string workload, gpu_id, gpu_name;
  PrecisionPlan plan;
  std::int64_t batch = 0;
  std::int64_t seq_len = 0;
  bool training = true;
  double step_s = 0;
  double throughput = 0;  // per GPU
  std::string unit;       // images/s, sequences/s, samples/s, tokens/s
  StepPrediction detail;
  MemoryEstimate memory;
  std::int64_t params = 0;
  // Data parallel across `gpus` (1 = none): the link, traffic per step and the part not hidden behind
  // the backward pass.
  int gpus = 1;
  std::string sharding = "none";
  Link link;
  double comm_bytes = 0;
  double comm_s = 0;          // collective time per step
  double comm_exposed_s = 0;  // what the step waits for
  double single_gpu_step_s = 0;
  double band_low = 0, band_high = 0;  // throughput range from the model's validation errors
  // Decoder inference: prefill of the prompt (time to first token), then one decode step per new token
  // over a KV cache (priced at the mean context of the generation).
  bool decode = false;
  bool prompt_cut_to_positions = false;  // the default prompt shortened so that prompt + generation fit the model's positions
  std::int64_t prompt_len = 0, gen_len = 0;
  double prefill_s = 0, decode_step_s = 0;
  double kv_cache_bytes = 0;
  std::string recompute = "none";
  double recompute_s = 0;       // forward work done again in the backward pass
  std::string memory_format;  // convolution layout priced for a convolutional workload (nchw adds cuDNN's transposes); empty otherwise
  std::string finetune = "full";
  std::int64_t lora_rank = 0;
  models::LoraTargets lora_targets = models::LoraTargets::all;  // the matrices that carry adapters
  std::int64_t sample_len = 0;  // training decoders: samples of about this many tokens packed per sequence; 0 = one
  // Encoders, samples of varying length padded per batch (options lengths and bin_size, perf/sequence_lengths.hpp):
  // the data set, the bin width, the real tokens a sample holds and the length a batch is computed at, on average.
  // Every time is then the mean over the bins' batches; memory is the longest bin's. Empty lengths: every sample
  // is padded to seq_len.
  std::string lengths;
  std::int64_t bin_size = 0;
  double real_len = 0, padded_len = 0;
  std::int64_t frozen_params = 0;
  bool calibrated = false;  // the request's calibration was measured on this device and applied
  bool stack_applied = false;  // the request's measured stack ratios moved this prediction's efficiencies
  std::string framework = "pytorch";           // the profile that priced it (perf/framework.hpp)
  std::vector<std::string> framework_unmodelled;  // what that framework does that the model does not price
  // A profile released before this card's native kernels (perf/maturity.hpp): why its kernels were priced lower, and the
  // throughput a native stack would reach; the band then spans that far on both sides.
  std::vector<std::string> maturity_notes;
  // A checkpoint quantized as a serving format (its quantization_config): "int4-awq in groups of 128"; training prices
  // the model's shape at the plan's precision, and says so.
  std::string quantized_as;
  double native_throughput = 0;
  // Tensor/pipeline/context/data-parallel training (perf/parallel.hpp): the layout, what each part of the
  // step costs, and the network assumed between nodes.
  bool parallel = false;
  int tp = 1, pp = 1, cp = 1, vp = 1, dp = 1;
  std::int64_t global_batch = 0, micro_batches = 1;
  std::string network, network_note;
  double microbatch_s = 0, tp_comm_s = 0, cp_exposed_s = 0, pp_comm_s = 0, bubble_s = 0, dp_comm_s = 0, dp_exposed_s = 0,
         optimizer_s = 0;
  std::string tp_link, dp_link, pp_link;
};

/// Parses "k=v;k=v" (spaces allowed); InputError on a malformed pair or unknown key.
std::map<std::string, std::string> parse_options(const std::string& text);
/// The same, also accepting the keys the workload reads itself (an ONNX file's symbolic dims).
std::map<std::string, std::string> parse_options(const std::string& text, const workload::Workload& w);
/// The same syntax with any key (validation rows carry keys that document their source); InputError on a
/// malformed pair.
std::map<std::string, std::string> parse_option_pairs(const std::string& text);
/// The inverse of parse_option_pairs: "k=v;k=v" in key order ("" for none).
std::string option_pairs_text(const std::map<std::string, std::string>& options);
/// The integer option `key` in [lo, hi], or `fallback` when absent; InputError "option KEY=VALUE: expected
/// an integer in [lo, hi]" otherwise.
std::int64_t option_int(const std::map<std::string, std::string>& o, const std::string& key, std::int64_t fallback,
                        std::int64_t lo, std::int64_t hi);
/// The keys `predict` understands.
const std::vector<std::string>& prediction_option_keys();

/// What `req` left to gpuvs and what gpuvs took for it, one line each ("batch 128 per GPU (the workload's
/// default)", ...): batch, precision and sequence length, said the same way by every command that prices it.
std::vector<std::string> assumed(const PredictRequest& req, const Prediction& p);

/// `req` priced on its GPU, its workload resolved here.
Prediction predict(const catalog::Catalog& cat, const PredictRequest& req);
/// The same with the workload resolved by the caller (once, for every request it prices): `w` must be what
/// req.workload under req.options resolves to (std::logic_error otherwise).
Prediction predict(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& req);

}  // namespace gpuvs::perf
