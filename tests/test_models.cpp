// SPDX-License-Identifier: Apache-2.0
// The built-in networks against published figures: parameter counts and forward multiply-accumulates.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "core/files.hpp"
#include "import/hf/hf_config.hpp"
#include "import/model_files.hpp"
#include "ir/cost.hpp"
#include "models/networks.hpp"
#include "test_util.hpp"
#include "workload/resolve.hpp"

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::models;
using namespace gpuvs::import;
using namespace gpuvs::workload;

namespace {
OpCost forward_cost(const std::string& id, std::int64_t batch, std::int64_t seq = 0, bool flash = true) {
  return graph_cost(build_network(network(id), {batch, DType::f32, seq, flash, false}));
}
int count(const Graph& g, OpKind k) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == k;
  return n;
}
}  // namespace

TEST(Networks, ParameterCountsMatchPublishedFigures) {
  for (const auto& net : networks()) {
    const Graph g = build_network(net, {1, DType::f32, 128, true, false});
    const double params = static_cast<double>(param_count(g));
    EXPECT_NEAR(params / net.published_params, 1.0, 0.021) << net.id << ": " << params << " vs " << net.params_source;
  }
  // Exact where the source states an exact count.
  auto exact = [](const char* id) { return param_count(build_network(network(id), {1, DType::f32, 128, true, false})); };
  EXPECT_EQ(exact("resnet50"), 25557032);
  EXPECT_EQ(exact("resnet152"), 60192808);
  EXPECT_EQ(exact("vgg16"), 138357544);
  EXPECT_EQ(exact("llama-7b"), 6738415616);
  EXPECT_EQ(exact("llama3-8b"), 8030261248);
  EXPECT_EQ(exact("llama-13b"), 13015864320);
  EXPECT_EQ(exact("llama-70b"), 68976648192);
  EXPECT_EQ(exact("sd15-unet"), 859520964);  // diffusers UNet2DConditionModel, SD 1.5 config
  const double bert_large = static_cast<double>(exact("bert-large"));
  EXPECT_GE(bert_large, 335e6);
  EXPECT_LE(bert_large, 340e6);
}

TEST(Networks, ForwardMacsMatchPublishedFigures) {
  // ResNet-50: 4.09 GMACs at 224x224 (torchvision); VGG-16: 15.47 GMACs; ResNet-152: 11.51 GMACs.
  EXPECT_NEAR(forward_cost("resnet50", 1).matrix_flops / 2e9, 4.09, 0.04);
  EXPECT_NEAR(forward_cost("vgg16", 1).matrix_flops / 2e9, 15.47, 0.1);
  EXPECT_NEAR(forward_cost("resnet152", 1).matrix_flops / 2e9, 11.51, 0.1);
  // FLOPs scale with the batch.
  EXPECT_DOUBLE_EQ(forward_cost("resnet50", 8).matrix_flops, 8 * forward_cost("resnet50", 1).matrix_flops);
}

TEST(Networks, DecoderFlopsAre2NTPlusAttention) {
  // LLaMA-7B, one sequence of 2048 tokens: 2 x (params - embedding table) x tokens for the projections
  // and head, plus causal attention 2 x 2 x layers x heads x T x T x head_dim x (T+1)/(2T).
  const double t = 2048, layers = 32, d = 4096, params = 6738415616.0, embed = 32000 * 4096.0;
  const double expect = 2 * (params - embed) * t + 4 * layers * t * t * d * (t + 1) / (2 * t);
  EXPECT_NEAR(forward_cost("llama-7b", 1).matrix_flops / expect, 1.0, 1e-3);
}

TEST(Networks, TrainingStepIsAboutThreeForwards) {
  for (const char* id : {"resnet50", "vgg16", "bert-base", "mpt-760m"}) {
    const double fwd = forward_cost(id, 2, 256).matrix_flops;
    const double step = graph_cost(build_network(network(id), {2, DType::f32, 256, true, true})).matrix_flops;
    // Backward is two GEMMs per forward GEMM, less the first layer's data gradient (and 2.5x for flash attention).
    EXPECT_GT(step / fwd, 2.85) << id;
    EXPECT_LT(step / fwd, 3.1) << id;
  }
}

TEST(Networks, EveryTrainableParamOnTheLossPathGetsAdam) {
  const Graph g = build_network(network("resnet50"), {2, DType::f32, 0, true, true});
  int params = 0;
  for (const auto& n : g.nodes()) params += n.op == OpKind::param && n.trainable;
  EXPECT_EQ(count(g, OpKind::adam_update), params);
  // BERT's pooler is computed but not on the span loss: its two params get no update.
  const Graph b = build_network(network("bert-base"), {2, DType::f32, 128, true, true});
  int bp = 0;
  for (const auto& n : b.nodes()) bp += n.op == OpKind::param && n.trainable;
  EXPECT_EQ(count(b, OpKind::adam_update), bp - 2);
}

TEST(Networks, FlashAttentionAvoidsTheScoreMatrix) {
  const OpCost flash = forward_cost("bert-base", 4, 384, true);
  const OpCost eager = forward_cost("bert-base", 4, 384, false);
  // Same projections; the explicit path moves the [B*h, T, T] scores several times.
  EXPECT_GT(eager.bytes, flash.bytes + 4.0 * 12 * 12 * 384 * 384 * 4 * 3);
  const Graph g = build_network(network("llama3-8b"), {1, DType::bf16, 512, false, true});
  EXPECT_EQ(count(g, OpKind::repeat), 2 * 32);  // grouped-query K and V shared by 4 query heads
  EXPECT_EQ(count(g, OpKind::attention), 0);
}

TEST(Networks, GroupedQueryProjectionsAndDtypes) {
  const Graph g = build_network(network("llama3-8b"), {1, DType::bf16, 256, true, false});
  const Node& k = g.node(g.find("blocks.0/attn/k/weight"));
  EXPECT_EQ(k.shape, (Shape{4096, 1024}));
  EXPECT_EQ(k.dtype, DType::bf16);
  EXPECT_EQ(g.node(g.find("blocks.0/attn/q/weight")).shape, (Shape{4096, 4096}));
}

TEST(Networks, UnetTrainsWithAnMseLossThroughEveryBlock) {
  const Graph g = build_network(network("sd15-unet"), {1, DType::f16, 0, true, true});
  int convs = 0, attn = 0;
  for (const auto& n : g.nodes()) {
    convs += n.op == OpKind::conv2d;
    attn += n.op == OpKind::attention;
  }
  EXPECT_EQ(attn, 32);   // 16 transformer blocks, self- and cross-attention each
  EXPECT_EQ(count(g, OpKind::concat), 12);  // the skip connections
  int params = 0;
  for (const auto& n : g.nodes()) params += n.op == OpKind::param && n.trainable;
  EXPECT_EQ(count(g, OpKind::adam_update), params);
  EXPECT_GT(convs, 60);
}

TEST(Networks, BadOptions) {
  EXPECT_THROW(network("resnet-50"), InputError);
  try {
    network("llama7b");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama-7b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_network(network("bert-base"), {1, DType::f32, 1024, true, false}), InputError);  // > 512 positions
  EXPECT_THROW(build_network(network("resnet50"), {0, DType::f32, 0, true, false}), InputError);
}

