// SPDX-License-Identifier: Apache-2.0
// Built-in networks as graphs: the workloads the performance model prices (ResNet, VGG, BERT, GPT-style
// decoders) built from the same IR the engine runs. Each builder returns a forward graph with a scalar
// "loss" output (a decoder's pipeline stage other than the last has one only when training: see
// NetworkOptions::stage_layers); `build_network` appends the training step (backward + Adam) when asked.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.hpp"
#include "models/model_spec.hpp"

namespace gpuvs::models {

/// The longest sequence any command prices: 2^20 tokens, past every context window gpuvs models. Longer is refused
/// where it is given (flags, options, scenarios), not priced for minutes.
inline constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 20;

/// The largest batch any command takes (per GPU or per step): 2^24 samples.
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 24;

enum class LoraTargets { all, qkv, attention, mlp };
std::string_view lora_targets_name(LoraTargets t);

struct NetworkOptions {
  std::int64_t batch = 1;
  ir::DType dtype = ir::DType::f32;       // activations and weights as the math sees them
  std::int64_t seq_len = 0;       // transformers; 0 = the network's default
  bool flash_attention = true;    // fused attention (no T x T scores) or explicit bmm-softmax-bmm
  bool training = true;           // dropout on; append backward and Adam
  /// Decoders, inference: > 0 builds one decode step — one new token per sequence attending over a KV
  /// cache of this many positions (inputs "blocks.N/attn/k_cache", ".../v_cache") — instead of a prefill.
  std::int64_t decode_context = 0;
  /// Transformers: > 0 freezes every base weight and adds a trainable LoRA adapter x.A.B (A [in, r],
  /// B [r, out]) beside each matrix that lora_targets names.
  std::int64_t lora_rank = 0;
  /// Which matrices carry an adapter when lora_rank > 0 (the others stay frozen without one): every linear
  /// layer, the query/key/value projections only (NeMo 1.x's default, 'attention_qkv'), the attention's
  /// projections including its output, or the MLP's matrices.
  LoraTargets lora_targets = LoraTargets::all;
  /// Decoders, training or prefill: > 0 packs samples of about this many tokens into each sequence (as
  /// fine-tuning on short samples does) and attention covers each sample alone (variable-length attention,
  /// cu_seqlens), priced as seq_len / sample_len equal samples (the nearest exact split); 0 = one sample.
  std::int64_t sample_len = 0;
  /// Decoders and BERT: true (eager frameworks) permutes q, k, v into the attention's head layout and its output
  /// back with copies; false prices them as views (Megatron Core's fused QKV in the sbhd layout the attention reads,
  /// TensorRT's fused multi-head attention plugin reading the projections' output).
  bool head_copies = true;
  /// Transformers: true computes q, k and v with one GEMM over the concatenated projection weights (TensorRT's
  /// BERT, Megatron Core) and takes them as views of its output; false (eager frameworks) runs three GEMMs. Ignored
  /// with LoRA adapters (they sit on the separate projections).
  bool fused_qkv = false;
  /// Decoders (build_decoder) only: the graph ONE rank runs under Megatron-LM's tensor and pipeline model
  /// parallelism. Every other builder refuses values other than these defaults (InputError naming the option);
  /// the defaults build the whole model, exactly as before.
  ///
  /// Tensor parallelism, in [1, 512]: attention heads, KV heads, the MLP inner size and the vocabulary split
  /// this many ways (column-parallel q/k/v, gate/up and logits; row-parallel attention output and MLP down).
  /// Replicated on every rank: LayerNorm/RMSNorm weights (and shifts), the biases of the row-parallel
  /// projections (added after their all-reduce), the learned position table and the residual stream.
  /// heads and ffn must divide by it. KV heads: kv_heads >= tp splits them (kv_heads must divide by tp);
  /// tp > kv_heads (grouped-query attention on many ranks) keeps ONE KV head per rank, each KV head replicated
  /// on tp / kv_heads ranks (tp must divide by kv_heads, so no rank's query heads straddle two groups).
  /// The vocabulary is padded up to a multiple of 128 x tp as Megatron does (make-vocab-size-divisible-by 128
  /// times tp) when tp > 1; tp = 1 keeps the unpadded vocabulary (the published counts). The collectives the
  /// split implies (all-reduces, vocab-parallel softmax reductions) are not graph nodes: the caller prices them.
  int tensor_parallel = 1;
  /// Pipeline parallelism: > 0 builds one stage holding this many transformer blocks (in [0, layers]; 0 = all
  /// blocks, no pipeline, and then first_stage and last_stage must stay true). The first stage has the token
  /// embedding (and learned positions); a later stage takes its activations [batch, seq, hidden] as the input
  /// "stage_input". The last stage has the final norm, the logits and the loss; with tied embeddings a last
  /// stage that is not also the first holds its own copy of the word embedding ("wte/weight", as Megatron does),
  /// so stages together hold the tied table twice. A stage that is not the last outputs "stage_output" (the
  /// block stack's output [batch x seq, hidden]); when training it also takes "stage_output_grad" (dL/d output,
  /// from the next stage) and its "loss" is the surrogate sum(output * output_grad), a dot product through
  /// views whose gradient is exactly output_grad: the backward pass and Adam then come from the ordinary
  /// training step. The seed moves 4 x tokens x hidden elements and does 2 x tokens x hidden FLOPs each way:
  /// ~2% of one block's bytes and ~1e-5 of its FLOPs (Llama 2 7B, GPT-3 175B).
  /// Not in the graph: dL/d(stage_input), which a later stage sends back (autodiff gives inputs no gradient):
  /// block 0's first norm backward and one residual add, ~3% of one block's bytes, no GEMMs (with LoRA,
  /// block 0's q/k/v data-gradient GEMMs too).
  int stage_layers = 0;
  bool first_stage = true;
  bool last_stage = true;
};

/// Megatron's vocabulary padding for `tp` tensor-parallel ranks: up to a multiple of 128 x tp when tp > 1
/// (make-vocab-size-divisible-by 128); tp = 1 keeps `vocab` as is.
std::int64_t tp_padded_vocab(std::int64_t vocab, int tp);
/// InputError naming the option when `opt` asks for model parallelism (tensor_parallel, stage_layers,
/// first_stage, last_stage) that `builder` (a workload or builder name) does not support: all but decoders.
void require_whole_model(const NetworkOptions& opt, const std::string& builder);

/// GPT-style decoder hyper-parameters (presets below; the `gpt` workload's come from options).
struct DecoderConfig {
  int layers = 0;
  std::int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;            // = heads without grouped-query attention
  std::int64_t ffn = 0;        // inner size of the MLP
  bool swiglu = false;         // SwiGLU MLP (LLaMA) or GELU MLP (GPT/MPT)
  std::int64_t vocab = 0;
  std::int64_t seq_len = 2048;  // the length priced by default (a training run's usual sequence)
  /// The longest sequence the model takes: its config's max_position_embeddings (n_positions, max_seq_len);
  /// a served request past it is refused. 0: no limit is known (a decoder built to size).
  std::int64_t max_positions = 0;
  bool rms_norm = false;       // RMSNorm (LLaMA) or LayerNorm
  bool norm_bias = false;      // LayerNorm with a shift
  bool linear_bias = false;    // biases on the projections
  bool rope = false;           // rotary positions (LLaMA); MPT uses ALiBi (no params), GPT-2 learned
  bool learned_positions = false;
  bool tied_embeddings = false;
  // Mixture of experts (Mixtral): each block's MLP is `experts` SwiGLU experts of inner size `ffn` and a
  // router; every token goes to `experts_per_token` of them. 0 experts: a dense MLP.
  int experts = 0, experts_per_token = 0;
  std::int64_t head_dim = 0;   // per attention head; 0: hidden / heads (Gemma sets 256 with hidden 3072)
  bool qkv_bias = false;       // biases on the Q, K and V projections only (Qwen2)
  bool geglu = false;          // the gated MLP's gate through GELU instead of SiLU (Gemma)
  /// Width of one attention head.
  std::int64_t head_size() const { return head_dim > 0 ? head_dim : hidden / heads; }
};

/// What kind of model a network is: it picks the defaults (batch, attention kernel), the pricer that serves it
/// (decoders' inference: the LLM serving model) and what one sample is. keras and onnx: graphs read from a file
/// whose kind gpuvs does not tell apart further.
enum class Family { mlp, cnn, encoder, decoder, unet, keras, onnx };
/// "mlp", "cnn", "encoder", "decoder", "unet", "keras", "onnx": as printed.
std::string_view family_name(Family f);

/// A decoder's weights as a file stores them (a GGUF file: each tensor's own type), for the serving model to price
/// the actual mix instead of a format's rule. Bits per weight, block scales included.
struct StoredWeights {
  std::string source;     // the file
  std::string main_type;  // the storage type of most projection weights ("q4_k", "f16"): picks the kernels that run it
  std::string engine;     // the engine that reads the file ("llama.cpp" for GGUF): the default engine for it
  std::string summary;    // "Q4_K 193, Q6_K 33, F32 65 tensors"
  double embedding_bits = 16, output_bits = 16;  // token table, LM head (unused when tied)
  double small_bits = 32;                        // norms and biases
  /// Per block, by projection ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down").
  std::vector<std::map<std::string, double>> layer_bits;
  double file_bytes = 0;  // every tensor's bytes, as stored
};

struct NetworkInfo {
  std::string id;
  std::string description;
  Family family = Family::mlp;
  std::string sample_unit;      // what one batch element is: images, sequences, samples
  std::int64_t default_seq_len = 0;
  double published_params = 0;  // the figure the source gives, for tests and `gpuvs graph`
  std::string params_source;
  int layers = 0;              // transformer blocks (recompute, LoRA); 0 for others
  std::int64_t hidden = 0;     // width of the residual stream
  std::function<ir::Graph(const NetworkOptions&)> forward;
  DecoderConfig decoder{};     // Family::decoder: the shape built (KV cache, ...); layers == 0 for others
  /// Option keys this workload reads beyond the prediction options (an ONNX file's symbolic dims).
  std::vector<std::string> shape_options{};
  /// > 0: the model's batch is fixed at this size (an ONNX file exported without a dynamic batch axis); its
  /// graph refuses any other. 0: any batch.
  std::int64_t fixed_batch = 0;
  /// Set for a file that stores quantized weights (GGUF): what serving prices instead of the requested format.
  std::optional<StoredWeights> stored_weights{};
  /// Set for a checkpoint quantized by a method serving prices as one weight format (a Hugging Face config's
  /// quantization_config: AWQ or GPTQ at 4 bits, FP8): that format and its groups, and where it was read.
  struct Quantized {
    std::string format;  // a data/weight-formats.toml id: int4-awq, int4-gptq, fp8
    int group_size = 0;  // weights a group (AWQ, GPTQ); 0 where not grouped
    std::string source;  // "quantization_config (quant_method awq, bits 4, group_size 128)"
    /// "int4-awq in groups of 128", "fp8": what the checkpoint holds, as every command says it.
    std::string weights() const { return group_size > 0 ? format + " in groups of " + std::to_string(group_size) : format; }
  };
  std::optional<Quantized> quantized{};
};

const std::vector<NetworkInfo>& networks();
/// By id; InputError naming the closest ids when unknown.
const NetworkInfo& network(const std::string& id);
/// A built-in network by name: a preset id, a built-to-size `decoder-<size>`, or `gpt` built from the shape keys
/// in `options` (gpt_config). A shape key given with any other id is an InputError naming it; keys that are not
/// shape keys are the caller's and ignored here. An unknown id is an InputError naming the closest ids. Model
/// files are the importers' (import/model_files.hpp); workload/resolve.hpp takes either.
NetworkInfo builtin_network(const std::string& id, const std::map<std::string, std::string>& options = {});
/// A Sequential model (the engine trains it) as a network of the mlp family, `description` saying where it
/// came from.
NetworkInfo sequential_network(const ModelSpec& spec, const std::string& description);
/// Forward graph, plus backward and Adam when opt.training.
ir::Graph build_network(const NetworkInfo& net, const NetworkOptions& opt);

ir::Graph build_resnet(const NetworkOptions& opt, const std::vector<int>& blocks);
ir::Graph build_vgg16(const NetworkOptions& opt);
/// BERT encoder shapes (Devlin et al.): the presets' and any Hugging Face BertModel config's.
struct BertConfig {
  int layers = 12;
  std::int64_t hidden = 768;
  int heads = 12;
  std::int64_t intermediate = 3072;
  std::int64_t vocab = 30528;        // NVIDIA's 30522 padded to a multiple of 8 for the presets
  std::int64_t max_positions = 512, type_vocab = 2;
  bool pooler = true;                // BertModel's first-token dense + tanh
  bool qa_head = true;               // a SQuAD span head (start and end logits) and its loss
};
ir::Graph build_bert(const NetworkOptions& opt, int layers, std::int64_t hidden, int heads);
/// Without a QA head, training minimises the squared error of the last hidden states (a stand-in loss:
/// BertModel has none).
ir::Graph build_bert(const NetworkOptions& opt, const BertConfig& cfg);
ir::Graph build_decoder(const NetworkOptions& opt, const DecoderConfig& cfg);
ir::Graph build_sd15_unet(const NetworkOptions& opt);
/// A preset's hyper-parameters by id; a `decoder-<size>` id gives the built-to-size decoder's (below).
DecoderConfig decoder_preset(const std::string& id);
/// KV-cache bytes: 2 (K and V) x layers x kv_heads x head_dim x positions x batch x element size.
double kv_cache_bytes(const DecoderConfig& cfg, std::int64_t positions, std::int64_t batch, ir::DType dtype);

/// Decoders built to a parameter count: the workload ids `decoder-<size>` ("decoder-7b", "decoder-1.3b",
/// "decoder-500m", "decoder-1t", "decoder-7e9"; suffixes k, m, b, t in either case) and `advise --params`.
/// The rule: a LLaMA-style decoder (SwiGLU MLP, RMSNorm, RoPE, no biases, untied embeddings, vocabulary
/// 32000, head size 128, heads = kv heads = width / 128, 2048 tokens) with width = 128 x layers (the aspect
/// ratio of LLaMA 7B and 13B and GPT-3 175B: 4096/32, 5120/40, 12288/96) and MLP inner size 8/3 x width
/// rounded up to a multiple of 256 (LLaMA: 4096 -> 11008); of the whole numbers of layers, the one whose
/// exact parameter count is nearest the request in log distance.
constexpr double kSizedDecoderMinParams = 1e7;   // below, the 32000-word embeddings alone outweigh the request
constexpr double kSizedDecoderMaxParams = 2e12;  // above, beyond any dense model published
struct SizedDecoder {
  double requested = 0;
  DecoderConfig config;
  std::int64_t params = 0;  // exact: embeddings, head, every block's matrices and norms
};
/// The rule's decoder with `layers` blocks.
DecoderConfig sized_decoder_config(int layers);
/// Exact parameter count of a LLaMA-style decoder config (no biases, RMSNorm; GQA, tied embeddings and
/// mixtures of experts allowed).
std::int64_t decoder_params(const DecoderConfig& cfg);
/// The rule's decoder nearest `params`; InputError naming `what` outside [kSizedDecoderMinParams, kSizedDecoderMaxParams].
SizedDecoder sized_decoder(double params, const std::string& what = "decoder size");
/// "7b", "1.3B", "500m", "1t", "7e9", "13000000000" as a parameter count; InputError naming `what` and the
/// valid range when malformed, not finite, not positive, or outside the range.
double parse_decoder_size(const std::string& text, const std::string& what);
/// True when `id` names a built-to-size decoder (starts with "decoder-", any case); builtin_network then accepts it
/// or says why not. (A model file named so is a file: the workload front door asks the importers first.)
bool is_sized_decoder_id(const std::string& id);
/// The built-to-size decoder an id names; InputError when malformed or out of range.
SizedDecoder sized_decoder_for_id(const std::string& id);
/// The canonical id for a size: 7e9 -> "decoder-7b", 1.3e9 -> "decoder-1.3b", 5e8 -> "decoder-500m".
std::string sized_decoder_id(double params);
/// The workload `gpt`: Megatron-LM's GPT (Narayanan et al. 2021) with its shape from options — GELU MLP,
/// LayerNorm with a shift, biases on every projection, learned positions (one per token of seq_len), the
/// head tied to the token embeddings. Megatron's count is 12lh^2 (1 + 13/12h + (V+s)/12lh), plus the final
/// LayerNorm's 2h.
inline constexpr const char* kGptWorkload = "gpt";
/// Its shape keys: layers, hidden, heads (required), kv_heads (default heads), ffn (default 4 x hidden),
/// vocab (default 51200). seq_len, an option of every transformer, sets the positions (default 2048).
const std::vector<std::string>& gpt_shape_keys();
/// The `gpt` shape from options. InputError naming the missing required keys; a value that is no whole number
/// in its range (stated in the message); hidden not a multiple of heads, or heads of kv_heads. Keys other than
/// the shape keys and seq_len are ignored.
DecoderConfig gpt_config(const std::map<std::string, std::string>& options);

/// "32 layers, width 4096, 32 heads, SwiGLU 11008, vocabulary 32000".
std::string describe_shape(const DecoderConfig& cfg);

/// Parameter count of a graph: trainable params only, or all (frozen ones too).
std::int64_t param_count(const ir::Graph& g, bool trainable_only = true);

}  // namespace gpuvs::models
