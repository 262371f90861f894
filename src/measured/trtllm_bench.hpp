// SPDX-License-Identifier: Apache-2.0
// TensorRT-LLM's `trtllm-bench throughput` report: the sections it prints when a run ends (ENGINE DETAILS or
// PYTORCH BACKEND, REQUEST DETAILS, WORLD + RUNTIME INFORMATION, STATISTICS or PERFORMANCE OVERVIEW), read from a
// pasted log whatever the lines around them. One Measurement per run: mode infer, output tokens/s (0.12's "Token
// Throughput", later releases' "Total Output Throughput"), the average prompt and output lengths, the requests in
// flight (the average concurrency later releases print, else every request at once up to the runtime's batch
// limit), the tensor-parallel size, the weight format from the quantization and dtype, the model as named, the
// TensorRT-LLM version, and the TTFT and TPOT figures where printed. The report never names the GPU.
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// True when `text` holds a trtllm-bench report (a "= ENGINE DETAILS" or "= PYTORCH BACKEND" section header and a
/// throughput line).
bool looks_like_trtllm_bench(const std::string& text);

/// The runs in `text` (named `where`). InputError "WHERE:LINE: ..." naming the field for a run without its
/// request count, lengths or output throughput, a figure that is not a finite number, a pipeline-parallel run
/// (not priced), or one issued at a rate the engine kept up with (its throughput is the rate's).
std::vector<Measurement> read_trtllm_bench(const std::string& text, const std::string& where);

}  // namespace gpuvs::measured