TEST(Networks, SizedDecoderFollowsTheStatedRule) {
  // decoder-7b: the rule gives LLaMA 7B's shape, so its exact count is LLaMA 7B's.
  const SizedDecoder d7 = sized_decoder_for_id("decoder-7b");
  EXPECT_EQ(d7.config.layers, 32);
  EXPECT_EQ(d7.config.hidden, 4096);
  EXPECT_EQ(d7.config.heads, 32);
  EXPECT_EQ(d7.config.kv_heads, 32);
  EXPECT_EQ(d7.config.ffn, 11008);  // 8/3 x 4096 = 10922.7, rounded up to a multiple of 256
  EXPECT_EQ(d7.config.vocab, 32000);
  EXPECT_EQ(d7.config.seq_len, 2048);
  EXPECT_TRUE(d7.config.swiglu && d7.config.rms_norm && d7.config.rope);
  EXPECT_FALSE(d7.config.linear_bias || d7.config.norm_bias || d7.config.tied_embeddings || d7.config.learned_positions);
  EXPECT_EQ(d7.params, 6738415616);
  EXPECT_NEAR(static_cast<double>(d7.params), 6.7e9, 0.05e9);
  EXPECT_DOUBLE_EQ(d7.requested, 7e9);
  // LLaMA 13B's shape (40 x 5120, SwiGLU 13824) and GPT-3 175B's (96 x 12288) come out of the same rule.
  const SizedDecoder d13 = sized_decoder_for_id("decoder-13b");
  EXPECT_EQ(d13.config.layers, 40);
  EXPECT_EQ(d13.config.hidden, 5120);
  EXPECT_EQ(d13.config.ffn, 13824);
  EXPECT_EQ(d13.params, 13015864320);
  const SizedDecoder d175 = sized_decoder_for_id("decoder-175b");
  EXPECT_EQ(d175.config.layers, 96);
  EXPECT_EQ(d175.config.hidden, 12288);
  EXPECT_EQ(d175.config.ffn, 32768);
  // The rule itself, for every number of layers.
  for (int layers : {1, 2, 3, 13, 50, 217}) {
    const DecoderConfig c = sized_decoder_config(layers);
    EXPECT_EQ(c.hidden, 128 * layers);
    EXPECT_EQ(c.heads, layers);
    EXPECT_EQ(c.hidden / c.heads, 128);
    EXPECT_EQ(c.ffn % 256, 0);
    EXPECT_GE(3 * c.ffn, 8 * c.hidden);
    EXPECT_LT(3 * (c.ffn - 256), 8 * c.hidden);
  }
}

TEST(Networks, DecoderParamFormulaMatchesTheBuiltGraph) {
  for (int layers : {1, 2, 3, 7, 12}) {
    const DecoderConfig c = sized_decoder_config(layers);
    EXPECT_EQ(decoder_params(c), param_count(build_decoder({1, DType::f32, 16, true, false}, c))) << layers;
  }
  // Every decoder preset too: tied embeddings, LayerNorm, grouped-query attention.
  for (const auto& net : networks()) {
    if (net.family != models::Family::decoder) continue;
    EXPECT_EQ(decoder_params(decoder_preset(net.id)), param_count(build_network(net, {1, DType::f32, 16, true, false})))
        << net.id;
  }
}

TEST(Networks, SizedDecoderIsTheNearestInLogDistance) {
  auto dist = [](int layers, double want) {
    return std::fabs(std::log(static_cast<double>(decoder_params(sized_decoder_config(layers))) / want));
  };
  for (double want : {1e7, 1.7e7, 3e8, 7e9, 6.9e10, 1e11, 4.05e11, 1e12, 2e12}) {
    const SizedDecoder d = sized_decoder(want);
    const int l = d.config.layers;
    EXPECT_EQ(d.params, decoder_params(d.config));
    const int step = l < 8 ? 1 : 4;  // from 8 layers up the rule builds multiples of 4
    if (l >= 8) {
      EXPECT_EQ(l % 4, 0) << want;
    }
    EXPECT_LE(dist(l, want), dist(l + step, want)) << want;
    if (l > 1) {
      EXPECT_LE(dist(l, want), dist(l - (l <= 8 ? 1 : 4), want)) << want;
    }
  }
  EXPECT_EQ(sized_decoder(1e7).config.layers, 1);    // 8.45 M: the smallest the rule makes
  EXPECT_EQ(sized_decoder(2e12).config.layers, 216);  // 1.98 T
}

TEST(Networks, SizedDecoderIdsResolveEverywhere) {
  for (const char* id : {"decoder-7b", "decoder-7B", "decoder-7e9", "decoder-7000000000", "decoder-7000m", "DECODER-7b",
                         "decoder-0.007t", "decoder-7000000k"})
    EXPECT_EQ(sized_decoder_for_id(id).params, 6738415616) << id;
  EXPECT_EQ(sized_decoder_for_id("decoder-10m").config.layers, 1);
  EXPECT_EQ(sized_decoder_for_id("decoder-2t").config.layers, 216);
  EXPECT_NEAR(sized_decoder_for_id("decoder-1.3b").requested, 1.3e9, 1);
  EXPECT_NEAR(sized_decoder_for_id("decoder-500m").requested, 5e8, 1e-6);
  EXPECT_DOUBLE_EQ(sized_decoder_for_id("decoder-1t").requested, 1e12);
  // The canonical id `advise --params` writes, and back.
  EXPECT_EQ(sized_decoder_id(7e9), "decoder-7b");
  EXPECT_EQ(sized_decoder_id(13e9), "decoder-13b");
  EXPECT_EQ(sized_decoder_id(1.3e9), "decoder-1.3b");
  EXPECT_EQ(sized_decoder_id(5e8), "decoder-500m");
  EXPECT_EQ(sized_decoder_id(1e12), "decoder-1t");
  for (double p : {1e7, 1.3e9, 6.7e9, 2.5e10, 1.75e11, 2e12})
    EXPECT_NEAR(sized_decoder_for_id(sized_decoder_id(p)).requested / p, 1.0, 1e-12) << p;
  // A workload like any other: the registry, the graph, the KV-cache preset.
  const NetworkInfo net = resolve_network("decoder-7b");
  EXPECT_EQ(net.id, "decoder-7b");
  EXPECT_EQ(net.family, models::Family::decoder);
  EXPECT_EQ(net.sample_unit, "sequences");
  EXPECT_EQ(net.default_seq_len, 2048);
  EXPECT_EQ(net.layers, 32);
  EXPECT_EQ(net.hidden, 4096);
  EXPECT_DOUBLE_EQ(net.published_params, 6738415616.0);
  EXPECT_NE(net.description.find("width = 128 x layers"), std::string::npos) << net.description;
  EXPECT_NE(net.description.find("32 layers, width 4096, 32 heads, SwiGLU 11008"), std::string::npos) << net.description;
  EXPECT_NE(net.description.find("6,738,415,616"), std::string::npos) << net.description;
  EXPECT_NE(net.params_source.find("built to size"), std::string::npos) << net.params_source;
  EXPECT_EQ(param_count(build_network(net, {1, DType::bf16, 64, true, false})), 6738415616);
  EXPECT_EQ(decoder_preset("decoder-7b").layers, 32);
  EXPECT_TRUE(import::is_model_file("decoder-7b.toml"));  // a model file, read as one (the front door asks the importers first)
  EXPECT_FALSE(is_sized_decoder_id("llama-7b"));
}

