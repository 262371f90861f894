// SPDX-License-Identifier: Apache-2.0
// llama.cpp's `llama-bench` output in each of its formats (`-o md|csv|json|jsonl|sql`, tools/llama-bench in
// the llama.cpp repository), told apart by their first bytes: one Measurement per test row. Every format
// gives the model, its size and parameters, the backend, the test (pp N, tg N, pp N+tg M, at a depth) and
// tokens per second with their standard deviation; csv, json, jsonl and sql add the GPU's name, layers
// offloaded, threads, batch sizes and (json, jsonl) each repetition. Old schemas (cuda/metal flags instead of
// `backends`) read too.
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// The measurements in `text` (a llama-bench output file named `where`). InputError "WHERE:LINE: ..." naming
/// the record and field for anything else: not llama-bench output, a missing or malformed field, a figure that
/// is not a positive finite number, a test it cannot tell.
std::vector<Measurement> read_llama_bench(const std::string& text, const std::string& where);

/// llama.cpp's model type text ("llama 7B Q4_K - Medium", "llama 7B mostly Q4_0", "qwen2 7B F16") to gpuvs's
/// weight-format spelling ("q4_k_m", "q4_0", "f16"); empty when the text names none it knows.
std::string quant_of_model_type(const std::string& model_type);

}  // namespace gpuvs::measured
