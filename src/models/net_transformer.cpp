// SPDX-License-Identifier: Apache-2.0
// Transformers: BERT for SQuAD-style span prediction (NVIDIA's implementation, as Lambda benchmarked it:
// vocabulary padded to 30528, pooler kept) and GPT-style decoders (MPT, LLaMA, Mistral, GPT-2/GPT-3 presets;
// Megatron-LM's GPT from shape options).
#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "models/networks.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {

struct TransformerBuilder {
  Graph& g;
  DType dt;
  bool training;
  bool flash;
  std::int64_t lora_rank = 0;  // > 0: base weights frozen, LoRA adapters trained
  LoraTargets lora_targets = LoraTargets::all;
  std::int64_t segments = 1;   // > 1: each sequence packs this many equal samples; attention stays inside each
  bool head_copies = true;     // the permutes into and out of the attention's head layout are copies
  bool fused_qkv = false;      // q, k and v come out of one GEMM over the concatenated weights (views of its output)

  /// Whether the linear layer `name` carries an adapter: by its role, read from the builders' names
  /// (".../attn/q", ".../attention/out", ".../mlp.up", BERT's ".../intermediate" and ".../output").
  bool adapted(const std::string& name) const {
    if (lora_rank <= 0) return false;
    const auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
    const bool qkv = ends("/q") || ends("/k") || ends("/v");
    const bool mlp = name.find("/mlp.") != std::string::npos || ends("/intermediate") || ends("/output");
    switch (lora_targets) {
      case LoraTargets::all: return true;
      case LoraTargets::qkv: return qkv;
      case LoraTargets::attention: return qkv || ends("/out");
      case LoraTargets::mlp: return mlp;
    }
    return true;
  }

  NodeId linear(const std::string& name, NodeId x, std::int64_t out, bool bias, Act act = Act::none) {
    const std::int64_t in = g.node(x).shape[1];
    const bool frozen = lora_rank > 0;
    const NodeId w = g.param(name + "/weight", {in, out}, dt, !frozen);
    const NodeId b = bias ? g.param(name + "/bias", {out}, dt, !frozen) : kNone;
    NodeId y = g.matmul(name, x, w, b, adapted(name) || !act_grad_from_output(act) ? Act::none : act);
    if (adapted(name)) {
      const NodeId a = g.param(name + "/lora_a", {in, lora_rank}, dt);
      const NodeId bb = g.param(name + "/lora_b", {lora_rank, out}, dt);
      const NodeId delta = g.matmul(name + "/lora_b_mm", g.matmul(name + "/lora_a_mm", x, a), bb);
      y = g.add(name + "/lora_add", y, delta);
      if (act != Act::none) y = g.activation(name + "/" + std::string(act_name(act)), y, act);
      return y;
    }
    if (act_grad_from_output(act)) return y;
    return g.activation(name + "/" + std::string(act_name(act)), y, act);
  }
  NodeId norm(const std::string& name, NodeId x, bool rms, bool bias) {
    const std::int64_t d = g.node(x).shape.back();
    const bool frozen = lora_rank > 0;
    const NodeId scale = g.param(name + "/weight", {d}, dt, !frozen);
    const NodeId shift = bias ? g.param(name + "/bias", {d}, dt, !frozen) : kNone;
    return g.normalize(name, x, scale, shift, rms ? NormKind::rms : NormKind::layer);
  }
  NodeId dropout(const std::string& name, NodeId x, double rate) {
    return training && rate > 0 ? g.dropout(name, x, rate) : x;
  }

