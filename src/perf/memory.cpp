// SPDX-License-Identifier: Apache-2.0
#include "perf/memory.hpp"

#include <algorithm>
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

std::vector<ir::NodeId> saved_tensors(const ir::Graph& g) {
  const ir::NodeId loss = g.output("loss");
  const ir::NodeId last_forward = loss == ir::kNone ? static_cast<ir::NodeId>(g.size()) - 1 : loss;
  std::set<ir::NodeId> saved;
  for (const Node& n : g.nodes()) {
    if (n.id <= last_forward) continue;
    auto keep = [&](ir::NodeId id) {
      if (id == ir::kNone || id > last_forward) return;
      const ir::NodeId s = storage_of(g, id);
      const Node& src = g.node(s);
      if (src.op == OpKind::param || src.op == OpKind::fill) return;  // counted with the weights
      saved.insert(s);
    };
    for (ir::NodeId in : n.inputs) keep(in);
    keep(n.ref);
  }
  return {saved.begin(), saved.end()};
}

double saved_bytes(const ir::Graph& g, ir::NodeId id) {
  const Node& n = g.node(id);
  return node_bytes(n) + (n.op == OpKind::dropout ? static_cast<double>(ir::numel(n.shape)) : 0.0);
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
    for (ir::NodeId id : saved_tensors(g)) m.activations_bytes += saved_bytes(g, id);
  // Transient: the largest tensor produced anywhere, twice (an op's input gradient and output gradient).
  double largest = 0;
  for (const Node& n : g.nodes())
    if (n.op != OpKind::param && !is_view(n)) largest = std::max(largest, node_bytes(n));
  m.transient_bytes = 2.0 * largest;
  if (!training) {
    // Inference keeps no activations beyond the live ones: two of the largest.
    m.activations_bytes = 0;
  }
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