TEST(Networks, SizedDecoderRefusesMalformedAndOutOfRangeSizes) {
  auto expect_refused = [](const std::string& id, const std::string& names) {
    try {
      (void)resolve_network(id);
      ADD_FAILURE() << id << " was accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(names), std::string::npos) << msg;
      EXPECT_NE(msg.find("1e7 to 2e12"), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  };
  for (const char* id : {"decoder-abc", "decoder-", "decoder-7x", "decoder-7bb", "decoder-b", "decoder-nan", "decoder-inf",
                         "decoder-7 b", "decoder-+7b", "decoder-0x10", "decoder-1e"})
    expect_refused(id, std::string("'") + id + "'");
  expect_refused("decoder--7b", "-7e+09");
  expect_refused("decoder-0", "0 parameters");
  expect_refused("decoder-9m", "9e+06");
  expect_refused("decoder-2.1t", "2.1e+12");
  expect_refused("decoder-1e20", "1e+20");
  EXPECT_THROW(sized_decoder(5e6), InputError);
  EXPECT_THROW(sized_decoder(std::nan("")), InputError);
  EXPECT_THROW(parse_decoder_size("1e400", "--params"), InputError);
  EXPECT_DOUBLE_EQ(parse_decoder_size("13e9", "--params"), 13e9);
}

TEST(Networks, PublishedDecoderPresetsHaveTheirPublishedCounts) {
  auto exact = [](const char* id) { return param_count(build_network(network(id), {1, DType::f32, 128, true, false})); };
  // Hugging Face configs' counts (embeddings and head untied).
  EXPECT_EQ(exact("llama2-7b"), 6738415616);
  EXPECT_EQ(exact("llama2-70b"), 68976648192);
  EXPECT_EQ(exact("llama-70b"), 68976648192);  // the older id for Llama 2 70B still works
  EXPECT_EQ(exact("llama3-70b"), 70553706496);
  EXPECT_EQ(exact("llama3.1-8b"), 8030261248);
  EXPECT_EQ(exact("llama3.1-70b"), 70553706496);
  EXPECT_EQ(exact("llama3.3-70b"), 70553706496);
  EXPECT_EQ(exact("llama3.1-405b"), 405853388800);
  EXPECT_EQ(exact("mistral-7b"), 7241732096);
  EXPECT_EQ(exact("mixtral-8x7b"), 46702792704);  // every expert's weights, though a token uses 2 of 8
  // GPT-2: GPT2LMHeadModel with the head tied to wte: embeddings, 1024 positions, biased LayerNorms
  // (two per block and the final one) and biases on every projection.
  EXPECT_EQ(exact("gpt2-124m"), 124439808);
  EXPECT_EQ(exact("gpt2-350m"), 354823168);
  EXPECT_EQ(exact("gpt2-774m"), 774030080);
  EXPECT_EQ(exact("gpt2-1558m"), 1557611200);
  // GPT-3 175B: published as "175B"; the shape counts 174.6 B.
  EXPECT_EQ(exact("gpt3-175b"), 174604259328);
  EXPECT_NEAR(static_cast<double>(exact("gpt3-175b")) / 175e9, 1.0, 0.003);
  // MPT 125M (nominal) and 70B: llm-foundry's benchmark table counts these shapes with a learned
  // 2048-position table and biases (projections, LayerNorms) as well; with those the formula gives its
  // NumParams exactly, MPT 760M's too, so the shapes are the ones llm-foundry ran.
  EXPECT_EQ(exact("mpt-125m"), 123636480);
  EXPECT_NEAR(static_cast<double>(exact("mpt-125m")) / 125e6, 1.0, 0.015);
  EXPECT_EQ(exact("mpt-70b"), 64838443008);
  auto as_benchmarked = [](const char* id) {
    DecoderConfig c = decoder_preset(id);
    c.learned_positions = c.linear_bias = c.norm_bias = true;
    return decoder_params(c);
  };
  EXPECT_EQ(as_benchmarked("mpt-125m"), 125311488);
  EXPECT_EQ(as_benchmarked("mpt-760m"), 760470528);
  EXPECT_EQ(as_benchmarked("mpt-70b"), 64862437376);
  // The shapes as stated.
  const DecoderConfig l405 = decoder_preset("llama3.1-405b");
  EXPECT_EQ(l405.layers, 126);
  EXPECT_EQ(l405.hidden / l405.heads, 128);
  EXPECT_EQ(l405.kv_heads, 8);
  EXPECT_EQ(l405.seq_len, 8192);
  EXPECT_EQ(decoder_preset("mistral-7b").seq_len, 8192);
  EXPECT_EQ(decoder_preset("llama2-7b").seq_len, 4096);
  EXPECT_EQ(decoder_preset("llama3-70b").vocab, 128256);
  const DecoderConfig g2 = decoder_preset("gpt2-1558m");
  EXPECT_TRUE(g2.learned_positions && g2.tied_embeddings && g2.norm_bias && g2.linear_bias);
  EXPECT_FALSE(g2.swiglu || g2.rms_norm || g2.rope);
  EXPECT_EQ(g2.seq_len, 1024);
  EXPECT_EQ(g2.heads, 25);
  const DecoderConfig m70 = decoder_preset("mpt-70b");
  EXPECT_TRUE(m70.tied_embeddings);
  EXPECT_FALSE(m70.learned_positions || m70.linear_bias || m70.norm_bias);
  // Every registry entry: the stated published figure and the KV-cache shape the predictor reads.
  for (const auto& net : networks())
    if (net.family == models::Family::decoder) {
      EXPECT_EQ(net.decoder.layers, net.layers) << net.id;
      EXPECT_EQ(net.decoder.hidden, net.hidden) << net.id;
      EXPECT_EQ(net.decoder.vocab, decoder_preset(net.id).vocab) << net.id;
    }
}

TEST(Networks, LearnedPositionsBoundTheSequenceAndFreezeUnderLora) {
  const Graph g = build_network(network("gpt2-124m"), {1, DType::f32, 1024, true, false});
  EXPECT_EQ(g.node(g.find("wpe/weight")).shape, (Shape{1024, 768}));
  EXPECT_EQ(g.node(g.find("norm_f/bias")).shape, (Shape{768}));
  EXPECT_EQ(g.node(g.find("blocks.11/mlp.down/bias")).shape, (Shape{768}));
  EXPECT_EQ(g.find("lm_head/weight"), kNone);  // tied to wte
  EXPECT_THROW(build_network(network("gpt2-124m"), {1, DType::f32, 1025, true, false}), InputError);
  // LoRA freezes the position table with every other base weight.
  NetworkOptions lora{1, DType::bf16, 64, true, true};
  lora.lora_rank = 8;
  const Graph l = build_network(network("gpt2-124m"), lora);
  EXPECT_EQ(param_count(l, false) - param_count(l), 124439808);
  EXPECT_FALSE(l.node(l.find("wpe/weight")).trainable);
}

namespace {
std::map<std::string, std::string> megatron_1_7b() { return {{"layers", "24"}, {"hidden", "2304"}, {"heads", "24"}}; }
}  // namespace

TEST(Networks, GptShapeFromOptionsIsMegatronsGpt) {
  // Narayanan et al. 2021, Table 1's first row: 1.7B = 24 layers, hidden 2304, 24 heads, vocabulary 51200,
  // 2048 tokens. Megatron's count 12lh^2 (1 + 13/12h + (V+s)/12lh) leaves out the final LayerNorm (2h).
  const NetworkInfo net = resolve_network("gpt", megatron_1_7b());
  const double l = 24, h = 2304, s = 2048, v = 51200;
  const double megatron_params = 12 * l * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l * h));
  const std::int64_t params = param_count(build_network(net, {1, DType::f32, 0, true, false}));
  EXPECT_EQ(params, 1652230656);
  EXPECT_NEAR(static_cast<double>(params), megatron_params + 2 * h, 1e-3);
  EXPECT_EQ(params, decoder_params(net.decoder));
  EXPECT_DOUBLE_EQ(net.published_params, 1652230656.0);
  EXPECT_EQ(net.id, "gpt");
  EXPECT_EQ(net.family, models::Family::decoder);
  EXPECT_EQ(net.default_seq_len, 2048);
  EXPECT_EQ(net.layers, 24);
  EXPECT_EQ(net.hidden, 2304);
  EXPECT_NE(net.description.find("24 layers, width 2304, 24 heads, GELU MLP 9216, vocabulary 51200"), std::string::npos)
      << net.description;
  EXPECT_NE(net.description.find("1,652,230,656"), std::string::npos) << net.description;

  // FLOPs per iteration with full recompute (Megatron's activation checkpointing: the forward twice):
  // 96 B s l h^2 (1 + s/6h + V/16lh). Megatron's attention was unfused: the explicit score path computes the
  // full T x T product under the causal mask, as the formula counts. The graph also recomputes the logits
  // (2BshV), which Megatron's checkpointing of the layers leaves out; with that difference, it agrees to 0.01%.
  const std::int64_t b = 2;
  const double fwd = graph_cost(build_network(net, {b, DType::bf16, 2048, false, false})).matrix_flops;
  const double step = graph_cost(build_network(net, {b, DType::bf16, 2048, false, true})).matrix_flops;
  const double megatron = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
  EXPECT_NEAR((step + fwd) / megatron, 1.0, 0.03);
  EXPECT_NEAR((step + fwd - 2 * b * s * h * v) / megatron, 1.0, 1e-4);
  // With FlashAttention the causal half of the scores is skipped (and its backward is 2.5 forwards).
  const double flash = graph_cost(build_network(net, {b, DType::bf16, 2048, true, true})).matrix_flops +
                       graph_cost(build_network(net, {b, DType::bf16, 2048, true, false})).matrix_flops;
  EXPECT_LT(flash, step + fwd);
  EXPECT_NEAR(flash / megatron, 1.0, 0.05);
}

