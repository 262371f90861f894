// The built-in networks against published figures: parameter counts and forward multiply-accumulates.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "graph/cost.hpp"
#include "graph/networks.hpp"

using namespace gpuvs;
using namespace gpuvs::graph;

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
