#include "engine/cpu/kernels.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"

namespace gpuvs::engine::cpu {

namespace {
// Below this many elements a parallel region costs more than it saves.
constexpr std::int64_t kParallelMin = 1 << 16;

template <class T>
inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

template <class T>
inline T gelu(T x) { return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440))); }

template <class T>
inline T gelu_grad(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
  const T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);
  return cdf + x * pdf;
}

template <class T>
inline T apply(graph::Act act, T x) {
  switch (act) {
    case graph::Act::none: return x;
    case graph::Act::relu: return x > T(0) ? x : T(0);
    case graph::Act::gelu: return gelu(x);
    case graph::Act::tanh: return std::tanh(x);
    case graph::Act::sigmoid: return sigmoid(x);
  }
  return x;
}
}  // namespace

template <class T>
void bias_act_epilogue(T* c, const T* bias, std::int64_t m, std::int64_t n, graph::Act act) {
  if (bias == nullptr && act == graph::Act::none) return;
#pragma omp parallel for if (m * n >= kParallelMin)
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = c + i * n;
    if (bias)
      for (std::int64_t j = 0; j < n; ++j) row[j] += bias[j];
    if (act == graph::Act::relu) {
      for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] > T(0) ? row[j] : T(0);
    } else if (act != graph::Act::none) {
      for (std::int64_t j = 0; j < n; ++j) row[j] = apply(act, row[j]);
    }
  }
}

template <class T>
void activation_forward(const T* x, T* y, std::int64_t n, graph::Act act) {
  if (act == graph::Act::relu) {
#pragma omp parallel for simd if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
    return;
  }
#pragma omp parallel for if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) y[i] = apply(act, x[i]);
}

template <class T>
void activation_backward(const T* dy, const T* s, T* dx, std::int64_t n, graph::Act act) {
  switch (act) {
    case graph::Act::none:
      std::copy(dy, dy + n, dx);
      return;
    case graph::Act::relu:
#pragma omp parallel for simd if (n >= kParallelMin)
      for (std::int64_t i = 0; i < n; ++i) dx[i] = s[i] > T(0) ? dy[i] : T(0);
      return;
    case graph::Act::tanh:
#pragma omp parallel for simd if (n >= kParallelMin)
      for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (T(1) - s[i] * s[i]);
      return;
    case graph::Act::sigmoid:
#pragma omp parallel for simd if (n >= kParallelMin)
      for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * s[i] * (T(1) - s[i]);
      return;
    case graph::Act::gelu:
#pragma omp parallel for if (n >= kParallelMin)
      for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_grad(s[i]);
      return;
  }
}

template <class T>
void dropout_forward(const T* x, T* y, std::uint8_t* mask, std::int64_t n, double rate, std::uint64_t seed,
                     std::uint64_t stream) {
  const CounterRng rng(seed, stream);
  const auto threshold = static_cast<std::uint32_t>(std::lround(rate * 65536.0));
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
  const std::int64_t blocks = (n + 7) / 8;  // one Philox block = eight 16-bit draws
#pragma omp parallel for if (n >= kParallelMin)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const auto w = rng.block(static_cast<std::uint64_t>(b));
    const std::int64_t base = b * 8;
    const std::int64_t end = std::min<std::int64_t>(8, n - base);
    for (std::int64_t k = 0; k < end; ++k) {
      const std::uint32_t draw = (w[static_cast<std::size_t>(k >> 1)] >> ((k & 1) * 16)) & 0xFFFFu;
      const bool keep = draw >= threshold;
      mask[base + k] = keep ? 1 : 0;
      y[base + k] = keep ? x[base + k] * scale : T(0);
    }
  }
}

template <class T>
void dropout_backward(const T* dy, const std::uint8_t* mask, T* dx, std::int64_t n, double rate) {
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
#pragma omp parallel for simd if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = mask[i] ? dy[i] * scale : T(0);
}

template <class T>
double softmax_xent_forward(const T* logits, const std::int32_t* labels, T* probs, std::int64_t rows,
                            std::int64_t cols) {
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (rows * cols >= kParallelMin)
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* z = logits + i * cols;
    T* p = probs + i * cols;
    T mx = z[0];
    for (std::int64_t j = 1; j < cols; ++j) mx = std::max(mx, z[j]);
    T sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      p[j] = std::exp(z[j] - mx);
      sum += p[j];
    }
    const T inv = T(1) / sum;
    for (std::int64_t j = 0; j < cols; ++j) p[j] *= inv;
    total += static_cast<double>(std::log(sum) - (z[labels[i]] - mx));
  }
  return total / static_cast<double>(rows);
}