TEST(Networks, GptShapeOptionsTakeEffect) {
  auto opts = megatron_1_7b();
  opts["kv_heads"] = "8";
  opts["ffn"] = "6144";
  opts["vocab"] = "50257";
  opts["seq_len"] = "4096";
  const NetworkInfo net = resolve_network("gpt", opts);
  EXPECT_EQ(net.decoder.kv_heads, 8);
  EXPECT_EQ(net.decoder.ffn, 6144);
  EXPECT_EQ(net.default_seq_len, 4096);
  const Graph g = build_network(net, {1, DType::f32, 0, true, false});
  EXPECT_EQ(g.node(g.find("blocks.0/attn/k/weight")).shape, (Shape{2304, 8 * 96}));
  EXPECT_EQ(g.node(g.find("blocks.0/mlp.up/weight")).shape, (Shape{2304, 6144}));
  EXPECT_EQ(g.node(g.find("wte/weight")).shape, (Shape{50257, 2304}));
  EXPECT_EQ(g.node(g.find("wpe/weight")).shape, (Shape{4096, 2304}));
  EXPECT_EQ(param_count(g), decoder_params(net.decoder));
  // GPT-2 small's shape through the options is GPT-2 small.
  const NetworkInfo small = resolve_network(
      "gpt", {{"layers", "12"}, {"hidden", "768"}, {"heads", "12"}, {"vocab", "50257"}, {"seq_len", "1024"}});
  EXPECT_EQ(param_count(build_network(small, {1, DType::f32, 0, true, false})), 124439808);
  // Options that are not shape keys are the caller's: ignored here.
  auto with_other = megatron_1_7b();
  with_other["recompute"] = "full";
  EXPECT_EQ(resolve_network("gpt", with_other).decoder.layers, 24);
  EXPECT_EQ(resolve_network("llama-7b", {{"recompute", "full"}}).id, "llama-7b");
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab"})
    EXPECT_NE(std::find(gpt_shape_keys().begin(), gpt_shape_keys().end(), key), gpt_shape_keys().end()) << key;
  EXPECT_EQ(gpt_shape_keys().size(), 6u);
}

TEST(Networks, GptShapeRefusesBadShapes) {
  auto refused = [](const std::string& id, const std::map<std::string, std::string>& o, const std::string& names) {
    try {
      (void)resolve_network(id, o);
      ADD_FAILURE() << id << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  };
  refused("gpt", {}, "layers, hidden, heads missing");
  refused("gpt", {{"layers", "24"}, {"heads", "24"}}, "hidden missing");
  refused("gpt", {{"hidden", "2304"}}, "layers, heads missing");
  try {
    (void)resolve_network("gpt");  // the id alone has no shape
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layers=24;hidden=2304;heads=24"), std::string::npos) << e.what();
  }
  auto with = [](const char* key, const char* value) {
    auto o = megatron_1_7b();
    o[key] = value;
    return o;
  };
  refused("gpt", with("layers", "0"), "layers=0");
  refused("gpt", with("layers", "-4"), "layers=-4");
  refused("gpt", with("layers", "2.5"), "layers=2.5");
  refused("gpt", with("layers", "abc"), "layers=abc");
  refused("gpt", with("layers", ""), "layers=");
  refused("gpt", with("layers", "5000"), "layers=5000 is not a whole number in [1, 1024]");
  refused("gpt", with("hidden", "1e4"), "hidden=1e4");
  refused("gpt", with("hidden", "99999999999999999999"), "hidden=99999999999999999999");
  refused("gpt", with("vocab", "0"), "vocab=0");
  refused("gpt", with("ffn", "-1"), "ffn=-1");
  refused("gpt", with("seq_len", "0"), "seq_len=0");
  refused("gpt", with("hidden", "2300"), "hidden=2300 does not split into heads=24");
  refused("gpt", with("kv_heads", "5"), "heads=24 does not split into kv_heads=5");
  refused("gpt", with("kv_heads", "48"), "heads=24 does not split into kv_heads=48");
  refused("gpt", with("heads", "4608"), "hidden=2304 does not split into heads=4608");
  // Shape keys belong to `gpt`: any other workload refuses them, naming the key.
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab"}) {
    refused("llama-7b", {{key, "8"}}, std::string("option ") + key);
    refused("decoder-7b", {{key, "8"}}, std::string("option ") + key);
    refused("resnet50", {{key, "8"}}, std::string("option ") + key);
  }
  // The unknown-workload message points at gpt.
  try {
    (void)network("gtp");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("or gpt with layers, hidden and heads"), std::string::npos) << e.what();
  }
}

// --- One rank's shard under Megatron-LM's tensor (tp) and pipeline (pp) parallelism ---------------------------

namespace {
NetworkOptions parallel(int tp, int stage_layers = 0, bool first = true, bool last = true, bool training = false,
                        std::int64_t seq = 128) {
  NetworkOptions o{1, DType::bf16, seq, true, training};
  o.tensor_parallel = tp;
  o.stage_layers = stage_layers;
  o.first_stage = first;
  o.last_stage = last;
  return o;
}
std::int64_t params_of(const std::string& id, const NetworkOptions& o) { return param_count(build_network(network(id), o)); }
// Megatron pads the vocabulary to a multiple of 128 x tp (make-vocab-size-divisible-by 128); tp = 1 keeps it.
std::int64_t megatron_vocab(std::int64_t v, std::int64_t tp) {
  if (tp == 1) return v;
  std::int64_t p = v;
  while (p % (128 * tp) != 0) ++p;
  return p;
}
// Replicated on every tensor-parallel rank: norms (scale, shift), the row-parallel projections' biases (attention
// output, MLP down; added after their all-reduce) and the learned position table.
std::int64_t replicated_params(const DecoderConfig& c) {
  const std::int64_t d = c.hidden, norm = c.norm_bias ? 2 * d : d;
  return c.layers * 2 * norm + norm + (c.linear_bias ? c.layers * 2 * d : 0) + (c.learned_positions ? c.seq_len * d : 0);
}
double block_matrix_flops(const Graph& g) {
  double f = 0;
  for (const auto& n : g.nodes())
    if (n.name.rfind("blocks.", 0) == 0) f += op_cost(g, n).matrix_flops;
  return f;
}
std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }
}  // namespace

