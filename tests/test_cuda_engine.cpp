// The CUDA engine's arithmetic (engine/cuda/device_math.hpp), compiled here as host code and checked
// against the CPU oracle's kernels: so the dropout masks, Adam steps and loss rows a GPU computes are
// the CPU's, bit for bit where the CPU's operation order is reproduced.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "engine/cpu/kernels.hpp"
#include "engine/cuda/device_math.hpp"

using namespace gpuvs;
namespace dm = gpuvs::engine::cuda::math;

TEST(CudaMath, PhiloxMatchesTheHostGenerator) {
  const CounterRng rng(0x1234567890ABCDEFull, 42);
  for (std::uint64_t i : {0ull, 1ull, 15ull, 16ull, 1000ull, 0xFFFFFFFFull, 0x100000000ull}) {
    const auto want = rng.block(i);
    const auto got = dm::philox(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), 42, 0,
                                static_cast<std::uint32_t>(0x1234567890ABCDEFull), static_cast<std::uint32_t>(0x1234567890ABCDEFull >> 32));
    for (int w = 0; w < 4; ++w) EXPECT_EQ(got.w[w], want[w]) << "block " << i << " word " << w;
  }
}

TEST(CudaMath, DropoutMaskIsTheCpuMask) {
  for (std::int64_t n : {1, 127, 128, 129, 1000, 4097}) {
    std::vector<float> x(static_cast<std::size_t>(n)), y(x.size());
    std::vector<std::uint8_t> mask(x.size());
    for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = 1.0f + static_cast<float>(i) * 0.001f;
    const double rate = 0.2;
    const std::uint64_t seed = 99, stream = 7;
    engine::cpu::dropout_forward(x.data(), y.data(), mask.data(), n, rate, seed, stream);
    const auto threshold = dm::dropout_threshold(rate);
    const float scale = 1.0f / (1.0f - 0.2f);
    int kept = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const bool keep = dm::dropout_draw(seed, stream, static_cast<std::uint64_t>(i)) >= threshold;
      ASSERT_EQ(keep, mask[static_cast<std::size_t>(i)] == 1) << "element " << i << " of " << n;
      EXPECT_EQ(keep ? x[static_cast<std::size_t>(i)] * scale : 0.0f, y[static_cast<std::size_t>(i)]);
      kept += keep;
    }
    if (n >= 1000) {
      EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 0.8, 0.04);
    }
  }
}

TEST(CudaMath, AdamStepIsTheCpuStepBitForBit) {
  const graph::AdamConfig cfg;
  const std::int64_t n = 257;
  const CounterRng rng(3, 3);
  std::vector<float> p(n), g(n), m(n), v(n);
  for (std::int64_t i = 0; i < n; ++i) {
    p[static_cast<std::size_t>(i)] = static_cast<float>(rng.normal(static_cast<std::uint64_t>(i)));
    g[static_cast<std::size_t>(i)] = static_cast<float>(rng.normal(static_cast<std::uint64_t>(i + n)) * 0.1);
    m[static_cast<std::size_t>(i)] = static_cast<float>(rng.uniform(static_cast<std::uint64_t>(i + 2 * n)) * 0.01);
    v[static_cast<std::size_t>(i)] = static_cast<float>(rng.uniform(static_cast<std::uint64_t>(i + 3 * n)) * 1e-4);
  }
  auto p2 = p, m2 = m, v2 = v;
  for (std::int64_t it : {0, 1, 9, 1000}) {
    engine::cpu::adam_update(p.data(), g.data(), m.data(), v.data(), n, cfg, it);
    const float alpha = dm::adam_alpha(cfg.learning_rate, cfg.beta_1, cfg.beta_2, it);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto u = static_cast<std::size_t>(i);
      dm::adam_element(p2[u], g[u], m2[u], v2[u], alpha, static_cast<float>(1.0 - cfg.beta_1), static_cast<float>(1.0 - cfg.beta_2),
                       static_cast<float>(cfg.epsilon));
      ASSERT_EQ(p2[u], p[u]) << "iteration " << it << " element " << i;
      ASSERT_EQ(m2[u], m[u]);
      ASSERT_EQ(v2[u], v[u]);
    }
  }
}

TEST(CudaMath, SoftmaxCrossEntropyAndAccuracyRowsMatch) {
  const std::int64_t rows = 33, cols = 10;
  const CounterRng rng(8, 1);
  std::vector<float> z(rows * cols), p(z.size()), p2(z.size()), dz(z.size());
  std::vector<std::int32_t> labels(rows);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<float>(rng.normal(i) * 3);
  for (std::int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(r % cols);
  z[5 * cols + 2] = z[5 * cols + 7] = 50.0f;  // a tie: the first maximum wins
  labels[5] = 2;
  const double loss = engine::cpu::softmax_xent_forward(z.data(), labels.data(), p.data(), rows, cols);
  double loss2 = 0;
  int hits = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    loss2 += dm::softmax_xent_row(z.data() + r * cols, labels[static_cast<std::size_t>(r)], p2.data() + r * cols, cols);
    hits += dm::argmax_hit(z.data() + r * cols, labels[static_cast<std::size_t>(r)], cols);
  }
  EXPECT_NEAR(loss2 / rows, loss, 1e-12);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p2[i], p[i]) << i;
  EXPECT_DOUBLE_EQ(static_cast<double>(hits) / rows, engine::cpu::accuracy(z.data(), labels.data(), rows, cols));
  engine::cpu::softmax_xent_backward(1.0f, p.data(), labels.data(), dz.data(), rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) {
      const auto u = static_cast<std::size_t>(r * cols + j);
      EXPECT_EQ(dm::softmax_xent_grad(1.0f, p[u], j == labels[static_cast<std::size_t>(r)], rows), dz[u]);
    }
}

TEST(CudaMath, ActivationsMatchTheCpu) {
  std::vector<float> x(101), y(101);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -5.0f + 0.1f * static_cast<float>(i);
  const std::pair<graph::Act, dm::Act> acts[] = {{graph::Act::relu, dm::Act::relu}, {graph::Act::tanh, dm::Act::tanh},
                                                 {graph::Act::sigmoid, dm::Act::sigmoid}, {graph::Act::gelu, dm::Act::gelu}};
  for (const auto& [ga, da] : acts) {
    engine::cpu::activation_forward(x.data(), y.data(), static_cast<std::int64_t>(x.size()), ga);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(dm::activate(x[i], da), y[i], 2e-7f * (1 + std::fabs(y[i]))) << i;
  }
}
