// SPDX-License-Identifier: Apache-2.0
// CUDA kernels of the engine's non-GEMM ops. Their arithmetic is device_math.hpp's (checked on the host
// against the CPU oracle); these add only the indexing. All run on the caller's stream.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/device_math.hpp"

namespace gpuvs::engine::cuda {

using math::StepState;
using math::RunningTotals;

/// One tensor of the multi-tensor Adam update.
struct AdamTensor {
  float* p;
  const float* g;
  float* m;
  float* v;
  std::int64_t n;
  std::int64_t offset;  // first flattened index of this tensor
};

void launch_fill(float* y, std::int64_t n, float value, cudaStream_t s);
void launch_activation(const float* x, float* y, std::int64_t n, math::Act act, cudaStream_t s);
/// dx = dy * act'(saved) (saved = y for relu/tanh/sigmoid, x for gelu).
void launch_activation_grad(const float* dy, const float* saved, float* dx, std::int64_t n, math::Act act, cudaStream_t s);
void launch_dropout(const float* x, float* y, std::uint8_t* mask, std::int64_t n, double rate, const StepState* step,
                    std::uint64_t node, cudaStream_t s);
void launch_dropout_grad(const float* dy, const std::uint8_t* mask, float* dx, std::int64_t n, double rate, cudaStream_t s);
/// probs and the mean loss (written to *loss) of a [rows, cols] logits matrix; row_loss is scratch [rows].
/// Up to 4,096 rows one launch does it all; the sums are the same either way.
void launch_softmax_xent(const float* logits, const std::int32_t* labels, float* probs, double* row_loss, float* loss,
                         std::int64_t rows, std::int64_t cols, cudaStream_t s);
void launch_softmax_xent_grad(const float* dloss, const float* probs, const std::int32_t* labels, float* dlogits,
                              std::int64_t rows, std::int64_t cols, cudaStream_t s);
void launch_softmax(const float* x, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t s);
void launch_accuracy(const float* logits, const std::int32_t* labels, double* row_hit, float* acc, std::int64_t rows,
                     std::int64_t cols, cudaStream_t s);
/// y[j] = sum_i x[i, j]: 8 interleaved partial sums per column, added in a fixed order (deterministic;
/// FP32 rounding differs from the CPU's row-order sum).
void launch_reduce_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t s);
void launch_add(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t s);
/// 16-bit copies of FP32 tensors for AMP GEMMs (bf16 when `bf16`, else fp16), round to nearest even.
void launch_cast16(const float* x, void* y, std::int64_t n, bool bf16, cudaStream_t s);
/// AMP fp16: multiply the loss gradient by the loss scale (device memory) before the backward pass.
void launch_scale_by(float* x, std::int64_t n, const math::LossScale* scale, cudaStream_t s);
/// Sets scale->found_nonfinite when any gradient element is inf or NaN.
void launch_check_finite(const AdamTensor* tensors, int count, std::int64_t total, math::LossScale* scale, cudaStream_t s);
void launch_update_loss_scale(math::LossScale* scale, int interval, cudaStream_t s);
/// x[i, :] = data_x[rows[i], :], y[i] = data_y[rows[i]] for i < count (the batch gathered on the device).
void launch_gather_rows(const float* data_x, const std::int32_t* data_y, const std::int64_t* rows, std::int64_t count,
                        std::int64_t features, float* x, std::int32_t* y, cudaStream_t s);
/// The epoch-bound gather: x[i, :] = data_x[order[offset + t->cursor + i], :] (and the labels) for i < count.
void launch_gather_epoch(const float* data_x, const std::int32_t* data_y, const std::int64_t* order, const RunningTotals* t,
                         std::int64_t offset, std::int64_t count, std::int64_t features, float* x, std::int32_t* y, cudaStream_t s);
/// math::end_step on the device: `loss`/`accuracy` (device scalars; accuracy may be null) into `t`.
void launch_end_step(StepState* state, RunningTotals* t, const float* loss, const float* accuracy, std::int64_t rows, std::int64_t stride,
                     bool trains, cudaStream_t s);
/// Every Adam tensor in one launch; `tensors` is a device array of `count` entries covering `total` elements.
/// With `scale` (AMP fp16) gradients are divided by it and the step is skipped when they were non-finite.
void launch_adam(const AdamTensor* tensors, int count, std::int64_t total, double lr, double b1, double b2, double eps,
                 const StepState* step, const math::LossScale* scale, cudaStream_t s);

}  // namespace gpuvs::engine::cuda
