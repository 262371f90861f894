// SPDX-License-Identifier: Apache-2.0
// The CPU executor: plans one arena for every intermediate and saved tensor, binds params to the
// ParamStore, creates a GEMM plan per matmul, then interprets the node list in order.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "engine/cpu/gemm.hpp"
#include "engine/cpu/kernels.hpp"
#include "engine/executor.hpp"

namespace gpuvs::engine {

namespace {

using ir::DType;
using ir::Node;
using ir::NodeId;
using ir::OpKind;

std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }

/// The arena's layout: an offset per node's value (params live in the store; adam_update writes its param
/// in place) and per saved auxiliary tensor (dropout's 1-byte keep mask, softmax_xent's probabilities).
struct ArenaPlan {
  std::vector<std::size_t> value_off, aux_off;
  std::size_t total = 0;
};

ArenaPlan plan_arena(const ir::Graph& g) {
  ArenaPlan p;
  p.value_off.assign(g.size(), 0);
  p.aux_off.assign(g.size(), 0);
  for (const Node& n : g.nodes()) {
    const auto i = static_cast<std::size_t>(n.id);
    const auto bytes = static_cast<std::size_t>(ir::numel(n.shape)) * ir::dtype_size(n.dtype);
    if (n.op != OpKind::param && n.op != OpKind::adam_update) {
      p.value_off[i] = p.total;
      p.total += align64(bytes);
    }
    if (n.op == OpKind::dropout) {
      p.aux_off[i] = p.total;
      p.total += align64(static_cast<std::size_t>(ir::numel(n.shape)));
    } else if (n.op == OpKind::softmax_xent) {
      p.aux_off[i] = p.total;
      p.total += align64(static_cast<std::size_t>(ir::numel(g.node(n.inputs[0]).shape)) * ir::dtype_size(n.dtype));
    }
  }
  return p;
}

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt)
      : g_(g), store_(store), opt_(opt) {
    for (const Node& n : g_.nodes()) check_supported(n);
    const std::size_t count = g_.size();
    value_.assign(count, nullptr);
    aux_.assign(count, nullptr);
    slot_m_.assign(count, nullptr);
    slot_v_.assign(count, nullptr);
    gemm_.resize(count);
    if (opt_.profile) seconds_.assign(count, 0.0);
    // Pass 1: sizes (the same plan cpu_workspace_bytes reports before anything is allocated).
    const ArenaPlan plan = plan_arena(g_);
    const auto& value_off = plan.value_off;
    const auto& aux_off = plan.aux_off;
    arena_ = AlignedBuffer(plan.total);
    // Pass 2: bind pointers, fill constants, create GEMM plans.
    for (const Node& n : g_.nodes()) {
      const std::size_t i = idx(n.id);
      if (n.op == OpKind::param) {
        HostTensor& t = store_.get(n.name);
        if (t.shape != n.shape || t.dtype != n.dtype)
          throw std::invalid_argument(fmt::format("executor: param '{}' is {} {} in the store but {} {} in the graph",
                                                  n.name, ir::shape_str(t.shape), ir::dtype_name(t.dtype),
                                                  ir::shape_str(n.shape), ir::dtype_name(n.dtype)));
        value_[i] = t.buffer.data();
        continue;
      }
      if (n.op == OpKind::adam_update) {
        const Node& p = g_.node(n.inputs[0]);
        value_[i] = value_[idx(p.id)];
        slot_m_[i] = store_.ensure(p.name + "/m", p.shape, p.dtype).buffer.data();
        slot_v_[i] = store_.ensure(p.name + "/v", p.shape, p.dtype).buffer.data();
        if (first_update_ == ir::kNone) first_update_ = n.id;
        continue;
      }
      value_[i] = arena_.data() + value_off[i];
      if (n.op == OpKind::dropout || n.op == OpKind::softmax_xent) aux_[i] = arena_.data() + aux_off[i];
      if (n.op == OpKind::fill) fill(n);
    }
    for (const Node& n : g_.nodes())
      if (n.op == OpKind::adam_update && n.dtype == DType::f32)
        gradients_.push_back({reinterpret_cast<float*>(value_[idx(n.inputs[1])]), ir::numel(n.shape)});
    for (const Node& n : g_.nodes()) {
      if (n.op != OpKind::matmul) continue;
      const Node& a = g_.node(n.inputs[0]);
      cpu::GemmShape s;
      s.m = n.shape[0];
      s.n = n.shape[1];
      s.k = n.trans_a ? a.shape[0] : a.shape[1];
      s.trans_a = n.trans_a;
      s.trans_b = n.trans_b;
      gemm_[idx(n.id)] = std::make_unique<cpu::GemmPlan>(opt_.gemm, n.dtype, s, value_[idx(n.inputs[0])],
                                                         value_[idx(n.inputs[1])],
                                                         n.has_bias ? value_[idx(n.inputs[2])] : nullptr,
                                                         value_[idx(n.id)], n.act);
    }
  }

  void* input(std::string_view name) override {
    const NodeId id = g_.find(name);
    if (id == ir::kNone || g_.node(id).op != OpKind::input)
      throw std::invalid_argument(fmt::format("executor: no input named '{}'", name));
    return value_[idx(id)];
  }

  void run(const StepContext& ctx) override {
    if (!opt_.profile) {
      for (const Node& n : g_.nodes()) {
        if (n.id == first_update_ && opt_.reduce_gradients) opt_.reduce_gradients(gradients_);
        exec(n, ctx);
      }
      return;
    }
    for (const Node& n : g_.nodes()) {
      if (n.id == first_update_ && opt_.reduce_gradients) opt_.reduce_gradients(gradients_);
      const auto t0 = std::chrono::steady_clock::now();
      exec(n, ctx);
      seconds_[idx(n.id)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }

  double scalar(std::string_view output) const override {
    const NodeId id = g_.output(output);
    if (id == ir::kNone) throw std::invalid_argument(fmt::format("executor: no output named '{}'", output));
    return read(id).at(0);
  }

  std::vector<double> read(NodeId id) const override {
    const Node& n = g_.node(id);
    const auto count = static_cast<std::size_t>(ir::numel(n.shape));
    std::vector<double> out(count);
    const std::byte* p = value_[idx(id)];
    for (std::size_t k = 0; k < count; ++k) {
      switch (n.dtype) {
        case DType::f32: out[k] = reinterpret_cast<const float*>(p)[k]; break;
        case DType::f64: out[k] = reinterpret_cast<const double*>(p)[k]; break;
        case DType::i32: out[k] = reinterpret_cast<const std::int32_t*>(p)[k]; break;
        default: throw std::invalid_argument("executor: dtype not held by the CPU engine");
      }
    }
    return out;
  }

  std::size_t workspace_bytes() const override { return arena_.size(); }
  const std::vector<double>& node_seconds() const override { return seconds_; }
  const ir::Graph& graph() const override { return g_; }

  std::string describe() const override {
    std::string out;
    for (const Node& n : g_.nodes())
      if (gemm_[idx(n.id)]) out += fmt::format("{}: {}\n", n.name, gemm_[idx(n.id)]->impl());
    return out;
  }

 private:
  static std::size_t idx(NodeId id) { return static_cast<std::size_t>(id); }

  // The CPU engine runs the ops of dense networks in f32/f64; the rest of the IR (convolutions, attention,
  // reduced precisions) is priced by the performance model and refused here at build time, never mid-run.
  static void check_supported(const Node& n) {
    switch (n.op) {
      case OpKind::input: case OpKind::param: case OpKind::fill: case OpKind::matmul: case OpKind::activation:
      case OpKind::activation_grad: case OpKind::dropout: case OpKind::dropout_grad: case OpKind::softmax:
      case OpKind::softmax_xent: case OpKind::softmax_xent_grad: case OpKind::reduce_rows: case OpKind::add:
      case OpKind::accuracy: case OpKind::adam_update:
        break;
      default:
        throw std::invalid_argument(fmt::format("the CPU engine does not run op {} (node '{}') yet", ir::op_name(n.op),
                                                n.name));
    }
    if (n.dtype != DType::f32 && n.dtype != DType::f64 && n.dtype != DType::i32)
      throw std::invalid_argument(fmt::format("the CPU engine does not run {} tensors (node '{}')",
                                              ir::dtype_name(n.dtype), n.name));
    if (n.op == OpKind::softmax && n.shape.size() != 2)
      throw std::invalid_argument(fmt::format("the CPU engine runs softmax on matrices only (node '{}')", n.name));
  }

  void fill(const Node& n) {
    const auto count = ir::numel(n.shape);
    for (std::int64_t k = 0; k < count; ++k) {
      if (n.dtype == DType::f32) reinterpret_cast<float*>(value_[idx(n.id)])[k] = static_cast<float>(n.value);
      else if (n.dtype == DType::f64) reinterpret_cast<double*>(value_[idx(n.id)])[k] = n.value;
      else reinterpret_cast<std::int32_t*>(value_[idx(n.id)])[k] = static_cast<std::int32_t>(n.value);
    }
  }

  template <class T>
  T* val(NodeId id) const { return reinterpret_cast<T*>(value_[idx(id)]); }

  void exec(const Node& n, const StepContext& ctx) {
    if (n.dtype == DType::f64) exec_typed<double>(n, ctx);
    else exec_typed<float>(n, ctx);
  }

  template <class T>
  void exec_typed(const Node& n, const StepContext& ctx) {
    const std::int64_t count = ir::numel(n.shape);
    T* out = val<T>(n.id);
    switch (n.op) {
      case OpKind::input:
      case OpKind::param:
      case OpKind::fill:
        return;
      case OpKind::matmul:
        gemm_[idx(n.id)]->run();
        return;
      case OpKind::activation:
        cpu::activation_forward(val<T>(n.inputs[0]), out, count, n.act);
        return;
      case OpKind::activation_grad:
        cpu::activation_backward(val<T>(n.inputs[0]), val<T>(n.inputs[1]), out, count, n.act);
        return;
      case OpKind::dropout: {
        // A new mask every step and for every dropout node: the stream is (step, node).
        const std::uint64_t stream = (static_cast<std::uint64_t>(ctx.iteration) << 20) | idx(n.id);
        const std::int64_t per_row = n.shape.empty() || n.shape[0] == 0 ? 0 : count / n.shape[0];
        cpu::dropout_forward(val<T>(n.inputs[0]), out, reinterpret_cast<std::uint8_t*>(aux_[idx(n.id)]), count,
                             n.rate, ctx.seed, stream, ctx.row_offset * per_row);
        return;
      }
      case OpKind::dropout_grad:
        cpu::dropout_backward(val<T>(n.inputs[0]), reinterpret_cast<const std::uint8_t*>(aux_[idx(n.ref)]), out,
                              count, n.rate);
        return;
      case OpKind::softmax: {
        cpu::softmax_forward(val<T>(n.inputs[0]), out, n.shape[0], n.shape[1]);
        return;
      }
      case OpKind::softmax_xent: {
        const auto& ls = g_.node(n.inputs[0]).shape;
        *out = static_cast<T>(cpu::softmax_xent_forward(val<T>(n.inputs[0]), val<std::int32_t>(n.inputs[1]),
                                                        reinterpret_cast<T*>(aux_[idx(n.id)]), ls[0], ls[1]));
        return;
      }
      case OpKind::softmax_xent_grad:
        cpu::softmax_xent_backward(*val<T>(n.inputs[0]), reinterpret_cast<const T*>(aux_[idx(n.ref)]),
                                   val<std::int32_t>(n.inputs[1]), out, n.shape[0], n.shape[1]);
        return;
      case OpKind::reduce_rows: {
        const auto& xs = g_.node(n.inputs[0]).shape;
        cpu::reduce_rows(val<T>(n.inputs[0]), out, xs[0], xs[1]);
        return;
      }
      case OpKind::add:
        cpu::add(val<T>(n.inputs[0]), val<T>(n.inputs[1]), out, count);
        return;
      case OpKind::accuracy: {
        const auto& ls = g_.node(n.inputs[0]).shape;
        *out = static_cast<T>(cpu::accuracy(val<T>(n.inputs[0]), val<std::int32_t>(n.inputs[1]), ls[0], ls[1]));
        return;
      }
      case OpKind::adam_update:
        cpu::adam_update(out, val<T>(n.inputs[1]), reinterpret_cast<T*>(slot_m_[idx(n.id)]),
                         reinterpret_cast<T*>(slot_v_[idx(n.id)]), count, n.adam, ctx.iteration);
        return;
      default:
        return;  // unreachable: check_supported refused the graph at construction
    }
  }

  const ir::Graph g_;  // owned copy: the executor outlives any temporary the caller built
  ParamStore& store_;
  ExecutorOptions opt_;
  AlignedBuffer arena_;
  NodeId first_update_ = ir::kNone;        // the optimizer's first node: gradients are all final before it
  std::vector<GradientSpan> gradients_;       // every f32 gradient an adam_update reads (reduce_gradients)
  std::vector<std::byte*> value_, aux_, slot_m_, slot_v_;
  std::vector<std::unique_ptr<cpu::GemmPlan>> gemm_;
  std::vector<double> seconds_;
};

}  // namespace

std::size_t cpu_workspace_bytes(const ir::Graph& g) { return plan_arena(g).total; }

std::unique_ptr<Executor> make_cpu_executor(const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt) {
  return std::make_unique<CpuExecutor>(g, store, opt);
}

}  // namespace gpuvs::engine
