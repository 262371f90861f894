// SPDX-License-Identifier: Apache-2.0
// Precision policies: which element type activations and weights have, and which tensor-core rate the
// matrix work runs at, for each policy on a given device. A policy the device cannot run is an InputError.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "catalog/catalog.hpp"
#include "ir/ir.hpp"

namespace gpuvs::perf {

enum class Precision { fp32, tf32, fp16, bf16, amp_fp16, amp_bf16, amp_fp8 };

/// gpuvs's names, and the names users type for the same thing: PyTorch's dtypes (float32, float16 and half,
/// bfloat16) for the pure types, `amp` for amp-fp16, `fp8` for amp-fp8. InputError listing the valid names.
Precision parse_precision(std::string_view s);
/// A name as parse_precision reads it, in gpuvs's spelling ("bfloat16" -> "bf16"); text it does not know unchanged.
std::string canonical_precision_name(std::string_view s);
std::string_view precision_name(Precision p);

/// The precision gpuvs assumes when a request names none, on every command: bf16 mixed precision (FP32 master
/// weights), or fp16 mixed precision on a card without BF16 tensor math (before Ampere), as frameworks' AMP does.
Precision default_precision(const catalog::Gpu& gpu);
/// The rule above in words, for the headers and JSON that say what a command assumed.
inline constexpr const char* kDefaultPrecisionRule = "amp-bf16; amp-fp16 on a card without BF16";
/// `named` when the request named one (a card that lacks it is the caller's error), else default_precision.
Precision precision_on(const std::optional<Precision>& named, const catalog::Gpu& gpu);
/// What a card runs when a command resolves a user's request on it, one rule for predict, compare, advise and
/// evaluate: `wanted` where the card has it, else the nearest it has with more bits (amp-bf16 and amp-fp8 ->
/// amp-fp16, bf16 -> fp16), `note` saying so ("the nearest to amp-fp8 that a100-80gb-sxm runs"); nullopt when it runs neither (tf32 before Ampere). predict() itself
/// prices only what it is asked: a published row in a precision its card lacks is unsupported, never re-priced.
std::optional<Precision> precision_run(Precision wanted, const catalog::Gpu& gpu, std::string* note);

struct PrecisionPlan {
  Precision precision;
  ir::DType activations;  // element type of activations, weights as the math reads them, gradients
  bool fp32_master = false;  // AMP: fp32 master weights, fp32 gradients and Adam states
  double matrix_tflops = 0;  // dense peak the matrix work runs at (FP32 accumulate for fp16/bf16/fp8)
  double vector_tflops = 0;  // CUDA-core FP32 rate for elementwise work
  bool tensor_cores = false;
  std::string matrix_unit;   // e.g. "BF16 tensor, FP32 accumulate"
};

/// The plan for `p` on `gpu`. fp32 means no tensor cores (PyTorch with TF32 off); tf32 is the framework
/// default on Ampere and later. Throws InputError when the device lacks the precision (fp8 on an A100,
/// bf16 on a V100, tf32 before Ampere).
PrecisionPlan plan_precision(Precision p, const catalog::Gpu& gpu);

}  // namespace gpuvs::perf
