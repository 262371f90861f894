// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/rng.hpp"
#include "engine/cpu/kernels.hpp"
#include "engine/data.hpp"
#include "engine/executor.hpp"
#include "models/builder.hpp"
#include "models/sequential_presets.hpp"

// Counts every C++ allocation in this test binary, to prove a training step allocates no tensors.
// (The replacement pair is malloc/free by design; GCC cannot see that and warns.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<long> g_allocations{0};
std::atomic<std::size_t> g_largest{0};
}  // namespace
void* operator new(std::size_t n) {
  ++g_allocations;
  std::size_t prev = g_largest.load();
  while (n > prev && !g_largest.compare_exchange_weak(prev, n)) {
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::models;
using namespace gpuvs::engine;

namespace {
void fill_random(HostTensor& t, std::uint64_t stream) {
  const CounterRng rng(123, stream);
  for (std::size_t i = 0; i < static_cast<std::size_t>(numel(t.shape)); ++i) {
    const double v = rng.normal(i);
    if (t.dtype == DType::f32) t.as<float>()[i] = static_cast<float>(v);
    else t.as<double>()[i] = v;
  }
}
}  // namespace

TEST(Adam, OneAndTwoStepsAgainstHandComputedValues) {
  // Keras Adam, lr 0.1, beta_1 0.9, beta_2 0.999, epsilon 1e-7, from m = v = 0.
  // Step 1 (t = 1): alpha = 0.1 * sqrt(1 - 0.999) / (1 - 0.9) = sqrt(0.001) = 0.0316227766.
  //   g = 0.5:  m = 0.05,  v = 0.00025, update = 0.0316227766 * 0.05 / (0.0158113883 + 1e-7) = 0.0999993675
  //             p = 1 - 0.0999993675 = 0.9000006325
  //   g = -1:   m = -0.1,  v = 0.001,   update = -0.0316227766 * 0.1 / (0.0316227766 + 1e-7) = -0.0999996838
  //             p = -2 + 0.0999996838 = -1.9000003162
  //   g = 0:    m = v = 0, p unchanged = 0.5
  // Step 2 (t = 2) with g = (0.25, 0.5, -2): alpha = 0.1 * sqrt(1 - 0.999^2) / (1 - 0.81) = 0.0235316725
  //   m = 0.9 m + 0.1 g = (0.07, -0.04, -0.2); v = 0.999 v + 0.001 g^2 = (0.00031225, 0.001249, 0.004)
  //   p = (0.9000006325 - 0.0235316725*0.07/(0.0176706536+1e-7), ...) = (0.8067831961, -1.8733666876, 0.5744135647)
  for (DType dt : {DType::f64, DType::f32}) {
    Graph g;
    const auto p = g.param("p", {3}, dt);
    const auto grad = g.input("g", {3}, dt);
    AdamConfig cfg;
    cfg.learning_rate = 0.1;
    g.adam_update("upd", p, grad, cfg);
    ParamStore store;
    HostTensor& pt = store.ensure("p", {3}, dt);
    const double p0[3] = {1.0, -2.0, 0.5};
    for (int i = 0; i < 3; ++i) {
      if (dt == DType::f64) pt.as<double>()[i] = p0[i];
      else pt.as<float>()[i] = static_cast<float>(p0[i]);
    }
    auto ex = make_cpu_executor(g, store, {});
    auto set_grad = [&](double a, double b, double c) {
      const double v[3] = {a, b, c};
      for (int i = 0; i < 3; ++i) {
        if (dt == DType::f64) static_cast<double*>(ex->input("g"))[i] = v[i];
        else static_cast<float*>(ex->input("g"))[i] = static_cast<float>(v[i]);
      }
    };
    const double tol = dt == DType::f64 ? 1e-9 : 2e-6;
    set_grad(0.5, -1.0, 0.0);
    ex->run({0, 0});
    EXPECT_NEAR(pt.at(0), 0.9000006325, tol);
    EXPECT_NEAR(pt.at(1), -1.9000003162, tol);
    EXPECT_NEAR(pt.at(2), 0.5, tol);
    EXPECT_NEAR(store.get("p/m").at(0), 0.05, tol);
    EXPECT_NEAR(store.get("p/v").at(1), 0.001, tol);
    set_grad(0.25, 0.5, -2.0);
    ex->run({0, 1});
    EXPECT_NEAR(pt.at(0), 0.8067831961, tol);
    EXPECT_NEAR(pt.at(1), -1.8733666876, tol);
    EXPECT_NEAR(pt.at(2), 0.5744135647, tol);
    EXPECT_NEAR(store.get("p/v").at(2), 0.004, tol);
  }
}

TEST(Dropout, KeepRateScalingAndFreshMasks) {
  const std::int64_t n = 1000000;
  std::vector<float> x(n, 1.0f), y(n), y2(n);
  std::vector<std::uint8_t> mask(n), mask2(n);
  engine::cpu::dropout_forward(x.data(), y.data(), mask.data(), n, 0.2, 7, 1);
  double kept = 0, sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    sum += y[i];
    ASSERT_TRUE(y[i] == 0.0f || y[i] == 1.25f) << y[i];  // inverted dropout scales kept units by 1/(1-rate)
    ASSERT_EQ(mask[i] == 1, y[i] != 0.0f);
  }
  // Binomial standard deviation sqrt(0.16 / 1e6) = 0.0004: a 5-sigma window.
  EXPECT_NEAR(kept / n, 0.8, 0.002);
  EXPECT_NEAR(sum / n, 1.0, 0.0025);  // the expectation is preserved
  engine::cpu::dropout_forward(x.data(), y2.data(), mask2.data(), n, 0.2, 7, 2);
  long same = 0;
  for (std::int64_t i = 0; i < n; ++i) same += mask[i] == mask2[i];
  EXPECT_NEAR(static_cast<double>(same) / n, 0.8 * 0.8 + 0.2 * 0.2, 0.003);  // independent masks per stream
  std::vector<float> dy(n, 2.0f), dx(n);
  engine::cpu::dropout_backward(dy.data(), mask.data(), dx.data(), n, 0.2);
  for (std::int64_t i = 0; i < n; i += 997) EXPECT_FLOAT_EQ(dx[i], mask[i] ? 2.5f : 0.0f);
}

TEST(Dropout, AbsentAtEvaluation) {
  const ModelSpec spec = sequential_preset("seed-mlp");
  ParamStore store;
  store.initialize(param_inits(spec), DType::f32, 3);
  auto ev = make_cpu_executor(build_graph(spec, {64, DType::f32, Mode::eval}), store, {});
  auto* x = static_cast<float*>(ev->input("x"));
  auto* y = static_cast<std::int32_t*>(ev->input("labels"));
  const CounterRng rng(5, 5);
  for (int i = 0; i < 64 * 780; ++i) x[i] = static_cast<float>(rng.normal(static_cast<std::uint64_t>(i)));
  for (int i = 0; i < 64; ++i) y[i] = i % 10;
  ev->run({1, 0});
  const double a = ev->scalar("loss");
  ev->run({2, 99});  // another seed and step: evaluation must not change
  EXPECT_EQ(a, ev->scalar("loss"));
  // With training on, the same inputs give a different loss (dropout is active).
  auto tr = make_cpu_executor(build_graph(spec, {64, DType::f32, Mode::train}), store, {});
  std::copy(x, x + 64 * 780, static_cast<float*>(tr->input("x")));
  std::copy(y, y + 64, static_cast<std::int32_t*>(tr->input("labels")));
  tr->run({1, 0});
  EXPECT_NE(a, tr->scalar("loss"));
}

TEST(SoftmaxXent, StableForHugeLogitsAndMatchesDefinition) {
  const float logits[6] = {1000.f, 0.f, -1000.f, 1.f, 2.f, 3.f};
  const std::int32_t labels[2] = {0, 1};
  float probs[6];
  const double loss = engine::cpu::softmax_xent_forward(logits, labels, probs, 2, 3);
  // Row 1: loss 0. Row 2: log(e^1 + e^2 + e^3) - 2 = 1.40760596.
  EXPECT_NEAR(loss, (0.0 + 1.4076059644443806) / 2, 1e-6);
  EXPECT_FLOAT_EQ(probs[0], 1.0f);
  float d[6];
  engine::cpu::softmax_xent_backward(1.0f, probs, labels, d, 2, 3);
  EXPECT_NEAR(d[0], 0.0, 1e-7);
  EXPECT_NEAR(d[4], (probs[4] - 1.0) / 2, 1e-7);
}

TEST(Gemm, OneDnnAndOpenBlasAgreeForEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (Act act : {Act::none, Act::relu, Act::tanh, Act::sigmoid}) {
        Graph g;
        const std::int64_t m = 33, n = 17, k = 65;
        const auto a = g.param("a", ta ? Shape{k, m} : Shape{m, k}, DType::f32);
        const auto b = g.param("b", tb ? Shape{n, k} : Shape{k, n}, DType::f32);
        const auto bias = g.param("bias", {n}, DType::f32);
        const auto c = g.matmul("c", a, b, bias, act, ta, tb);
        ParamStore store;
        fill_random(store.ensure("a", g.node(a).shape, DType::f32), 1);
        fill_random(store.ensure("b", g.node(b).shape, DType::f32), 2);
        fill_random(store.ensure("bias", {n}, DType::f32), 3);
        auto one = make_cpu_executor(g, store, {GemmLibrary::onednn, false, {}});
        auto two = make_cpu_executor(g, store, {GemmLibrary::openblas, false, {}});
        one->run({});
        two->run({});
        const auto r1 = one->read(c), r2 = two->read(c);
        // Reference in double.
        const HostTensor &A = store.get("a"), &B = store.get("b"), &Bi = store.get("bias");
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double s = Bi.at(static_cast<std::size_t>(j));
            for (std::int64_t q = 0; q < k; ++q)
              s += A.at(static_cast<std::size_t>(ta ? q * m + i : i * k + q)) *
                   B.at(static_cast<std::size_t>(tb ? j * k + q : q * n + j));
            const double ref = act == Act::relu ? std::max(s, 0.0)
                               : act == Act::tanh ? std::tanh(s)
                               : act == Act::sigmoid ? 1 / (1 + std::exp(-s)) : s;
            const auto at = static_cast<std::size_t>(i * n + j);
            ASSERT_NEAR(r1[at], ref, 1e-4) << "onednn ta=" << ta << " tb=" << tb << " act=" << act_name(act);
            ASSERT_NEAR(r2[at], ref, 1e-4) << "openblas ta=" << ta << " tb=" << tb << " act=" << act_name(act);
          }
      }
}

