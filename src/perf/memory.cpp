// SPDX-License-Identifier: Apache-2.0
#include "perf/memory.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "perf/system_facts.hpp"

namespace gpuvs::perf {

using ir::Node;
using ir::OpKind;

namespace {

bool is_view(const Node& n) { return n.op == OpKind::slice || (n.op == OpKind::reshape && !n.copy); }

// Follows views to the node that owns the storage.
ir::NodeId storage_of(const ir::Graph& g, ir::NodeId id) {
  while (is_view(g.node(id))) id = g.node(id).inputs[0];
  return id;
}

double node_bytes(const Node& n) {
  return static_cast<double>(ir::numel(n.shape)) * static_cast<double>(ir::dtype_size(n.dtype));
}
}  // namespace

ParamBytes param_bytes(const PrecisionPlan& plan, bool training) {
  const double half = static_cast<double>(ir::dtype_size(plan.activations));
  if (!training) return {half, 0, 0};
  if (plan.activations == ir::DType::f32) return {4, 4, 8};
  if (plan.fp32_master) return {2, 2, 12};
  return {2, 2, 4};
}

namespace {

struct SavedParts {
  std::map<ir::NodeId, ir::NodeId> outputs;  // forward storage a backward node reads -> the last such node
  std::map<ir::NodeId, ir::NodeId> side_until;  // forward node -> the last backward node reading its side data
  std::map<ir::NodeId, double> side;         // forward node -> the bytes of that side data
};

SavedParts saved_parts(const ir::Graph& g) {
  SavedParts parts;
  auto& side = parts.side;
  const ir::NodeId loss = g.output("loss");
  const ir::NodeId last_forward = loss == ir::kNone ? static_cast<ir::NodeId>(g.size()) - 1 : loss;
  for (const Node& n : g.nodes()) {
    if (n.id <= last_forward || n.op == OpKind::adam_update) continue;
    auto keep = [&](ir::NodeId id) {
      if (id == ir::kNone || id > last_forward) return;
      const ir::NodeId s = storage_of(g, id);
      const Node& src = g.node(s);
      if (src.op == OpKind::param || src.op == OpKind::fill) return;  // counted with the weights
      parts.outputs[s] = n.id;  // nodes come in order: the last write is the last reader
    };
    for (ir::NodeId in : n.inputs) keep(in);
    if (n.ref == ir::kNone || n.ref > last_forward) continue;
    const Node& f = g.node(n.ref);
    parts.side_until[f.id] = n.id;
    const double count = static_cast<double>(ir::numel(f.shape));
    switch (n.op) {
      case OpKind::dropout_grad:
        side[f.id] = count;  // a 1-byte mask per element
        break;
      case OpKind::normalize_grad:
      case OpKind::normalize_grad_scale: {
        // FP32 statistics per normalized group — per channel (batch norm), per row (layer and RMS norm), per sample and
        // group (group norm): the mean and inverse deviation, or the inverse root mean square alone (RMS norm).
        const double groups = f.norm == ir::NormKind::batch   ? static_cast<double>(f.shape[1])
                              : f.norm == ir::NormKind::group ? static_cast<double>(f.shape[0] * f.groups)
                                                              : count / static_cast<double>(f.shape.back());
        side[f.id] = (f.norm == ir::NormKind::rms ? 1.0 : 2.0) * 4.0 * groups;
        break;
      }
      case OpKind::pool2d_grad:
        if (f.pool == ir::PoolKind::max) {  // the input and the argmax of each window (PyTorch: int64 indices)
          keep(f.inputs[0]);
          side[f.id] = 8.0 * count;
        }
        break;
      case OpKind::softmax_xent_grad:
        side[f.id] = 4.0 * static_cast<double>(ir::numel(g.node(f.inputs[0]).shape));  // FP32 probabilities
        break;
      default:  // the forward tensors the others read are their inputs
        break;
    }
  }
  return parts;
}

}  // namespace

std::vector<SavedTensor> saved_tensors(const ir::Graph& g) {
  const SavedParts parts = saved_parts(g);
  std::map<ir::NodeId, double> bytes = parts.side;
  for (const auto& [id, reader] : parts.outputs) bytes[id] += node_bytes(g.node(id));
  std::vector<SavedTensor> saved;
  saved.reserve(bytes.size());
  for (const auto& [id, b] : bytes) saved.push_back({id, b});
  return saved;
}

double peak_live_bytes(const ir::Graph& g) {
  const auto size = static_cast<std::size_t>(g.size());
  // The end of the step's own work: the optimizer's first node (none in an inference graph).
  std::size_t end = size;
  std::set<ir::NodeId> param_grads;
  for (const Node& n : g.nodes())
    if (n.op == OpKind::adam_update) {
      end = std::min(end, static_cast<std::size_t>(n.id));
      param_grads.insert(storage_of(g, n.inputs[1]));
    }
  std::vector<ir::NodeId> last(size, ir::kNone);  // the last node reading each storage
  for (const Node& n : g.nodes()) {
    if (static_cast<std::size_t>(n.id) >= end) break;
    for (ir::NodeId in : n.inputs) {
      const ir::NodeId s = storage_of(g, in);
      last[static_cast<std::size_t>(s)] = std::max(last[static_cast<std::size_t>(s)], n.id);
    }
  }
  // A saved tensor lives until the backward node that keeps it, even one that reads it only through its forward
  // node (a max pool's input), so the saved tensors are all live together where the forward pass ends.
  const SavedParts parts = saved_parts(g);
  for (const auto& [id, reader] : parts.outputs)
    last[static_cast<std::size_t>(id)] = std::max(last[static_cast<std::size_t>(id)], reader);
  std::vector<double> delta(end + 1, 0.0);
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<std::size_t>(n.id);
    if (i >= end) break;
    // Parameters' gradients are MemoryEstimate's gradients. One that shares its storage with an activation's gradient
    // (a parameter added to a same-shaped activation) drops that gradient from the count: rare, and small.
    if (n.op == OpKind::param || n.op == OpKind::fill || is_view(n) || param_grads.count(n.id)) continue;
    const std::size_t until = last[i] == ir::kNone ? i : static_cast<std::size_t>(last[i]);
    delta[i] += node_bytes(n);
    delta[std::min(until, end - 1) + 1] -= node_bytes(n);
  }
  for (const auto& [id, bytes] : parts.side) {
    if (static_cast<std::size_t>(id) >= end) continue;
    const auto reader = parts.side_until.find(id);
    const std::size_t until = reader == parts.side_until.end() ? static_cast<std::size_t>(id) : static_cast<std::size_t>(reader->second);
    delta[static_cast<std::size_t>(id)] += bytes;
    delta[std::min(until, end - 1) + 1] -= bytes;
  }
  double live = 0, peak = 0;
  for (std::size_t i = 0; i < end; ++i) {
    live += delta[i];
    peak = std::max(peak, live);
  }
  return peak;
}

