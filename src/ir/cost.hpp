// SPDX-License-Identifier: Apache-2.0
// What each op must do: FLOPs split by unit (matrix engines vs vector units) and the fewest bytes it must
// move (every input read once, every output and saved tensor written once). The performance model prices
// graphs with exactly these numbers; tests check them against hand counts.
//
// Conventions: a multiply-add is 2 FLOPs. Vector FLOPs per element: add/mul/compare/max = 1; relu 1,
// sigmoid 4 (neg, exp, add, div), tanh 4 (counted as sigmoid), gelu 8 (erf form), silu 5; exp, log, sqrt,
// reciprocal, neg, abs, cast and where count 1, pow 3 (exp of b log a), erf 5. Integer labels are 4 bytes; dropout masks are 1 byte per element. Convolutions and attention
// are matrix work (implicit GEMM, FlashAttention); views (reshape without copy, slice) move nothing.
#pragma once
#include <cstdint>

#include "ir/ir.hpp"

namespace gpuvs::ir {

struct OpCost {
  double matrix_flops = 0;  // work for matrix units (GEMM): tensor cores on GPUs
  double vector_flops = 0;  // elementwise and reduction work
  double bytes = 0;         // minimum bytes read + written
  OpCost& operator+=(const OpCost& o) {
    matrix_flops += o.matrix_flops;
    vector_flops += o.vector_flops;
    bytes += o.bytes;
    return *this;
  }
};

/// Vector FLOPs per element of an activation (forward) and of its gradient.
double act_flops(Act a);
double act_grad_flops(Act a);
/// Vector FLOPs per output element of an elementwise function, and of its gradient (EwFn::grad nodes).
double ew_flops(EwFn f);
double ew_grad_flops(EwFn f);
/// Share of a t x s attention score matrix a causal mask leaves (t queries aligned to the last t keys).
double causal_fraction(std::int64_t t, std::int64_t s);

OpCost op_cost(const Graph& g, const Node& n);
OpCost graph_cost(const Graph& g);

}  // namespace gpuvs::ir
