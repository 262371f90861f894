// SPDX-License-Identifier: Apache-2.0
// The ONNX operators built as IR ops (the converter's build_op): tensors the model computes with each step.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <functional>
#include <map>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "ir/conv_window.hpp"

namespace gpuvs::import::onnx_detail {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {
using TP = onnx::TensorProto;
using Node = onnx::NodeProto;

const std::map<std::string, EwFn> kBinaryFns = {{"Add", EwFn::add}, {"Sub", EwFn::sub}, {"Mul", EwFn::mul}, {"Div", EwFn::div},
                                                {"Pow", EwFn::pow}, {"Max", EwFn::max}, {"Min", EwFn::min}};
const std::map<std::string, EwFn> kUnaryFns = {{"Neg", EwFn::neg},   {"Abs", EwFn::abs},        {"Exp", EwFn::exp},
                                               {"Log", EwFn::log},   {"Sqrt", EwFn::sqrt},      {"Reciprocal", EwFn::reciprocal},
                                               {"Erf", EwFn::erf}};
const std::map<std::string, Act> kActs = {{"Relu", Act::relu}, {"Sigmoid", Act::sigmoid}, {"Tanh", Act::tanh}, {"Gelu", Act::gelu}};
}  // namespace

/// The handlers, one per operator family; friends of Converter.
struct Ops {
  Converter& c;
  Graph& g() { return c.g_; }

  // An activation that only this output feeds, fusable into a GEMM or convolution epilogue (as cuBLASLt and
  // cuDNN run it): relu, sigmoid or tanh. Returns the act and marks the node fused.
  Act take_epilogue_act(const std::string& out, std::string& final_out) {
    const Node* u = c.sole_user(out);
    if (!u || u->domain().size() || !kActs.count(u->op_type()) || !act_grad_from_output(kActs.at(u->op_type()))) return Act::none;
    c.skip(*u);
    ++c.summary_.ops[u->op_type()];
    ++c.summary_.fused["activation in a GEMM/convolution epilogue"];
    final_out = u->output(0);
    return kActs.at(u->op_type());
  }

  void set_named(const std::string& name, NodeId id, int elem) {
    Value v;
    v.shape = g().node(id).shape;
    v.elem = elem;
    v.node = id;
    c.check_value_info(name, v);
    c.vals_[name] = std::move(v);
  }

  // ---- linear algebra ----

  void matmul(const Node& n) {
    const Value& a = c.in(n, 0);
    const Value& b = c.in(n, 1);
    if (a.shape.size() < 2 || b.shape.size() < 2) c.refuse(n, fmt::format("a MatMul of {} and {}: vectors are not built", shape_str(a.shape), shape_str(b.shape)));
    if (!is_float_type(a.elem)) c.refuse(n, "an integer MatMul is not built");
    const std::int64_t k = a.shape.back();
    if (b.shape[b.shape.size() - 2] != k) c.refuse(n, fmt::format("inner dimensions differ: {} x {}", shape_str(a.shape), shape_str(b.shape)));
    const std::string base = c.name_for(n);
    if (b.shape.size() == 2) {
      // Rows times a matrix: one GEMM over every leading dimension; a following bias add and relu/sigmoid/tanh
      // run in its epilogue.
      const NodeId xa = c.tensor(n, 0);  // refuses an empty tensor: k >= 1 below
      const std::int64_t rows = numel(a.shape) / k, cols = b.shape[1];
      const NodeId x = c.view(base + "/rows", xa, {rows, k});
      const NodeId w = c.tensor(n, 1);
      std::string final_out = n.output(0);
      NodeId bias = kNone;
      if (const Node* u = c.sole_user(final_out); u && u->op_type() == "Add" && u->domain().empty()) {
        const int other = u->input(0) == final_out ? 1 : 0;
        const Value* bv = c.lookup(u->input(other));
        if (bv && !bv->weight.empty() && numel(bv->shape) == cols && !bv->shape.empty() && bv->shape.back() == cols && bv->shape.size() <= 2) {
          c.skip(*u);
          ++c.summary_.ops["Add"];
          ++c.summary_.fused["bias in a GEMM epilogue"];
          bias = c.view(base + "/bias", c.tensor(u->input(other)), {cols});
          final_out = u->output(0);
        }
      }
      const Act act = take_epilogue_act(final_out, final_out);
      NodeId y = g().matmul(base, x, w, bias, act);
      Shape out(a.shape.begin(), a.shape.end() - 1);
      out.push_back(cols);
      set_named(final_out, c.view(base + "/unrows", y, out), a.elem);
      return;
    }
    // Batched: the leading dimensions must agree (broadcast batches are not built).
    const Shape lead_a(a.shape.begin(), a.shape.end() - 2), lead_b(b.shape.begin(), b.shape.end() - 2);
    if (lead_a != lead_b) c.refuse(n, fmt::format("a batched MatMul of {} and {}: broadcast batch dimensions are not built", shape_str(a.shape), shape_str(b.shape)));
    const std::int64_t batch = numel(lead_a), m = a.shape[a.shape.size() - 2], nn = b.shape.back();
    const NodeId x = c.view(base + "/a3", c.tensor(n, 0), {batch, m, k});
    const NodeId y = c.view(base + "/b3", c.tensor(n, 1), {batch, k, nn});
    Shape out = lead_a;
    out.push_back(m);
    out.push_back(nn);
    c.set_node(n, 0, c.view(base + "/out", g().batch_matmul(base, x, y), out), a.elem);
  }

