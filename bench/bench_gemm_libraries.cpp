// SPDX-License-Identifier: Apache-2.0
// oneDNN vs OpenBLAS on the seed workload's GEMM shapes (the evidence for the engine's default), plus a
// large square SGEMM: the machine's GEMM rate that the step's GFLOP/s is compared with.
// Random inputs (never zeros), warm-up by Google Benchmark's own iteration estimate, repetitions with
// median and spread: run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true.
#include <benchmark/benchmark.h>

#include <cmath>
#include <stdexcept>

#include "core/rng.hpp"
#include "engine/cpu/gemm.hpp"
#include "engine/executor.hpp"
#include "engine/param_store.hpp"

using namespace gpuvs;
using namespace gpuvs::engine;

namespace {

struct Shape {
  const char* name;
  std::int64_t m, n, k;
  bool ta, tb, bias;
  ir::Act act;
};

// The five GEMMs of one seed-mlp training step at batch B.
Shape seed_shape(int which, std::int64_t b) {
  switch (which) {
    case 0: return {"fwd1 relu(x.W1+b1)", b, 128, 780, false, false, true, ir::Act::relu};
    case 1: return {"dW1 = x^T.dZ1", 780, 128, b, true, false, false, ir::Act::none};
    case 2: return {"fwd2 h.W2+b2", b, 10, 128, false, false, true, ir::Act::none};
    case 3: return {"dX2 = dZ2.W2^T", b, 128, 10, false, true, false, ir::Act::none};
    default: return {"dW2 = h^T.dZ2", 128, 10, b, true, false, false, ir::Act::none};
  }
}

AlignedBuffer random_floats(std::int64_t n, std::uint64_t stream) {
  AlignedBuffer buf(static_cast<std::size_t>(n) * sizeof(float));
  const CounterRng rng(17, stream);
  auto* p = reinterpret_cast<float*>(buf.data());
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.normal(static_cast<std::uint64_t>(i)));
  return buf;
}

void run_gemm(benchmark::State& state, GemmLibrary lib, const Shape& s) {
  set_cpu_threads(static_cast<int>(state.range(1)));
  const AlignedBuffer a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2), bias = random_floats(s.n, 3);
  AlignedBuffer c(static_cast<std::size_t>(s.m * s.n) * sizeof(float));
  cpu::GemmPlan plan(lib, ir::DType::f32, {s.m, s.n, s.k, s.ta, s.tb}, a.data(), b.data(),
                     s.bias ? bias.data() : nullptr, c.data(), s.act);
  plan.run();
  // Self-check one element against a double-precision dot product.
  const auto* A = reinterpret_cast<const float*>(a.data());
  const auto* B = reinterpret_cast<const float*>(b.data());
  const std::int64_t i = s.m / 2, j = s.n / 3;
  double ref = s.bias ? reinterpret_cast<const float*>(bias.data())[j] : 0.0;
  for (std::int64_t q = 0; q < s.k; ++q)
    ref += static_cast<double>(A[s.ta ? q * s.m + i : i * s.k + q]) * B[s.tb ? j * s.k + q : q * s.n + j];
  if (s.act == ir::Act::relu) ref = std::max(ref, 0.0);
  const double got = reinterpret_cast<const float*>(c.data())[i * s.n + j];
  if (std::fabs(got - ref) > 1e-3 * std::max(1.0, std::fabs(ref))) {
    state.SkipWithError("GEMM result check failed");
    return;
  }
  for (auto _ : state) {
    plan.run();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(s.m * s.n * s.k),
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(plan.impl());
}

void BM_SeedGemm(benchmark::State& state, GemmLibrary lib, int which) {
  run_gemm(state, lib, seed_shape(which, state.range(0)));
}

void BM_SquareSgemm(benchmark::State& state, GemmLibrary lib) {
  const std::int64_t n = state.range(0);
  run_gemm(state, lib, {"square", n, n, n, false, false, false, ir::Act::none});
}

void seed_args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int batch : {32, 128, 1024}) b->Args({batch, threads});
}

}  // namespace

#define SEED_GEMM(which)                                                                                      \
  BENCHMARK_CAPTURE(BM_SeedGemm, onednn_##which, GemmLibrary::onednn, which)->Apply(seed_args)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_SeedGemm, openblas_##which, GemmLibrary::openblas, which)->Apply(seed_args)->UseRealTime();
SEED_GEMM(0)
SEED_GEMM(1)
SEED_GEMM(2)
SEED_GEMM(3)
SEED_GEMM(4)
BENCHMARK_CAPTURE(BM_SquareSgemm, onednn, GemmLibrary::onednn)->Args({1024, 1})->Args({1024, 2})->UseRealTime();
BENCHMARK_CAPTURE(BM_SquareSgemm, openblas, GemmLibrary::openblas)->Args({1024, 1})->Args({1024, 2})->UseRealTime();

BENCHMARK_MAIN();
