// SPDX-License-Identifier: Apache-2.0
// The arithmetic of the CUDA engine's kernels, written once for host and device (__host__ __device__ under
// nvcc, plain inline functions otherwise) so the host test suite checks it against the CPU oracle's
// kernels even where no GPU is present: the Philox dropout layout, the Keras Adam step, the fused softmax
// cross-entropy row, argmax accuracy, activations and their gradients. The kernels only add indexing.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define GPUVS_HD __host__ __device__ __forceinline__
#else
#define GPUVS_HD inline
#endif

namespace gpuvs::engine::cuda::math {

/// Philox-4x32-10 (Salmon et al. 2011), the same function as gpuvs::Philox4x32::block.
struct Words4 {
  std::uint32_t w[4];
};
GPUVS_HD Words4 philox(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

/// The 16-bit dropout draw for element i of a (seed, stream) mask, in the CPU layout: group g = i / 128
/// uses Philox blocks 16g..16g+15; element e = i % 128 takes block 16g + e % 16, word (e / 16) % 4,
/// 16-bit half e / 64 (engine/cpu/kernels.hpp).
GPUVS_HD std::uint16_t dropout_draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const std::uint64_t g = i / 128, e = i % 128;
  const std::uint64_t block = 16 * g + e % 16;
  const Words4 b = philox(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), static_cast<std::uint32_t>(stream),
                          static_cast<std::uint32_t>(stream >> 32), static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  return static_cast<std::uint16_t>(b.w[(e / 16) % 4] >> (16 * (e / 64)));
}

/// round(rate * 65536): an element is kept when its draw is at least this.
GPUVS_HD std::uint32_t dropout_threshold(double rate) { return static_cast<std::uint32_t>(std::llround(rate * 65536.0)); }

/// Keras Adam for one element, the CPU kernel's operation order (so float results match bit for bit).
GPUVS_HD void adam_element(float& p, float g, float& m, float& v, float alpha, float one_b1, float one_b2, float eps) {
  const float mi = m + (g - m) * one_b1;
  const float vi = v + (g * g - v) * one_b2;
  m = mi;
  v = vi;
  p -= mi * alpha / (sqrtf(vi) + eps);
}

/// alpha = lr sqrt(1 - b2^t) / (1 - b1^t) for step t = iteration + 1, in double as the CPU computes it.
GPUVS_HD float adam_alpha(double lr, double b1, double b2, std::int64_t iteration) {
  const double t = static_cast<double>(iteration + 1);
  return static_cast<float>(lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t)));
}

/// Stable softmax of one row into p, returning that row's cross-entropy loss -log p[label].
GPUVS_HD double softmax_xent_row(const float* z, std::int32_t label, float* p, std::int64_t cols) {
  float mx = z[0];
  for (std::int64_t j = 1; j < cols; ++j) mx = z[j] > mx ? z[j] : mx;
  float sum = 0;
  for (std::int64_t j = 0; j < cols; ++j) {
    p[j] = expf(z[j] - mx);
    sum += p[j];
  }
  const float inv = 1.0f / sum;
  for (std::int64_t j = 0; j < cols; ++j) p[j] *= inv;
  return static_cast<double>(logf(sum) - (z[label] - mx));
}

/// dlogits of one element: p * s, minus s at the label, with s = dloss / rows (the CPU's order).
GPUVS_HD float softmax_xent_grad(float dloss, float p, bool is_label, std::int64_t rows) {
  const float s = dloss / static_cast<float>(rows);
  const float d = p * s;
  return is_label ? d - s : d;
}

/// 1 when the first maximum of the row is the label (tf.argmax's tie rule), else 0.
GPUVS_HD int argmax_hit(const float* z, std::int32_t label, std::int64_t cols) {
  std::int64_t arg = 0;
  for (std::int64_t j = 1; j < cols; ++j)
    if (z[j] > z[arg]) arg = j;
  return arg == label ? 1 : 0;
}

/// Dynamic loss scaling (fp16): after a step whose gradients had an inf/NaN the scale halves and the
/// update is skipped; after `interval` good steps in a row it doubles. TensorFlow's and PyTorch's rule.
struct LossScale {
  float scale;
  int good_steps;
  int found_nonfinite;  // set by the step's gradient check, cleared when the next step starts
  int skipped;          // steps skipped so far
};
GPUVS_HD void update_loss_scale(LossScale& s, int interval) {
  if (s.found_nonfinite) {
    s.scale = s.scale * 0.5f < 1.0f ? 1.0f : s.scale * 0.5f;
    s.good_steps = 0;
    ++s.skipped;
  } else if (++s.good_steps >= interval) {
    s.scale *= 2.0f;
    s.good_steps = 0;
  }
}

/// Float to bfloat16 bits, round to nearest even (NaN kept a NaN).
GPUVS_HD std::uint16_t to_bf16_bits(float f) {
  std::uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu)) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/// Which of `count` concatenated tensors holds flattened index i: the last whose `offset` is <= i (the
/// multi-tensor Adam launch walks every tensor's elements as one range).
template <class T>
GPUVS_HD int segment_of(const T* tensors, int count, std::int64_t i) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tensors[mid].offset <= i) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/// What a step's kernels read instead of arguments, so a captured CUDA graph replays them: the dropout
/// seed and the optimizer step index (Adam's t - 1, the dropout stream).
struct StepState {
  std::uint64_t seed;
  std::int64_t iteration;
};

/// A queued phase's running sums on the device (Executor::StepTotals) and the executor's cursor
/// into the epoch's row order.
struct RunningTotals {
  double loss;      // sum of loss x rows
  double accuracy;  // sum of accuracy x rows
  std::int64_t rows;
  std::int64_t steps;
  std::int64_t cursor;                     // offset of the next batch's first row in the epoch order (minus the executor's own offset)
  std::int64_t first_nonfinite_iteration;  // -1: none yet
  float nonfinite_loss;
};

/// The end of a queued step (one device thread): its loss and accuracy into the totals (the first inf/NaN
/// loss remembered), the cursor on by `stride` rows, and for a training step (`trains`: it updated the
/// weights) the step index on by one; evaluation steps leave it.
GPUVS_HD void end_step(StepState& s, RunningTotals& t, float loss, float accuracy, std::int64_t rows, std::int64_t stride, bool trains) {
  if (!(loss - loss == 0.0f) && t.first_nonfinite_iteration < 0) {  // inf - inf and NaN - NaN are NaN
    t.first_nonfinite_iteration = s.iteration;
    t.nonfinite_loss = loss;
  }
  t.loss += static_cast<double>(loss) * static_cast<double>(rows);
  t.accuracy += static_cast<double>(accuracy) * static_cast<double>(rows);
  t.rows += rows;
  ++t.steps;
  t.cursor += stride;
  if (trains) ++s.iteration;
}

enum class Act : int { none = 0, relu = 1, tanh = 2, sigmoid = 3, gelu = 4 };

GPUVS_HD float activate(float x, Act a) {
  switch (a) {
    case Act::relu: return x > 0 ? x : 0.0f;
    case Act::tanh: return tanhf(x);
    case Act::sigmoid: return 1.0f / (1.0f + expf(-x));
    case Act::gelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    default: return x;
  }
}

}  // namespace gpuvs::engine::cuda::math