  void gemm(const Node& n) {
    const Value& a = c.in(n, 0);
    const Value& b = c.in(n, 1);
    if (a.shape.size() != 2 || b.shape.size() != 2) c.refuse(n, "Gemm needs matrices");
    const bool ta = c.attr_int(n, "transA", 0) != 0, tb = c.attr_int(n, "transB", 0) != 0;
    const std::int64_t k = ta ? a.shape[0] : a.shape[1], kb = tb ? b.shape[1] : b.shape[0], cols = tb ? b.shape[0] : b.shape[1];
    const std::int64_t rows = ta ? a.shape[1] : a.shape[0];
    if (k != kb) c.refuse(n, fmt::format("inner dimensions differ: {} x {}", shape_str(a.shape), shape_str(b.shape)));
    // alpha and beta scale inside the GEMM's epilogue: they cost nothing.
    const std::string base = c.name_for(n);
    NodeId bias = kNone;
    bool add_after = false;
    if (c.has(n, 2)) {
      const Value& cv = c.in(n, 2);
      if (numel(cv.shape) == cols && !cv.shape.empty() && cv.shape.back() == cols) bias = c.view(base + "/bias", c.tensor(n, 2), {cols});
      else add_after = true;
    }
    std::string final_out = n.output(0);
    const Act act = add_after ? Act::none : take_epilogue_act(final_out, final_out);
    NodeId y = g().matmul(base, c.tensor(n, 0), c.tensor(n, 1), bias, act, ta, tb);
    if (add_after) y = g().elementwise(base + "/c", EwFn::add, {y, c.tensor(n, 2)});
    (void)rows;
    set_named(final_out, y, a.elem);
  }

  // ---- convolution and pooling ----

  /// Window geometry of a Conv or pool over the last two axes of a [N, C, H, W] (or [N, C, 1, T]) view, as the
  /// IR builds it: symmetric padding and a crop of the input (conv_window.hpp) giving the layer's output size.
  struct Geometry {
    Window w;
    std::int64_t crop_h = 0, crop_w = 0;
  };
  Geometry window(const Node& n, const Shape& x4, std::int64_t kh, std::int64_t kw, bool one_d) {
    const std::size_t dims = one_d ? 1 : 2;
    auto strides = c.attr_ints(n, "strides").value_or(std::vector<std::int64_t>(dims, 1));
    auto pads = c.attr_ints(n, "pads").value_or(std::vector<std::int64_t>(2 * dims, 0));
    auto dilations = c.attr_ints(n, "dilations").value_or(std::vector<std::int64_t>(dims, 1));
    if (strides.size() != dims || pads.size() != 2 * dims || dilations.size() != dims)
      c.refuse(n, "strides, pads or dilations do not match the kernel's rank");
    for (std::int64_t v : strides)
      if (v < 1 || v > (1 << 20)) c.refuse(n, fmt::format("stride {} outside [1, 2^20]", v));
    for (std::int64_t v : dilations)
      if (v < 1 || v > (1 << 20)) c.refuse(n, fmt::format("dilation {} outside [1, 2^20]", v));
    for (std::int64_t p : pads)
      if (p < 0 || p > (1 << 20)) c.refuse(n, fmt::format("padding {} outside [0, 2^20]", p));
    const std::string auto_pad = c.attr_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
      c.refuse(n, fmt::format("auto_pad {} is not an ONNX value", strings::printable(auto_pad)));
    const bool ceil_mode = c.attr_int(n, "ceil_mode", 0) != 0;
    if (ceil_mode && auto_pad != "NOTSET") c.refuse(n, fmt::format("ceil_mode with auto_pad {} (ONNX defines neither's outputs with the other)", auto_pad));
    const std::vector<std::int64_t> in = one_d ? std::vector<std::int64_t>{x4[3]} : std::vector<std::int64_t>{x4[2], x4[3]};
    const std::vector<std::int64_t> kern = one_d ? std::vector<std::int64_t>{kw} : std::vector<std::int64_t>{kh, kw};
    std::vector<AxisFit> fit(dims);
    for (std::size_t d = 0; d < dims; ++d) {
      std::int64_t begin = pads[d], end = pads[d + dims];
      const std::int64_t reach = dilations[d] * (kern[d] - 1) + 1;  // taps a dilated kernel spans
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const std::int64_t want = (in[d] + strides[d] - 1) / strides[d];
        const std::int64_t total = std::max<std::int64_t>(0, (want - 1) * strides[d] + reach - in[d]);
        begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        end = total - begin;
      } else if (auto_pad == "VALID") {
        begin = end = 0;
      }
      const std::int64_t want = window_outputs(in[d], kern[d], strides[d], dilations[d], begin, end, ceil_mode);
      if (want < 1) c.refuse(n, fmt::format("the kernel spans {} of an input padded to {}", reach, in[d] + begin + end));
      const auto f = fit_axis(in[d], kern[d], strides[d], want);
      if (!f) c.refuse(n, fmt::format("{} outputs from {} inputs with kernel {} and stride {} cannot be built", want, in[d], kern[d], strides[d]));
      fit[d] = *f;
      if (begin != end) c.summary_.notes.insert("asymmetric padding is priced as symmetric padding and a crop giving the same output size");
      if (dilations[d] != 1) c.summary_.notes.insert("dilated kernels are priced as undilated ones over a cropped input (the same multiply-adds per output)");
    }
    Geometry gm;
    gm.w.kernel_h = static_cast<int>(kh);
    gm.w.kernel_w = static_cast<int>(kw);
    if (one_d) {
      gm.w.stride_w = static_cast<int>(strides[0]);
      gm.w.pad_w = fit[0].pad;
      gm.crop_w = fit[0].crop;
    } else {
      gm.w.stride_h = static_cast<int>(strides[0]);
      gm.w.stride_w = static_cast<int>(strides[1]);
      gm.w.pad_h = fit[0].pad;
      gm.w.pad_w = fit[1].pad;
      gm.crop_h = fit[0].crop;
      gm.crop_w = fit[1].crop;
    }
    return gm;
  }

