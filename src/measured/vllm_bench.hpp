// SPDX-License-Identifier: Apache-2.0
// vLLM's serving benchmark (benchmarks/benchmark_serving.py; `vllm bench serve` in later releases): the result
// block it prints ("============ Serving Benchmark Result ============", one per run, with the request rate and
// concurrency lines printed before it where the release prints them) and the JSON `--save-result` writes. One
// Measurement per run: mode infer, output tokens/s over the run, the mean prompt and output lengths (total tokens
// over successful requests), the requests in flight (--max-concurrency where set, else every request at once,
// which is what the default request rate "inf" does), and the TTFT, TPOT, ITL and E2EL statistics it printed.
// Neither names the GPU, and the printed block names no model: a --measured spec with file= says them.
// SGLang's bench_serving (python/sglang/bench_serving.py, adapted from vLLM's) prints the same block with its
// backend, request rate and concurrency inside it ("Max request concurrency: not set"), and appends each run to
// its --output-file as one JSON object a line: both read here, as tool "sglang-bench-serving" and, for its
// sglang backends, framework "sglang".
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// True when `text` holds a result block of vLLM's serving benchmark, or is the JSON it saves (an object with
/// "output_throughput" and "total_output_tokens").
bool looks_like_vllm_bench(const std::string& text);

/// The runs in `text` (named `where`). InputError "WHERE:LINE: ..." naming the field for a block or JSON without
/// the successful requests, token totals or output throughput, a figure that is not a finite number, no
/// successful request, or a run paced below what the server could take (a finite request rate the server kept up
/// with: its throughput is the pacing's, not the stack's).
std::vector<Measurement> read_vllm_bench(const std::string& text, const std::string& where);

}  // namespace gpuvs::measured