MemoryEstimate estimate_memory(const ir::Graph& g, std::int64_t params, const PrecisionPlan& plan, bool training,
                               const catalog::Gpu& gpu, std::int64_t frozen_params, double frozen_bytes_per_param) {
  MemoryEstimate m;
  const ParamBytes pb = param_bytes(plan, training);
  const double p = static_cast<double>(params);
  m.weights_bytes = pb.weights * p;
  m.gradients_bytes = pb.gradients * p;
  m.optimizer_bytes = pb.optimizer * p;
  m.weights_bytes += static_cast<double>(frozen_params) * frozen_bytes_per_param;
  if (training)
    for (const SavedTensor& t : saved_tensors(g)) m.activations_bytes += t.bytes;
  // Saved tensors are all live where the forward pass ends, so the peak is at least their sum; what is live beside
  // them at the peak is the step's transient. Inference keeps nothing for a backward pass: its peak is all transient.
  m.transient_bytes = std::max(0.0, peak_live_bytes(g) - m.activations_bytes);
  m.runtime_bytes = system_facts().runtime_bytes;
  m.capacity_bytes = usable_device_bytes(gpu.memory_bytes());
  update_peak(m);
  return m;
}

double usable_device_bytes(double bytes) { return bytes * (1.0 - system_facts().driver_reserve); }

void update_peak(MemoryEstimate& m) {
  const double dynamic = m.gradients_bytes + m.optimizer_bytes + m.activations_bytes + m.transient_bytes;
  m.fragmentation_bytes = system_facts().allocator_slack * dynamic;
  m.peak_bytes = m.weights_bytes + dynamic + m.fragmentation_bytes + m.runtime_bytes;
  m.fits = m.peak_bytes <= m.capacity_bytes;
}

}  // namespace gpuvs::perf
