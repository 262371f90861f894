// Built-in networks as graphs: the workloads the performance model prices (ResNet, VGG, BERT, GPT-style
// decoders) built from the same IR the engine runs. Each builder returns a forward graph with a scalar
// "loss" output; `build_network` appends the training step (backward + Adam) when asked.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/ir.hpp"

namespace gpuvs::graph {

struct NetworkOptions {
  std::int64_t batch = 1;
  DType dtype = DType::f32;       // activations and weights as the math sees them
  std::int64_t seq_len = 0;       // transformers; 0 = the network's default
  bool flash_attention = true;    // fused attention (no T x T scores) or explicit bmm-softmax-bmm
  bool training = true;           // dropout on; append backward and Adam
  /// Decoders, inference: > 0 builds one decode step — one new token per sequence attending over a KV
  /// cache of this many positions (inputs "blocks.N/attn/k_cache", ".../v_cache") — instead of a prefill.
  std::int64_t decode_context = 0;
  /// Transformers: > 0 freezes every base weight and adds a trainable LoRA adapter x.A.B (A [in, r],
  /// B [r, out]) beside each projection and MLP matrix.
  std::int64_t lora_rank = 0;
};

/// GPT-style decoder hyper-parameters (presets below; user-settable through options later).
struct DecoderConfig {
  int layers = 0;
  std::int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;            // = heads without grouped-query attention
  std::int64_t ffn = 0;        // inner size of the MLP
  bool swiglu = false;         // SwiGLU MLP (LLaMA) or GELU MLP (GPT/MPT)
  std::int64_t vocab = 0;
  std::int64_t seq_len = 2048;
  bool rms_norm = false;       // RMSNorm (LLaMA) or LayerNorm
  bool norm_bias = false;      // LayerNorm with a shift
  bool linear_bias = false;    // biases on the projections
  bool rope = false;           // rotary positions (LLaMA); MPT uses ALiBi (no params), GPT-2 learned
  bool learned_positions = false;
  bool tied_embeddings = false;
};

struct NetworkInfo {
  std::string id;
  std::string description;
  std::string family;           // mlp | cnn | encoder | decoder | unet
  std::string sample_unit;      // what one batch element is: images, sequences, samples
  std::int64_t default_seq_len = 0;
  double published_params = 0;  // the figure the source gives, for tests and `gpuvs graph`
  std::string params_source;
  int layers = 0;              // transformer blocks (recompute, LoRA); 0 for others
  std::int64_t hidden = 0;     // width of the residual stream
  std::function<Graph(const NetworkOptions&)> forward;
};

const std::vector<NetworkInfo>& networks();
/// By id; InputError naming the closest ids when unknown.
const NetworkInfo& network(const std::string& id);
/// A built-in network by id, or a Sequential model file (.toml/.json) wrapped as a network ("mlp" family).
NetworkInfo resolve_network(const std::string& id_or_path);
/// Forward graph, plus backward and Adam when opt.training.
Graph build_network(const NetworkInfo& net, const NetworkOptions& opt);

Graph build_resnet(const NetworkOptions& opt, const std::vector<int>& blocks);
Graph build_vgg16(const NetworkOptions& opt);
Graph build_bert(const NetworkOptions& opt, int layers, std::int64_t hidden, int heads);
Graph build_decoder(const NetworkOptions& opt, const DecoderConfig& cfg);
Graph build_sd15_unet(const NetworkOptions& opt);
DecoderConfig decoder_preset(const std::string& id);
/// KV-cache bytes: 2 (K and V) x layers x kv_heads x head_dim x positions x batch x element size.
double kv_cache_bytes(const DecoderConfig& cfg, std::int64_t positions, std::int64_t batch, DType dtype);

/// Parameter count of a graph: trainable params only, or all (frozen ones too).
std::int64_t param_count(const Graph& g, bool trainable_only = true);

}  // namespace gpuvs::graph