  /// Multi-head (grouped-query) attention on x [B*T, d]: projections, head split, attention, merge, output.
  /// `heads` and `kv_heads` are this rank's (a tensor-parallel shard holds a share of them), each `hd` wide;
  /// the output projection maps them back to the full width d.
  NodeId attention(const std::string& p, NodeId x, std::int64_t batch, std::int64_t seq, int heads, int kv_heads,
                   std::int64_t hd, bool causal, bool rope, bool qkv_bias, bool out_bias, double attn_dropout,
                   std::int64_t kv_context = 0) {
    const std::int64_t d = g.node(x).shape[1];
    NodeId q, k, v;
    if (fused_qkv && lora_rank == 0) {
      // One GEMM over the concatenated weights; q, k and v are column views of its output.
      const NodeId qkv = linear(p + "/qkv", x, (heads + 2 * kv_heads) * hd, qkv_bias);
      q = g.slice(p + "/q", qkv, 1, 0, heads * hd);
      k = g.slice(p + "/k", qkv, 1, heads * hd, kv_heads * hd);
      v = g.slice(p + "/v", qkv, 1, (heads + kv_heads) * hd, kv_heads * hd);
    } else {
      q = linear(p + "/q", x, heads * hd, qkv_bias);
      k = linear(p + "/k", x, kv_heads * hd, qkv_bias);
      v = linear(p + "/v", x, kv_heads * hd, qkv_bias);
    }
    // [B*T, h*hd] -> [B*h, T, hd] is a permute: a copy in eager frameworks, a view where the attention kernel
    // reads the projections' layout (head_copies false).
    NodeId q3 = g.reshape(p + "/q_heads", q, {batch * heads, seq, hd}, head_copies);
    NodeId k3 = g.reshape(p + "/k_heads", k, {batch * kv_heads, seq, hd}, head_copies);
    NodeId v3 = g.reshape(p + "/v_heads", v, {batch * kv_heads, seq, hd}, head_copies);
    if (rope) {
      q3 = g.elementwise(p + "/q_rope", EwFn::rope, {q3});
      k3 = g.elementwise(p + "/k_rope", EwFn::rope, {k3});
    }
    if (kv_context > 0) {
      // Decode: the new token's K and V are written into the cache in place (their copies above); the
      // query attends over the whole cache.
      k3 = g.input(p + "/k_cache", {batch * kv_heads, kv_context, hd}, dt);
      v3 = g.input(p + "/v_cache", {batch * kv_heads, kv_context, hd}, dt);
      causal = false;
    }
    // Packed samples: attention runs over each sample alone (variable-length attention), which for equal
    // samples is attention over a batch `segments` times larger of sequences as many times shorter: views.
    const std::int64_t n = kv_context == 0 && segments > 1 ? segments : 1;
    if (n > 1) {
      q3 = g.reshape(p + "/q_samples", q3, {batch * heads * n, seq / n, hd});
      k3 = g.reshape(p + "/k_samples", k3, {batch * kv_heads * n, seq / n, hd});
      v3 = g.reshape(p + "/v_samples", v3, {batch * kv_heads * n, seq / n, hd});
      batch *= n;
      seq /= n;
    }
    NodeId o;
    if (flash) {
      o = g.attention(p + "/flash", q3, k3, v3, causal);
    } else {
      if (kv_heads != heads) {
        const std::int64_t kv_len = g.node(k3).shape[1];
        k3 = g.repeat(p + "/k_repeat", k3, {batch * heads, kv_len, hd});
        v3 = g.repeat(p + "/v_repeat", v3, {batch * heads, kv_len, hd});
      }
      NodeId s = g.batch_matmul(p + "/scores", q3, k3, false, true);
      s = g.elementwise(p + "/scale_mask", EwFn::scale_mask, {s}, causal);
      NodeId pr = g.softmax(p + "/softmax", s);
      pr = dropout(p + "/attn_dropout", pr, attn_dropout);
      o = g.batch_matmul(p + "/context", pr, v3);
    }
    if (n > 1) {
      batch /= n;
      seq *= n;
      o = g.reshape(p + "/join_samples", o, {batch * heads, seq, hd});
    }
    const NodeId merged = g.reshape(p + "/merge_heads", o, {batch * seq, heads * hd}, head_copies);
    return linear(p + "/out", merged, d, out_bias);
  }
};

}  // namespace

Graph build_bert(const NetworkOptions& opt, int layers, std::int64_t hidden, int heads) {
  BertConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.intermediate = 4 * hidden;
  return build_bert(opt, c);
}

