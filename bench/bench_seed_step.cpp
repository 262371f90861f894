// SPDX-License-Identifier: Apache-2.0
// Training throughput of the seed workload: whole training steps (forward, backward, Adam) over an epoch
// of random data, batches sliced in order as the PyTorch peer does. Reports samples/s and the step's
// achieved FLOP/s (matrix FLOPs from the graph's own cost model).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>

#include "core/rng.hpp"
#include "engine/executor.hpp"
#include "ir/cost.hpp"
#include "models/builder.hpp"
#include "models/sequential_presets.hpp"

using namespace gpuvs;
using namespace gpuvs::engine;

namespace {

constexpr std::int64_t kRows = 60000;  // the peer's epoch

const std::vector<float>& dataset() {
  static const std::vector<float> x = [] {
    std::vector<float> v(static_cast<std::size_t>(kRows * 780));
    const CounterRng rng(5, 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rng.normal(i));
    return v;
  }();
  return x;
}

void BM_SeedTrainStep(benchmark::State& state, GemmLibrary lib) {
  const std::int64_t batch = state.range(0);
  set_cpu_threads(static_cast<int>(state.range(1)));
  const auto spec = models::sequential_preset("seed-mlp");
  const ir::Graph g = models::build_graph(spec, {batch, ir::DType::f32, models::Mode::train});
  ParamStore store;
  store.initialize(models::param_inits(spec), ir::DType::f32, 1);
  auto ex = make_cpu_executor(g, store, {lib, false, {}});
  const auto& x = dataset();
  auto* in = static_cast<float*>(ex->input("x"));
  auto* labels = static_cast<std::int32_t*>(ex->input("labels"));
  const std::int64_t steps = kRows / batch;
  std::int64_t step = 0, it = 0;
  for (auto _ : state) {
    std::memcpy(in, x.data() + step * batch * 780, static_cast<std::size_t>(batch * 780) * sizeof(float));
    for (std::int64_t i = 0; i < batch; ++i) labels[i] = static_cast<std::int32_t>((step * batch + i) % 10);
    ex->run({1, it++});
    step = (step + 1) % steps;
  }
  if (!std::isfinite(ex->scalar("loss"))) state.SkipWithError("loss is not finite");
  state.counters["samples/s"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(ir::graph_cost(g).matrix_flops, benchmark::Counter::kIsIterationInvariantRate);
}

void args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int batch : {32, 128, 1024}) b->Args({batch, threads});
}

}  // namespace

BENCHMARK_CAPTURE(BM_SeedTrainStep, onednn, GemmLibrary::onednn)->Apply(args)->UseRealTime();
BENCHMARK_CAPTURE(BM_SeedTrainStep, openblas, GemmLibrary::openblas)->Apply(args)->UseRealTime();

BENCHMARK_MAIN();
