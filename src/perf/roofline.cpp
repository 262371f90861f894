// SPDX-License-Identifier: Apache-2.0
#include "perf/roofline.hpp"

#include <algorithm>

#include "ir/cost.hpp"
#include "perf/device_view.hpp"

namespace gpuvs::perf {

using ir::EwFn;
using ir::Node;
using ir::OpKind;

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::latency: return "latency";
    case Bound::launch: return "launch";
  }
  return "?";
}

GemmDims gemm_dims(const ir::Graph& g, const Node& n) {
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  switch (n.op) {
    case OpKind::matmul: {
      const Node& a = g.node(n.inputs[0]);
      return {d(n.shape[0]), d(n.shape[1]), d(n.trans_a ? a.shape[0] : a.shape[1]), 1};
    }
    case OpKind::batch_matmul: {
      const Node& a = g.node(n.inputs[0]);
      return {d(n.shape[1]), d(n.shape[2]), d(n.trans_a ? a.shape[1] : a.shape[2]), d(n.shape[0])};
    }
    case OpKind::conv2d:
    case OpKind::conv2d_grad_input:
    case OpKind::conv2d_grad_weight: {
      // Implicit GEMM: forward M = N*P*Q, N = K, K = C*R*S / groups.
      const Node& conv = n.op == OpKind::conv2d ? n : g.node(n.ref);
      const Node& x = g.node(conv.inputs[0]);
      const double batch = d(x.shape[0]), c = d(x.shape[1]) / conv.groups, k = d(conv.shape[1]);
      const double rs = d(conv.kernel_h) * conv.kernel_w, pq = d(conv.shape[2]) * d(conv.shape[3]);
      const double hw = d(x.shape[2]) * d(x.shape[3]);
      if (n.op == OpKind::conv2d) return {batch * pq, k, c * rs, 1};
      if (n.op == OpKind::conv2d_grad_input) return {batch * hw, c, k * rs, 1};
      return {k, c * rs, batch * pq, 1};  // weight gradient: long K (split-K in practice)
    }
    default:
      return {};
  }
}

double conv_flop_factor(const ir::Graph& g, const Node& n, const PrecisionPlan& plan) {
  if (n.op != OpKind::conv2d && n.op != OpKind::conv2d_grad_input && n.op != OpKind::conv2d_grad_weight) return 1.0;
  const Node& conv = n.op == OpKind::conv2d ? n : g.node(n.ref);
  const Node& x = g.node(conv.inputs[0]);
  const bool winograd_shape = conv.kernel_h == 3 && conv.kernel_w == 3 && conv.stride_h == 1 && conv.stride_w == 1 &&
                              conv.groups == 1 && x.shape[1] >= 32 && conv.shape[1] >= 32;
  // cuDNN runs FP32 3x3 stride-1 convolutions on CUDA cores with Winograd F(2x2, 3x3): 16 multiplies per
  // 2x2 output tile per channel pair instead of 36, 2.25x fewer (Lavin & Gray 2016), for the forward pass
  // and both gradients. Tensor-core paths (TF32, FP16, BF16) use implicit GEMM: the direct count.
  return winograd_shape && !plan.tensor_cores ? 16.0 / 36.0 : 1.0;
}

namespace {
// An activation Transformer Engine runs with the FP8 cast of its output (forward) and of its input gradient
// (backward) in the same kernel: the gated ones (SwiGLU, GeGLU) and GeLU between two linear layers.
bool activation_fused(const Node& n) {
  return (n.op == OpKind::elementwise && (n.fn == EwFn::swiglu || n.fn == EwFn::geglu)) ||
         (n.op == OpKind::activation && n.act == ir::Act::gelu);
}
}  // namespace

StepPrediction predict_graph(const ir::Graph& g, const catalog::Gpu& gpu, const PrecisionPlan& plan) {
  return predict_graph(g, gpu, plan, efficiency_for(gpu, plan));
}

