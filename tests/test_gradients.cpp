// SPDX-License-Identifier: Apache-2.0
// Every differentiable op's gradient, and the whole seed model's, against central finite differences in
// float64: L = sum(seed * output), dL/dp from autodiff vs (L(p + h) - L(p - h)) / 2h.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>

#include <functional>
#include <map>

#include "core/rng.hpp"
#include "engine/executor.hpp"
#include "ir/autodiff.hpp"
#include "model_cases.hpp"
#include "models/builder.hpp"

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::engine;

namespace {

struct Case {
  Graph g;
  NodeId out = kNone;
  std::vector<NodeId> params;   // trainable: gradients checked
  std::vector<NodeId> frozen;   // non-trainable params: random values, no gradient expected
  std::vector<std::pair<NodeId, std::vector<std::int32_t>>> int_inputs;
  std::vector<std::pair<NodeId, std::vector<double>>> double_inputs;
};

void check_gradients(Case& c, const std::string& label) {
  const NodeId seed = c.g.input("seed", c.g.node(c.out).shape, DType::f64);
  const auto grads = append_gradients(c.g, c.out, seed);
  ParamStore store;
  std::uint64_t stream = 1;
  std::vector<NodeId> all = c.params;
  all.insert(all.end(), c.frozen.begin(), c.frozen.end());
  for (NodeId p : all) {
    const Node& n = c.g.node(p);
    HostTensor& t = store.ensure(n.name, n.shape, DType::f64);
    const CounterRng rng(2024, stream++);
    for (std::size_t i = 0; i < static_cast<std::size_t>(numel(n.shape)); ++i) t.as<double>()[i] = rng.normal(i);
  }
  auto ex = make_cpu_executor(c.g, store, {});
  const CounterRng srng(77, 0);
  auto* s = static_cast<double*>(ex->input("seed"));
  const auto seed_n = static_cast<std::size_t>(numel(c.g.node(seed).shape));
  for (std::size_t i = 0; i < seed_n; ++i) s[i] = srng.normal(i);
  for (auto& [id, values] : c.int_inputs) {
    auto* dst = static_cast<std::int32_t*>(ex->input(c.g.node(id).name));
    std::copy(values.begin(), values.end(), dst);
  }
  for (auto& [id, values] : c.double_inputs) {
    auto* dst = static_cast<double*>(ex->input(c.g.node(id).name));
    std::copy(values.begin(), values.end(), dst);
  }
  const StepContext ctx{11, 3};
  auto objective = [&] {
    ex->run(ctx);
    const auto out = ex->read(c.out);
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * s[i];
    return l;
  };
  objective();
  for (NodeId p : c.frozen) EXPECT_FALSE(grads.count(p)) << label << ": frozen " << c.g.node(p).name << " got a gradient";
  std::map<NodeId, std::vector<double>> analytic;
  for (NodeId p : c.params) {
    ASSERT_TRUE(grads.count(p)) << label << ": no gradient for " << c.g.node(p).name;
    analytic[p] = ex->read(grads.at(p));
  }
  const double h = 1e-6;
  for (NodeId p : c.params) {
    HostTensor& t = store.get(c.g.node(p).name);
    const auto count = static_cast<std::size_t>(numel(t.shape));
    const std::size_t stride = count > 40 ? count / 40 + 1 : 1;  // up to ~40 probes per tensor
    for (std::size_t i = 0; i < count; i += stride) {
      double& v = t.as<double>()[i];
      const double orig = v;
      v = orig + h;
      const double up = objective();
      v = orig - h;
      const double down = objective();
      v = orig;
      const double numeric = (up - down) / (2 * h);
      const double a = analytic[p][i];
      EXPECT_NEAR(a, numeric, 1e-6 * std::max(1.0, std::fabs(numeric)))
          << label << ": d/d " << c.g.node(p).name << "[" << i << "]";
    }
  }
}

}  // namespace

TEST(Gradients, MatmulEveryLayoutBiasAndFusedActivation) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bias : {false, true})
        for (Act act : {Act::none, Act::relu, Act::tanh, Act::sigmoid}) {
          Case c;
          const std::int64_t m = 5, n = 4, k = 6;
          const auto a = c.g.param("a", ta ? Shape{k, m} : Shape{m, k}, DType::f64);
          const auto b = c.g.param("b", tb ? Shape{n, k} : Shape{k, n}, DType::f64);
          const auto bi = bias ? c.g.param("bias", {n}, DType::f64) : kNone;
          c.out = c.g.matmul("out", a, b, bi, act, ta, tb);
          c.params = {a, b};
          if (bias) c.params.push_back(bi);
          check_gradients(c, fmt::format("matmul ta={} tb={} bias={} act={}", ta, tb, bias, act_name(act)));
        }
}

