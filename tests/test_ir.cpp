// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "ir/autodiff.hpp"
#include "ir/conv_window.hpp"
#include "ir/cost.hpp"
#include "models/builder.hpp"
#include "models/networks.hpp"
#include "models/sequential_presets.hpp"

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {
int count_op(const Graph& g, OpKind k) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == k;
  return n;
}
}  // namespace

TEST(Ir, ShapesAndChecks) {
  Graph g;
  const auto a = g.input("a", {4, 3}, DType::f32);
  const auto b = g.param("b", {3, 5}, DType::f32);
  const auto bias = g.param("bias", {5}, DType::f32);
  const auto c = g.matmul("c", a, b, bias, Act::relu);
  EXPECT_EQ(g.node(c).shape, (Shape{4, 5}));
  const auto bt = g.param("bt", {5, 3}, DType::f32);
  EXPECT_EQ(g.node(g.matmul("d", a, bt, kNone, Act::none, false, true)).shape, (Shape{4, 5}));
  const auto at = g.input("at", {3, 4}, DType::f32);
  EXPECT_EQ(g.node(g.matmul("e", at, b, kNone, Act::none, true, false)).shape, (Shape{4, 5}));
  EXPECT_THROW(g.matmul("bad", a, a), std::invalid_argument);                 // inner dims 3 vs 4
  EXPECT_THROW(g.matmul("gelu", a, b, kNone, Act::gelu), std::invalid_argument);  // gelu is never fused
  EXPECT_THROW(g.dropout("drop", a, 1.0), std::invalid_argument);
  EXPECT_THROW(g.input("a", {1}, DType::f32), std::invalid_argument);         // duplicate name
  EXPECT_EQ(g.find("c"), c);
  EXPECT_EQ(g.find("nope"), kNone);
}

TEST(Ir, MixedPrecisionTrainsTheLossInFp32AndSendsA16BitGradientBack) {
  // 16-bit logits are cast to FP32 before the fused cross-entropy (autocast's cross_entropy, .float() in Hugging Face's
  // and Megatron's heads); the cast's gradient goes back in the logits' own type. FP32 logits go straight in.
  Graph g;
  const NodeId x = g.input("x", {4, 8}, DType::bf16);
  const NodeId w = g.param("w", {8, 10}, DType::bf16);
  const NodeId logits = g.matmul("logits", x, w);
  const NodeId loss = g.softmax_xent_fp32("loss", logits, g.input("labels", {4}, DType::i32));
  g.set_output("loss", loss);
  const NodeId cast = g.node(loss).inputs[0];  // an id, not a reference: the training step grows the node list
  ASSERT_EQ(g.node(cast).fn, EwFn::cast);
  EXPECT_EQ(g.node(cast).dtype, DType::f32);
  EXPECT_EQ(g.node(cast).name, "loss/fp32");
  append_training_step(g, {});
  bool cast_grad = false;
  for (const Node& n : g.nodes())
    if (n.op == OpKind::elementwise && n.fn == EwFn::grad && n.ref == cast) {
      cast_grad = true;
      EXPECT_EQ(n.dtype, DType::bf16);
    }
  EXPECT_TRUE(cast_grad);
  Graph f;
  const NodeId y = f.input("y", {4, 10}, DType::f32);
  EXPECT_EQ(f.node(f.node(f.softmax_xent_fp32("loss", y, f.input("labels", {4}, DType::i32))).inputs[0]).id, y);
}

TEST(Ir, UniqueNamesTakeTheSmallestFreeSuffix) {
  // The smallest free suffix, as before the names were remembered per base (probing from 2 each time was
  // quadratic in the nodes sharing a base: 20,000 ONNX nodes named alike took over 100 s under ASan).
  Graph g;
  EXPECT_EQ(g.unique_name("fc"), "fc");
  (void)g.input("fc", {1}, DType::f32);
  EXPECT_EQ(g.unique_name("fc"), "fc_2");
  EXPECT_EQ(g.unique_name("fc"), "fc_2");  // not used yet: still free
  (void)g.input("fc_2", {1}, DType::f32);
  (void)g.input("fc_4", {1}, DType::f32);  // taken out of turn
  EXPECT_EQ(g.unique_name("fc"), "fc_3");
  (void)g.input(g.unique_name("fc"), {1}, DType::f32);
  EXPECT_EQ(g.unique_name("fc"), "fc_5");
  for (int k = 0; k < 1000; ++k) (void)g.input(g.unique_name("x"), {1}, DType::f32);
  EXPECT_NE(g.find("x_1000"), kNone);
  EXPECT_EQ(g.unique_name("x"), "x_1001");
}