Graph build_bert(const NetworkOptions& opt, const BertConfig& cfg) {
  require_whole_model(opt, "bert");
  if (cfg.hidden % cfg.heads != 0) throw InputError(fmt::format("bert: hidden {} must split into {} heads", cfg.hidden, cfg.heads));
  if (!cfg.pooler && !cfg.qa_head) throw InputError("bert: needs a pooler or a span head to have an output");
  Graph g;
  TransformerBuilder b{g, opt.dtype, opt.training, opt.flash_attention, opt.lora_rank, opt.lora_targets};
  b.head_copies = opt.head_copies;
  b.fused_qkv = opt.fused_qkv;
  const std::int64_t hidden = cfg.hidden;
  const std::int64_t batch = opt.batch, seq = opt.seq_len > 0 ? opt.seq_len : std::min<std::int64_t>(384, cfg.max_positions);
  if (seq > cfg.max_positions) throw InputError(fmt::format("seq_len {} exceeds BERT's {} positions", seq, cfg.max_positions));
  const double drop = 0.1;
  const NodeId ids = g.input("input_ids", {batch, seq}, DType::i32);
  const NodeId pos = g.input("position_ids", {batch, seq}, DType::i32);
  const NodeId types = g.input("token_type_ids", {batch, seq}, DType::i32);
  NodeId x = g.embedding("embeddings.word", ids, g.param("embeddings.word/weight", {cfg.vocab, hidden}, opt.dtype, opt.lora_rank == 0));
  x = g.add("embeddings.add_position", x,
            g.embedding("embeddings.position", pos,
                        g.param("embeddings.position/weight", {cfg.max_positions, hidden}, opt.dtype, opt.lora_rank == 0)));
  x = g.add("embeddings.add_type", x,
            g.embedding("embeddings.type", types, g.param("embeddings.type/weight", {cfg.type_vocab, hidden}, opt.dtype, opt.lora_rank == 0)));
  x = g.reshape("embeddings.flatten", x, {batch * seq, hidden});
  x = b.dropout("embeddings.dropout", b.norm("embeddings.norm", x, false, true), drop);
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = fmt::format("encoder.{}", l);
    NodeId a = b.attention(p + "/attention", x, batch, seq, cfg.heads, cfg.heads, hidden / cfg.heads, false, false, true, true, drop);
    a = b.dropout(p + "/attention_dropout", a, drop);
    x = b.norm(p + "/attention_norm", g.add(p + "/attention_residual", x, a), false, true);
    NodeId f = b.linear(p + "/intermediate", x, cfg.intermediate, true, Act::gelu);
    f = b.dropout(p + "/output_dropout", b.linear(p + "/output", f, hidden, true), drop);
    x = b.norm(p + "/output_norm", g.add(p + "/output_residual", x, f), false, true);
  }
  NodeId pooled = kNone;
  if (cfg.pooler) {
    // Pooler (first token, dense + tanh): part of the model and computed (unused by a span loss).
    const NodeId first = g.slice("pooler.first_token", g.reshape("pooler.unflatten", x, {batch, seq, hidden}), 1, 0, 1);
    pooled = b.linear("pooler", g.reshape("pooler.flatten", first, {batch, hidden}), hidden, true, Act::tanh);
    g.set_output("pooled", pooled);
  }
  if (cfg.qa_head) {
    // Span head: start and end logits per position, cross-entropy over positions.
    const NodeId start = g.reshape("qa.start_logits", b.linear("qa.start", x, 1, true), {batch, seq});
    const NodeId end = g.reshape("qa.end_logits", b.linear("qa.end", x, 1, true), {batch, seq});
    const NodeId ls = g.softmax_xent("loss.start", start, g.input("start_positions", {batch}, DType::i32));
    const NodeId le = g.softmax_xent("loss.end", end, g.input("end_positions", {batch}, DType::i32));
    g.set_output("loss", g.add("loss", ls, le));
  } else {
    // BertModel has no task head: train it against a stand-in, the squared error of its last hidden states.
    g.set_output("loss", g.mse_loss("loss", x, g.input("hidden_target", {batch * seq, hidden}, opt.dtype)));
  }
  return g;
}