template <class T>
void softmax_xent_backward(T dloss, const T* probs, const std::int32_t* labels, T* dlogits, std::int64_t rows,
                           std::int64_t cols) {
  const T scale = dloss / static_cast<T>(rows);
#pragma omp parallel for if (rows * cols >= kParallelMin)
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* p = probs + i * cols;
    T* d = dlogits + i * cols;
    for (std::int64_t j = 0; j < cols; ++j) d[j] = p[j] * scale;
    d[labels[i]] -= scale;
  }
}

template <class T>
void softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* z = x + i * cols;
    T* p = y + i * cols;
    const T mx = *std::max_element(z, z + cols);
    T sum = 0;
    for (std::int64_t j = 0; j < cols; ++j) sum += (p[j] = std::exp(z[j] - mx));
    for (std::int64_t j = 0; j < cols; ++j) p[j] /= sum;
  }
}

template <class T>
double accuracy(const T* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t cols) {
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* z = logits + i * cols;
    // First maximum wins ties, as tf.argmax does.
    const auto arg = std::max_element(z, z + cols) - z;
    hits += arg == labels[i] ? 1 : 0;
  }
  return static_cast<double>(hits) / static_cast<double>(rows);
}

template <class T>
void reduce_rows(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  std::fill(y, y + cols, T(0));
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* r = x + i * cols;
#pragma omp simd
    for (std::int64_t j = 0; j < cols; ++j) y[j] += r[j];
  }
}

template <class T>
void add(const T* a, const T* b, T* y, std::int64_t n) {
#pragma omp parallel for simd if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

template <class T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const graph::AdamConfig& cfg, std::int64_t iteration) {
  const double t = static_cast<double>(iteration + 1);
  const double alpha_d =
      cfg.learning_rate * std::sqrt(1.0 - std::pow(cfg.beta_2, t)) / (1.0 - std::pow(cfg.beta_1, t));
  const T alpha = static_cast<T>(alpha_d);
  const T one_b1 = static_cast<T>(1.0 - cfg.beta_1), one_b2 = static_cast<T>(1.0 - cfg.beta_2);
  const T eps = static_cast<T>(cfg.epsilon);
#pragma omp parallel for simd if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const T gi = g[i];
    const T mi = m[i] + (gi - m[i]) * one_b1;
    const T vi = v[i] + (gi * gi - v[i]) * one_b2;
    m[i] = mi;
    v[i] = vi;
    p[i] -= mi * alpha / (std::sqrt(vi) + eps);
  }
}

#define GPUVS_INSTANTIATE(T)                                                                                      \
  template void bias_act_epilogue<T>(T*, const T*, std::int64_t, std::int64_t, graph::Act);                      \
  template void activation_forward<T>(const T*, T*, std::int64_t, graph::Act);                                   \
  template void activation_backward<T>(const T*, const T*, T*, std::int64_t, graph::Act);                        \
  template void dropout_forward<T>(const T*, T*, std::uint8_t*, std::int64_t, double, std::uint64_t,             \
                                   std::uint64_t);                                                               \
  template void dropout_backward<T>(const T*, const std::uint8_t*, T*, std::int64_t, double);                    \
  template double softmax_xent_forward<T>(const T*, const std::int32_t*, T*, std::int64_t, std::int64_t);        \
  template void softmax_xent_backward<T>(T, const T*, const std::int32_t*, T*, std::int64_t, std::int64_t);      \
  template void softmax_forward<T>(const T*, T*, std::int64_t, std::int64_t);                                    \
  template double accuracy<T>(const T*, const std::int32_t*, std::int64_t, std::int64_t);                        \
  template void reduce_rows<T>(const T*, T*, std::int64_t, std::int64_t);                                        \
  template void add<T>(const T*, const T*, T*, std::int64_t);                                                    \
  template void adam_update<T>(T*, const T*, T*, T*, std::int64_t, const graph::AdamConfig&, std::int64_t);
GPUVS_INSTANTIATE(float)
GPUVS_INSTANTIATE(double)
#undef GPUVS_INSTANTIATE

}  // namespace gpuvs::engine::cpu