TEST(Networks, TensorParallelShardSplitsMatricesHeadsAndVocabulary) {
  for (const char* id : {"llama2-7b", "gpt3-175b"}) {
    const DecoderConfig c = decoder_preset(id);
    const std::int64_t total = decoder_params(c), d = c.hidden;
    const std::int64_t tables = c.tied_embeddings ? 1 : 2;  // wte, and lm_head when untied
    const std::int64_t embeddings = tables * c.vocab * d, replicated = replicated_params(c);
    const std::int64_t split = total - replicated - embeddings;
    const Graph whole = build_network(network(id), parallel(1, 0, true, true, true, 256));
    const double whole_flops = graph_cost(whole).matrix_flops, whole_blocks = block_matrix_flops(whole);
    for (std::int64_t t : {2, 4, 8}) {
      const int tp = static_cast<int>(t);
      ASSERT_EQ(split % t, 0) << id << " tp " << t;
      const std::int64_t vp = megatron_vocab(c.vocab, t);
      EXPECT_EQ(vp % (128 * t), 0);
      EXPECT_EQ(tp_padded_vocab(c.vocab, tp), vp) << id << " tp " << t;
      EXPECT_EQ(params_of(id, parallel(tp)), split / t + replicated + tables * (vp / t) * d) << id << " tp " << t;
      const Graph g = build_network(network(id), parallel(tp));
      EXPECT_EQ(g.node(g.find("blocks.0/attn/q/weight")).shape, (Shape{d, d / t})) << id;
      EXPECT_EQ(g.node(g.find("blocks.0/attn/k/weight")).shape, (Shape{d, d / t})) << id;
      EXPECT_EQ(g.node(g.find("blocks.0/attn/out/weight")).shape, (Shape{d / t, d})) << id;
      EXPECT_EQ(g.node(g.find("blocks.0/mlp.up/weight")).shape, (Shape{d, c.ffn / t})) << id;
      EXPECT_EQ(g.node(g.find("blocks.0/mlp.down/weight")).shape, (Shape{c.ffn / t, d})) << id;
      EXPECT_EQ(g.node(g.find("blocks.0/norm_1/weight")).shape, (Shape{d})) << id;
      EXPECT_EQ(g.node(g.find("wte/weight")).shape, (Shape{vp / t, d})) << id;
      EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{128, vp / t})) << id;
      if (c.linear_bias) {
        EXPECT_EQ(g.node(g.find("blocks.0/attn/q/bias")).shape, (Shape{d / t})) << id;     // column-parallel: split
        EXPECT_EQ(g.node(g.find("blocks.0/mlp.down/bias")).shape, (Shape{d})) << id;       // row-parallel: whole
        EXPECT_EQ(g.node(g.find("wpe/weight")).shape, (Shape{c.seq_len, d})) << id;        // positions: whole
      }
      // A training step's GEMMs: the blocks' (projections, MLP, attention) divide exactly; with the padded
      // logits the whole step is within 1% of the whole model's over t.
      const Graph step = build_network(network(id), parallel(tp, 0, true, true, true, 256));
      EXPECT_NEAR(block_matrix_flops(step) * static_cast<double>(t) / whole_blocks, 1.0, 1e-12) << id << " tp " << t;
      const double ratio = graph_cost(step).matrix_flops * static_cast<double>(t) / whole_flops;
      EXPECT_NEAR(ratio, 1.0, 0.01) << id << " tp " << t;
      EXPECT_GE(ratio, 1.0) << id << " tp " << t;  // the padding only adds
    }
  }
  // The padding rule itself (GPT-2's 50257 words).
  EXPECT_EQ(tp_padded_vocab(50257, 1), 50257);
  EXPECT_EQ(tp_padded_vocab(50257, 2), 50432);
  EXPECT_EQ(tp_padded_vocab(50257, 8), 51200);
  EXPECT_EQ(tp_padded_vocab(32000, 2), 32000);
  EXPECT_EQ(tp_padded_vocab(32000, 8), 32768);
}

TEST(Networks, TensorParallelBeyondTheKvHeadsKeepsOneReplicatedKvHeadPerRank) {
  // Llama 3 8B: 32 query heads, 8 KV heads of 128. tp <= 8 splits the KV heads; tp 16 and 32 keep one per rank.
  const DecoderConfig c = decoder_preset("llama3-8b");
  const std::int64_t d = c.hidden, hd = 128;
  for (int tp : {1, 2, 4, 8, 16, 32}) {
    const Graph g = build_network(network("llama3-8b"), parallel(tp));
    const std::int64_t kv = std::max(8 / tp, 1);
    EXPECT_EQ(g.node(g.find("blocks.3/attn/q/weight")).shape, (Shape{d, 32 / tp * hd})) << tp;
    EXPECT_EQ(g.node(g.find("blocks.3/attn/k/weight")).shape, (Shape{d, kv * hd})) << tp;
    EXPECT_EQ(g.node(g.find("blocks.3/attn/v/weight")).shape, (Shape{d, kv * hd})) << tp;
    // Count: the KV projections are whole heads per rank, the rest splits as before.
    const std::int64_t kv_total = c.layers * 2 * d * 8 * hd, replicated = replicated_params(c);
    const std::int64_t vp = megatron_vocab(c.vocab, tp);
    const std::int64_t rest = decoder_params(c) - replicated - 2 * c.vocab * d - kv_total;
    EXPECT_EQ(param_count(g), rest / tp + replicated + 2 * (vp / tp) * d + c.layers * 2 * d * kv * hd) << tp;
  }
  // The explicit attention path repeats the rank's one KV head over its two query heads; a decode step's KV
  // cache holds the rank's heads only.
  NetworkOptions eager = parallel(16, 0, true, true, true);
  eager.flash_attention = false;
  const Graph e = build_network(network("llama3-8b"), eager);
  EXPECT_EQ(e.node(e.find("blocks.0/attn/k_repeat")).shape, (Shape{2, 128, hd}));
  NetworkOptions decode = parallel(16);
  decode.decode_context = 1000;
  const Graph dec = build_network(network("llama3-8b"), decode);
  EXPECT_EQ(dec.node(dec.find("blocks.0/attn/k_cache")).shape, (Shape{1, 1000, hd}));
  EXPECT_EQ(dec.node(dec.find("blocks.0/attn/q_heads")).shape, (Shape{2, 1, hd}));
  // KV heads that the ranks cannot share evenly are refused: 12 KV heads on 8 or 16 ranks.
  const NetworkInfo odd = resolve_network("gpt", {{"layers", "2"}, {"hidden", "768"}, {"heads", "48"}, {"kv_heads", "12"}});
  EXPECT_GT(param_count(build_network(odd, parallel(4))), 0);
  for (int tp : {8, 16}) {
    const std::string msg = error_of([&] { (void)build_network(odd, parallel(tp)); });
    EXPECT_NE(msg.find(fmt::format("tensor_parallel {} does not fit the 12 KV heads", tp)), std::string::npos) << msg;
  }
}