TEST(Ir, ParametersTogetherAreHeldTo2To56) {
  // Each tensor was held to 2^56 elements, their sum was not: param_count() added 256 of 2^55 past 2^63.
  Graph g;
  (void)g.param("a", {std::int64_t{1} << 55}, DType::f32);
  (void)g.param("b", {std::int64_t{1} << 55}, DType::f32);
  EXPECT_THROW(g.param("c", {1}, DType::f32), std::invalid_argument);
  EXPECT_EQ(param_count(g), std::int64_t{1} << 56);
  // Concatenated sizes along the axis, checked as they add up.
  const auto x = g.input("x", {2, std::int64_t{1} << 40}, DType::f32);
  try {
    (void)g.concat("cat", std::vector<NodeId>(std::size_t{1} << 23, x), 1);  // 2^23 x 2^40 = 2^63
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the inputs add up past 64-bit sizes along the axis"), std::string::npos) << e.what();
  }
}

TEST(Ir, AttentionRefusesEmptyHeads) {
  // Q's heads are checked as a multiple of K's: with none, that was a division by zero (SIGFPE).
  Graph g;
  const auto q = g.input("q", {4, 8, 16}, DType::f32);
  const auto k = g.input("k", {0, 8, 16}, DType::f32);
  EXPECT_THROW(g.attention("att", q, k, k, false), std::invalid_argument);
}

TEST(Ir, ConvWindowFitsTakeTheLeastPaddingThenTheLeastCrop) {
  // Every small case: the fit gives exactly `out` outputs, with the least padding and then the least crop
  // that do; none exists only when no padding up to the kernel gives enough. In closed form, so a dilated
  // kernel over 2^40 inputs (an ONNX Conv stepped through its crop one element at a time) is instant.
  auto outputs = [](std::int64_t n, std::int64_t p, std::int64_t k, std::int64_t s) { return n + 2 * p < k ? 0 : (n + 2 * p - k) / s + 1; };
  for (std::int64_t in = 1; in < 30; ++in)
    for (std::int64_t k = 1; k < 9; ++k)
      for (std::int64_t s = 1; s < 5; ++s)
        for (std::int64_t out = 1; out < 35; ++out) {
          const auto f = fit_axis(in, k, s, out);
          std::optional<AxisFit> want;
          for (std::int64_t p = 0; p <= k && !want; ++p)
            for (std::int64_t c = 0; c < in && !want; ++c)
              if (outputs(in - c, p, k, s) == out) want = AxisFit{static_cast<int>(p), c};
          ASSERT_EQ(f.has_value(), want.has_value()) << in << " " << k << " " << s << " " << out;
          if (f) {
            EXPECT_EQ(f->pad, want->pad) << in << " " << k << " " << s << " " << out;
            EXPECT_EQ(f->crop, want->crop) << in << " " << k << " " << s << " " << out;
          }
        }
  const auto big = fit_axis(std::int64_t{1} << 40, std::int64_t{1} << 20, 1, 1);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->crop, (std::int64_t{1} << 40) - (std::int64_t{1} << 20));
}

TEST(Workloads, SeedMlpIsTheKerasModel) {
  const ModelSpec s = sequential_preset("seed-mlp");
  EXPECT_EQ(s.input_dim, 780);
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_EQ(s.layers[0].units, 128);
  EXPECT_EQ(s.layers[0].act, Act::relu);
  EXPECT_DOUBLE_EQ(s.layers[1].rate, 0.2);
  EXPECT_TRUE(s.layers[2].softmax);
  EXPECT_EQ(s.num_classes(), 10);
  EXPECT_EQ(s.param_count(), 780 * 128 + 128 + 128 * 10 + 10);  // 101,258 (Keras shows 101,770 for 784 inputs)
  EXPECT_DOUBLE_EQ(s.adam.learning_rate, 1e-3);
  EXPECT_DOUBLE_EQ(s.adam.beta_1, 0.9);
  EXPECT_DOUBLE_EQ(s.adam.beta_2, 0.999);
  EXPECT_DOUBLE_EQ(s.adam.epsilon, 1e-7);
}