// The executor plans every tensor, saved mask and scratchpad up front. With OpenBLAS nothing at all is
// allocated in a step. oneDNN's primitive::execute() builds small per-call argument maps inside the
// library (a handful of allocations of a few dozen bytes per GEMM, not tensors): bounded here.
TEST(Executor, TrainingStepAllocatesNoTensors) {
  const ModelSpec spec = sequential_preset("seed-mlp");
  for (GemmLibrary lib : {GemmLibrary::onednn, GemmLibrary::openblas}) {
    ParamStore store;
    store.initialize(param_inits(spec), DType::f32, 3);
    auto ex = make_cpu_executor(build_graph(spec, {128, DType::f32, Mode::train}), store, {lib, false, {}});
    auto* x = static_cast<float*>(ex->input("x"));
    for (int i = 0; i < 128 * 780; ++i) x[i] = static_cast<float>((i % 17) - 8) * 0.1f;
    ex->run({1, 0});  // warm-up
    const long before = g_allocations.load();
    g_largest = 0;
    for (int s = 1; s <= 5; ++s) ex->run({1, s});
    const long per_step = (g_allocations.load() - before) / 5;
    if (lib == GemmLibrary::openblas) {
      EXPECT_EQ(per_step, 0);
    } else {
      EXPECT_LE(per_step, 12 * 5) << "more than a dozen bookkeeping allocations per oneDNN GEMM";
      EXPECT_LT(g_largest.load(), 1024u) << "an allocation the size of a tensor inside a step";
    }
  }
}

