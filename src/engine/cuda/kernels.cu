// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/kernels.cuh"

#include <cuda_fp16.h>

namespace gpuvs::engine::cuda {

namespace {

constexpr int kThreads = 256;
unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

#define GRID_STRIDE(i, n) for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(gridDim.x) * blockDim.x)

__global__ void fill_k(float* y, std::int64_t n, float v) {
  GRID_STRIDE(i, n) y[i] = v;
}

__global__ void activation_k(const float* x, float* y, std::int64_t n, math::Act a) {
  GRID_STRIDE(i, n) y[i] = math::activate(x[i], a);
}

__device__ float act_grad(float saved, math::Act a) {
  switch (a) {
    case math::Act::relu: return saved > 0 ? 1.0f : 0.0f;
    case math::Act::tanh: return 1.0f - saved * saved;
    case math::Act::sigmoid: return saved * (1.0f - saved);
    case math::Act::gelu: {
      const float cdf = 0.5f * (1.0f + erff(saved * 0.70710678118654752f));
      const float pdf = expf(-0.5f * saved * saved) * 0.39894228040143268f;
      return cdf + saved * pdf;
    }
    default: return 1.0f;
  }
}

__global__ void activation_grad_k(const float* dy, const float* saved, float* dx, std::int64_t n, math::Act a) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * act_grad(saved[i], a);
}

__global__ void dropout_k(const float* x, float* y, std::uint8_t* mask, std::int64_t n, std::uint32_t threshold, float scale,
                          const StepState* step, std::uint64_t node) {
  const std::uint64_t seed = step->seed;
  const std::uint64_t stream = (static_cast<std::uint64_t>(step->iteration) << 20) | node;  // as the CPU executor
  GRID_STRIDE(i, n) {
    const bool keep = math::dropout_draw(seed, stream, static_cast<std::uint64_t>(i)) >= threshold;
    mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * scale : 0.0f;
  }
}

__global__ void dropout_grad_k(const float* dy, const std::uint8_t* mask, float* dx, std::int64_t n, float scale) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * (static_cast<float>(mask[i]) * scale);
}

__global__ void softmax_xent_rows_k(const float* z, const std::int32_t* labels, float* p, double* row_loss, std::int64_t rows,
                                    std::int64_t cols) {
  GRID_STRIDE(r, rows) row_loss[r] = math::softmax_xent_row(z + r * cols, labels[r], p + r * cols, cols);
}

__global__ void softmax_rows_k(const float* z, float* y, std::int64_t rows, std::int64_t cols) {
  GRID_STRIDE(r, rows) {
    const float* x = z + r * cols;
    float* o = y + r * cols;
    float mx = x[0];
    for (std::int64_t j = 1; j < cols; ++j) mx = x[j] > mx ? x[j] : mx;
    float sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += (o[j] = expf(x[j] - mx));
    for (std::int64_t j = 0; j < cols; ++j) o[j] /= sum;
  }
}

// The mean of per-thread partial sums over one block, in a fixed tree order: deterministic run to run.
__device__ void block_mean(double s, std::int64_t n, float* out) {
  __shared__ double part[kThreads];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = static_cast<float>(part[0] / static_cast<double>(n));
}

// Mean of a per-row double vector in one block: thread t sums rows t, t + 256, ... in order.
__global__ void mean_k(const double* v, std::int64_t n, float* out) {
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
  block_mean(s, n, out);
}

// Small batches: rows and mean in one block and one launch, each thread taking the rows mean_k would give
// it, so the result is the two-launch path's to the bit.
constexpr std::int64_t kFusedRows = 4096;
__global__ void softmax_xent_fused_k(const float* z, const std::int32_t* labels, float* p, std::int64_t rows, std::int64_t cols,
                                     float* loss) {
  double s = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += math::softmax_xent_row(z + r * cols, labels[r], p + r * cols, cols);
  block_mean(s, rows, loss);
}

__global__ void accuracy_fused_k(const float* z, const std::int32_t* labels, std::int64_t rows, std::int64_t cols, float* acc) {
  double s = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += math::argmax_hit(z + r * cols, labels[r], cols);
  block_mean(s, rows, acc);
}

__global__ void softmax_xent_grad_k(const float* dloss, const float* p, const std::int32_t* labels, float* d, std::int64_t rows,
                                    std::int64_t cols) {
  const float dl = *dloss;
  GRID_STRIDE(i, rows * cols) {
    const std::int64_t r = i / cols, j = i % cols;
    d[i] = math::softmax_xent_grad(dl, p[i], j == labels[r], rows);
  }
}

__global__ void accuracy_rows_k(const float* z, const std::int32_t* labels, double* hit, std::int64_t rows, std::int64_t cols) {
  GRID_STRIDE(r, rows) hit[r] = math::argmax_hit(z + r * cols, labels[r], cols);
}