TEST(Networks, PipelineStagesSplitTheBlocksAndTheEnds) {
  // Llama 2 7B (untied) on 4 stages of 8 blocks: the stages together hold the model exactly once.
  const DecoderConfig c = decoder_preset("llama2-7b");
  const std::int64_t d = c.hidden, total = decoder_params(c);
  const int per = c.layers / 4;
  const Graph first = build_network(network("llama2-7b"), parallel(1, per, true, false));
  const Graph middle = build_network(network("llama2-7b"), parallel(1, per, false, false));
  const Graph last = build_network(network("llama2-7b"), parallel(1, per, false, true));
  EXPECT_EQ(param_count(first) + 2 * param_count(middle) + param_count(last), total);
  // First: the embedding and blocks 0..7, no head; its output is the block stack's.
  EXPECT_NE(first.find("wte/weight"), kNone);
  EXPECT_NE(first.find("tokens"), kNone);
  EXPECT_EQ(first.find("lm_head/weight"), kNone);
  EXPECT_EQ(first.find("norm_f/weight"), kNone);
  EXPECT_EQ(first.find("stage_input"), kNone);
  EXPECT_NE(first.find("blocks.7/mlp.down/weight"), kNone);
  EXPECT_EQ(first.find("blocks.8/attn/q/weight"), kNone);
  EXPECT_EQ(first.output("logits"), kNone);
  EXPECT_EQ(first.output("loss"), kNone);  // inference: no loss on a stage that is not the last
  EXPECT_EQ(first.output("stage_output"), first.find("blocks.7/mlp_residual"));
  EXPECT_EQ(first.node(first.output("stage_output")).shape, (Shape{128, d}));
  EXPECT_EQ(param_count(first), c.vocab * d + per * (decoder_params(c) - 2 * c.vocab * d - d) / c.layers);
  // Middle: neither end; its input is the previous stage's activations.
  EXPECT_EQ(middle.find("wte/weight"), kNone);
  EXPECT_EQ(middle.find("lm_head/weight"), kNone);
  EXPECT_EQ(middle.find("norm_f/weight"), kNone);
  EXPECT_EQ(middle.find("tokens"), kNone);
  EXPECT_EQ(middle.node(middle.find("stage_input")).shape, (Shape{1, 128, d}));
  EXPECT_EQ(middle.node(middle.find("stage_input")).op, OpKind::input);
  EXPECT_EQ(count(middle, OpKind::softmax_xent), 0);
  EXPECT_EQ(count(middle, OpKind::embedding), 0);
  EXPECT_EQ(count(middle, OpKind::attention), per);
  // Last: the final norm, the logits and the loss.
  EXPECT_EQ(last.find("wte/weight"), kNone);
  EXPECT_NE(last.find("lm_head/weight"), kNone);
  EXPECT_NE(last.find("norm_f/weight"), kNone);
  EXPECT_NE(last.output("logits"), kNone);
  EXPECT_EQ(last.node(last.output("loss")).op, OpKind::softmax_xent);
  EXPECT_EQ(last.output("stage_output"), kNone);
  EXPECT_EQ(count(last, OpKind::embedding), 0);
  // One stage holding every block at both ends is the whole model, node for node.
  const Graph whole = build_network(network("llama2-7b"), parallel(1, 0, true, true, true));
  const Graph one = build_network(network("llama2-7b"), parallel(1, c.layers, true, true, true));
  EXPECT_EQ(one.size(), whole.size());
  EXPECT_EQ(graph_cost(one).bytes, graph_cost(whole).bytes);
  EXPECT_EQ(graph_cost(one).matrix_flops, graph_cost(whole).matrix_flops);
  EXPECT_EQ(param_count(one), total);

  // GPT-3 175B (tied head, learned positions) on 8 stages of 12: the last stage keeps its own copy of the word
  // embedding for the logits, as Megatron does, so the stages hold vocab x hidden more than the model.
  const DecoderConfig g3 = decoder_preset("gpt3-175b");
  const int per3 = g3.layers / 8;
  std::int64_t sum = 0;
  for (int s = 0; s < 8; ++s) sum += params_of("gpt3-175b", parallel(1, per3, s == 0, s == 7));
  EXPECT_EQ(sum, decoder_params(g3) + g3.vocab * g3.hidden);
  const Graph l3 = build_network(network("gpt3-175b"), parallel(1, per3, false, true));
  EXPECT_EQ(l3.node(l3.find("wte/weight")).shape, (Shape{g3.vocab, g3.hidden}));
  EXPECT_EQ(l3.find("wpe/weight"), kNone);  // positions only on the first stage
  EXPECT_EQ(l3.find("tokens"), kNone);
  const Graph f3 = build_network(network("gpt3-175b"), parallel(1, per3, true, false));
  EXPECT_NE(f3.find("wpe/weight"), kNone);
  EXPECT_EQ(f3.find("norm_f/weight"), kNone);
  // Uneven splits are a stage's business: 5 + 27 blocks of Llama 2 7B still sum to the model.
  EXPECT_EQ(params_of("llama2-7b", parallel(1, 5, true, false)) + params_of("llama2-7b", parallel(1, 27, false, true)),
            total);
}

TEST(Networks, TensorAndPipelineParallelCompose) {
  // A stage of a tp shard: the stages of one tensor-parallel rank sum to that rank's whole shard (plus the
  // tied table's second copy, itself split tp ways).
  for (int tp : {2, 8}) {
    const std::int64_t shard = params_of("llama2-7b", parallel(tp));
    std::int64_t sum = 0;
    for (int s = 0; s < 4; ++s) sum += params_of("llama2-7b", parallel(tp, 8, s == 0, s == 3));
    EXPECT_EQ(sum, shard) << tp;
    const DecoderConfig g3 = decoder_preset("gpt3-175b");
    const std::int64_t shard3 = params_of("gpt3-175b", parallel(tp));
    std::int64_t sum3 = 0;
    for (int s = 0; s < 8; ++s) sum3 += params_of("gpt3-175b", parallel(tp, 12, s == 0, s == 7));
    EXPECT_EQ(sum3, shard3 + megatron_vocab(g3.vocab, tp) / tp * g3.hidden) << tp;
  }
  const Graph g = build_network(network("gpt3-175b"), parallel(8, 12, false, false, true));
  EXPECT_EQ(g.node(g.find("blocks.11/attn/q/weight")).shape, (Shape{12288, 1536}));
  EXPECT_EQ(g.node(g.find("blocks.11/mlp.up/weight")).shape, (Shape{12288, 6144}));
  EXPECT_EQ(g.node(g.find("stage_input")).shape, (Shape{1, 128, 12288}));  // the residual stream is whole
  EXPECT_EQ(g.find("blocks.12/attn/q/weight"), kNone);
  // Its blocks' GEMMs are 12/96 of the whole model's over 8.
  const Graph whole = build_network(network("gpt3-175b"), parallel(1, 0, true, true, true));
  EXPECT_NEAR(block_matrix_flops(g) * 8 * 8 / block_matrix_flops(whole), 1.0, 1e-12);
}

TEST(Networks, MiddleStageTrainsEveryParamFromTheNextStagesGradient) {
  const NetworkOptions o = parallel(2, 3, false, false, true);
  const Graph g = build_network(network("llama2-7b"), o);
  // One Adam update per param, and every param of every block has one.
  std::map<NodeId, int> updates;
  for (const auto& n : g.nodes())
    if (n.op == OpKind::adam_update) ++updates[n.inputs[0]];
  int params = 0;
  for (const auto& n : g.nodes())
    if (n.op == OpKind::param) {
      ++params;
      EXPECT_TRUE(n.trainable) << n.name;
      EXPECT_EQ(updates[n.id], 1) << n.name;
    }
  EXPECT_EQ(params, 3 * 9);  // per block: 2 norms, q, k, v, out, gate, up, down
  EXPECT_EQ(count(g, OpKind::adam_update), params);
  EXPECT_NE(g.find("blocks.0/attn/q/weight/adam"), kNone);  // the backward pass reaches the stage's first block
  // The seed: dL/d(output) arrives as an input; the surrogate loss <output, output_grad> is a scalar whose
  // gradient with respect to the output is that input (no other path to it: the data gets no gradient).
  const NodeId dy = g.find("stage_output_grad");
  ASSERT_NE(dy, kNone);
  EXPECT_EQ(g.node(dy).op, OpKind::input);
  EXPECT_EQ(g.node(dy).shape, (Shape{128, 4096}));
  EXPECT_EQ(g.node(dy).dtype, DType::bf16);
  const NodeId loss = g.output("loss");
  EXPECT_TRUE(g.node(loss).shape.empty());
  EXPECT_EQ(g.output("stage_output"), g.find("blocks.2/mlp_residual"));
  const NodeId seed = g.find("stage_loss/dot/grad/a");
  ASSERT_NE(seed, kNone);
  EXPECT_EQ(g.node(g.node(seed).inputs[1]).inputs[0], dy);  // dy's column view, transposed: dy itself
  EXPECT_EQ(g.find("stage_loss/dot/grad/b"), kNone);
  // Everything of the forward pass comes before the loss (the boundary the performance model reads), everything
  // of the backward pass after it.
  for (const auto& n : g.nodes()) {
    if (n.name.find("/grad") != std::string::npos || n.op == OpKind::adam_update) {
      EXPECT_GT(n.id, loss) << n.name;
    }
  }

  // The seed's price is negligible beside one block's: a block is the difference of 2 and 1 blocks.
  auto step_cost = [](int blocks) { return graph_cost(build_network(network("llama2-7b"), parallel(1, blocks, false, false, true, 2048))); };
  const OpCost one = step_cost(1), two = step_cost(2);
  const Graph s = build_network(network("llama2-7b"), parallel(1, 1, false, false, true, 2048));
  OpCost seeding;
  for (const auto& n : s.nodes())
    if (n.name.rfind("stage_loss", 0) == 0 || n.name.rfind("loss", 0) == 0) seeding += op_cost(s, n);
  const double block_flops = two.matrix_flops - one.matrix_flops, block_bytes = two.bytes - one.bytes;
  EXPECT_GT(seeding.bytes, 0.0);
  EXPECT_LT(seeding.matrix_flops, 1e-4 * block_flops);  // 2 x 2 x tokens x hidden vs ~72 x tokens x hidden^2
  EXPECT_LT(seeding.vector_flops, 1e-4 * (two.vector_flops - one.vector_flops));
  EXPECT_LT(seeding.bytes, 0.05 * block_bytes);  // 4 x tokens x hidden elements
  EXPECT_EQ(seeding.bytes, (4.0 * 2048 * 4096 + 3) * 2);

  // Inference: no seed, no loss.
  const Graph inf = build_network(network("llama2-7b"), parallel(2, 3, false, false, false));
  EXPECT_EQ(inf.find("stage_output_grad"), kNone);
  EXPECT_EQ(inf.output("loss"), kNone);
  // The last stage's loss is the ordinary one; the first stage updates its (vocab-parallel) embedding too.
  const Graph first = build_network(network("llama2-7b"), parallel(2, 3, true, false, true));
  EXPECT_NE(first.find("wte/weight/adam"), kNone);
  EXPECT_EQ(count(first, OpKind::adam_update), 3 * 9 + 1);
  const Graph last = build_network(network("llama2-7b"), parallel(2, 3, false, true, true));
  EXPECT_EQ(count(last, OpKind::adam_update), 3 * 9 + 2);
  EXPECT_EQ(last.find("stage_output_grad"), kNone);
}