// A bound epoch takes its rows from the order itself (offset, then stride per step): the same steps
// as loading every batch by hand, and the same running totals.
TEST(Executor, BoundEpochRunsTheRowsOfTheOrder) {
  const ModelSpec spec = sequential_preset("seed-mlp");
  const Dataset data = make_synthetic(300, 780, 10, 8);
  std::vector<std::int64_t> order(300);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>((i * 7919) % 300);
  ParamStore bound_store, loaded_store;
  bound_store.initialize(param_inits(spec), DType::f32, 3);
  loaded_store.initialize(param_inits(spec), DType::f32, 3);
  const Graph g = build_graph(spec, {32, DType::f32, Mode::train});
  auto bound = make_cpu_executor(g, bound_store, {});
  auto loaded = make_cpu_executor(g, loaded_store, {});
  ASSERT_TRUE(bound->bind_epoch(data, order.data(), 300, 20, 50, {5, 0}));
  double loss = 0, acc = 0;
  for (std::int64_t s = 0; s < 4; ++s) {
    bound->run_accumulate({5, s}, 32);
    load_rows(*loaded, data, order.data() + 20 + 50 * s, 32);
    loaded->run({5, s});
    loss += loaded->scalar("loss") * 32;
    acc += loaded->scalar("accuracy") * 32;
  }
  const StepTotals t = bound->totals();
  EXPECT_EQ(t.loss, loss);
  EXPECT_EQ(t.accuracy, acc);
  EXPECT_EQ(t.rows, 128);
  EXPECT_EQ(t.steps, 4);
  EXPECT_EQ(t.first_nonfinite_iteration, -1);
  EXPECT_FALSE(bound->asynchronous());
  for (const auto& [name, tensor] : loaded_store.tensors())
    EXPECT_EQ(std::memcmp(bound_store.get(name).buffer.data(), tensor.buffer.data(), tensor.bytes()), 0) << name;
  // The order runs out: rows 20 + 50 * 5 + 32 > 300.
  bound->run_accumulate({5, 4}, 32);
  EXPECT_THROW(bound->run_accumulate({5, 5}, 32), std::logic_error);
  bound->reset_totals();
  EXPECT_EQ(bound->totals().steps, 0);
  // A data set of another width does not bind.
  const Dataset narrow = make_synthetic(300, 64, 10, 8);
  EXPECT_FALSE(bound->bind_epoch(narrow, order.data(), 300, 0, 32, {5, 0}));
}

TEST(Executor, ParamMismatchIsReported) {
  Graph g;
  g.param("w", {2, 2}, DType::f32);
  ParamStore store;
  store.ensure("w", {3, 2}, DType::f32);
  EXPECT_THROW(make_cpu_executor(g, store, {}), std::invalid_argument);
}
