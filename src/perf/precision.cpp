// SPDX-License-Identifier: Apache-2.0
#include "perf/precision.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::perf {

std::string canonical_precision_name(std::string_view s) {
  const std::string v = strings::lower(s);
  if (v == "float32") return "fp32";
  if (v == "float16" || v == "half") return "fp16";
  if (v == "bfloat16") return "bf16";
  return std::string(s);
}

Precision default_precision(const catalog::Gpu& gpu) { return gpu.bf16.present() ? Precision::amp_bf16 : Precision::amp_fp16; }

Precision precision_on(const std::optional<Precision>& named, const catalog::Gpu& gpu) { return named ? *named : default_precision(gpu); }

std::optional<Precision> precision_run(Precision wanted, const catalog::Gpu& gpu, std::string* note) {
  const auto runs = [&](Precision p) {
    try {
      (void)plan_precision(p, gpu);
      return true;
    } catch (const InputError&) {
      return false;
    }
  };
  if (runs(wanted)) return wanted;
  const Precision fallback = wanted == Precision::amp_bf16 || wanted == Precision::amp_fp8 ? Precision::amp_fp16
                             : wanted == Precision::bf16                                    ? Precision::fp16
                                                                                            : wanted;
  if (fallback == wanted || !runs(fallback)) return std::nullopt;
  if (note) *note = fmt::format("the nearest to {} that {} runs", precision_name(wanted), gpu.id);
  return fallback;
}

Precision parse_precision(std::string_view s) {
  const std::string v = strings::lower(canonical_precision_name(s));
  if (v == "fp32") return Precision::fp32;
  if (v == "tf32") return Precision::tf32;
  if (v == "fp16") return Precision::fp16;
  if (v == "bf16") return Precision::bf16;
  if (v == "amp-fp16" || v == "amp") return Precision::amp_fp16;
  if (v == "amp-bf16") return Precision::amp_bf16;
  if (v == "amp-fp8" || v == "fp8") return Precision::amp_fp8;
  throw InputError(fmt::format("unknown precision '{}' (expected fp32, tf32, fp16, bf16, amp-fp16, amp-bf16, amp-fp8; "
                               "float32, float16, half, bfloat16 are read as fp32, fp16, fp16, bf16)",
                               strings::printable(s)));
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::amp_fp16: return "amp-fp16";
    case Precision::amp_bf16: return "amp-bf16";
    case Precision::amp_fp8: return "amp-fp8";
  }
  return "?";
}

PrecisionPlan plan_precision(Precision p, const catalog::Gpu& gpu) {
  PrecisionPlan plan;
  plan.precision = p;
  plan.vector_tflops = gpu.fp32_tflops;
  auto need = [&](const catalog::Peak& peak, const char* what) {
    if (!peak.present())
      throw InputError(fmt::format("{} ({}) has no {} tensor math, so --precision {} cannot run on it", gpu.id,
                                   gpu.arch, what, precision_name(p)));
    return *peak.dense;
  };
  switch (p) {
    case Precision::fp32:
      plan.activations = ir::DType::f32;
      plan.matrix_tflops = gpu.fp32_tflops;
      plan.matrix_unit = "FP32 CUDA cores (no tensor cores)";
      break;
    case Precision::tf32:
      plan.activations = ir::DType::f32;
      plan.matrix_tflops = need(gpu.tf32, "TF32");
      plan.tensor_cores = true;
      plan.matrix_unit = "TF32 tensor, FP32 accumulate";
      break;
    case Precision::fp16:
    case Precision::amp_fp16:
      plan.activations = ir::DType::f16;
      plan.matrix_tflops = need(gpu.fp16_fp32acc, "FP16");
      plan.tensor_cores = true;
      plan.fp32_master = p == Precision::amp_fp16;
      plan.matrix_unit = "FP16 tensor, FP32 accumulate";
      break;
    case Precision::bf16:
    case Precision::amp_bf16:
      plan.activations = ir::DType::bf16;
      plan.matrix_tflops = need(gpu.bf16, "BF16");
      plan.tensor_cores = true;
      plan.fp32_master = p == Precision::amp_bf16;
      plan.matrix_unit = "BF16 tensor, FP32 accumulate";
      break;
    case Precision::amp_fp8:
      // FP8 inside the matrix units (Transformer Engine style); activations between ops stay BF16.
      plan.activations = ir::DType::bf16;
      plan.matrix_tflops = need(gpu.fp8_fp32acc, "FP8");
      plan.tensor_cores = true;
      plan.fp32_master = true;
      plan.matrix_unit = "FP8 tensor, FP32 accumulate";
      break;
  }
  return plan;
}

}  // namespace gpuvs::perf
