// SPDX-License-Identifier: Apache-2.0
// The Stable Diffusion 1.5 denoiser (diffusers UNet2DConditionModel as SD 1.5 configures it): 512x512
// images as 64x64x4 latents, channels (320, 640, 1280, 1280), two ResNet blocks per level, transformer
// blocks (8 heads, cross-attention to 77 CLIP tokens of 768) on the first three levels, GEGLU MLPs.
#include <fmt/format.h>

#include "models/networks.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {

struct UnetBuilder {
  Graph& g;
  DType dt;
  std::int64_t n;
  NodeId temb = kNone;     // [N, 1280] time embedding
  NodeId context = kNone;  // [N*77, 768] text embedding

  NodeId param(const std::string& name, Shape s) { return g.param(name, std::move(s), dt); }
  NodeId conv(const std::string& name, NodeId x, std::int64_t out, int k, int stride = 1) {
    const std::int64_t in = g.node(x).shape[1];
    return g.conv2d(name, x, param(name + "/weight", {out, in, k, k}), param(name + "/bias", {out}), stride, k / 2);
  }
  NodeId group_norm(const std::string& name, NodeId x) {
    const std::int64_t c = g.node(x).shape[1];
    return g.normalize(name, x, param(name + "/weight", {c}), param(name + "/bias", {c}), NormKind::group, 32);
  }
  NodeId layer_norm(const std::string& name, NodeId x) {
    const std::int64_t c = g.node(x).shape.back();
    return g.normalize(name, x, param(name + "/weight", {c}), param(name + "/bias", {c}), NormKind::layer);
  }
  NodeId linear(const std::string& name, NodeId x, std::int64_t out, bool bias) {
    const std::int64_t in = g.node(x).shape[1];
    return g.matmul(name, x, param(name + "/weight", {in, out}), bias ? param(name + "/bias", {out}) : kNone);
  }
  NodeId silu(const std::string& name, NodeId x) { return g.activation(name, x, Act::silu); }

  NodeId resnet(const std::string& p, NodeId x, std::int64_t out) {
    const std::int64_t in = g.node(x).shape[1];
    NodeId h = conv(p + "/conv1", silu(p + "/act1", group_norm(p + "/norm1", x)), out, 3);
    const NodeId t = linear(p + "/time_emb_proj", silu(p + "/time_act", temb), out, true);
    h = g.elementwise(p + "/add_time", EwFn::add_bcast, {h, t});
    h = conv(p + "/conv2", silu(p + "/act2", group_norm(p + "/norm2", h)), out, 3);
    const NodeId shortcut = in == out ? x : conv(p + "/conv_shortcut", x, out, 1);
    return g.add(p + "/residual", h, shortcut);
  }

  NodeId attention(const std::string& p, NodeId x, NodeId kv_source, std::int64_t tokens, std::int64_t kv_tokens,
                   std::int64_t c) {
    const int heads = 8;
    const std::int64_t hd = c / heads;
    const NodeId q = linear(p + "/to_q", x, c, false);
    const NodeId k = linear(p + "/to_k", kv_source, c, false);
    const NodeId v = linear(p + "/to_v", kv_source, c, false);
    const NodeId o = g.attention(p + "/attention", g.reshape(p + "/q_heads", q, {n * heads, tokens, hd}, true),
                                 g.reshape(p + "/k_heads", k, {n * heads, kv_tokens, hd}, true),
                                 g.reshape(p + "/v_heads", v, {n * heads, kv_tokens, hd}, true), false);
    return linear(p + "/to_out", g.reshape(p + "/merge_heads", o, {n * tokens, c}, true), c, true);
  }

  NodeId transformer(const std::string& p, NodeId x) {
    const auto s = g.node(x).shape;
    const std::int64_t c = s[1], hw = s[2] * s[3];
    NodeId h = conv(p + "/proj_in", group_norm(p + "/norm", x), c, 1);
    h = g.reshape(p + "/to_tokens", h, {n * hw, c}, true);  // NCHW -> (N*HW, C): a permute
    const NodeId n1 = layer_norm(p + "/norm1", h);  // self-attention: queries, keys and values from it
    h = g.add(p + "/attn1_residual", h, attention(p + "/attn1", n1, n1, hw, hw, c));
    h = g.add(p + "/attn2_residual", h, attention(p + "/attn2", layer_norm(p + "/norm2", h), context, hw, 77, c));
    const NodeId f = layer_norm(p + "/norm3", h);
    const NodeId gated = g.elementwise(p + "/ff.geglu", EwFn::geglu,
                                       {linear(p + "/ff.proj_gate", f, 4 * c, true), linear(p + "/ff.proj_value", f, 4 * c, true)});
    h = g.add(p + "/ff_residual", h, linear(p + "/ff.out", gated, c, true));
    h = g.reshape(p + "/to_image", h, s, true);
    return g.add(p + "/residual", conv(p + "/proj_out", h, c, 1), x);
  }
};

}  // namespace

Graph build_sd15_unet(const NetworkOptions& opt) {
  Graph g;
  UnetBuilder b{g, opt.dtype, opt.batch};
  const std::int64_t n = opt.batch;
  const NodeId latents = g.input("noisy_latents", {n, 4, 64, 64}, opt.dtype);
  const NodeId t_sin = g.input("timestep_sinusoid", {n, 320}, opt.dtype);
  b.context = g.input("text_embeddings", {n * 77, 768}, opt.dtype);
  b.temb = b.linear("time_embedding.linear_2", b.silu("time_embedding.act", b.linear("time_embedding.linear_1", t_sin, 1280, true)),
                    1280, true);
  NodeId x = b.conv("conv_in", latents, 320, 3);
  std::vector<NodeId> skips{x};
  const std::int64_t ch[4] = {320, 640, 1280, 1280};
  for (int level = 0; level < 4; ++level) {
    for (int i = 0; i < 2; ++i) {
      const std::string p = fmt::format("down_blocks.{}.{}", level, i);
      x = b.resnet(p + "/resnet", x, ch[level]);
      if (level < 3) x = b.transformer(p + "/transformer", x);
      skips.push_back(x);
    }
    if (level < 3) {
      x = b.conv(fmt::format("down_blocks.{}/downsample", level), x, ch[level], 3, 2);
      skips.push_back(x);
    }
  }
  x = b.resnet("mid_block/resnet_0", x, 1280);
  x = b.transformer("mid_block/transformer", x);
  x = b.resnet("mid_block/resnet_1", x, 1280);
  const std::int64_t up_ch[4] = {1280, 1280, 640, 320};
  for (int level = 0; level < 4; ++level) {
    for (int i = 0; i < 3; ++i) {
      const std::string p = fmt::format("up_blocks.{}.{}", level, i);
      const NodeId skip = skips.back();
      skips.pop_back();
      x = b.resnet(p + "/resnet", g.concat(p + "/concat_skip", {x, skip}, 1), up_ch[level]);
      if (level > 0) x = b.transformer(p + "/transformer", x);
    }
    if (level < 3)
      x = b.conv(fmt::format("up_blocks.{}/upsample", level), g.upsample2x(fmt::format("up_blocks.{}/nearest", level), x),
                 up_ch[level], 3);
  }
  x = b.conv("conv_out", b.silu("conv_act", b.group_norm("conv_norm_out", x)), 4, 3);
  g.set_output("noise_prediction", x);
  g.set_output("loss", g.mse_loss("loss", x, g.input("noise", {n, 4, 64, 64}, opt.dtype)));
  return g;
}

}  // namespace gpuvs::models
