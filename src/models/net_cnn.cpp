// SPDX-License-Identifier: Apache-2.0
// Convolutional networks as in torchvision: ResNet (v1.5, stride on the 3x3 conv) and VGG-16.
#include <fmt/format.h>

#include "models/networks.hpp"

namespace gpuvs::models {

using namespace gpuvs::ir;

namespace {

struct CnnBuilder {
  Graph& g;
  DType dt;
  bool training;

  NodeId conv(const std::string& name, NodeId x, std::int64_t out, int k, int stride, int pad, bool bias, Act act) {
    const std::int64_t in = g.node(x).shape[1];
    const NodeId w = g.param(name + "/weight", {out, in, k, k}, dt);
    const NodeId b = bias ? g.param(name + "/bias", {out}, dt) : kNone;
    return g.conv2d(name, x, w, b, stride, pad, 1, act);
  }
  NodeId batch_norm(const std::string& name, NodeId x) {
    const std::int64_t c = g.node(x).shape[1];
    return g.normalize(name, x, g.param(name + "/weight", {c}, dt), g.param(name + "/bias", {c}, dt), NormKind::batch);
  }
  NodeId relu(const std::string& name, NodeId x) { return g.activation(name, x, Act::relu); }
  NodeId linear(const std::string& name, NodeId x, std::int64_t out, Act act) {
    const std::int64_t in = g.node(x).shape[1];
    return g.matmul(name, x, g.param(name + "/weight", {in, out}, dt), g.param(name + "/bias", {out}, dt), act);
  }
  // Softmax cross-entropy over 1000 ImageNet classes; integer labels fed per step.
  void classify(NodeId logits, std::int64_t batch) {
    const NodeId labels = g.input("labels", {batch}, DType::i32);
    g.set_output("logits", logits);
    g.set_output("loss", g.softmax_xent("loss", logits, labels));
  }
};

}  // namespace

Graph build_resnet(const NetworkOptions& opt, const std::vector<int>& blocks) {
  Graph g;
  CnnBuilder b{g, opt.dtype, opt.training};
  const std::int64_t n = opt.batch;
  NodeId x = g.input("images", {n, 3, 224, 224}, opt.dtype);
  x = b.relu("relu", b.batch_norm("bn1", b.conv("conv1", x, 64, 7, 2, 3, false, Act::none)));
  x = g.pool2d("maxpool", x, PoolKind::max, Window{3, 3, 2, 2, 1, 1});
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t width = 64 << stage, out = width * 4;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = fmt::format("layer{}.{}", stage + 1, i);
      const int stride = (i == 0 && stage > 0) ? 2 : 1;
      NodeId h = b.relu(p + "/relu1", b.batch_norm(p + "/bn1", b.conv(p + "/conv1", x, width, 1, 1, 0, false, Act::none)));
      h = b.relu(p + "/relu2", b.batch_norm(p + "/bn2", b.conv(p + "/conv2", h, width, 3, stride, 1, false, Act::none)));
      h = b.batch_norm(p + "/bn3", b.conv(p + "/conv3", h, out, 1, 1, 0, false, Act::none));
      NodeId shortcut = x;
      if (i == 0)
        shortcut = b.batch_norm(p + "/downsample.1", b.conv(p + "/downsample.0", x, out, 1, stride, 0, false, Act::none));
      x = b.relu(p + "/relu3", g.add(p + "/add", h, shortcut));
    }
  }
  const auto& s = g.node(x).shape;
  x = g.pool2d("avgpool", x, PoolKind::avg, Window{static_cast<int>(s[2]), static_cast<int>(s[3]), 1, 1, 0, 0});
  x = g.reshape("flatten", x, {n, g.node(x).shape[1]});
  b.classify(b.linear("fc", x, 1000, Act::none), n);
  return g;
}

Graph build_vgg16(const NetworkOptions& opt) {
  Graph g;
  CnnBuilder b{g, opt.dtype, opt.training};
  const std::int64_t n = opt.batch;
  NodeId x = g.input("images", {n, 3, 224, 224}, opt.dtype);
  const std::vector<int> cfg = {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  int idx = 0;
  for (int c : cfg) {
    const std::string name = fmt::format("features.{}", idx++);
    x = c == 0 ? g.pool2d(name, x, PoolKind::max, Window{2, 2, 2, 2, 0, 0}) : b.conv(name, x, c, 3, 1, 1, true, Act::relu);
  }
  x = g.reshape("flatten", x, {n, numel(g.node(x).shape) / n});
  x = b.linear("classifier.0", x, 4096, Act::relu);
  if (opt.training) x = g.dropout("classifier.2", x, 0.5);
  x = b.linear("classifier.3", x, 4096, Act::relu);
  if (opt.training) x = g.dropout("classifier.5", x, 0.5);
  b.classify(b.linear("classifier.6", x, 1000, Act::none), n);
  return g;
}

}  // namespace gpuvs::models