  /// The [N, C, H, W] view of input 0 with a geometry's crops applied (views).
  NodeId windowed_input(const Node& n, const std::string& base, const Shape& x4, const Geometry& gm) {
    NodeId x = c.view(base + "/x4", c.tensor(n, 0), x4);
    if (gm.crop_h > 0) x = part(n, x, 2, 0, x4[2] - gm.crop_h);
    if (gm.crop_w > 0) x = part(n, x, 3, 0, x4[3] - gm.crop_w);
    return x;
  }

  void conv(const Node& n) {
    const Value& x = c.in(n, 0);
    const Value& w = c.in(n, 1);
    const bool one_d = x.shape.size() == 3;
    if ((x.shape.size() != 4 && !one_d) || w.shape.size() != x.shape.size())
      c.refuse(n, fmt::format("a convolution of {} with weights {}: 1-D and 2-D ones are built", shape_str(x.shape), shape_str(w.shape)));
    const std::int64_t groups = c.attr_int(n, "group", 1);
    for (std::size_t d = 2; d < w.shape.size(); ++d)
      if (w.shape[d] < 1 || w.shape[d] > (1 << 20)) c.refuse(n, fmt::format("kernel size {} outside [1, 2^20]", w.shape[d]));
    if (groups < 1 || groups > (1 << 20) || x.shape[1] % groups != 0 || w.shape[1] * groups != x.shape[1])
      c.refuse(n, fmt::format("{} channels do not fit weights {} in {} groups", x.shape[1], shape_str(w.shape), groups));
    if (auto ks = c.attr_ints(n, "kernel_shape"); ks && !std::equal(ks->begin(), ks->end(), w.shape.begin() + 2, w.shape.end()))
      c.refuse(n, "kernel_shape disagrees with the weights");
    const std::string base = c.name_for(n);
    const Shape x4 = one_d ? Shape{x.shape[0], x.shape[1], 1, x.shape[2]} : x.shape;
    const Shape w4 = one_d ? Shape{w.shape[0], w.shape[1], 1, w.shape[2]} : w.shape;
    const Geometry gm = window(n, x4, w4[2], w4[3], one_d);
    NodeId bias = kNone;
    if (c.has(n, 2)) {
      if (numel(c.in(n, 2).shape) != w.shape[0]) c.refuse(n, "the bias must have one value per output channel");
      bias = c.view(base + "/bias", c.tensor(n, 2), {w.shape[0]});
    }
    std::string final_out = n.output(0);
    const Act act = take_epilogue_act(final_out, final_out);
    const NodeId y = g().conv2d(base, windowed_input(n, base, x4, gm), c.view(base + "/w4", c.tensor(n, 1), w4), bias, gm.w,
                                static_cast<int>(groups), act);
    const Shape ys = g().node(y).shape;
    set_named(final_out, one_d ? c.view(base + "/out", y, {ys[0], ys[1], ys[3]}) : y, x.elem);
  }

  void pool(const Node& n) {
    const Value& x = c.in(n, 0);
    const bool one_d = x.shape.size() == 3;
    if (x.shape.size() != 4 && !one_d) c.refuse(n, fmt::format("pooling over {}: 1-D and 2-D pools are built", shape_str(x.shape)));
    if (n.output_size() > 1 && !n.output(1).empty() && c.users_.count(n.output(1))) c.refuse(n, "MaxPool's indices output is not built");
    const auto ks = c.attr_ints(n, "kernel_shape");
    if (!ks || ks->size() != (one_d ? 1u : 2u)) c.refuse(n, "kernel_shape must give the window");
    for (std::int64_t k : *ks)
      if (k < 1 || k > (1 << 20)) c.refuse(n, fmt::format("kernel size {} outside [1, 2^20]", k));
    const Shape x4 = one_d ? Shape{x.shape[0], x.shape[1], 1, x.shape[2]} : x.shape;
    const Geometry gm = window(n, x4, one_d ? 1 : (*ks)[0], one_d ? (*ks)[0] : (*ks)[1], one_d);
    const std::string base = c.name_for(n);
    const NodeId y = g().pool2d(base, windowed_input(n, base, x4, gm), n.op_type() == "MaxPool" ? PoolKind::max : PoolKind::avg, gm.w);
    const Shape ys = g().node(y).shape;
    c.set_node(n, 0, one_d ? c.view(base + "/out", y, {ys[0], ys[1], ys[3]}) : y, x.elem);
  }

  void global_pool(const Node& n) {
    const Value& x = c.in(n, 0);
    if (x.shape.size() < 3) c.refuse(n, "needs [N, C, spatial...]");
    Shape kept = x.shape;
    for (std::size_t d = 2; d < kept.size(); ++d) kept[d] = 1;
    c.set_node(n, 0, g().reduce(c.name_for(n), c.tensor(n, 0), n.op_type() == "GlobalMaxPool" ? PoolKind::max : PoolKind::avg, kept), x.elem);
  }