DecoderConfig decoder_preset(const std::string& id) {
  if (is_sized_decoder_id(id)) return sized_decoder_for_id(id).config;  // decoder-<size>: built to size
  DecoderConfig c;
  auto mpt = [&](int layers, std::int64_t d, int heads) {
    // llm-foundry MPT: ALiBi (no position params), LayerNorm without bias, no biases, tied embeddings,
    // GELU MLP with expansion 4, vocabulary 50368, 2048 tokens.
    c.layers = layers;
    c.hidden = d;
    c.heads = c.kv_heads = heads;
    c.ffn = 4 * d;
    c.vocab = 50368;
    c.seq_len = c.max_positions = 2048;  // config max_seq_len (MPT's forward refuses longer input)
    c.tied_embeddings = true;
  };
  auto llama = [&](int layers, std::int64_t d, int heads, int kv, std::int64_t ffn, std::int64_t vocab, std::int64_t seq) {
    c.layers = layers;
    c.hidden = d;
    c.heads = heads;
    c.kv_heads = kv;
    c.ffn = ffn;
    c.swiglu = true;
    c.vocab = vocab;
    c.seq_len = c.max_positions = seq;  // max_position_embeddings; later releases' longer windows are set below
    c.rms_norm = true;
    c.rope = true;
  };
  auto gpt = [&](int layers, std::int64_t d, int heads, std::int64_t vocab, std::int64_t positions) {
    // GPT-2 / GPT-3 (and Megatron-LM's GPT): learned positions, LayerNorm with a shift, biases on every
    // projection, GELU MLP with expansion 4, the head tied to the token embeddings.
    c.layers = layers;
    c.hidden = d;
    c.heads = c.kv_heads = heads;
    c.ffn = 4 * d;
    c.vocab = vocab;
    c.seq_len = c.max_positions = positions;  // n_positions: the learned table's rows
    c.norm_bias = true;
    c.linear_bias = true;
    c.learned_positions = true;
    c.tied_embeddings = true;
  };
  if (id == "mpt-125m") mpt(12, 768, 12);
  else if (id == "mpt-760m") mpt(24, 1536, 12);
  else if (id == "mpt-1b") mpt(24, 2048, 16);
  else if (id == "mpt-3b") mpt(32, 2560, 20);
  else if (id == "mpt-7b") mpt(32, 4096, 32);
  else if (id == "mpt-13b") mpt(40, 5120, 40);
  else if (id == "mpt-30b") mpt(48, 7168, 64);
  else if (id == "mpt-70b") mpt(80, 8192, 64);
  else if (id == "llama-7b") llama(32, 4096, 32, 32, 11008, 32000, 2048);
  else if (id == "llama3-8b" || id == "llama3.1-8b") llama(32, 4096, 32, 8, 14336, 128256, 8192);
  else if (id == "llama-13b") llama(40, 5120, 40, 40, 13824, 32000, 4096);
  else if (id == "llama-70b" || id == "llama2-70b") llama(80, 8192, 64, 8, 28672, 32000, 4096);
  else if (id == "llama2-7b") llama(32, 4096, 32, 32, 11008, 32000, 4096);
  else if (id == "llama3-70b" || id == "llama3.1-70b" || id == "llama3.3-70b") llama(80, 8192, 64, 8, 28672, 128256, 8192);
  else if (id == "llama3.1-405b") llama(126, 16384, 128, 8, 53248, 128256, 8192);
  else if (id == "mistral-7b") llama(32, 4096, 32, 8, 14336, 32000, 8192);
  else if (id == "mixtral-8x7b") {
    llama(32, 4096, 32, 8, 14336, 32000, 8192);
    c.experts = 8;
    c.experts_per_token = 2;
  }
  else if (id == "gpt2-124m") gpt(12, 768, 12, 50257, 1024);
  else if (id == "gpt2-350m") gpt(24, 1024, 16, 50257, 1024);
  else if (id == "gpt2-774m") gpt(36, 1280, 20, 50257, 1024);
  else if (id == "gpt2-1558m") gpt(48, 1600, 25, 50257, 1024);
  else if (id == "gpt3-175b") gpt(96, 12288, 96, 50257, 2048);
  else throw InputError(fmt::format("unknown decoder preset '{}'", id));
  // Windows longer than the length priced by default (the models' config.json, max_position_embeddings):
  // mpt-30b 8192 (max_seq_len); Llama 3.1 and 3.3 131072 (RoPE scaled); Mistral 7B v0.1 and Mixtral 8x7B 32768.
  if (id == "mpt-30b") c.max_positions = 8192;
  else if (id.rfind("llama3.1-", 0) == 0 || id.rfind("llama3.3-", 0) == 0) c.max_positions = 131072;
  else if (id == "mistral-7b" || id == "mixtral-8x7b") c.max_positions = 32768;
  return c;
}