StepPrediction predict_graph(const ir::Graph& g, const catalog::Gpu& gpu, const PrecisionPlan& plan,
                             const EfficiencyParams& p, ConvLayout layout, const KernelFusion& fusion) {
  StepPrediction out;
  std::vector<bool> feeds_gate(g.size(), false);  // GEMM outputs a fused activation reads
  if (fusion.activation_cast)
    for (const Node& n : g.nodes())
      if (activation_fused(n))
        for (const ir::NodeId in : n.inputs) feeds_gate[static_cast<std::size_t>(in)] = true;
  std::vector<bool> cast_done(g.size(), false);  // inputs already cast to FP8 (shared_input_cast)
  std::vector<bool> into_add(g.size(), false);   // dropouts a residual add reads (dropout_add)
  if (fusion.dropout_add)
    for (const Node& n : g.nodes())
      if (n.op == OpKind::add)
        for (const ir::NodeId in : n.inputs)
          if (g.node(in).op == OpKind::dropout) into_add[static_cast<std::size_t>(in)] = true;
  // Inference fusions: an add read only by a norm runs inside it, an activation whose GEMM output nothing else reads
  // runs in the GEMM's epilogue.
  std::vector<int> readers(g.size(), 0);
  for (const Node& n : g.nodes())
    for (const ir::NodeId in : n.inputs) ++readers[static_cast<std::size_t>(in)];
  std::vector<bool> into_norm(g.size(), false);    // adds a norm computes itself (add_norm)
  std::vector<bool> in_epilogue(g.size(), false);  // activations a GEMM's epilogue computes (gemm_activation)
  for (const Node& n : g.nodes()) {
    if (n.inputs.empty()) continue;
    const Node& in = g.node(n.inputs[0]);
    const bool sole_reader = readers[static_cast<std::size_t>(in.id)] == 1;
    if (fusion.add_norm && n.op == OpKind::normalize && in.op == OpKind::add && sole_reader) into_norm[static_cast<std::size_t>(in.id)] = true;
    if (fusion.gemm_activation && n.op == OpKind::activation && in.op == OpKind::matmul && sole_reader)
      in_epilogue[static_cast<std::size_t>(n.id)] = true;
  }
  const DeviceView d = device_view(gpu, plan, p);
  const double matrix_peak = d.matrix_peak;
  const double vector_peak = d.vector_peak;
  const double bandwidth = d.bandwidth;
  const double elem = static_cast<double>(ir::dtype_size(plan.activations));
  const ir::NodeId loss = g.output("loss") == ir::kNone ? static_cast<ir::NodeId>(g.size()) : g.output("loss");
  for (const Node& n : g.nodes()) {
    ir::OpCost c = ir::op_cost(g, n);
    if (c.matrix_flops == 0 && c.vector_flops == 0 && c.bytes == 0) continue;  // inputs, params, views
    // The second half of a gated activation's gradient comes out of the first half's kernel; a fused scale and
    // mask, and a dropout fused with its residual add, are priced in the kernel they run in.
    if (fusion.activation_cast && n.op == OpKind::elementwise && n.fn == EwFn::gated_grad_b) continue;
    if (fusion.scale_mask_softmax && n.op == OpKind::elementwise && n.fn == EwFn::scale_mask) continue;
    if (into_add[static_cast<std::size_t>(n.id)] || into_norm[static_cast<std::size_t>(n.id)] || in_epilogue[static_cast<std::size_t>(n.id)]) continue;
    if (n.op == OpKind::normalize && into_norm[static_cast<std::size_t>(n.inputs[0])]) {
      // One kernel reads both of the add's inputs instead of their sum, and does the add.
      const ir::OpCost sum = ir::op_cost(g, g.node(n.inputs[0]));
      c.bytes += static_cast<double>(ir::numel(n.shape)) * static_cast<double>(ir::dtype_size(n.dtype));
      c.vector_flops += sum.vector_flops;
    }
    if (fusion.dropout_add && n.op == OpKind::add)
      for (const ir::NodeId in : n.inputs)
        if (into_add[static_cast<std::size_t>(in)]) {
          // One kernel reads the dropout's input and the residual, writes the sum and the mask.
          const ir::OpCost drop = ir::op_cost(g, g.node(in));
          c.bytes += drop.bytes - 2.0 * static_cast<double>(ir::numel(g.node(in).shape)) * static_cast<double>(ir::dtype_size(g.node(in).dtype));
          c.vector_flops += drop.vector_flops;
        }
    c.matrix_flops *= conv_flop_factor(g, n, plan);  // what the kernel computes, not what the layer says
    if (n.op == OpKind::adam_update && plan.fp32_master) {
      // AMP keeps fp32 master weights, gradients and moments, and writes a half-precision copy.
      c.bytes = c.bytes / elem * 4.0 + static_cast<double>(ir::numel(n.shape)) * elem;
    }
    OpTime t;
    t.id = n.id;
    double mat_eff = 0;
    if (c.matrix_flops > 0) {
      const double max_eff = n.op == OpKind::attention || n.op == OpKind::attention_grad ? p.attention_max
                             : (n.op == OpKind::conv2d || n.op == OpKind::conv2d_grad_input ||
                                n.op == OpKind::conv2d_grad_weight)
                                 ? p.conv_max
                                 : p.gemm_max;
      const GemmDims dims = gemm_dims(g, n);
      mat_eff = dims.m > 0 ? gemm_efficiency(dims, max_eff, p, gpu.sm_count) : max_eff;
      // FP8 training runs its GEMMs in FP8 and fused attention in BF16 (Transformer Engine's recipe: fp8_dpa is
      // off unless asked for).
      const bool bf16_attention = plan.precision == Precision::amp_fp8 && gpu.bf16.dense &&
                                  (n.op == OpKind::attention || n.op == OpKind::attention_grad);
      t.compute_s = c.matrix_flops / ((bf16_attention ? *gpu.bf16.dense * 1e12 * d.clock : matrix_peak) * mat_eff);
    }
    t.compute_s += c.vector_flops / vector_peak;
    const double mem_eff = memory_efficiency(c.bytes, p);
    t.memory_s = c.bytes > 0 ? c.bytes / (bandwidth * mem_eff) : 0.0;
    // Memory time is the traffic at the kernel class's rate plus the ramp and tail of a small transfer; where
    // the ramp is the larger part (under mem_half_bytes), the kernel is latency-bound, not bandwidth-bound.
    const double traffic_s = c.bytes > 0 ? c.bytes / (bandwidth * p.mem_max) : 0.0;
    t.bound = t.compute_s >= t.memory_s ? Bound::compute : t.memory_s - traffic_s > traffic_s ? Bound::latency : Bound::memory;
    t.efficiency = t.bound == Bound::compute ? mat_eff : mem_eff;
    t.seconds = std::max(t.compute_s, t.memory_s) + p.launch_s;
    // Memory-bound kernels a library runs around the op (casts, transposes): `bytes` streamed by `kernels` launches.
    auto side_kernels = [&](double bytes, int kernels) {
      const double stream_s = bytes / (bandwidth * memory_efficiency(bytes, p));
      t.seconds += stream_s + kernels * p.launch_s;
      t.memory_s += stream_s;
      out.memory_s += stream_s;
      out.launch_s += kernels * p.launch_s;
      out.step_s += stream_s + kernels * p.launch_s;
      out.bytes += bytes;
      out.kernels += kernels;
    };
    // LoRA adapters stay in BF16 (Transformer Engine's FP8 applies to the base linear layers).
    if (plan.precision == Precision::amp_fp8 && n.op == OpKind::matmul && n.id < loss && c.matrix_flops > 0 &&
        n.name.find("/lora") == std::string::npos) {
      // FP8 the Transformer Engine way: the GEMM's BF16 input is cast to FP8 with a transposed copy for the
      // weight-gradient GEMM (read 2 B, write 1 + 1 B per element), likewise its output gradient in backward, and
      // a trained weight once per step (read 2 B, write 1 B; a frozen one is cast once and kept); separate
      // memory-bound kernels around the GEMMs. A frozen weight has no weight-gradient GEMM, so neither
      // transposed copy is made (TE's Linear casts without transposing when the weight needs no gradient).
      const Node& a = g.node(n.inputs[0]);
      const Node& w = g.node(n.inputs[1]);
      const bool frozen = w.op == OpKind::param && !w.trainable;
      const double per_element = frozen ? 3.0 : 4.0;
      double cast = 0;
      int kernels = 0;
      // The output gradient, in backward (written by the gated activation's gradient kernel when fused).
      if (!feeds_gate[static_cast<std::size_t>(n.id)]) cast += per_element * static_cast<double>(ir::numel(n.shape)), ++kernels;
      for (const Node* in : {&a, &w}) {
        if (in->op == OpKind::param && !in->trainable) continue;
        if (fusion.shared_input_cast && cast_done[static_cast<std::size_t>(in->id)]) continue;
        if (fusion.norm_cast && in->op == OpKind::normalize) continue;
        if (fusion.activation_cast && activation_fused(*in)) continue;
        cast_done[static_cast<std::size_t>(in->id)] = true;
        cast += (in->op == OpKind::param ? 3.0 : per_element) * static_cast<double>(ir::numel(in->shape));
        ++kernels;
      }
      if (kernels > 0) side_kernels(cast, kernels);
    }
    if (layout == ConvLayout::nchw && plan.tensor_cores &&
        (n.op == OpKind::conv2d || n.op == OpKind::conv2d_grad_input || n.op == OpKind::conv2d_grad_weight)) {
      const Node& conv = n.op == OpKind::conv2d ? n : g.node(n.ref);
      // A 1x1 stride-1 convolution over NCHW data is already a GEMM per image (K x C times C x HW), which
      // cuDNN runs on tensor cores as it lies. Any other shape runs as implicit GEMM over channels-last
      // data: the activation operand and the result are each transposed (read and written once more) by
      // separate kernels around the convolution.
      const bool gemm_as_laid_out = conv.kernel_h == 1 && conv.kernel_w == 1 && conv.stride_h == 1 && conv.stride_w == 1;
      if (!gemm_as_laid_out) {
        const double activations = static_cast<double>(ir::numel(g.node(conv.inputs[0]).shape) + ir::numel(conv.shape));
        side_kernels(2.0 * activations * elem, 2);
      }
    }
    if (t.bound == Bound::compute) out.compute_s += std::max(t.compute_s, t.memory_s);
    else if (t.bound == Bound::latency) out.latency_s += t.memory_s;
    else out.memory_s += std::max(t.compute_s, t.memory_s);
    out.launch_s += p.launch_s;
    out.step_s += t.seconds;
    out.matrix_flops += c.matrix_flops;
    out.vector_flops += c.vector_flops;
    out.bytes += c.bytes;
    ++out.kernels;
    out.ops.push_back(t);
  }
  return out;
}

}  // namespace gpuvs::perf