TEST(Networks, ParallelOptionsOutOfRangeOrOnOtherBuildersAreInputErrors) {
  const NetworkInfo& llama = network("llama2-7b");
  auto refused = [](const NetworkInfo& net, const NetworkOptions& o, const std::string& names) {
    const std::string msg = error_of([&] { (void)build_network(net, o); });
    EXPECT_NE(msg.find(names), std::string::npos) << net.id << ": " << msg;
  };
  refused(llama, parallel(0), "tensor_parallel 0 is outside [1, 512]");
  refused(llama, parallel(-2), "tensor_parallel -2 is outside [1, 512]");
  refused(llama, parallel(513), "tensor_parallel 513 is outside [1, 512]");
  refused(llama, parallel(1, -1), "stage_layers -1 is outside [0, 32]");
  refused(llama, parallel(1, 33), "stage_layers 33 is outside [0, 32]");
  refused(llama, parallel(3), "tensor_parallel 3 does not split the 32 attention heads");
  refused(llama, parallel(64), "tensor_parallel 64 does not split the 32 attention heads");
  refused(llama, parallel(1, 0, false, true), "first_stage false");
  refused(llama, parallel(1, 0, true, false), "last_stage false");
  const NetworkInfo odd_ffn = resolve_network("gpt", {{"layers", "2"}, {"hidden", "768"}, {"heads", "12"}, {"ffn", "3001"}});
  refused(odd_ffn, parallel(2), "tensor_parallel 2 does not split the MLP inner size 3001");
  EXPECT_NO_THROW(build_network(llama, parallel(512 / 16, 32)));  // 32 ranks, the whole stack
  // Every builder but the decoders' builds the whole model only: InputError naming the option.
  for (const char* id : {"resnet50", "vgg16", "bert-base", "sd15-unet"}) {
    refused(network(id), parallel(2), "tensor_parallel 2 is for decoders only");
    refused(network(id), parallel(1, 4), "stage_layers 4 is for decoders only");
    refused(network(id), parallel(1, 0, false, true), "first_stage false is for decoders only");
    refused(network(id), parallel(1, 0, true, false), "last_stage false is for decoders only");
    EXPECT_NO_THROW(build_network(network(id), parallel(1)));
  }
  NetworkOptions bert = parallel(4);
  EXPECT_THROW(build_bert(bert, 2, 128, 2), InputError);  // the builder itself, not only the registry
}

// Hugging Face config.json files (tests/data/hf, with their sources in its README): the reader builds each
// model with its published parameter count, says what it approximated, and refuses what it cannot build.
TEST(HfConfig, RealConfigsBuildTheirPublishedParameterCounts) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/hf/";
  for (const auto& [folder, params, family] : std::vector<std::tuple<std::string, std::int64_t, models::Family>>{
           {"llama-2-7b", 6738415616, models::Family::decoder},
           {"meta-llama-3-8b", 8030261248, models::Family::decoder},
           {"mistral-7b-v0.1", 7241732096, models::Family::decoder},
           {"mixtral-8x7b-v0.1", 46702792704, models::Family::decoder},
           {"qwen2-7b", 7615616512, models::Family::decoder},
           {"gemma-7b", 8537680896, models::Family::decoder},
           {"gpt2", 124439808, models::Family::decoder},
           {"pythia-410m", 405334016, models::Family::decoder},
           {"bert-base-uncased", 109482240, models::Family::encoder},
           {"bert-large-uncased-squad", 334094338, models::Family::encoder}}) {
    const NetworkInfo net = resolve_network(dir + folder + "/config.json");
    EXPECT_EQ(net.family, family) << folder;
    EXPECT_EQ(param_count(build_network(net, {1, DType::bf16, 16, true, false})), params) << folder;
    if (family == models::Family::decoder) {
      EXPECT_EQ(decoder_params(net.decoder), params) << folder;
    }
  }
  // The approximations are said, not hidden.
  EXPECT_NE(resolve_network(dir + "mistral-7b-v0.1/config.json").description.find("sliding-window attention"), std::string::npos);
  EXPECT_NE(resolve_network(dir + "qwen2-7b/config.json").description.find("131072 positions: priced at 8192"), std::string::npos);
  // Gemma's heads are 256 wide over a 3072 residual stream; Qwen2 has Q/K/V biases only.
  EXPECT_EQ(resolve_network(dir + "gemma-7b/config.json").decoder.head_size(), 256);
  EXPECT_TRUE(resolve_network(dir + "qwen2-7b/config.json").decoder.qkv_bias);
  // The window a served request may fill: the config's positions, and the presets' agree with the configs.
  EXPECT_EQ(resolve_network(dir + "qwen2-7b/config.json").decoder.max_positions, 131072);
  EXPECT_EQ(resolve_network(dir + "gpt2/config.json").decoder.max_positions, 1024);
  EXPECT_EQ(resolve_network(dir + "pythia-410m/config.json").decoder.max_positions, 2048);
  for (const auto& [folder, preset] : std::vector<std::pair<std::string, std::string>>{
           {"llama-2-7b", "llama2-7b"}, {"meta-llama-3-8b", "llama3-8b"}, {"mistral-7b-v0.1", "mistral-7b"},
           {"mixtral-8x7b-v0.1", "mixtral-8x7b"}, {"gpt2", "gpt2-124m"}})
    EXPECT_EQ(resolve_network(dir + folder + "/config.json").decoder.max_positions, decoder_preset(preset).max_positions) << folder;
  EXPECT_EQ(decoder_preset("llama3.1-405b").max_positions, 131072);
  EXPECT_EQ(decoder_preset("decoder-7b").max_positions, 0);  // built to size: no window is known
}

