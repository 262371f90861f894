// CPU microbenchmarks (used by the registry).
#pragma once
#include <vector>

#include "bench/registry.hpp"

namespace gpuvs::bench {

std::size_t stream_elements(const BenchOptions& opt);
/// copy, scale, add, triad: run together because each self-checks the sequence's result.
std::vector<Measurement> stream_benchmarks(const BenchOptions& opt);
Measurement fma_peak(const BenchOptions& opt);
Measurement sgemm(const BenchOptions& opt, int threads, const std::string& key);

}  // namespace gpuvs::bench