double kv_cache_bytes(const DecoderConfig& cfg, std::int64_t positions, std::int64_t batch, DType dtype) {
  const double head_dim = static_cast<double>(cfg.head_size());
  return 2.0 * cfg.layers * cfg.kv_heads * head_dim * static_cast<double>(positions) * static_cast<double>(batch) *
         static_cast<double>(dtype_size(dtype));
}

namespace {

/// This rank's share of the decoder under Megatron's layout (see NetworkOptions); InputError naming the
/// option and value when the layout does not fit the shape.
/// How many equal samples stand for packed samples of about `sample_len` tokens in a sequence of `seq`: the
/// divisor of seq nearest seq / sample_len (in ratio), so the attention's views split the sequence exactly.
/// Attention over the samples costs seq x (its share), so a sample a few tokens longer or shorter barely moves it.
std::int64_t packed_segments(std::int64_t seq, std::int64_t sample_len) {
  const double want = static_cast<double>(seq) / static_cast<double>(sample_len);
  std::int64_t best = 1;
  double best_gap = std::abs(std::log(want));
  for (std::int64_t d = 1; d * d <= seq; ++d) {
    if (seq % d != 0) continue;
    for (const std::int64_t n : {d, seq / d}) {
      const double gap = std::abs(std::log(static_cast<double>(n) / want));
      if (gap < best_gap) best = n, best_gap = gap;
    }
  }
  return best;
}

struct DecoderShard {
  int heads = 0, kv_heads = 0;
  std::int64_t ffn = 0, vocab = 0;  // vocab: this rank's rows of the padded vocabulary
  int blocks = 0;
  bool first = true, last = true;
};

DecoderShard decoder_shard(const NetworkOptions& opt, const DecoderConfig& cfg) {
  const int tp = opt.tensor_parallel;
  if (tp < 1 || tp > 512) throw InputError(fmt::format("tensor_parallel {} is outside [1, 512]", tp));
  if (opt.stage_layers < 0 || opt.stage_layers > cfg.layers)
    throw InputError(fmt::format("stage_layers {} is outside [0, {}] (the decoder's layers; 0 = all, no pipeline)",
                                 opt.stage_layers, cfg.layers));
  if (opt.stage_layers == 0 && !(opt.first_stage && opt.last_stage))
    throw InputError(fmt::format("first_stage {} and last_stage {}: a pipeline stage needs stage_layers (0 = the "
                                 "whole model, which is both)",
                                 opt.first_stage, opt.last_stage));
  if (cfg.heads % tp != 0)
    throw InputError(fmt::format("tensor_parallel {} does not split the {} attention heads (heads must be a multiple "
                                 "of tensor_parallel)",
                                 tp, cfg.heads));
  if (cfg.ffn % tp != 0)
    throw InputError(fmt::format("tensor_parallel {} does not split the MLP inner size {} (ffn must be a multiple of "
                                 "tensor_parallel)",
                                 tp, cfg.ffn));
  if (cfg.kv_heads >= tp ? cfg.kv_heads % tp != 0 : tp % cfg.kv_heads != 0)
    throw InputError(fmt::format("tensor_parallel {} does not fit the {} KV heads (kv_heads must be a multiple of "
                                 "tensor_parallel, or tensor_parallel of kv_heads: one KV head per rank, replicated)",
                                 tp, cfg.kv_heads));
  DecoderShard s;
  s.heads = cfg.heads / tp;
  // Megatron replicates KV heads when the ranks outnumber them: each rank keeps one.
  s.kv_heads = cfg.kv_heads >= tp ? cfg.kv_heads / tp : 1;
  s.ffn = cfg.ffn / tp;
  s.vocab = tp_padded_vocab(cfg.vocab, tp) / tp;
  s.blocks = opt.stage_layers > 0 ? opt.stage_layers : cfg.layers;
  s.first = opt.first_stage;
  s.last = opt.last_stage;
  return s;
}

}  // namespace