TEST(Gradients, Activations) {
  for (Act act : {Act::relu, Act::gelu, Act::tanh, Act::sigmoid, Act::silu}) {
    Case c;
    const auto x = c.g.param("x", {7, 3}, DType::f64);
    c.out = c.g.activation("out", x, act);
    c.params = {x};
    check_gradients(c, std::string(act_name(act)));
  }
}

TEST(Gradients, Dropout) {
  Case c;
  const auto x = c.g.param("x", {9, 8}, DType::f64);
  c.out = c.g.dropout("out", x, 0.3);
  c.params = {x};
  check_gradients(c, "dropout");
}

TEST(Gradients, SoftmaxCrossEntropy) {
  Case c;
  const auto logits = c.g.param("logits", {6, 5}, DType::f64);
  const auto labels = c.g.input("labels", {6}, DType::i32);
  c.out = c.g.softmax_xent("out", logits, labels);
  c.params = {logits};
  c.int_inputs = {{labels, {0, 4, 2, 2, 1, 3}}};
  check_gradients(c, "softmax_xent");
}

TEST(Gradients, AddAndFanOut) {
  Case c;
  const auto a = c.g.param("a", {3, 4}, DType::f64);
  const auto b = c.g.param("b", {3, 4}, DType::f64);
  const auto s = c.g.add("s", a, b);
  c.out = c.g.add("out", s, a);  // a is used twice: gradients must accumulate
  c.params = {a, b};
  check_gradients(c, "add");
}

TEST(Gradients, WholeSeedShapedModel) {
  // Dense(5, relu) -> Dropout(0.2) -> Dense(3) -> softmax cross-entropy, composed by autodiff. The data
  // is a frozen (non-trainable) param with random values: it must get no gradient.
  Case c;
  const auto x = c.g.param("x", {4, 7}, DType::f64, /*trainable=*/false);
  const auto labels = c.g.input("labels", {4}, DType::i32);
  const auto w1 = c.g.param("w1", {7, 5}, DType::f64);
  const auto b1 = c.g.param("b1", {5}, DType::f64);
  const auto h = c.g.matmul("h", x, w1, b1, Act::relu);
  const auto d = c.g.dropout("d", h, 0.2);
  const auto w2 = c.g.param("w2", {5, 3}, DType::f64);
  const auto b2 = c.g.param("b2", {3}, DType::f64);
  c.out = c.g.softmax_xent("loss", c.g.matmul("logits", d, w2, b2), labels);
  c.frozen = {x};
  c.params = {w1, b1, w2, b2};
  c.int_inputs = {{labels, {2, 0, 1, 2}}};
  check_gradients(c, "seed-shaped model");
}

// The model case list every backend runs (model_cases.hpp), as the builder makes it: the forward pass with
// dropout and the loss, differentiated by autodiff, against finite differences of the loss.
TEST(Gradients, EveryModelCaseAgainstFiniteDifferences) {
  for (const auto& mc : test::model_cases()) {
    const std::int64_t batch = 5;
    Case c;
    c.g = models::build_graph(mc.spec, {batch, DType::f64, models::Mode::train, /*append_step=*/false});
    c.out = c.g.output("loss");
    ASSERT_NE(c.out, kNone) << mc.name;
    for (const auto& n : c.g.nodes())
      if (n.op == OpKind::param && n.trainable) c.params.push_back(n.id);
    const CounterRng rng(31, 7);
    std::vector<double> x(static_cast<std::size_t>(batch * mc.spec.input_dim));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng.normal(i);
    std::vector<std::int32_t> labels;
    for (std::int64_t r = 0; r < batch; ++r) labels.push_back(static_cast<std::int32_t>((r * 7 + 1) % mc.spec.num_classes()));
    c.double_inputs = {{c.g.find("x"), x}};
    c.int_inputs = {{c.g.find("labels"), labels}};
    check_gradients(c, "model case " + mc.name);
  }
}