  // ---- normalisation ----

  void batch_norm(const Node& n) {
    const Value& x = c.in(n, 0);
    if (x.shape.size() < 2) c.refuse(n, "needs [N, C, ...]");
    for (int k = 1; k <= 4; ++k)
      if (numel(c.in(n, k).shape) != x.shape[1]) c.refuse(n, fmt::format("input {} must hold {} values, one per channel", k, x.shape[1]));
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty() && c.users_.count(n.output(k))) c.refuse(n, "the running statistics outputs are read by the graph: not built");
    // The running mean and variance are buffers, not trained.
    for (int k = 3; k <= 4; ++k)
      if (!c.in(n, k).weight.empty()) c.frozen_.insert(c.in(n, k).weight);
    const std::string base = c.name_for(n);
    const std::int64_t ch = x.shape[1];
    (void)c.tensor(n, 3);
    (void)c.tensor(n, 4);
    const NodeId y = g().normalize(base, c.tensor(n, 0), c.view(base + "/scale", c.tensor(n, 1), {ch}), c.view(base + "/shift", c.tensor(n, 2), {ch}),
                                   NormKind::batch);
    c.set_node(n, 0, y, x.elem);
  }

  void layer_norm(const Node& n) {
    const Value& x = c.in(n, 0);
    const int axis = c.norm_axis(n, c.attr_int(n, "axis", -1), x.shape.size());
    for (int k = 1; k < n.output_size(); ++k)
      if (!n.output(k).empty() && c.users_.count(n.output(k))) c.refuse(n, "the mean and inverse deviation outputs are read by the graph: not built");
    std::int64_t rows = 1, cols = 1;
    for (std::size_t d = 0; d < x.shape.size(); ++d) (static_cast<int>(d) < axis ? rows : cols) *= x.shape[d];
    const std::string base = c.name_for(n);
    if (numel(c.in(n, 1).shape) != cols || (c.has(n, 2) && numel(c.in(n, 2).shape) != cols))
      c.refuse(n, fmt::format("scale and bias must hold {} values", cols));
    const NodeId scale = c.view(base + "/scale", c.tensor(n, 1), {cols});
    const NodeId shift = c.has(n, 2) ? c.view(base + "/shift", c.tensor(n, 2), {cols}) : kNone;
    const NodeId y = g().normalize(base, c.view(base + "/rows", c.tensor(n, 0), {rows, cols}), scale, shift, NormKind::layer);
    c.set_node(n, 0, c.view(base + "/out", y, x.shape), x.elem);
  }

  void group_norm(const Node& n) {
    const Value& x = c.in(n, 0);
    if (x.shape.size() < 3) c.refuse(n, "needs [N, C, spatial...]");
    const std::int64_t ch = x.shape[1];
    const std::int64_t groups = n.op_type() == "InstanceNormalization" ? ch : c.attr_int(n, "num_groups", 0);
    if (groups < 1 || ch % groups != 0) c.refuse(n, fmt::format("{} channels do not split into {} groups", ch, groups));
    const std::string base = c.name_for(n);
    auto per_channel = [&](int k, const char* what) {
      const NodeId t = c.tensor(n, k);
      const std::int64_t have = numel(g().node(t).shape);
      if (have == ch) return c.view(base + "/" + what, t, {ch});
      if (have == groups) return g().repeat(g().unique_name(base + "/" + what + "_per_channel"), c.view(base + "/" + what, t, {groups}), {ch});
      c.refuse(n, fmt::format("{} must hold {} or {} values", what, ch, groups));
    };
    const NodeId scale = per_channel(1, "scale"), shift = per_channel(2, "shift");
    c.set_node(n, 0, g().normalize(base, c.tensor(n, 0), scale, shift, NormKind::group, static_cast<int>(groups)), x.elem);
  }

  // ---- elementwise ----

  void activation(const Node& n) {
    const Value& x = c.in(n, 0);
    c.set_node(n, 0, g().activation(c.name_for(n), c.tensor(n, 0), kActs.at(n.op_type())), x.elem);
  }

  void elementwise(const Node& n, EwFn fn) {
    std::vector<NodeId> ins;
    for (int k = 0; k < n.input_size(); ++k) ins.push_back(c.tensor(n, k));
    const int elem = n.op_type() == "Where" ? c.in(n, 1).elem : c.in(n, 0).elem;
    try {
      c.set_node(n, 0, g().elementwise(c.name_for(n), fn, ins), elem);
    } catch (const std::invalid_argument& e) {
      c.refuse(n, e.what());
    }
  }

  void clip(const Node& n) {
    NodeId y = c.tensor(n, 0);
    const std::string base = c.name_for(n);
    std::optional<double> lo = c.scalar(n, 1), hi = c.scalar(n, 2);
    for (const auto& a : n.attribute()) {  // opset < 11: bounds as attributes
      if (a.name() == "min") lo = a.f();
      if (a.name() == "max") hi = a.f();
    }
    if ((c.has(n, 1) && !lo) || (c.has(n, 2) && !hi)) c.refuse(n, "Clip bounds must be constant scalars");
    if (lo) y = g().elementwise(base + "/lo", EwFn::max, {y, g().fill(g().unique_name(base + "/min"), {}, g().node(y).dtype, *lo)});
    if (hi) y = g().elementwise(base + "/hi", EwFn::min, {y, g().fill(g().unique_name(base + "/max"), {}, g().node(y).dtype, *hi)});
    c.set_node(n, 0, y, c.in(n, 0).elem);
  }

  void softmax(const Node& n, bool log) {
    const Value& x = c.in(n, 0);
    const int rank = static_cast<int>(x.shape.size());
    if (rank < 1) c.refuse(n, "softmax of a scalar");
    const int axis = c.norm_axis(n, c.attr_int(n, "axis", c.opset_ >= 13 ? -1 : 1), x.shape.size());
    const std::string base = c.name_for(n);
    NodeId in = c.tensor(n, 0);
    Shape rows;
    if (axis == rank - 1) {
      rows = rank == 1 ? Shape{1, x.shape[0]} : x.shape;
    } else if (c.opset_ < 13) {
      // Older opsets normalise over everything from `axis` on, as one row: a view.
      std::int64_t a = 1, b = 1;
      for (int d = 0; d < rank; ++d) (d < axis ? a : b) *= x.shape[static_cast<std::size_t>(d)];
      rows = {a, b};
    } else {
      c.refuse(n, fmt::format("softmax over axis {} of {} (not the last) is not built", axis, shape_str(x.shape)));
    }
    NodeId y = g().softmax(base, c.view(base + "/rows", in, rows));
    if (log) y = g().elementwise(base + "/log", EwFn::log, {y});
    y = c.view(base + "/out", y, x.shape);
    c.pre_softmax_[n.output(0)] = in;
    c.set_node(n, 0, y, x.elem);
  }

  void dropout(const Node& n) {
    if (n.output_size() > 1 && !n.output(1).empty() && c.users_.count(n.output(1))) c.refuse(n, "Dropout's mask output is read by the graph: not built");
    double ratio = 0.5;
    for (const auto& a : n.attribute())
      if (a.name() == "ratio") ratio = a.f();
    if (c.has(n, 1)) {
      const auto r = c.scalar(n, 1);
      if (!r) c.refuse(n, "the ratio must be a constant");
      ratio = *r;
    }
    if (!(ratio >= 0 && ratio < 1)) c.refuse(n, fmt::format("ratio {} outside [0, 1)", ratio));
    // training_mode (opset 12): the file's mode; gpuvs prices the mode asked for, and says so when they differ.
    if (c.has(n, 2)) {
      const auto mode = c.scalar(n, 2);
      if (!mode) c.refuse(n, "training_mode must be a constant");
      if ((*mode != 0) != c.opt_.training)
        c.summary_.notes.insert(fmt::format("Dropout's training_mode is {} in the file: priced {}", *mode != 0 ? "true" : "false",
                                            c.opt_.training ? "as training runs it (dropout on)" : "as inference runs it (dropout off)"));
    }
    const Value& x = c.in(n, 0);
    if (!c.opt_.training || ratio == 0) {
      c.vals_[n.output(0)] = x;
      return;
    }
    c.set_node(n, 0, g().dropout(c.name_for(n), c.tensor(n, 0), ratio), x.elem);
  }

  void cast(const Node& n) {
    const Value& x = c.in(n, 0);
    const std::int64_t to64 = c.attr_int(n, "to", 0);
    // Checked before narrowing, as the folding path does: 2^32 + 1 is no FLOAT.
    if (to64 < 0 || to64 > 64) c.refuse(n, fmt::format("a cast to type {} is not built", to64));
    const int to = static_cast<int>(to64);
    if (!is_float_type(to) && !is_int_type(to)) c.refuse(n, fmt::format("a cast to {} is not built", elem_name(to)));
    if (is_float_type(to) == is_float_type(x.elem)) {
      // Float to float (or int to int): the precision policy sets the dtypes gpuvs prices.
      if (is_float_type(to) && to != x.elem) c.summary_.notes.insert("casts between float types are priced as no-ops: the precision policy sets the dtypes");
      Value v = x;
      v.elem = to;
      c.vals_[n.output(0)] = v;
      return;
    }
    c.set_node(n, 0, g().cast(c.name_for(n), c.tensor(n, 0), c.dtype_for(to)), to);
  }

  void reduce(const Node& n) {
    const Value& x = c.in(n, 0);
    auto axes = c.axes_of(n, 1);
    const bool keep = c.attr_int(n, "keepdims", 1) != 0;
    if (!axes || axes->empty()) {
      if (c.attr_int(n, "noop_with_empty_axes", 0) != 0) {
        c.vals_[n.output(0)] = x;
        return;
      }
      axes = std::vector<std::int64_t>{};
      for (std::size_t d = 0; d < x.shape.size(); ++d) axes->push_back(static_cast<std::int64_t>(d));
    }
    Shape kept = x.shape, dropped;
    std::vector<bool> red(x.shape.size(), false);
    for (std::int64_t a : *axes) red[static_cast<std::size_t>(c.norm_axis(n, a, x.shape.size()))] = true;
    for (std::size_t d = 0; d < x.shape.size(); ++d) {
      if (red[d]) kept[d] = 1;
      else dropped.push_back(x.shape[d]);
    }
    const std::string& op = n.op_type();
    const PoolKind kind = op == "ReduceMean" ? PoolKind::avg : op == "ReduceSum" ? PoolKind::sum : PoolKind::max;
    const std::string base = c.name_for(n);
    const NodeId y = g().reduce(base, c.tensor(n, 0), kind, kept);
    c.set_node(n, 0, keep ? y : c.view(base + "/drop", y, dropped), x.elem);
  }

  // ---- layout ----

  void reshape_like(const Node& n) {
    // Reshape, Flatten, Squeeze, Unsqueeze of a computed tensor: a view. The folding pass gave shape rules.
    const Value& x = c.in(n, 0);
    const std::string here = fmt::format("{}: {}", c.where_, c.node_label(n));
    const std::string& op = n.op_type();
    Shape s;
    if (op == "Reshape") {
      s = reshape_shape(x.shape, c.known_ints(n, 1, "shape"), c.attr_int(n, "allowzero", 0) != 0, here);
    } else if (op == "Flatten") {
      const auto rank = static_cast<std::int64_t>(x.shape.size());
      std::int64_t axis = c.attr_int(n, "axis", 1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis > rank) c.refuse(n, "axis out of range");
      std::int64_t a = 1, b = 1;
      for (std::int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= x.shape[static_cast<std::size_t>(d)];
      s = {a, b};
    } else if (op == "Squeeze") {
      s = squeeze_shape(x.shape, c.axes_of(n, 1).value_or(std::vector<std::int64_t>{}), here);
    } else {
      const auto axes = c.axes_of(n, 1);
      if (!axes) c.refuse(n, "Unsqueeze needs axes");
      s = unsqueeze_shape(x.shape, *axes, here);
    }
    c.set_node(n, 0, c.view(c.name_for(n), c.tensor(n, 0), s), x.elem);
  }

  void transpose(const Node& n) {
    const Value& x = c.in(n, 0);
    auto perm = c.attr_ints(n, "perm").value_or(std::vector<std::int64_t>{});
    const Shape s = permute_shape(x.shape, perm, fmt::format("{}: {}", c.where_, c.node_label(n)));
    // Moving only axes of size 1 reorders nothing in memory: a view. Any other permutation is a copy.
    std::vector<std::int64_t> moved;
    for (std::int64_t p : perm)
      if (x.shape[static_cast<std::size_t>(p)] != 1) moved.push_back(p);
    const bool copy = !std::is_sorted(moved.begin(), moved.end());
    c.set_node(n, 0, copy ? g().reshape(c.name_for(n), c.tensor(n, 0), s, true) : c.view(c.name_for(n), c.tensor(n, 0), s), x.elem);
  }

  void concat(const Node& n) {
    const Value& x = c.in(n, 0);
    const int axis = c.norm_axis(n, c.attr_int(n, "axis", 0), x.shape.size());
    std::vector<NodeId> ins;
    std::int64_t along = 0;  // the output's size on the axis, held to a dimension's bound as it adds up
    for (int k = 0; k < n.input_size(); ++k) {
      const Shape& s = c.in(n, k).shape;
      // Every input, an empty one too, has the first's rank and its sizes off the axis (ONNX Runtime refuses
      // [2, 3] beside [0, 5] on axis 1; it was dropped).
      bool same = s.size() == x.shape.size();
      for (std::size_t d = 0; same && d < s.size(); ++d) same = d == static_cast<std::size_t>(axis) || s[d] == x.shape[d];
      if (!same) c.refuse(n, fmt::format("input {} {} does not match input 0 {} off axis {}", k, shape_str(s), shape_str(x.shape), axis));
      if (s.size() > static_cast<std::size_t>(axis) && (along += s[static_cast<std::size_t>(axis)]) > onnx_detail::kMaxDim)
        c.refuse(n, "the inputs add up past 2^40 along the axis");
      if (numel(s) > 0) ins.push_back(c.tensor(n, k));
    }
    if (ins.size() == 1) {
      c.set_node(n, 0, ins[0], x.elem);
      return;
    }
    try {
      c.set_node(n, 0, g().concat(c.name_for(n), ins, axis), x.elem);
    } catch (const std::invalid_argument& e) {
      c.refuse(n, e.what());
    }
  }

  /// Parts [start, start + len) along `axis` (views).
  NodeId part(const Node& n, NodeId x, int axis, std::int64_t start, std::int64_t len) {
    const Shape& s = g().node(x).shape;
    if (start == 0 && len == s[static_cast<std::size_t>(axis)]) return x;
    if (len < 1) c.refuse(n, "an empty slice is not built");
    return g().slice(g().unique_name(c.name_for(n, "/part")), x, axis, start, len);
  }

  void split(const Node& n) {
    const Value& x = c.in(n, 0);
    const int axis = c.norm_axis(n, c.attr_int(n, "axis", 0), x.shape.size());
    std::vector<std::int64_t> sizes = c.attr_ints(n, "split").value_or(std::vector<std::int64_t>{});
    if (sizes.empty() && c.has(n, 1)) sizes = c.known_ints(n, 1, "split");
    sizes = split_sizes(x.shape[static_cast<std::size_t>(axis)], sizes, c.attr_int(n, "num_outputs", n.output_size()), n.output_size(),
                        fmt::format("{}: {}", c.where_, c.node_label(n)), c.opset_ >= 18);
    const NodeId t = c.tensor(n, 0);
    std::int64_t start = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      c.set_node(n, k, part(n, t, axis, start, sizes[static_cast<std::size_t>(k)]), x.elem);
      start += sizes[static_cast<std::size_t>(k)];
    }
  }

  void slice(const Node& n) {
    const Value& x = c.in(n, 0);
    const std::string here = fmt::format("{}: {}", c.where_, c.node_label(n));
    static const char* const kWhat[] = {"data", "starts", "ends", "axes", "steps"};
    const Converter::SliceArgs a = c.slice_args(n, [&](int k) { return c.known_ints(n, k, kWhat[k]); });
    const SliceSpec s = slice_spec(x.shape, a.starts, a.ends, a.axes, a.steps, here);
    NodeId y = c.tensor(n, 0);
    for (std::size_t j = 0; j < s.axes.size(); ++j) {
      if (s.steps[j] != 1) c.refuse(n, fmt::format("a slice with step {} is not built", s.steps[j]));
      y = part(n, y, static_cast<int>(s.axes[j]), s.starts[j], s.out[static_cast<std::size_t>(s.axes[j])]);
    }
    c.set_node(n, 0, y, x.elem);
  }

  void gather(const Node& n) {
    const Value& data = c.in(n, 0);
    const Value& idx = c.in(n, 1);
    const int axis = c.norm_axis(n, c.attr_int(n, "axis", 0), data.shape.size());
    if (!is_int_type(idx.elem)) c.refuse(n, "indices must be integers");
    if (idx.known && data.node != kNone) {
      // Fixed picks from a computed tensor (the first token of each sequence): a slice, a view.
      c.count_read(idx.known->size(), c.at_node());
      const std::vector<std::int64_t> ids = idx.known->ints(c.at_node());
      const std::int64_t extent = data.shape[static_cast<std::size_t>(axis)];
      // Each index in [-extent, extent) first: 2^63 - 1 wrapped the run's end past the range check.
      for (const std::int64_t id : ids)
        if (id < -extent || id >= extent) c.refuse(n, fmt::format("index {} is out of range for a dimension of {}", id, extent));
      bool run = !ids.empty();
      for (std::size_t k = 0; run && k < ids.size(); ++k) run = (ids[k] < 0 ? ids[k] + extent : ids[k]) == (ids[0] < 0 ? ids[0] + extent : ids[0]) + static_cast<std::int64_t>(k);
      if (run && idx.shape.size() <= 1) {
        const std::int64_t start = ids[0] < 0 ? ids[0] + extent : ids[0];
        if (static_cast<std::int64_t>(ids.size()) > extent - start) c.refuse(n, "the indices run past the dimension");
        const NodeId p = part(n, c.tensor(n, 0), axis, start, static_cast<std::int64_t>(ids.size()));
        Shape s(data.shape.begin(), data.shape.begin() + axis);
        s.insert(s.end(), idx.shape.begin(), idx.shape.end());
        s.insert(s.end(), data.shape.begin() + axis + 1, data.shape.end());
        c.set_node(n, 0, c.view(c.name_for(n, "/view"), p, s), data.elem);
        return;
      }
    }
    // Rows of a table picked by ids: an embedding lookup.
    if (axis != 0 || data.shape.size() != 2) c.refuse(n, fmt::format("a gather along axis {} of {} is not built (embedding lookups are)", axis, shape_str(data.shape)));
    NodeId ids = c.tensor(n, 1);
    if (g().node(ids).dtype != DType::i32) ids = g().cast(g().unique_name(c.name_for(n, "/ids")), ids, DType::i32);
    c.set_node(n, 0, g().embedding(c.name_for(n), ids, c.tensor(n, 0)), data.elem);
  }

  void pad(const Node& n) {
    const Value& x = c.in(n, 0);
    std::vector<std::int64_t> pads = c.attr_ints(n, "pads").value_or(std::vector<std::int64_t>{});
    if (pads.empty() && c.has(n, 1)) pads = c.known_ints(n, 1, "pads");
    const std::size_t rank = x.shape.size();
    std::vector<std::int64_t> axes;
    if (c.has(n, 3)) {
      // One entry per axis (ONNX leaves a repeated axis undefined): each entry builds two fills and a concat,
      // and 2^23 entries naming axis 0 built 25 M graph nodes from a 200-byte file.
      std::vector<bool> seen(rank);
      for (std::int64_t a : c.known_ints(n, 3, "axes")) {
        const int ax = c.norm_axis(n, a, rank);
        if (seen[static_cast<std::size_t>(ax)]) c.refuse(n, fmt::format("axis {} is repeated", a));
        seen[static_cast<std::size_t>(ax)] = true;
        axes.push_back(ax);
      }
    } else {
      for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<std::int64_t>(d));
    }
    if (pads.size() != 2 * axes.size()) c.refuse(n, fmt::format("{} pads for {} axes", pads.size(), axes.size()));
    if (c.has(n, 2) && !c.scalar(n, 2)) c.refuse(n, "the pad value must be a constant");
    const std::string mode = c.attr_string(n, "mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") c.refuse(n, fmt::format("pad mode {}", strings::printable(mode)));
    NodeId y = c.tensor(n, 0);
    const std::string base = c.name_for(n);
    // Each padded axis: the input between two filled blocks, one copy (a pad kernel reads the input and writes
    // the output once; reflected or repeated edges cost the same). Negative pads crop: views.
    for (std::size_t j = 0; j < axes.size(); ++j) {
      const auto ax = static_cast<std::size_t>(axes[j]);
      const std::int64_t before = pads[j], after = pads[j + axes.size()];
      if (before < -onnx_detail::kMaxDim || after < -onnx_detail::kMaxDim) c.refuse(n, "a pad below -2^40");
      if (before < 0 || after < 0) {
        const std::int64_t start = std::max<std::int64_t>(0, -before), len = g().node(y).shape[ax] - start - std::max<std::int64_t>(0, -after);
        y = part(n, y, static_cast<int>(ax), start, len);
      }
      std::vector<NodeId> pieces;
      for (std::int64_t amount : {before, after}) {
        if (amount <= 0) continue;
        if (amount > (std::int64_t{1} << 20)) c.refuse(n, fmt::format("padding {} outside [0, 2^20]", amount));
        Shape s = g().node(y).shape;
        s[ax] = amount;
        pieces.push_back(g().fill(g().unique_name(base + "/fill"), s, g().node(y).dtype, c.scalar(n, 2).value_or(0.0)));
      }
      if (pieces.empty()) continue;
      std::vector<NodeId> parts;
      if (before > 0) parts.push_back(pieces.front());
      parts.push_back(y);
      if (after > 0) parts.push_back(pieces.back());
      y = g().concat(g().unique_name(base), parts, static_cast<int>(ax));
    }
    c.set_node(n, 0, y, x.elem);
  }

  void expand(const Node& n, bool tile) {
    const Value& x = c.in(n, 0);
    Shape target;
    if (tile) {
      const auto reps = c.known_ints(n, 1, "repeats");
      if (reps.size() != x.shape.size()) c.refuse(n, "repeats must give one count per axis");
      for (std::size_t d = 0; d < reps.size(); ++d) {
        if (reps[d] < 1 || reps[d] > onnx_detail::kMaxDim) c.refuse(n, fmt::format("repeat count {} outside [1, 2^40]", reps[d]));
        std::int64_t size = 0;
        if (__builtin_mul_overflow(x.shape[d], reps[d], &size)) c.refuse(n, "repeats overflow 64-bit sizes");
        target.push_back(size);
      }
    } else {
      const auto shape = c.known_ints(n, 1, "shape");
      target = broadcast_all({x.shape, Shape(shape.begin(), shape.end())}, fmt::format("{}: {}", c.where_, c.node_label(n)));
    }
    checked_numel(target, fmt::format("{}: {}", c.where_, c.node_label(n)));
    if (target == x.shape) {
      c.vals_[n.output(0)] = x;
      return;
    }
    c.set_node(n, 0, g().repeat(c.name_for(n), c.view(c.name_for(n, "/in"), c.tensor(n, 0), numel(x.shape) == numel(target) ? target : x.shape), target), x.elem);
  }
};