// Column sums with the rows split over kRowGroups threads per column (32 columns a block, coalesced loads):
// each thread sums every kRowGroups-th row, then the group's partial sums are added in group order, so the
// result is the same run to run. A thread per column summing all rows would wait on one load after another.
constexpr int kColumns = 32, kRowGroups = kThreads / kColumns;
__global__ void reduce_rows_k(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  __shared__ float part[kRowGroups][kColumns];
  const int tx = static_cast<int>(threadIdx.x) % kColumns, ty = static_cast<int>(threadIdx.x) / kColumns;
  for (std::int64_t j0 = std::int64_t(blockIdx.x) * kColumns; j0 < cols; j0 += std::int64_t(gridDim.x) * kColumns) {
    const std::int64_t j = j0 + tx;
    float s = 0;
    if (j < cols)
      for (std::int64_t i = ty; i < rows; i += kRowGroups) s += x[i * cols + j];
    part[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && j < cols) {
      float t = part[0][tx];
      for (int g = 1; g < kRowGroups; ++g) t += part[g][tx];
      y[j] = t;
    }
    __syncthreads();
  }
}

__global__ void add_k(const float* a, const float* b, float* y, std::int64_t n) {
  GRID_STRIDE(i, n) y[i] = a[i] + b[i];
}

__device__ int tensor_of(const AdamTensor* t, int count, std::int64_t i) { return math::segment_of(t, count, i); }

__global__ void cast16_k(const float* x, std::uint16_t* y, std::int64_t n, bool bf16) {
  GRID_STRIDE(i, n) {
    if (bf16) {
      y[i] = math::to_bf16_bits(x[i]);
    } else {
      const __half h = __float2half_rn(x[i]);
      y[i] = __half_as_ushort(h);
    }
  }
}

__global__ void scale_by_k(float* x, std::int64_t n, const math::LossScale* s) {
  const float k = s->scale;
  GRID_STRIDE(i, n) x[i] *= k;
}

__global__ void check_finite_k(const AdamTensor* t, int count, std::int64_t total, math::LossScale* s) {
  GRID_STRIDE(i, total) {
    const AdamTensor& a = t[tensor_of(t, count, i)];
    if (!isfinite(a.g[i - a.offset])) s->found_nonfinite = 1;
  }
}

__global__ void update_loss_scale_k(math::LossScale* s, int interval) { math::update_loss_scale(*s, interval); }

__global__ void adam_k(const AdamTensor* t, int count, std::int64_t total, double lr, double b1, double b2, double eps,
                       const StepState* step, const math::LossScale* scale) {
  if (scale && scale->found_nonfinite) return;  // a skipped step: the params keep their values
  const float unscale = scale ? 1.0f / scale->scale : 1.0f;
  const float alpha = math::adam_alpha(lr, b1, b2, step->iteration);
  const float one_b1 = static_cast<float>(1.0 - b1), one_b2 = static_cast<float>(1.0 - b2), e = static_cast<float>(eps);
  GRID_STRIDE(i, total) {
    const AdamTensor& a = t[math::segment_of(t, count, i)];
    const std::int64_t k = i - a.offset;
    math::adam_element(a.p[k], a.g[k] * unscale, a.m[k], a.v[k], alpha, one_b1, one_b2, e);
  }
}

__global__ void gather_rows_k(const float* dx, const std::int32_t* dy, const std::int64_t* rows, std::int64_t count, std::int64_t f,
                              float* x, std::int32_t* y) {
  GRID_STRIDE(i, count * f) {
    const std::int64_t r = i / f, c = i % f;
    x[i] = dx[rows[r] * f + c];
    if (c == 0) y[r] = dy[rows[r]];
  }
}

__global__ void gather_epoch_k(const float* dx, const std::int32_t* dy, const std::int64_t* order, const RunningTotals* t,
                               std::int64_t offset, std::int64_t count, std::int64_t f, float* x, std::int32_t* y) {
  const std::int64_t* rows = order + offset + t->cursor;
  GRID_STRIDE(i, count * f) {
    const std::int64_t r = i / f, c = i % f;
    x[i] = dx[rows[r] * f + c];
    if (c == 0) y[r] = dy[rows[r]];
  }
}

__global__ void end_step_k(StepState* state, RunningTotals* t, const float* loss, const float* accuracy, std::int64_t rows,
                           std::int64_t stride, bool trains) {
  math::end_step(*state, *t, *loss, accuracy ? *accuracy : 0.0f, rows, stride, trains);
}

}  // namespace

void launch_gather_epoch(const float* data_x, const std::int32_t* data_y, const std::int64_t* order, const RunningTotals* t,
                         std::int64_t offset, std::int64_t count, std::int64_t features, float* x, std::int32_t* y, cudaStream_t s) {
  gather_epoch_k<<<blocks_for(count * features), kThreads, 0, s>>>(data_x, data_y, order, t, offset, count, features, x, y);
}

