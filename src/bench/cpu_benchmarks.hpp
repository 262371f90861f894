// SPDX-License-Identifier: Apache-2.0
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
/// BF16 inputs, FP32 output, through oneDNN on `threads` threads.
Measurement gemm_bf16(const BenchOptions& opt, int threads);

}  // namespace gpuvs::bench
