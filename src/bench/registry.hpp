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
};

struct Measurement {
  std::string key, description, unit;
  std::string status = "ok";  // ok | FAILED | waived
  std::string note;           // why waived or failed; sizes and conventions
  double median = 0, min = 0, max = 0, spread = 0;  // spread: median absolute deviation / median
  int repetitions = 0;
  std::optional<double> reference;  // a comparable figure (spec or peer), with what it is
  std::string reference_what;
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
