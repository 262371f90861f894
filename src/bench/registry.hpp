// SPDX-License-Identifier: Apache-2.0
// The microbenchmark registry: each benchmark has a stable key, a description, a unit, an applicability
// check ("waived: reason"), a run and a self-check. Every figure is the median of repetitions after a
// warm-up, with its spread; GB = 1e9 bytes.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::bench {

struct BenchOptions {
  bool quick = false;
  int threads = 0;  // 0: every core
  std::optional<int> device;  // CUDA ordinal for GPU benchmarks; default 0
};

struct Measurement {
  std::string key, description, unit;
  std::string status = "ok";  // ok | FAILED | waived
  std::string note;           // why waived or failed; sizes and conventions
  double median = 0, min = 0, max = 0, spread = 0;  // spread: median absolute deviation / median
  int repetitions = 0;
  std::optional<double> spec;  // the catalog's figure for this device, in the same unit, and what it is
  std::string spec_what;
  std::string device;          // what ran it: "cpu" or "cuda:0 H200 (h200-sxm)"
  std::vector<std::pair<std::string, std::string>> env;  // GPU clocks, power, temperature, throttle reasons
  std::string detail;          // extra rows (sweeps, peer matrix)
  std::optional<double> pct_of_spec() const { return spec && *spec > 0 && status == "ok" ? std::optional(100 * median / *spec) : std::nullopt; }
};

struct Benchmark {
  std::string key, description, unit;
  std::function<std::optional<std::string>()> waived;  // reason, or nullopt when it can run here
  std::function<Measurement(const BenchOptions&)> run;
};

const std::vector<Benchmark>& registry();
/// Runs the benchmarks whose keys are listed (all when empty). Unknown keys: InputError listing the valid ones.
std::vector<Measurement> run_benchmarks(const std::vector<std::string>& keys, const BenchOptions& opt);

}  // namespace gpuvs::bench