void Converter::build_op(const onnx::NodeProto& n) {
  Ops o{*this};
  const std::string& op = n.op_type();
  static const std::vector<std::string> kBuilt = {
      "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Div", "Dropout", "Equal", "Erf",
      "Exp", "Expand", "Flatten", "Gather", "Gemm", "Gelu", "GlobalAveragePool", "GlobalMaxPool", "GroupNormalization", "Identity",
      "InstanceNormalization", "LayerNormalization", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg", "Pad", "Pow", "Range",
      "Reciprocal", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax", "Split",
      "Sqrt", "Squeeze", "Sub", "Tanh", "Tile", "Transpose", "Unsqueeze", "Where"};
  if (op == "MatMul") o.matmul(n);
  else if (op == "Gemm") o.gemm(n);
  else if (op == "Conv") o.conv(n);
  else if (op == "MaxPool" || op == "AveragePool") o.pool(n);
  else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") o.global_pool(n);
  else if (op == "BatchNormalization") o.batch_norm(n);
  else if (op == "LayerNormalization") o.layer_norm(n);
  else if (op == "InstanceNormalization" || op == "GroupNormalization") o.group_norm(n);
  else if (kActs.count(op)) o.activation(n);
  else if (kBinaryFns.count(op)) o.elementwise(n, kBinaryFns.at(op));
  else if (kUnaryFns.count(op)) o.elementwise(n, kUnaryFns.at(op));
  else if (op == "Where") o.elementwise(n, EwFn::where);
  else if (op == "Clip") o.clip(n);
  else if (op == "Softmax" || op == "LogSoftmax") o.softmax(n, op == "LogSoftmax");
  else if (op == "Dropout") o.dropout(n);
  else if (op == "Identity") vals_[n.output(0)] = in(n, 0);
  else if (op == "Cast") o.cast(n);
  else if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") o.reduce(n);
  else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") o.reshape_like(n);
  else if (op == "Transpose") o.transpose(n);
  else if (op == "Concat") o.concat(n);
  else if (op == "Split") o.split(n);
  else if (op == "Slice") o.slice(n);
  else if (op == "Gather") o.gather(n);
  else if (op == "Expand" || op == "Tile") o.expand(n, op == "Tile");
  else if (op == "Pad") o.pad(n);
  else if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "Not" || op == "And" || op == "Or")
    refuse(n, "a comparison of tensors computed at run time is not built (masks from constants are)");
  else if (op == "Range" || op == "ConstantOfShape")  // folded (fold_values) when their inputs are known
    refuse(n, fmt::format("{} is built from constants and shapes only; an input here is computed at run time or is a trained weight", op));
  else refuse(n, fmt::format("operator not built by gpuvs's ONNX reader (built: {})", strings::join(kBuilt, ", ")));
}

}  // namespace gpuvs::import::onnx_detail
