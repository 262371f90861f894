// Precision policies: which element type activations and weights have, and which tensor-core rate the
// matrix work runs at, for each policy on a given device. A policy the device cannot run is an InputError.
#pragma once
#include <string>
#include <string_view>

#include "catalog/catalog.hpp"
#include "ir/ir.hpp"

namespace gpuvs::perf {

enum class Precision { fp32, tf32, fp16, bf16, amp_fp16, amp_bf16, amp_fp8 };

Precision parse_precision(std::string_view s);  // InputError listing the valid names
std::string_view precision_name(Precision p);

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