TEST(HfConfig, AQuantizedCheckpointSaysWhichWeightsItHolds) {
  // transformers writes a quantized checkpoint's method into config.json (quantization_config): AWQ and GPTQ at 4 bits
  // with their group size, FP8. Serving prices those weights; any other method or width is refused by name, never
  // priced as the 16-bit model.
  const std::string base = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100)";
  const auto with = [&](const std::string& q) { return base + ", \"quantization_config\": " + q + "}"; };
  EXPECT_FALSE(hf_network(base + "}", "c.json").quantized);
  const NetworkInfo awq = hf_network(with(R"({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": true, "version": "gemm"})"), "c.json");
  ASSERT_TRUE(awq.quantized);
  EXPECT_EQ(awq.quantized->format, "int4-awq");
  EXPECT_EQ(awq.quantized->group_size, 64);
  const NetworkInfo gptq = hf_network(with(R"({"quant_method": "gptq", "bits": 4, "desc_act": false})"), "c.json");
  ASSERT_TRUE(gptq.quantized);
  EXPECT_EQ(gptq.quantized->format, "int4-gptq");
  EXPECT_EQ(gptq.quantized->group_size, 128);  // GPTQConfig's default
  const NetworkInfo fp8 = hf_network(with(R"({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0})"), "c.json");
  ASSERT_TRUE(fp8.quantized);
  EXPECT_EQ(fp8.quantized->format, "fp8");
  EXPECT_EQ(fp8.quantized->group_size, 0);
  test::expect_refused({{with(R"({"quant_method": "gptq", "bits": 8, "group_size": 128})"), "c.json: $.quantization_config.bits: 8-bit gptq weights are not priced"},
                        {with(R"({"quant_method": "bitsandbytes", "load_in_4bit": true})"), "$.quantization_config.quant_method: 'bitsandbytes' is not priced"},
                        {with(R"({"quant_method": "awq", "bits": 4, "group_size": -1})"), "$.quantization_config.group_size: -1: one scale per output channel"},
                        {with(R"({"quant_method": "awq", "bits": 4, "group_size": 96})"), "$.quantization_config.group_size: 96: expected a power of two"},
                        {with(R"({"bits": 4})"), "$.quantization_config.quant_method: missing"},
                        {with(R"({"quant_method": "awq"})"), "$.quantization_config.bits: missing"},
                        {with("[]"), "$.quantization_config: must be an object"}},
                       [](const std::string& text) { hf_network(text, "c.json"); });
}

TEST(HfConfig, BadConfigsNameTheFileAndTheKey) {
  const std::string good = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100})";
  EXPECT_EQ(hf_network(good, "c.json").decoder.kv_heads, 2);
  auto with = [&](const std::string& from, const std::string& to) { return test::replaced(good, from, to); };
  const auto sub = test::replaced;
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {"{\"architectures\": [", "c.json: malformed JSON at byte"},
           {"[1, 2]", "c.json: $: a config must be a JSON object"},
           {"{\"model_type\": \"llama\"}", "c.json: $.architectures: missing"},
           {with("LlamaForCausalLM", "T5ForConditionalGeneration"), "c.json: $.architectures[0]: 'T5ForConditionalGeneration' is not read"},
           {with("\"hidden_size\": 64,", ""), "c.json: $.hidden_size: missing"},
           {with("\"hidden_size\": 64", "\"hidden_size\": \"64\""), "c.json: $.hidden_size: must be an integer"},
           {with("\"hidden_size\": 64", "\"hidden_size\": -64"), "c.json: $.hidden_size: -64 is outside"},
           {with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"), "$.num_key_value_heads: 3 does not divide the 4 attention heads"},
           {with("\"num_attention_heads\": 4", "\"num_attention_heads\": 6, \"x\": 0"), "$.num_attention_heads: 6 does not divide hidden_size 64"},
           {with("\"vocab_size\": 100", "\"vocab_size\": 100, \"hidden_act\": \"relu\""), "$.hidden_act: activation 'relu' is not built"},
           {with("\"vocab_size\": 100", "\"vocab_size\": 100, \"num_local_experts\": 8"), "$.num_local_experts: experts in a LlamaForCausalLM config"},
           {with("\"vocab_size\": 100", "\"vocab_size\": 100, \"mlp_bias\": true"), "$.mlp_bias: MLP biases are not built"},
           {with("\"vocab_size\": 100", "\"vocab_size\": 100, \"tie_word_embeddings\": 1"), "$.tie_word_embeddings: must be true or false"},
           // Each size in range, the parameters together not: they overflowed 64 bits (UBSan), or passed 2^48.
           {R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 1048576, "num_hidden_layers": 4096, "num_attention_heads": 1,
               "intermediate_size": 1048576, "vocab_size": 1, "num_local_experts": 4096, "num_experts_per_tok": 1})",
            "c.json: a decoder of 4096 layers, width 1048576, FFN 1048576, 4096 experts: more than 2^62 parameters"},
           // Each size in range, the graph not: 16 M expert MLPs to build (a timeout; fuzz_model_json, 2026-12-02).
           {R"({"architectures":["MixtralForCausalLM"],"hidden_size":1,"num_hidden_layers":4096,"num_attention_heads":1,"intermediate_size":1,"vocab_size":1,"num_local_experts":4096,"num_experts_per_tok":1})",
            "c.json: $.num_local_experts: 4096 layers of 4096 experts are 16777216 expert MLPs, more than 16384 (each is built)"},
           {sub(sub(with("\"hidden_size\": 64", "\"hidden_size\": 1048576"), "\"intermediate_size\": 128", "\"intermediate_size\": 1048576"),
                "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 64"),
            "parameters, more than 2^48"}}) {
    try {
      hf_network(text, "c.json");
      ADD_FAILURE() << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // BERT's relative positions (a distance table per layer, a query-distance product per head) and cross-attention
  // were read as a plain encoder (found in review): refused by key.
  {
    const std::string bert = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/tests/data/hf/bert-base-uncased/config.json", "data");
    ASSERT_NE(bert.find("\"position_embedding_type\": \"absolute\""), std::string::npos);
    EXPECT_GT(param_count(build_network(hf_network(bert, "c.json"), {2, DType::f32, 16, false, false})), 0);
    for (const auto& [from, to, expect] : std::vector<std::array<std::string, 3>>{
             {"\"absolute\"", "\"relative_key_query\"", "c.json: $.position_embedding_type: 'relative_key_query' is not built (absolute is)"},
             {"\"absolute\"", "\"absolute\", \"add_cross_attention\": true", "c.json: $.add_cross_attention: cross-attention layers are not built"}}) {
      try {
        hf_network(sub(bert, from, to), "c.json");
        ADD_FAILURE() << to;
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      }
    }
  }
  // A head_dim equal to hidden / heads rounded down, where the heads do not split the width, is the config's own
  // head size (it was taken for the default, and the decoder then refused the width it could not split).
  {
    const std::string odd = sub(sub(with("\"hidden_size\": 64", "\"hidden_size\": 10, \"head_dim\": 3"), "\"num_attention_heads\": 4", "\"num_attention_heads\": 3"),
                                "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 1");
    const NetworkInfo n = hf_network(odd, "c.json");
    EXPECT_EQ(n.decoder.head_dim, 3);
    EXPECT_GT(param_count(build_network(n, {2, DType::f32, 16, false, false})), 0);
  }
  // Thousands of mutated real configs: each reads or fails with one line naming the file.
  for (const char* folder : {"meta-llama-3-8b", "mixtral-8x7b-v0.1", "gpt2", "pythia-410m", "bert-base-uncased", "gemma-7b"}) {
    const std::string text = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/tests/data/hf/" + folder + "/config.json", "data");
    EXPECT_GT(test::fuzz_parser(text, "{}[]\":,.-0123456789eEtruefalsnl _abcdhikmoprsvxy", 600, 41,
                                [](const std::string& t, const std::string& w) {
                                  const NetworkInfo n = hf_network(t, w);
                                  if (n.family == models::Family::decoder) (void)decoder_params(n.decoder);
                                }),
              0)
        << folder;
  }
}