void launch_end_step(StepState* state, RunningTotals* t, const float* loss, const float* accuracy, std::int64_t rows, std::int64_t stride,
                     bool trains, cudaStream_t s) {
  end_step_k<<<1, 1, 0, s>>>(state, t, loss, accuracy, rows, stride, trains);
}

void launch_gather_rows(const float* data_x, const std::int32_t* data_y, const std::int64_t* rows, std::int64_t count,
                        std::int64_t features, float* x, std::int32_t* y, cudaStream_t s) {
  gather_rows_k<<<blocks_for(count * features), kThreads, 0, s>>>(data_x, data_y, rows, count, features, x, y);
}

void launch_fill(float* y, std::int64_t n, float value, cudaStream_t s) { fill_k<<<blocks_for(n), kThreads, 0, s>>>(y, n, value); }
void launch_activation(const float* x, float* y, std::int64_t n, math::Act act, cudaStream_t s) {
  activation_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, act);
}
void launch_activation_grad(const float* dy, const float* saved, float* dx, std::int64_t n, math::Act act, cudaStream_t s) {
  activation_grad_k<<<blocks_for(n), kThreads, 0, s>>>(dy, saved, dx, n, act);
}
void launch_dropout(const float* x, float* y, std::uint8_t* mask, std::int64_t n, double rate, const StepState* step,
                    std::uint64_t node, cudaStream_t s) {
  dropout_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, mask, n, math::dropout_threshold(rate), 1.0f / (1.0f - static_cast<float>(rate)),
                                               step, node);
}
void launch_dropout_grad(const float* dy, const std::uint8_t* mask, float* dx, std::int64_t n, double rate, cudaStream_t s) {
  dropout_grad_k<<<blocks_for(n), kThreads, 0, s>>>(dy, mask, dx, n, 1.0f / (1.0f - static_cast<float>(rate)));
}
void launch_softmax_xent(const float* logits, const std::int32_t* labels, float* probs, double* row_loss, float* loss,
                         std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  if (rows <= kFusedRows) {
    softmax_xent_fused_k<<<1, kThreads, 0, s>>>(logits, labels, probs, rows, cols, loss);
    return;
  }
  softmax_xent_rows_k<<<blocks_for(rows), kThreads, 0, s>>>(logits, labels, probs, row_loss, rows, cols);
  mean_k<<<1, kThreads, 0, s>>>(row_loss, rows, loss);
}
void launch_softmax_xent_grad(const float* dloss, const float* probs, const std::int32_t* labels, float* dlogits,
                              std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  softmax_xent_grad_k<<<blocks_for(rows * cols), kThreads, 0, s>>>(dloss, probs, labels, dlogits, rows, cols);
}
void launch_softmax(const float* x, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  softmax_rows_k<<<blocks_for(rows), kThreads, 0, s>>>(x, y, rows, cols);
}
void launch_accuracy(const float* logits, const std::int32_t* labels, double* row_hit, float* acc, std::int64_t rows,
                     std::int64_t cols, cudaStream_t s) {
  if (rows <= kFusedRows) {
    accuracy_fused_k<<<1, kThreads, 0, s>>>(logits, labels, rows, cols, acc);
    return;
  }
  accuracy_rows_k<<<blocks_for(rows), kThreads, 0, s>>>(logits, labels, row_hit, rows, cols);
  mean_k<<<1, kThreads, 0, s>>>(row_hit, rows, acc);
}
void launch_reduce_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, cudaStream_t s) {
  const std::int64_t blocks = (cols + kColumns - 1) / kColumns;
  reduce_rows_k<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, s>>>(x, y, rows, cols);
}
void launch_add(const float* a, const float* b, float* y, std::int64_t n, cudaStream_t s) {
  add_k<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n);
}
void launch_adam(const AdamTensor* tensors, int count, std::int64_t total, double lr, double b1, double b2, double eps,
                 const StepState* step, const math::LossScale* scale, cudaStream_t s) {
  adam_k<<<blocks_for(total), kThreads, 0, s>>>(tensors, count, total, lr, b1, b2, eps, step, scale);
}
void launch_cast16(const float* x, void* y, std::int64_t n, bool bf16, cudaStream_t s) {
  cast16_k<<<blocks_for(n), kThreads, 0, s>>>(x, static_cast<std::uint16_t*>(y), n, bf16);
}
void launch_scale_by(float* x, std::int64_t n, const math::LossScale* scale, cudaStream_t s) {
  scale_by_k<<<blocks_for(n), kThreads, 0, s>>>(x, n, scale);
}
void launch_check_finite(const AdamTensor* tensors, int count, std::int64_t total, math::LossScale* scale, cudaStream_t s) {
  check_finite_k<<<blocks_for(total), kThreads, 0, s>>>(tensors, count, total, scale);
}
void launch_update_loss_scale(math::LossScale* scale, int interval, cudaStream_t s) { update_loss_scale_k<<<1, 1, 0, s>>>(scale, interval); }

}  // namespace gpuvs::engine::cuda
