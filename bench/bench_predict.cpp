// `gpuvs predict` must answer in under 100 ms for any preset: graph build + pricing + memory, per preset.
#include <benchmark/benchmark.h>

#include "catalog/catalog.hpp"
#include "graph/networks.hpp"
#include "perf/predict.hpp"

using namespace gpuvs;

static void BM_Predict(benchmark::State& state) {
  const auto& net = graph::networks()[static_cast<std::size_t>(state.range(0))];
  const catalog::Catalog cat = catalog::Catalog::builtin();
  perf::PredictRequest r;
  r.workload = net.id;
  r.gpu = "h100-sxm";
  r.batch = net.family == "decoder" ? 1 : 32;
  double tput = 0;
  for (auto _ : state) {
    const perf::Prediction p = perf::predict(cat, r);
    // A const lvalue: Google Benchmark 1.7.1's read-write DoNotOptimize can clobber a double.
    const double t = p.throughput;
    benchmark::DoNotOptimize(t);
    tput = t;
  }
  if (state.iterations() > 0 && !(tput > 0)) state.SkipWithError("no throughput");
  state.SetLabel(net.id);
}
BENCHMARK(BM_Predict)->DenseRange(0, static_cast<int>(graph::networks().size()) - 1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
