// SPDX-License-Identifier: Apache-2.0
#include "ir/cost.hpp"

#include <algorithm>

namespace gpuvs::ir {

double act_flops(Act a) {
  switch (a) {
    case Act::none: return 0;
    case Act::relu: return 1;
    case Act::sigmoid: return 4;
    case Act::tanh: return 4;
    case Act::gelu: return 8;
    case Act::silu: return 5;
  }
  return 0;
}

double act_grad_flops(Act a) {
  // dY * f'(.): relu: compare + select; sigmoid: y*(1-y)*dy = 3; tanh: (1-y*y)*dy = 3; gelu: cdf + pdf terms.
  switch (a) {
    case Act::none: return 0;
    case Act::relu: return 1;
    case Act::sigmoid: return 3;
    case Act::tanh: return 3;
    case Act::gelu: return 12;
    case Act::silu: return 8;
  }
  return 0;
}

double ew_flops(EwFn f) {
  switch (f) {
    case EwFn::mul: return 1;
    case EwFn::add_bcast: return 1;
    case EwFn::swiglu: return 6;         // silu(a) = a / (1 + exp(-a)): 4, times b
    case EwFn::geglu: return 9;          // gelu(a) (erf form, 8) times b
    case EwFn::gated_grad_a: return 9;  // dy * b * silu'(a)
    case EwFn::gated_grad_b: return 5;  // dy * silu(a)
    case EwFn::rope: return 3;           // x*cos + rotate(x)*sin per element
    case EwFn::scale_mask: return 2;
    case EwFn::add: case EwFn::sub: case EwFn::div: case EwFn::max: case EwFn::min: case EwFn::where:
    case EwFn::neg: case EwFn::abs: case EwFn::exp: case EwFn::log: case EwFn::sqrt: case EwFn::reciprocal:
    case EwFn::cast:
      return 1;
    case EwFn::pow: return 3;  // exp(b log a)
    case EwFn::erf: return 5;  // a rational approximation (gelu's 8 = erf + 3)
    case EwFn::grad: return 0; // priced by ew_grad_flops of the forward function
  }
  return 0;
}

double ew_grad_flops(EwFn f) {
  switch (f) {
    case EwFn::add: case EwFn::sub: case EwFn::neg: case EwFn::cast: case EwFn::where: case EwFn::mul:
    case EwFn::exp: case EwFn::log:
      return 1;  // dy, -dy, dy * other, dy * y, dy / x
    case EwFn::max: case EwFn::min: case EwFn::abs: case EwFn::sqrt: case EwFn::reciprocal:
      return 2;  // compare + select; dy / (2y); -dy * y^2
    case EwFn::div: return 3;   // dy / b; -dy * a / b^2
    case EwFn::pow: return 4;   // dy * b * a^(b-1)
    case EwFn::erf: return 4;   // dy * 2/sqrt(pi) * exp(-x^2)
    default: return ew_flops(f);
  }
}

double causal_fraction(std::int64_t t, std::int64_t s) {
  // Query i sees keys 0..i + (s - t): the unmasked share of the t x s score matrix.
  if (t <= 0 || s <= 0) return 1.0;
  double seen = 0;
  const std::int64_t shift = s - t;
  for (std::int64_t i = 0; i < t; ++i) seen += static_cast<double>(std::min(s, std::max<std::int64_t>(0, i + shift + 1)));
  return seen / (static_cast<double>(t) * static_cast<double>(s));
}

OpCost op_cost(const Graph& g, const Node& n) {
  OpCost c;
  const double es = static_cast<double>(dtype_size(n.dtype));
  const double out = static_cast<double>(numel(n.shape));
  auto elems = [&](NodeId id) { return static_cast<double>(numel(g.node(id).shape)); };
  auto bytes_of = [&](NodeId id) { return elems(id) * static_cast<double>(dtype_size(g.node(id).dtype)); };
  switch (n.op) {
    case OpKind::input:
    case OpKind::param:
      break;
    case OpKind::fill:
      c.bytes = out * es;
      break;
    case OpKind::matmul: {
      const Node& a = g.node(n.inputs[0]);
      const double k = static_cast<double>(n.trans_a ? a.shape[0] : a.shape[1]);
      c.matrix_flops = 2.0 * out * k;
      c.vector_flops = out * ((n.has_bias ? 1.0 : 0.0) + act_flops(n.act));
      c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + (n.has_bias ? bytes_of(n.inputs[2]) : 0.0) + out * es;
      break;
    }
    case OpKind::activation:
      c.vector_flops = out * act_flops(n.act);
      c.bytes = 2.0 * out * es;
      break;
    case OpKind::activation_grad:
      c.vector_flops = out * act_grad_flops(n.act);
      c.bytes = 3.0 * out * es;
      break;
    case OpKind::dropout:  // random draw + compare, scale-multiply; writes output and a 1-byte mask
      c.vector_flops = 2.0 * out;
      c.bytes = 2.0 * out * es + out;
      break;
    case OpKind::dropout_grad:  // reads dY and the mask, writes dX
      c.vector_flops = out;
      c.bytes = 2.0 * out * es + out;
      break;
    case OpKind::softmax: {  // per element: max, subtract, exp, sum, divide
      c.vector_flops = 5.0 * out;
      c.bytes = 2.0 * out * es;
      break;
    }
    case OpKind::softmax_xent: {
      // Per logit: max, subtract, exp, sum, divide (probs saved) = 5; per row: log, pick, subtract, sum = 4.
      const double logits = elems(n.inputs[0]);
      const double rows = elems(n.inputs[1]);
      c.vector_flops = 5.0 * logits + 4.0 * rows;
      c.bytes = logits * es + rows * 4.0 + logits * es + es;  // read logits, labels; write probs, loss
      break;
    }
    case OpKind::softmax_xent_grad: {  // (p - onehot) * dloss / rows
      const double rows = elems(n.inputs[1]);
      c.vector_flops = 2.0 * out;
      c.bytes = out * es + rows * 4.0 + es + out * es;
      break;
    }
    case OpKind::reduce_rows:
      c.vector_flops = elems(n.inputs[0]);
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::add:
      c.vector_flops = out;
      c.bytes = 3.0 * out * es;
      break;
    case OpKind::accuracy: {  // argmax compares per logit, one compare + add per row
      const double logits = elems(n.inputs[0]);
      const double rows = elems(n.inputs[1]);
      c.vector_flops = logits + 2.0 * rows;
      c.bytes = logits * es + rows * 4.0 + es;
      break;
    }
    case OpKind::adam_update:
      // m += (g-m)(1-b1): 3; v += (g*g-v)(1-b2): 4; p -= alpha*m/(sqrt(v)+eps): 5.
      // Reads p, g, m, v; writes p, m, v.
      c.vector_flops = 12.0 * out;
      c.bytes = 7.0 * out * es;
      break;
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight: {
      const Node& conv = n.op == OpKind::conv2d ? n : g.node(n.ref);
      const Node& x = g.node(conv.inputs[0]);
      const double macs_per_out = static_cast<double>(x.shape[1] / conv.groups) * conv.kernel_h * conv.kernel_w;
      c.matrix_flops = 2.0 * static_cast<double>(numel(conv.shape)) * macs_per_out;
      if (n.op == OpKind::conv2d) {
        c.vector_flops = out * ((n.has_bias ? 1.0 : 0.0) + act_flops(n.act));
        c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + (n.has_bias ? bytes_of(n.inputs[2]) : 0.0) + out * es;
      } else {
        c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + out * es;
      }
      break;
    }
    case OpKind::normalize: {  // statistics (mean, variance) + normalise + scale/shift; RMS skips the mean
      c.vector_flops = out * (n.norm == NormKind::rms ? 4.0 : 7.0);
      double params = 0;
      for (std::size_t k = 1; k < n.inputs.size(); ++k) params += bytes_of(n.inputs[k]);
      c.bytes = 2.0 * out * es + params;
      break;
    }
    case OpKind::normalize_grad:
      c.vector_flops = out * (n.norm == NormKind::rms ? 6.0 : 9.0);
      c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + bytes_of(n.inputs[2]) + out * es;
      break;
    case OpKind::normalize_grad_scale:
      c.vector_flops = 3.0 * elems(n.inputs[0]);  // dy * x_hat, summed
      c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + out * es;
      break;
    case OpKind::pool2d:
      c.vector_flops = out * n.kernel_h * n.kernel_w;
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::pool2d_grad: {
      const Node& f = g.node(n.ref);
      c.vector_flops = out;
      c.bytes = bytes_of(n.inputs[0]) + out * es + (f.pool == PoolKind::max ? bytes_of(f.inputs[0]) : 0.0);
      break;
    }
    case OpKind::reshape:
      c.bytes = n.copy ? 2.0 * out * es : 0.0;  // a view moves nothing; a permute copies once
      break;
    case OpKind::slice:
      break;  // a view
    case OpKind::repeat:
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::reduce_to:
      c.vector_flops = elems(n.inputs[0]);
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::embedding:  // read the ids and the picked rows, write the output
      c.bytes = bytes_of(n.inputs[0]) + 2.0 * out * es;
      break;
    case OpKind::embedding_grad:  // zero the table gradient, then read-modify-write the touched rows
      c.vector_flops = elems(n.inputs[0]);
      c.bytes = out * es + bytes_of(n.inputs[1]) + 3.0 * bytes_of(n.inputs[0]);
      break;
    case OpKind::batch_matmul: {
      const Node& a = g.node(n.inputs[0]);
      const double k = static_cast<double>(n.trans_a ? a.shape[1] : a.shape[2]);
      c.matrix_flops = 2.0 * out * k;
      c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + out * es;
      break;
    }
    case OpKind::attention:
    case OpKind::attention_grad: {
      // FlashAttention: QK^T and PV (forward); backward recomputes QK^T and adds dV, dP, dQ, dK: 2.5x.
      const Node& f = n.op == OpKind::attention ? n : g.node(n.ref);
      const Node& q = g.node(f.inputs[0]);
      const Node& k = g.node(f.inputs[1]);
      const Node& v = g.node(f.inputs[2]);
      const double bh = static_cast<double>(q.shape[0]), t = static_cast<double>(q.shape[1]);
      const double s = static_cast<double>(k.shape[1]), d = static_cast<double>(q.shape[2]);
      const double dv = static_cast<double>(v.shape[2]);
      const double frac = f.causal ? causal_fraction(q.shape[1], k.shape[1]) : 1.0;
      const double fwd = 2.0 * bh * t * s * (d + dv) * frac;
      const double scores = bh * t * s * frac;
      const double lse = bh * t * 4.0;  // fp32 log-sum-exp per query row, saved for backward
      const double qkvo = bytes_of(f.inputs[0]) + bytes_of(f.inputs[1]) + bytes_of(f.inputs[2]) +
                          static_cast<double>(numel(f.shape)) * static_cast<double>(dtype_size(f.dtype));
      if (n.op == OpKind::attention) {
        c.matrix_flops = fwd;
        c.vector_flops = 5.0 * scores;
        c.bytes = qkvo + lse;
      } else {
        c.matrix_flops = 2.5 * fwd;
        c.vector_flops = 8.0 * scores;
        c.bytes = 2.0 * qkvo + lse;  // read Q, K, V, O, dO; write dQ, dK, dV
      }
      break;
    }
    case OpKind::elementwise: {
      c.vector_flops = out * (n.fn == EwFn::grad ? ew_grad_flops(g.node(n.ref).fn) : ew_flops(n.fn));
      double in = 0;
      for (NodeId id : n.inputs) in += bytes_of(id);
      c.bytes = in + out * es;
      break;
    }
    case OpKind::concat: {
      double in = 0;
      for (NodeId id : n.inputs) in += bytes_of(id);
      c.bytes = in + out * es;
      break;
    }
    case OpKind::upsample2x:
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::mse_loss:  // subtract, square, sum
      c.vector_flops = 3.0 * elems(n.inputs[0]);
      c.bytes = bytes_of(n.inputs[0]) + bytes_of(n.inputs[1]) + es;
      break;
    case OpKind::mse_loss_grad:
      c.vector_flops = 3.0 * out;
      c.bytes = bytes_of(n.inputs[1]) + bytes_of(n.inputs[2]) + out * es;
      break;
    case OpKind::reduce:  // one add (or compare) per input element
      c.vector_flops = elems(n.inputs[0]);
      c.bytes = bytes_of(n.inputs[0]) + out * es;
      break;
    case OpKind::softmax_grad:  // dx = y * (dy - sum(dy * y))
      c.vector_flops = 4.0 * out;
      c.bytes = 3.0 * out * es;
      break;
  }
  return c;
}

OpCost graph_cost(const Graph& g) {
  OpCost total;
  for (const auto& n : g.nodes()) total += op_cost(g, n);
  return total;
}

}  // namespace gpuvs::ir
