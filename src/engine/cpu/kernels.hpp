// SPDX-License-Identifier: Apache-2.0
// CPU kernels for every non-GEMM op, for float (the engine) and double (the gradient-check oracle).
// Loops are written to vectorise (-O3 -march=native) and use OpenMP above a size where threads pay off.
#pragma once
#include <cstdint>

#include "ir/ir.hpp"

namespace gpuvs::engine::cpu {

/// C[m,n] = act(C + bias) in place; bias may be null.
template <class T>
void bias_act_epilogue(T* c, const T* bias, std::int64_t m, std::int64_t n, ir::Act act);
template <class T>
void activation_forward(const T* x, T* y, std::int64_t n, ir::Act act);
/// dx = dy * act'(.), `saved` is the output y (relu/tanh/sigmoid) or the input x (gelu).
template <class T>
void activation_backward(const T* dy, const T* saved, T* dx, std::int64_t n, ir::Act act);

/// Inverted dropout. The keep decision for element i is a pure function of (seed, stream, i): a 16-bit
/// draw from Philox-4x32-10 (group g = i / 128 uses blocks 16g..16g+15; element e = i % 128 takes block
/// 16g + e % 16, word (e / 16) % 4, half e / 64), kept when the draw >= round(rate * 65536). Backends
/// that must match the CPU (CUDA) use the same layout.
template <class T>
void dropout_forward(const T* x, T* y, std::uint8_t* mask, std::int64_t n, double rate, std::uint64_t seed,
                     std::uint64_t stream, std::int64_t first = 0);  // first: element 0's index in the whole batch
template <class T>
void dropout_backward(const T* dy, const std::uint8_t* mask, T* dx, std::int64_t n, double rate);

/// Fused stable softmax + sparse categorical cross-entropy; writes probs and returns the mean loss.
template <class T>
double softmax_xent_forward(const T* logits, const std::int32_t* labels, T* probs, std::int64_t rows,
                            std::int64_t cols);
/// dlogits = dloss * (probs - onehot) / rows.
template <class T>
void softmax_xent_backward(T dloss, const T* probs, const std::int32_t* labels, T* dlogits, std::int64_t rows,
                           std::int64_t cols);
template <class T>
void softmax_forward(const T* x, T* y, std::int64_t rows, std::int64_t cols);
template <class T>
double accuracy(const T* logits, const std::int32_t* labels, std::int64_t rows, std::int64_t cols);
/// y[j] = sum_i x[i, j].
template <class T>
void reduce_rows(const T* x, T* y, std::int64_t rows, std::int64_t cols);
template <class T>
void add(const T* a, const T* b, T* y, std::int64_t n);
/// Keras Adam step number iteration+1: m += (g-m)(1-b1); v += (g^2-v)(1-b2);
/// p -= alpha m / (sqrt(v) + eps), alpha = lr sqrt(1-b2^t) / (1-b1^t).
template <class T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const ir::AdamConfig& cfg, std::int64_t iteration);

}  // namespace gpuvs::engine::cpu
