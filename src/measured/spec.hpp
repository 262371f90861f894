// SPDX-License-Identifier: Apache-2.0
// A measurement typed on the command line, for a figure no file holds:
//   --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=112 tokens/s'
//   --measured 'gpu=h100-sxm;workload=llama3-8b;mode=infer;precision=bf16;framework=trt-llm;prompt_len=128;gen_len=128;value=16116 tokens/s'
//   --measured 'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=256;value=905 images/s'
// Keys: gpu, workload, mode and value (required); precision (a gpuvs precision or weight format), prompt_len,
// gen_len, batch (sequences per step; whole requests in flight for mode infer; per GPU for mode train), gpus,
// framework, spread (the figure's standard deviation, in its unit). With file=PATH the figures come from a tool's
// output (llama-bench, vLLM's serving benchmark, trtllm-bench, nccl-tests) and the spec says only what that output does not:
//   --measured 'file=vllm-result.json;gpu=a100-80gb-sxm;workload=llama3-8b;precision=bf16'
// (gpu, workload, precision, framework, gpus, and batch for the requests a server held at once). A mode infer figure is output tokens/s, a
// mode train figure the run's total over its gpus. Names are kept as typed: which card, workload and precision they
// are is resolved by the command that uses them.
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// The measurement `spec` states. InputError "--measured: ..." naming the key for an unknown or repeated key, a
/// missing one, a mode gpuvs does not price, or a value that is not a positive number with a known unit.
Measurement read_measured_spec(const std::string& spec);

/// A tool's output (`text`, read from `where`): llama-bench, vLLM's or SGLang's serving benchmark, trtllm-bench, nccl-tests,
/// nvbandwidth or a TensorBoard event file, told apart by their contents; the reader's InputError for anything else.
std::vector<Measurement> read_measured_output(const std::string& text, const std::string& where);

/// `m` (read from spec.file) completed by what `spec` says: its gpu, workload, precision and framework where the
/// output named none, its gpus and batch. InputError "WHERE: ..." where the output says otherwise (a GPU it
/// named, a model it ran).
void complete_from_spec(Measurement& m, const Measurement& spec);

/// True when `text` reads as a spec rather than a file name (it holds '=').
bool looks_like_spec(const std::string& text);

}  // namespace gpuvs::measured
