// SPDX-License-Identifier: Apache-2.0
#include "ir/autodiff.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace gpuvs::ir {

namespace {

// Which nodes lie on a path from a trainable param (only they need gradients).
std::vector<bool> needs_grad(const Graph& g) {
  std::vector<bool> need(g.size(), false);
  for (const auto& n : g.nodes()) {
    if (n.op == OpKind::param) {
      need[static_cast<std::size_t>(n.id)] = n.trainable;
      continue;
    }
    for (NodeId in : n.inputs)
      if (need[static_cast<std::size_t>(in)]) need[static_cast<std::size_t>(n.id)] = true;
  }
  return need;
}

}  // namespace

std::map<NodeId, NodeId> append_gradients(Graph& g, NodeId root, NodeId seed) {
  const std::vector<bool> need = needs_grad(g);
  auto wants = [&](NodeId id) { return need[static_cast<std::size_t>(id)]; };
  std::map<NodeId, NodeId> grad;
  // Accumulate a contribution, adding when a node feeds several consumers.
  auto accumulate = [&](NodeId x, NodeId contribution) {
    auto it = grad.find(x);
    if (it == grad.end()) {
      grad[x] = contribution;
    } else {
      it->second = g.add(g.unique_name(fmt::format("{}/grad_sum{}", g.node(x).name, g.size())), it->second, contribution);
    }
  };
  grad[root] = seed;
  const std::size_t forward_size = static_cast<std::size_t>(root) + 1;
  for (std::size_t i = forward_size; i-- > 0;) {
    const NodeId id = static_cast<NodeId>(i);
    auto it = grad.find(id);
    if (it == grad.end() || !wants(id)) continue;
    const NodeId dy = it->second;
    const Node n = g.node(id);  // copy: appending nodes may reallocate
    const std::string base = n.name + "/grad";
    // Gradient names follow the forward node's, made unique: a file's own names may already hold one
    // (a Keras layer named "flatten/grad" beside one named "flatten"; found by fuzz_model_json).
    const auto at = [&](const std::string& suffix) { return g.unique_name(base + suffix); };
    switch (n.op) {
      case OpKind::param:
      case OpKind::input:
      case OpKind::fill:
        break;
      case OpKind::matmul: {
        const NodeId a = n.inputs[0], b = n.inputs[1];
        const NodeId dz = n.act == Act::none ? dy : g.activation_grad(at("/act"), dy, id, n.act);
        if (wants(a)) {
          const NodeId da = n.trans_a ? g.matmul(at("/a"), b, dz, kNone, Act::none, n.trans_b, true)
                                      : g.matmul(at("/a"), dz, b, kNone, Act::none, false, !n.trans_b);
          accumulate(a, da);
        }
        if (wants(b)) {
          const NodeId db = n.trans_b ? g.matmul(at("/b"), dz, a, kNone, Act::none, true, n.trans_a)
                                      : g.matmul(at("/b"), a, dz, kNone, Act::none, !n.trans_a, false);
          accumulate(b, db);
        }
        if (n.has_bias && wants(n.inputs[2])) accumulate(n.inputs[2], g.reduce_rows(at("/bias"), dz));
        break;
      }
      case OpKind::activation: {
        const NodeId saved = act_grad_from_output(n.act) ? id : n.inputs[0];
        if (wants(n.inputs[0]))
          accumulate(n.inputs[0], n.act == Act::none ? dy : g.activation_grad(at(""), dy, saved, n.act));
        break;
      }
      case OpKind::dropout:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.dropout_grad(at(""), dy, id));
        break;
      case OpKind::softmax_xent:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.softmax_xent_grad(at(""), dy, id));
        break;
      case OpKind::add:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], dy);
        if (wants(n.inputs[1])) accumulate(n.inputs[1], dy);
        break;
      case OpKind::conv2d: {
        const NodeId dz = n.act == Act::none ? dy : g.activation_grad(at("/act"), dy, id, n.act);
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.conv2d_grad_input(at("/x"), dz, id));
        if (wants(n.inputs[1])) accumulate(n.inputs[1], g.conv2d_grad_weight(at("/w"), dz, id));
        if (n.has_bias && wants(n.inputs[2])) accumulate(n.inputs[2], g.reduce_to(at("/bias"), dz, n.inputs[2]));
        break;
      }
      case OpKind::normalize:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.normalize_grad(at("/x"), dy, id));
        if (wants(n.inputs[1])) accumulate(n.inputs[1], g.normalize_grad_scale(at("/scale"), dy, id));
        if (n.inputs.size() > 2 && wants(n.inputs[2]))
          accumulate(n.inputs[2], g.reduce_to(at("/shift"), dy, n.inputs[2]));
        break;
      case OpKind::pool2d:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.pool2d_grad(at(""), dy, id));
        break;
      case OpKind::reshape:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.reshape(at(""), dy, g.node(n.inputs[0]).shape, n.copy));
        break;
      case OpKind::repeat:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.reduce_to(at(""), dy, n.inputs[0]));
        break;
      case OpKind::reduce_to:  // a sum over copies: each copy gets the whole gradient
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.repeat(at(""), dy, g.node(n.inputs[0]).shape));
        break;
      case OpKind::embedding:
        if (wants(n.inputs[1])) accumulate(n.inputs[1], g.embedding_grad(at(""), dy, id));
        break;
      case OpKind::batch_matmul: {
        const NodeId a = n.inputs[0], b = n.inputs[1];
        if (wants(a))
          accumulate(a, n.trans_a ? g.batch_matmul(at("/a"), b, dy, n.trans_b, true)
                                  : g.batch_matmul(at("/a"), dy, b, false, !n.trans_b));
        if (wants(b))
          accumulate(b, n.trans_b ? g.batch_matmul(at("/b"), dy, a, true, n.trans_a)
                                  : g.batch_matmul(at("/b"), a, dy, !n.trans_a, false));
        break;
      }
      case OpKind::attention: {
        // One backward kernel yields dQ, dK and dV packed; views take them apart.
        const NodeId packed = g.attention_grad(at(""), dy, id);
        std::int64_t offset = 0;
        for (int k = 0; k < 3; ++k) {
          const NodeId in = n.inputs[static_cast<std::size_t>(k)];
          const Shape shape = g.node(in).shape;
          const std::int64_t len = numel(shape);
          if (wants(in)) {
            const NodeId flat = g.slice(at(fmt::format("/{}", "qkv"[k])), packed, 0, offset, len);
            accumulate(in, g.reshape(at(fmt::format("/{}_view", "qkv"[k])), flat, shape));
          }
          offset += len;
        }
        break;
      }
      case OpKind::elementwise: {
        const auto& in = n.inputs;
        // A gradient over the output's shape, summed down to an input that was broadcast.
        auto to_input = [&](NodeId x, NodeId d) {
          return g.node(d).shape == g.node(x).shape ? d : g.reduce_to(at("/sum"), d, x);
        };
        switch (n.fn) {
          case EwFn::mul:
            if (wants(in[0])) accumulate(in[0], to_input(in[0], g.elementwise(at("/a"), EwFn::mul, {dy, in[1]})));
            if (wants(in[1])) accumulate(in[1], to_input(in[1], g.elementwise(at("/b"), EwFn::mul, {dy, in[0]})));
            break;
          case EwFn::add:
            for (NodeId x : in)
              if (wants(x)) accumulate(x, to_input(x, dy));
            break;
          case EwFn::sub: case EwFn::div: case EwFn::pow: case EwFn::max: case EwFn::min: case EwFn::where:
          case EwFn::neg: case EwFn::abs: case EwFn::exp: case EwFn::log: case EwFn::sqrt: case EwFn::reciprocal:
          case EwFn::erf: case EwFn::cast:
            for (std::size_t k = 0; k < in.size(); ++k) {
              if (n.fn == EwFn::where && k == 0) continue;  // the condition has no gradient
              if (wants(in[k]))
                accumulate(in[k], to_input(in[k], g.elementwise_grad(at(fmt::format("/{}", k)), dy, id, static_cast<int>(k))));
            }
            break;
          case EwFn::add_bcast:
            if (wants(in[0])) accumulate(in[0], dy);
            if (wants(in[1])) accumulate(in[1], g.reduce_to(at("/b"), dy, in[1]));
            break;
          case EwFn::swiglu:
          case EwFn::geglu:  // gated activations: the gradient kernels cost the same either way
            if (wants(in[0])) accumulate(in[0], g.elementwise(at("/a"), EwFn::gated_grad_a, {dy, in[0], in[1]}));
            if (wants(in[1])) accumulate(in[1], g.elementwise(at("/b"), EwFn::gated_grad_b, {dy, in[0], in[1]}));
            break;
          case EwFn::rope:  // the inverse rotation, same cost
          case EwFn::scale_mask:
            if (wants(in[0])) accumulate(in[0], g.elementwise(at(""), n.fn, {dy}, n.causal));
            break;
          default:
            throw std::invalid_argument(fmt::format("autodiff: elementwise {} '{}' has no gradient rule",
                                                    ew_name(n.fn), n.name));
        }
        break;
      }
      case OpKind::concat: {
        std::int64_t start = 0;
        for (NodeId in : n.inputs) {
          const std::int64_t len = g.node(in).shape[static_cast<std::size_t>(n.axis)];
          if (wants(in)) accumulate(in, g.slice(at("/part"), dy, n.axis, start, len));
          start += len;
        }
        break;
      }
      case OpKind::upsample2x:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.pool2d(at(""), dy, PoolKind::sum, Window{2, 2, 2, 2, 0, 0}));
        break;
      case OpKind::softmax:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.softmax_grad(at(""), dy, id));
        break;
      case OpKind::mse_loss:
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.mse_loss_grad(at(""), dy, id));
        break;
      case OpKind::slice:
        // The part's gradient in place, zeros around it: one copy into the input's shape.
        if (wants(n.inputs[0])) {
          const Shape full = g.node(n.inputs[0]).shape;
          const auto ax = static_cast<std::size_t>(n.axis);
          std::vector<NodeId> pieces;
          Shape before = full, after = full;
          before[ax] = n.offset;
          after[ax] = full[ax] - n.offset - n.shape[ax];
          const DType dt = g.node(dy).dtype;
          if (before[ax] > 0) pieces.push_back(g.fill(at("/zeros_before"), before, dt, 0.0));
          pieces.push_back(dy);
          if (after[ax] > 0) pieces.push_back(g.fill(at("/zeros_after"), after, dt, 0.0));
          accumulate(n.inputs[0], pieces.size() == 1 ? dy : g.concat(at(""), pieces, n.axis));
        }
        break;
      case OpKind::reduce:  // each reduced element gets its output's gradient (a mean's 1/n and a max's mask fold in)
        if (wants(n.inputs[0])) accumulate(n.inputs[0], g.repeat(at(""), dy, g.node(n.inputs[0]).shape));
        break;
      default:
        throw std::invalid_argument(
            fmt::format("autodiff: op {} '{}' has no gradient rule but lies between the params and the loss",
                        op_name(n.op), n.name));
    }
  }
  return grad;
}

std::map<NodeId, NodeId> append_training_step(Graph& g, const AdamConfig& adam) {
  const NodeId loss = g.output("loss");
  if (loss == kNone || !g.node(loss).shape.empty())
    throw std::invalid_argument("training step: the graph needs a scalar output named \"loss\"");
  const NodeId one = g.fill("loss/grad_seed", {}, g.node(loss).dtype, 1.0);
  const auto grads = append_gradients(g, loss, one);
  std::map<NodeId, NodeId> param_grads;
  const std::size_t forward_size = g.size();
  for (std::size_t i = 0; i < forward_size; ++i) {
    const Node& n = g.nodes()[i];
    if (n.op != OpKind::param || !n.trainable) continue;
    auto it = grads.find(n.id);
    if (it == grads.end()) continue;  // a param that does not influence the loss is left alone, as Keras does
    param_grads[n.id] = it->second;
  }
  for (const auto& [p, gr] : param_grads) g.adam_update(g.unique_name(g.node(p).name + "/adam"), p, gr, adam);
  return param_grads;
}

}  // namespace gpuvs::ir
