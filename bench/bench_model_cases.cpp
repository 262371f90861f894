// SPDX-License-Identifier: Apache-2.0
// The model case list (tests/model_cases.hpp) in perf mode: one training step of every case, at batch 1, 64
// and 5,000, on every backend this machine has — the CPU engine always, the CUDA engine where the plugin
// finds a GPU (registered only then). The test suite runs the same list for gradients (test_gradients) and
// against the CPU oracle (test_cuda_engine), as ggml's test-backend-ops runs one list in three modes.
// Each step's inputs are random; each run ends by checking the loss is finite.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "engine/data.hpp"
#include "engine/executor.hpp"
#include "gpu/plugin_api.hpp"
#include "gpu/plugin_loader.hpp"
#include "ir/cost.hpp"
#include "model_cases.hpp"
#include "models/builder.hpp"

using namespace gpuvs;

namespace {

/// A backend's executor for a graph: the CPU engine's, or one on a GPU's training device.
using MakeExecutor = std::function<std::unique_ptr<engine::Executor>(const ir::Graph&, engine::ParamStore&)>;

void BM_CaseStep(benchmark::State& state, std::size_t which, const MakeExecutor& make) {
  const std::int64_t batch = state.range(0);
  const test::ModelCase mc = test::model_cases().at(which);
  const ir::Graph g = models::build_graph(mc.spec, {batch, ir::DType::f32, models::Mode::train});
  engine::ParamStore store;
  store.initialize(models::param_inits(mc.spec), ir::DType::f32, 5);
  auto ex = make(g, store);
  const auto data = engine::make_synthetic(batch, mc.spec.input_dim, mc.spec.num_classes(), 3);
  std::memcpy(ex->input("x"), data.x.data(), data.x.size() * sizeof(float));
  std::memcpy(ex->input("labels"), data.y.data(), data.y.size() * sizeof(std::int32_t));
  std::int64_t step = 0;
  ex->run({11, step++});  // warm-up: first-touch, workspaces, a GPU's first launches
  for (auto _ : state) ex->run({11, step++});
  if (!std::isfinite(ex->scalar("loss"))) state.SkipWithError("loss is not finite");
  state.counters["samples/s"] = benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["FLOP/s"] = benchmark::Counter(ir::graph_cost(g).matrix_flops + ir::graph_cost(g).vector_flops, benchmark::Counter::kIsIterationInvariantRate);
}

void register_backend(const std::string& backend, const MakeExecutor& make) {
  const auto cases = test::model_cases();
  for (std::size_t i = 0; i < cases.size(); ++i)
    benchmark::RegisterBenchmark(("BM_CaseStep/" + backend + "/" + cases[i].name).c_str(),
                                 [i, make](benchmark::State& s) { BM_CaseStep(s, i, make); })
        ->Arg(1)
        ->Arg(64)
        ->Arg(5000)
        ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  engine::set_cpu_threads(1);  // one thread: the cases' small GEMMs, compared case with case
  register_backend("cpu", [](const ir::Graph& g, engine::ParamStore& store) { return engine::make_cpu_executor(g, store, {}); });
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  std::shared_ptr<gpu::TrainDevice> dev;
  if (api && api->device_count(why) > 0) {
    gpu::TrainDeviceOptions o;
    o.precision = gpu::GpuPrecision::fp32;  // the oracle's math, as test_cuda_engine runs it
    dev = api->open_train_device(o);
    register_backend("cuda0", [dev](const ir::Graph& g, engine::ParamStore& store) { return dev->executor(g, store, {}); });
  } else {
    std::fprintf(stderr, "bench_model_cases: no CUDA backend (%s)\n", why.c_str());
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
