// SPDX-License-Identifier: Apache-2.0
#include "engine/cpu/kernels.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.hpp"

namespace gpuvs::engine::cpu {

namespace {
// Below this much work (elements touched) a parallel region costs more than it saves. Measured on the
// 2-core dev VM: waking the second OpenMP thread costs 20-60 us, while Adam over the seed model's 100 k
// weights takes ~32 us on one core; 128 Ki elements is where two threads start to win.
constexpr std::int64_t kParallelMin = 1 << 17;

// Runs f(begin, end) over [0, n): on the calling thread when `work` is small, else split evenly over the
// OpenMP threads in 16-aligned chunks. The loops inside f are plain and vectorise.
template <class F>
void for_chunks(std::int64_t n, std::int64_t work, F&& f) {
  const int threads = work >= kParallelMin ? omp_get_max_threads() : 1;
  if (threads <= 1) {
    f(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t chunk = ((n + nt - 1) / nt + 15) / 16 * 16;
    const std::int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    if (b < e) f(b, e);
  }
}

// The same for a sum; partial sums are added in thread order (deterministic for a given thread count).
template <class F>
double sum_chunks(std::int64_t n, std::int64_t work, F&& f) {
  const int threads = work >= kParallelMin ? omp_get_max_threads() : 1;
  if (threads <= 1) return f(std::int64_t{0}, n);
  std::vector<double> partial(static_cast<std::size_t>(threads), 0.0);
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const std::int64_t chunk = (n + nt - 1) / nt;
    const std::int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    if (b < e) partial[static_cast<std::size_t>(t)] = f(b, e);
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

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
inline T apply(ir::Act act, T x) {
  switch (act) {
    case ir::Act::none: return x;
    case ir::Act::relu: return x > T(0) ? x : T(0);
    case ir::Act::gelu: return gelu(x);
    case ir::Act::tanh: return std::tanh(x);
    case ir::Act::sigmoid: return sigmoid(x);
    case ir::Act::silu: return x * sigmoid(x);
  }
  return x;
}
}  // namespace

template <class T>
void bias_act_epilogue(T* c, const T* bias, std::int64_t m, std::int64_t n, ir::Act act) {
  if (bias == nullptr && act == ir::Act::none) return;
  for_chunks(m, m * n, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      T* row = c + i * n;
      if (bias)
        for (std::int64_t j = 0; j < n; ++j) row[j] += bias[j];
      if (act == ir::Act::relu) {
        for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] > T(0) ? row[j] : T(0);
      } else if (act != ir::Act::none) {
        for (std::int64_t j = 0; j < n; ++j) row[j] = apply(act, row[j]);
      }
    }
  });
}

template <class T>
void activation_forward(const T* x, T* y, std::int64_t n, ir::Act act) {
  for_chunks(n, n, [=](std::int64_t b, std::int64_t e) {
    if (act == ir::Act::relu) {
      for (std::int64_t i = b; i < e; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
    } else {
      for (std::int64_t i = b; i < e; ++i) y[i] = apply(act, x[i]);
    }
  });
}

template <class T>
void activation_backward(const T* dy, const T* s, T* dx, std::int64_t n, ir::Act act) {
  for_chunks(n, n, [=](std::int64_t b, std::int64_t e) {
    switch (act) {
      case ir::Act::none:
        std::copy(dy + b, dy + e, dx + b);
        return;
      case ir::Act::relu:
        for (std::int64_t i = b; i < e; ++i) dx[i] = s[i] > T(0) ? dy[i] : T(0);
        return;
      case ir::Act::tanh:
        for (std::int64_t i = b; i < e; ++i) dx[i] = dy[i] * (T(1) - s[i] * s[i]);
        return;
      case ir::Act::sigmoid:
        for (std::int64_t i = b; i < e; ++i) dx[i] = dy[i] * s[i] * (T(1) - s[i]);
        return;
      case ir::Act::gelu:
        for (std::int64_t i = b; i < e; ++i) dx[i] = dy[i] * gelu_grad(s[i]);
        return;
      case ir::Act::silu:  // d/dx x*sig(x) = sig(x) * (1 + x * (1 - sig(x)))
        for (std::int64_t i = b; i < e; ++i) {
          const T sg = sigmoid(s[i]);
          dx[i] = dy[i] * sg * (T(1) + s[i] * (T(1) - sg));
        }
        return;
    }
  });
}

template <class T>
void dropout_forward(const T* x, T* y, std::uint8_t* mask, std::int64_t n, double rate, std::uint64_t seed,
                     std::uint64_t stream, std::int64_t first) {
  const CounterRng rng(seed, stream);
  const auto threshold = static_cast<std::uint32_t>(std::lround(rate * 65536.0));
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
  // Elements come in groups of 128 drawn from 16 consecutive Philox blocks (g*16 .. g*16+15); element
  // e of a group takes lane e % 16, word (e / 16) % 4, 16-bit half e / 64. Groups are generated 16 blocks
  // at a time and this layout keeps every inner loop contiguous, so both vectorise.
  // The groups are numbered by the element's global index (first + local index): a shard of a batch (one
  // rank's rows) draws exactly the masks the whole batch would.
  constexpr std::int64_t kGroup = 128;
  const std::int64_t g_begin = first / kGroup, g_end = (first + n + kGroup - 1) / kGroup;
  for_chunks(g_end - g_begin, n, [=](std::int64_t g0, std::int64_t g1) {
    std::uint32_t w[4][16];
    std::uint16_t draw[kGroup];
    for (std::int64_t g = g_begin + g0; g < g_begin + g1; ++g) {
      rng.blocks16(static_cast<std::uint64_t>(g * 16), w);
      for (int half = 0; half < 2; ++half)
        for (int word = 0; word < 4; ++word)
          for (int l = 0; l < 16; ++l)
            draw[half * 64 + word * 16 + l] = static_cast<std::uint16_t>(w[word][l] >> (16 * half));
      const std::int64_t lo = std::max(g * kGroup, first), hi = std::min((g + 1) * kGroup, first + n);
      const std::uint16_t* d = draw + (lo - g * kGroup);
      const T* xs = x + (lo - first);
      T* ys = y + (lo - first);
      std::uint8_t* ms = mask + (lo - first);
      for (std::int64_t k = 0; k < hi - lo; ++k) {
        const bool keep = d[k] >= threshold;
        ms[k] = keep ? 1 : 0;
        ys[k] = keep ? xs[k] * scale : T(0);
      }
    }
  });
}

template <class T>
void dropout_backward(const T* dy, const std::uint8_t* mask, T* dx, std::int64_t n, double rate) {
  const T scale = T(1) / (T(1) - static_cast<T>(rate));
  for_chunks(n, n, [=](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) dx[i] = dy[i] * (static_cast<T>(mask[i]) * scale);
  });
}