TEST(Workloads, UnknownIdNamesClosest) {
  try {
    sequential_preset("seed-mpl");
    FAIL();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown workload 'seed-mpl'"), std::string::npos);
    EXPECT_NE(msg.find("seed-mlp"), std::string::npos);
  }
}

TEST(Builder, TrainingGraphHasForwardBackwardAndAdam) {
  const Graph g = build_graph(sequential_preset("seed-mlp"), {32, DType::f32, Mode::train});
  EXPECT_EQ(count_op(g, OpKind::dropout), 1);
  EXPECT_EQ(count_op(g, OpKind::dropout_grad), 1);
  EXPECT_EQ(count_op(g, OpKind::adam_update), 4);
  EXPECT_EQ(count_op(g, OpKind::softmax_xent_grad), 1);
  EXPECT_EQ(count_op(g, OpKind::reduce_rows), 2);
  // Forward 2 matmuls; backward: dX and dW for layer 2, only dW for layer 1 (the data needs no gradient).
  EXPECT_EQ(count_op(g, OpKind::matmul), 5);
  EXPECT_EQ(count_op(g, OpKind::activation_grad), 1);
  EXPECT_NE(g.output("loss"), kNone);
  EXPECT_NE(g.output("accuracy"), kNone);
}

TEST(Builder, EvalGraphHasNoDropoutNoBackward) {
  const Graph g = build_graph(sequential_preset("seed-mlp"), {32, DType::f32, Mode::eval});
  EXPECT_EQ(count_op(g, OpKind::dropout), 0);
  EXPECT_EQ(count_op(g, OpKind::adam_update), 0);
  EXPECT_EQ(count_op(g, OpKind::matmul), 2);
}

TEST(Builder, GeluIsASeparateNodeAndGetsItsGradient) {
  ModelSpec s = sequential_preset("seed-mlp");
  s.layers[0].act = Act::gelu;
  const Graph g = build_graph(s, {8, DType::f32, Mode::train});
  EXPECT_EQ(count_op(g, OpKind::activation), 1);
  int gelu_grads = 0;
  for (const auto& n : g.nodes()) gelu_grads += n.op == OpKind::activation_grad && n.act == Act::gelu;
  EXPECT_EQ(gelu_grads, 1);
}

TEST(Cost, MatmulHandCount) {
  Graph g;
  const auto x = g.input("x", {32, 780}, DType::f32);
  const auto w = g.param("w", {780, 128}, DType::f32);
  const auto b = g.param("b", {128}, DType::f32);
  const auto y = g.matmul("y", x, w, b, Act::relu);
  const OpCost c = op_cost(g, g.node(y));
  EXPECT_DOUBLE_EQ(c.matrix_flops, 2.0 * 32 * 780 * 128);
  EXPECT_DOUBLE_EQ(c.vector_flops, 32.0 * 128 * 2);  // bias add + relu per output
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (32 * 780 + 780 * 128 + 128 + 32 * 128));
}

TEST(Cost, ElementwiseHandCounts) {
  Graph g;
  const auto x = g.input("x", {10, 20}, DType::f32);
  const auto labels = g.input("labels", {10}, DType::i32);
  const auto drop = g.dropout("drop", x, 0.5);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(drop)).bytes, 200 * 4 * 2 + 200);  // in, out, 1-byte mask
  const auto loss = g.softmax_xent("loss", x, labels);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(loss)).vector_flops, 5.0 * 200 + 4.0 * 10);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(loss)).bytes, 200 * 4 + 10 * 4 + 200 * 4 + 4);
  const auto p = g.param("p", {10, 20}, DType::f32);
  const auto upd = g.adam_update("upd", p, x, AdamConfig{});
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(upd)).bytes, 7.0 * 200 * 4);  // read p,g,m,v; write p,m,v
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(upd)).vector_flops, 12.0 * 200);
  const auto rr = g.reduce_rows("rr", x);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(rr)).vector_flops, 200);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(rr)).bytes, (200 + 20) * 4);
}