Graph build_decoder(const NetworkOptions& opt, const DecoderConfig& cfg) {
  if ((cfg.head_dim == 0 && cfg.hidden % cfg.heads != 0) || cfg.heads % cfg.kv_heads != 0)
    throw InputError(fmt::format("decoder: hidden {} must split into {} heads, and heads into {} kv-heads", cfg.hidden,
                                 cfg.heads, cfg.kv_heads));
  if (opt.decode_context > 0 && opt.training) throw InputError("decode steps are inference only");
  if (cfg.learned_positions && opt.decode_context == 0 && opt.seq_len > cfg.seq_len)
    throw InputError(fmt::format("seq_len {} exceeds the decoder's {} learned positions", opt.seq_len, cfg.seq_len));
  const DecoderShard shard = decoder_shard(opt, cfg);
  Graph g;
  TransformerBuilder b{g, opt.dtype, opt.training, opt.flash_attention, opt.lora_rank, opt.lora_targets};
  const bool base_trainable = opt.lora_rank == 0;
  const std::int64_t batch = opt.batch;
  const std::int64_t seq = opt.decode_context > 0 ? 1 : opt.seq_len > 0 ? opt.seq_len : cfg.seq_len;
  if (opt.sample_len != 0 && opt.decode_context == 0) {
    if (opt.sample_len < 0 || opt.sample_len > seq)
      throw InputError(fmt::format("sample_len {} is outside [1, seq_len {}]", opt.sample_len, seq));
    b.segments = packed_segments(seq, opt.sample_len);
  }
  b.head_copies = opt.head_copies;
  b.fused_qkv = opt.fused_qkv;
  const std::int64_t head_dim = cfg.head_size();
  NodeId wte = kNone, x = kNone;
  if (shard.first) {
    // Vocab-parallel embedding: this rank's rows of the table (the partial lookups are all-reduced).
    const NodeId tokens = g.input("tokens", {batch, seq}, DType::i32);
    wte = g.param("wte/weight", {shard.vocab, cfg.hidden}, opt.dtype, base_trainable);
    x = g.embedding("wte", tokens, wte);
    if (cfg.learned_positions) {
      const NodeId pos = g.input("positions", {batch, seq}, DType::i32);
      const NodeId wpe = g.param("wpe/weight", {cfg.seq_len, cfg.hidden}, opt.dtype, base_trainable);
      x = g.add("add_positions", x, g.embedding("wpe", pos, wpe));
    }
  } else {
    x = g.input("stage_input", {batch, seq, cfg.hidden}, opt.dtype);  // from the previous stage
  }
  x = g.reshape("flatten", x, {batch * seq, cfg.hidden});
  for (int l = 0; l < shard.blocks; ++l) {
    const std::string p = fmt::format("blocks.{}", l);
    NodeId h = b.norm(p + "/norm_1", x, cfg.rms_norm, cfg.norm_bias);
    h = b.attention(p + "/attn", h, batch, seq, shard.heads, shard.kv_heads, head_dim, true, cfg.rope,
                    cfg.linear_bias || cfg.qkv_bias, cfg.linear_bias, 0.0, opt.decode_context);
    x = g.add(p + "/attn_residual", x, h);
    h = b.norm(p + "/norm_2", x, cfg.rms_norm, cfg.norm_bias);
    if (cfg.experts > 0) {
      // Mixture of experts under balanced routing (what the load-balancing loss aims for): every token is
      // copied to its experts, each expert runs its SwiGLU MLP on its share, and the copies are summed back
      // (the gate-weighted sum). The experts are one batched GEMM over an [experts, tokens, hidden] tensor.
      // When tokens x experts_per_token does not divide evenly, slots are padded up to a whole number of
      // copies per token (a capacity factor). The router's logits and softmax are priced; the top-k
      // selection is not an op here, so no gradient reaches the router.
      const std::int64_t rows = batch * seq, E = cfg.experts;
      std::int64_t copies = cfg.experts_per_token;
      while ((rows * copies) % E != 0) ++copies;
      const std::int64_t cap = rows * copies / E;
      g.softmax(p + "/moe.gates", b.linear(p + "/moe.router", h, E, false));
      const bool trainable = opt.lora_rank == 0;
      const NodeId slots = g.reshape(p + "/moe.slots", g.repeat(p + "/moe.dispatch", h, {rows * copies, cfg.hidden}), {E, cap, cfg.hidden});
      const NodeId wg = g.param(p + "/moe.experts.gate/weight", {E, cfg.hidden, shard.ffn}, opt.dtype, trainable);
      const NodeId wu = g.param(p + "/moe.experts.up/weight", {E, cfg.hidden, shard.ffn}, opt.dtype, trainable);
      const NodeId wd = g.param(p + "/moe.experts.down/weight", {E, shard.ffn, cfg.hidden}, opt.dtype, trainable);
      const NodeId act = g.elementwise(p + "/moe.gated", cfg.geglu ? EwFn::geglu : EwFn::swiglu,
                                       {g.batch_matmul(p + "/moe.gate", slots, wg), g.batch_matmul(p + "/moe.up", slots, wu)});
      const NodeId out = g.reshape(p + "/moe.out", g.batch_matmul(p + "/moe.down", act, wd), {rows * copies, cfg.hidden});
      h = g.reduce_to(p + "/moe.combine", out, h);
    } else if (cfg.swiglu) {
      const NodeId gate = b.linear(p + "/mlp.gate", h, shard.ffn, cfg.linear_bias);
      const NodeId up = b.linear(p + "/mlp.up", h, shard.ffn, cfg.linear_bias);
      h = b.linear(p + "/mlp.down", g.elementwise(p + "/mlp.gated", cfg.geglu ? EwFn::geglu : EwFn::swiglu, {gate, up}), cfg.hidden,
                   cfg.linear_bias);
    } else {
      h = b.linear(p + "/mlp.up", h, shard.ffn, cfg.linear_bias, Act::gelu);
      h = b.linear(p + "/mlp.down", h, cfg.hidden, cfg.linear_bias);
    }
    x = g.add(p + "/mlp_residual", x, h);
  }
  if (!shard.last) {
    g.set_output("stage_output", x);
    if (opt.training) {
      // The next stage sends back dL/d(output); the surrogate loss sum(output * output_grad) has exactly that
      // gradient, so the ordinary training step backpropagates it. A dot product of two flat views: one
      // [1, n] x [n, 1] GEMV forward, one [1, 1] x [1, n] backward.
      const std::int64_t n = batch * seq * cfg.hidden;
      const NodeId dy = g.input("stage_output_grad", {batch * seq, cfg.hidden}, opt.dtype);
      const NodeId dot = g.matmul("stage_loss/dot", g.reshape("stage_loss/output_row", x, {1, n}),
                                  g.reshape("stage_loss/output_grad_column", dy, {n, 1}));
      g.set_output("loss", g.reshape("loss", dot, {}));
    }
    return g;
  }
  x = b.norm("norm_f", x, cfg.rms_norm, cfg.norm_bias);
  NodeId logits = kNone;
  if (cfg.tied_embeddings) {
    // Tied head: the embedding table itself; a last stage that is not the first keeps its own copy (Megatron
    // keeps the word embedding on both ends of the pipeline and all-reduces their gradients).
    if (wte == kNone) wte = g.param("wte/weight", {shard.vocab, cfg.hidden}, opt.dtype, base_trainable);
    logits = g.matmul("lm_head", x, wte, kNone, Act::none, false, true);
  } else {
    logits = g.matmul("lm_head", x, g.param("lm_head/weight", {cfg.hidden, shard.vocab}, opt.dtype, base_trainable));
  }
  g.set_output("logits", logits);
  // Training runs the language-model loss in FP32 (softmax_xent_fp32): the FP32 logits' softmax probabilities and
  // their gradient are what long sequences over large vocabularies run out of memory on.
  const NodeId labels = g.input("labels", {batch * seq}, DType::i32);
  g.set_output("loss", opt.training ? g.softmax_xent_fp32("loss", logits, labels) : g.softmax_xent("loss", logits, labels));
  return g;
}

}  // namespace gpuvs::models