template <class T>
double softmax_xent_forward(const T* logits, const std::int32_t* labels, T* probs, std::int64_t rows,
                            std::int64_t cols) {
  const double total = sum_chunks(rows, rows * cols, [=](std::int64_t r0, std::int64_t r1) {
    double sum_loss = 0;
    for (std::int64_t i = r0; i < r1; ++i) {
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
      sum_loss += static_cast<double>(std::log(sum) - (z[labels[i]] - mx));
    }
    return sum_loss;
  });
  return total / static_cast<double>(rows);
}

template <class T>
void softmax_xent_backward(T dloss, const T* probs, const std::int32_t* labels, T* dlogits, std::int64_t rows,
                           std::int64_t cols) {
  const T scale = dloss / static_cast<T>(rows);
  for_chunks(rows, rows * cols, [=](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t i = r0; i < r1; ++i) {
      const T* p = probs + i * cols;
      T* d = dlogits + i * cols;
      for (std::int64_t j = 0; j < cols; ++j) d[j] = p[j] * scale;
      d[labels[i]] -= scale;
    }
  });
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
  // Parallel over columns so each output has one writer and a fixed summation order.
  for_chunks(cols, rows * cols, [=](std::int64_t c0, std::int64_t c1) {
    std::fill(y + c0, y + c1, T(0));
    for (std::int64_t i = 0; i < rows; ++i) {
      const T* r = x + i * cols;
      for (std::int64_t j = c0; j < c1; ++j) y[j] += r[j];
    }
  });
}

template <class T>
void add(const T* a, const T* b, T* y, std::int64_t n) {
  for_chunks(n, n, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) y[i] = a[i] + b[i];
  });
}

template <class T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const ir::AdamConfig& cfg, std::int64_t iteration) {
  const double t = static_cast<double>(iteration + 1);
  const double alpha_d =
      cfg.learning_rate * std::sqrt(1.0 - std::pow(cfg.beta_2, t)) / (1.0 - std::pow(cfg.beta_1, t));
  const T alpha = static_cast<T>(alpha_d);
  const T one_b1 = static_cast<T>(1.0 - cfg.beta_1), one_b2 = static_cast<T>(1.0 - cfg.beta_2);
  const T eps = static_cast<T>(cfg.epsilon);
  for_chunks(n, n, [=](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) {
      const T gi = g[i];
      const T mi = m[i] + (gi - m[i]) * one_b1;
      const T vi = v[i] + (gi * gi - v[i]) * one_b2;
      m[i] = mi;
      v[i] = vi;
      p[i] -= mi * alpha / (std::sqrt(vi) + eps);
    }
  });
}

#define GPUVS_INSTANTIATE(T)                                                                                      \
  template void bias_act_epilogue<T>(T*, const T*, std::int64_t, std::int64_t, ir::Act);                      \
  template void activation_forward<T>(const T*, T*, std::int64_t, ir::Act);                                   \
  template void activation_backward<T>(const T*, const T*, T*, std::int64_t, ir::Act);                        \
  template void dropout_forward<T>(const T*, T*, std::uint8_t*, std::int64_t, double, std::uint64_t,             \
                                   std::uint64_t, std::int64_t);                                                 \
  template void dropout_backward<T>(const T*, const std::uint8_t*, T*, std::int64_t, double);                    \
  template double softmax_xent_forward<T>(const T*, const std::int32_t*, T*, std::int64_t, std::int64_t);        \
  template void softmax_xent_backward<T>(T, const T*, const std::int32_t*, T*, std::int64_t, std::int64_t);      \
  template void softmax_forward<T>(const T*, T*, std::int64_t, std::int64_t);                                    \
  template double accuracy<T>(const T*, const std::int32_t*, std::int64_t, std::int64_t);                        \
  template void reduce_rows<T>(const T*, T*, std::int64_t, std::int64_t);                                        \
  template void add<T>(const T*, const T*, T*, std::int64_t);                                                    \
  template void adam_update<T>(T*, const T*, T*, T*, std::int64_t, const ir::AdamConfig&, std::int64_t);
GPUVS_INSTANTIATE(float)
GPUVS_INSTANTIATE(double)
#undef GPUVS_INSTANTIATE

}  // namespace gpuvs::engine::cpu