TEST(Cost, SeedMlpTrainingStepMatrixFlops) {
  // Hand count per step at batch B: forward 2*B*780*128 + 2*B*128*10; backward dW1 2*B*780*128,
  // dX2 and dW2 2*B*128*10 each (no dX1: the input needs no gradient). Total B*(4*780*128 + 6*128*10).
  for (std::int64_t batch : {32, 128, 1024}) {
    const Graph g = build_graph(sequential_preset("seed-mlp"), {batch, DType::f32, Mode::train});
    const double b = static_cast<double>(batch);
    EXPECT_DOUBLE_EQ(graph_cost(g).matrix_flops, b * (4.0 * 780 * 128 + 6.0 * 128 * 10)) << batch;
  }
  const Graph e = build_graph(sequential_preset("seed-mlp"), {64, DType::f32, Mode::eval});
  EXPECT_DOUBLE_EQ(graph_cost(e).matrix_flops, 64.0 * (2.0 * 780 * 128 + 2.0 * 128 * 10));
}

TEST(Cost, SeedMlpAdamBytesCoverEveryParamOnce) {
  const Graph g = build_graph(sequential_preset("seed-mlp"), {32, DType::f32, Mode::train});
  double adam_bytes = 0;
  for (const auto& n : g.nodes())
    if (n.op == OpKind::adam_update) adam_bytes += op_cost(g, n).bytes;
  EXPECT_DOUBLE_EQ(adam_bytes, 7.0 * 4 * 101258);
}

TEST(Autodiff, NodeWithoutGradientRuleOnThePathIsAnError) {
  Graph g;
  const auto x = g.input("x", {2, 3}, DType::f32);
  const auto w = g.param("w", {3, 3}, DType::f32);
  const auto y = g.matmul("y", x, w);
  const auto s = g.reduce_rows("s", y);  // a backward-pass op: no rule of its own
  const auto seed = g.input("seed", {3}, DType::f32);
  EXPECT_THROW(append_gradients(g, s, seed), std::invalid_argument);
}

TEST(Autodiff, FanOutAccumulatesWithAdd) {
  Graph g;
  const auto w = g.param("w", {2, 2}, DType::f64);
  const auto y = g.add("y", w, w);
  const auto seed = g.input("seed", {2, 2}, DType::f64);
  const auto grads = append_gradients(g, y, seed);
  ASSERT_TRUE(grads.count(w));
  EXPECT_EQ(g.node(grads.at(w)).op, OpKind::add);
}

TEST(Autodiff, GradientNamesNeverCollideWithTheGraphsOwn) {
  // A file names its nodes as it likes: here one forward node already holds every name the backward pass
  // and Adam would give the matmul's gradients (a Keras layer named "flatten/grad" beside "flatten" made the
  // training step throw "duplicate node name"; found by fuzz_model_json).
  Graph g;
  const auto x = g.input("x", {2, 3}, DType::f32);
  const auto w = g.param("h", {3, 4}, DType::f32);
  NodeId y = g.matmul("y", x, w);
  for (const char* taken : {"y/grad", "y/grad/a", "y/grad/b", "h/adam", "loss/grad"})
    y = g.activation(taken, y, Act::relu);
  const auto logits = g.matmul("logits", y, g.param("w2", {4, 5}, DType::f32));
  g.set_output("loss", g.softmax_xent("loss", logits, g.input("labels", {2}, DType::i32)));
  const std::size_t forward = g.size();
  ASSERT_NO_THROW(append_training_step(g, AdamConfig{}));
  int adam = 0;
  for (const auto& n : g.nodes()) adam += n.op == OpKind::adam_update;
  EXPECT_EQ(adam, 2);  // both parameters updated
  EXPECT_GT(g.size(), forward);
  EXPECT_NE(g.find("y/grad/b_2"), kNone);  // the taken name, made unique
}

TEST(Autodiff, TrainingStepNeedsScalarLoss) {
  Graph g;
  g.input("x", {2}, DType::f32);
  EXPECT_THROW(append_training_step(g, AdamConfig{}), std::invalid_argument);
}

