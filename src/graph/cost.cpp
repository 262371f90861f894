#include "graph/cost.hpp"

namespace gpuvs::graph {

double act_flops(Act a) {
  switch (a) {
    case Act::none: return 0;
    case Act::relu: return 1;
    case Act::sigmoid: return 4;
    case Act::tanh: return 4;
    case Act::gelu: return 8;
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
  }
  return 0;
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
  }
  return c;
}

OpCost graph_cost(const Graph& g) {
  OpCost total;
  for (const auto& n : g.nodes()) total += op_cost(g, n);
  return total;
}

}  // namespace gpuvs::graph