TEST(Ir, ElementwiseBroadcastsAsNumPyAndReducesKeepDims) {
  Graph g;
  const auto x = g.input("x", {2, 1, 4}, DType::f32);
  const auto b = g.param("b", {3, 1}, DType::f32);
  EXPECT_EQ(g.node(g.elementwise("sum", EwFn::add, {x, b})).shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.node(g.elementwise("prod", EwFn::mul, {x, b})).shape, (Shape{2, 3, 4}));  // mul broadcasts too
  const auto c = g.param("c", {5}, DType::f32);
  EXPECT_THROW(g.elementwise("bad", EwFn::sub, {x, c}), std::invalid_argument);  // 4 against 5
  EXPECT_THROW(g.elementwise("arity", EwFn::where, {x, b}), std::invalid_argument);
  const auto cond = g.input("cond", {1, 4}, DType::i32);
  const auto w = g.elementwise("w", EwFn::where, {cond, x, b});
  EXPECT_EQ(g.node(w).shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.node(w).dtype, DType::f32);  // the values' dtype, not the condition's
  EXPECT_EQ(g.node(g.cast("ids", cond, DType::f32)).dtype, DType::f32);
  EXPECT_EQ(g.node(g.reduce("mean", x, PoolKind::avg, {2, 1, 1})).shape, (Shape{2, 1, 1}));
  EXPECT_THROW(g.reduce("rank", x, PoolKind::sum, {2, 4}), std::invalid_argument);
  EXPECT_THROW(g.reduce("axis", x, PoolKind::sum, {2, 1, 2}), std::invalid_argument);
}

TEST(Cost, BroadcastElementwiseAndReduceHandCounts) {
  Graph g;
  const auto x = g.input("x", {8, 16}, DType::f32);
  const auto b = g.param("b", {16}, DType::f32);
  const auto y = g.elementwise("y", EwFn::add, {x, b});
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(y)).vector_flops, 128);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(y)).bytes, 4.0 * (128 + 16 + 128));  // each input once, the output once
  const auto e = g.elementwise("e", EwFn::erf, {x});
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(e)).vector_flops, 5.0 * 128);
  const auto d = g.elementwise("d", EwFn::div, {x, b});
  const auto dy = g.input("dy", {8, 16}, DType::f32);
  const auto gd = g.elementwise_grad("gd", dy, d, 1);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(gd)).vector_flops, 3.0 * 128);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(gd)).bytes, 4.0 * (128 + 128 + 16 + 128));  // dy, both inputs, the result
  // A sum's gradient reads no forward tensor.
  const auto ga = g.elementwise_grad("ga", dy, g.elementwise("s", EwFn::sub, {x, b}), 0);
  EXPECT_EQ(g.node(ga).inputs.size(), 1u);
  const auto r = g.reduce("r", x, PoolKind::avg, {8, 1});
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(r)).vector_flops, 128);
  EXPECT_DOUBLE_EQ(op_cost(g, g.node(r)).bytes, 4.0 * (128 + 8));
}

TEST(Autodiff, BroadcastInputsGetGradientsSummedToTheirShape) {
  Graph g;
  const auto x = g.input("x", {4, 3}, DType::f32);
  const auto w = g.param("w", {3, 3}, DType::f32);
  const auto b = g.param("b", {3}, DType::f32);
  const auto h = g.matmul("h", x, w);
  const auto y = g.elementwise("y", EwFn::div, {g.elementwise("z", EwFn::add, {h, b}), b});
  const auto m = g.reduce("m", y, PoolKind::avg, {4, 1});
  const auto seed = g.input("seed", {4, 1}, DType::f32);
  const auto grads = append_gradients(g, m, seed);
  ASSERT_TRUE(grads.count(b) && grads.count(w));
  EXPECT_EQ(g.node(grads.at(b)).shape, (Shape{3}));
  EXPECT_EQ(g.node(grads.at(w)).shape, (Shape{3, 3}));
  // A slice's gradient is its part in place, zeros around it, in the input's shape.
  Graph s;
  const auto p = s.param("p", {6, 4}, DType::f32);
  const auto part = s.slice("part", p, 0, 2, 3);
  const auto sg = append_gradients(s, part, s.input("seed", {3, 4}, DType::f32));
  ASSERT_TRUE(sg.count(p));
  EXPECT_EQ(s.node(sg.at(p)).op, OpKind::concat);
  EXPECT_EQ(s.node(sg.at(p)).shape, (Shape{6, 4}));
}
