// SPDX-License-Identifier: Apache-2.0
#include "import/keras/keras_graph.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"
#include "import/keras/keras_model.hpp"
#include "ir/conv_window.hpp"

namespace gpuvs::import {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {

using json = nlohmann::json;

struct Layer {
  std::string name, cls;
  json config;
  std::vector<std::string> inputs;  // names of the layers feeding it, in order
  bool causal_call = false;         // called with use_causal_mask=True (a call argument, in inbound_nodes)
};

/// True when a call in inbound_nodes passes use_causal_mask: true (Keras 3's kwargs, Keras 2's fourth element).
bool calls_causal(const json& j) {
  if (j.is_object()) {
    if (j.contains("use_causal_mask") && j["use_causal_mask"].is_boolean() && j["use_causal_mask"].get<bool>()) return true;
    for (const auto& [k, v] : j.items())
      if ((v.is_object() || v.is_array()) && calls_causal(v)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if ((v.is_object() || v.is_array()) && calls_causal(v)) return true;
  }
  return false;
}

[[noreturn]] void refuse(const std::string& where, const Layer& l, const std::string& what) {
  throw InputError(fmt::format("{}: layer '{}' ({}): {}", where, strings::printable(l.name), strings::printable(l.cls), what));
}

/// Every "keras_history": [name, ...] (Keras 3) or [name, node, tensor, {...}] (Keras 2) inside inbound_nodes, in
/// call order: a Keras 3 call's args as written, then its keyword tensors query, value and key in that order (a
/// JSON object's keys come back sorted: key first, taken for the query), then any others by name. Masks
/// (attention_mask, ...) are read by the kernel, not computed with: not inputs.
void inbound_names(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    if (j.contains("keras_history") && j["keras_history"].is_array() && !j["keras_history"].empty() && j["keras_history"][0].is_string()) {
      out.push_back(j["keras_history"][0].get<std::string>());
      return;
    }
    if (j.contains("args") || j.contains("kwargs")) {
      if (j.contains("args")) inbound_names(j["args"], out);
      if (j.contains("kwargs") && j["kwargs"].is_object()) {
        const json& kw = j["kwargs"];
        for (const char* k : {"query", "value", "key"})
          if (kw.contains(k)) inbound_names(kw[k], out);
        for (const auto& [k, v] : kw.items())
          if (k != "query" && k != "value" && k != "key" && !(k.size() >= 4 && k.compare(k.size() - 4, 4, "mask") == 0)) inbound_names(v, out);
      }
      return;
    }
    for (const auto& [k, v] : j.items()) inbound_names(v, out);
  } else if (j.is_array()) {
    if (!j.empty() && j[0].is_string() && j.size() >= 3 && j[1].is_number_integer()) {  // Keras 2: [name, node, tensor, kwargs]
      out.push_back(j[0].get<std::string>());
      return;
    }
    for (const auto& v : j) inbound_names(v, out);
  }
}

std::vector<Layer> read_layers(const json& j, const std::string& where) {
  const json& cfg = j["config"];
  // const operator[] on a missing key is undefined behaviour in nlohmann::json: every lookup checks first.
  const bool sequential = j.contains("class_name") && j["class_name"].is_string() && j["class_name"].get<std::string>() == "Sequential";
  std::vector<Layer> out;
  // One output: the loss priced is one head's (the graph's last layer).
  if (cfg.contains("output_layers") && cfg["output_layers"].is_array() && cfg["output_layers"].size() > 1 &&
      cfg["output_layers"][0].is_array())
    throw InputError(fmt::format("{}: $.config.output_layers: a model of {} outputs is not built (one is)", where, cfg["output_layers"].size()));
  if (cfg.contains("layers") && cfg["layers"].is_array() && cfg["layers"].size() > kMaxLayers)
    throw InputError(fmt::format("{}: $.config.layers: {} layers, more than the {} a model file may list", where, cfg["layers"].size(), kMaxLayers));
  for (const auto& l : cfg["layers"]) {
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string() || !l.contains("config") || !l["config"].is_object())
      throw InputError(fmt::format("{}: $.config.layers[{}]: a layer needs class_name and config", where, out.size()));
    Layer x;
    x.cls = l["class_name"].get<std::string>();
    x.config = l["config"];
    x.name = l.contains("name") && l["name"].is_string()               ? l["name"].get<std::string>()
             : x.config.contains("name") && x.config["name"].is_string() ? x.config["name"].get<std::string>()
                                                                         : fmt::format("layer_{}", out.size());
    if (!sequential && l.contains("inbound_nodes")) {
      // A layer called twice shares its weights between two places in the graph: read as one call, its calls'
      // inputs would merge into one op.
      if (l["inbound_nodes"].is_array() && l["inbound_nodes"].size() > 1)
        throw InputError(fmt::format("{}: layer '{}' ({}): a layer called {} times (shared weights) is not built", where, strings::printable(x.name),
                                     strings::printable(x.cls), l["inbound_nodes"].size()));
      inbound_names(l["inbound_nodes"], x.inputs);
      x.causal_call = calls_causal(l["inbound_nodes"]);
    }
    if (sequential && !out.empty()) x.inputs = {out.back().name};
    out.push_back(std::move(x));
  }
  return out;
}

int int_of(const json& c, const char* key, int fallback, const std::string& where, const Layer& l) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key].is_array() && !c[key].empty() ? c[key][0] : c[key];
  if (c[key].is_array())
    for (const auto& e : c[key])
      if (e != v) refuse(where, l, fmt::format("{} {} differs by axis (square windows are built)", key, c[key].dump()));
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > (1 << 20))
    refuse(where, l, fmt::format("{} must be a positive whole number", key));
  return static_cast<int>(v.get<std::int64_t>());
}

/// A window setting per spatial axis: an integer or a list of one or `axes` of them, each in [1, 2^20].
std::array<int, 2> pair_of(const json& c, const char* key, int fallback, const std::string& where, const Layer& l, std::size_t axes = 2) {
  if (!c.contains(key) || c[key].is_null()) return {fallback, fallback};
  const json& v = c[key];
  std::vector<json> items = v.is_array() ? std::vector<json>(v.begin(), v.end()) : std::vector<json>{v};
  if (items.empty() || items.size() > axes || (items.size() != 1 && items.size() != axes)) refuse(where, l, fmt::format("{} needs 1 or {} values", key, axes));
  std::array<int, 2> out{};
  for (std::size_t a = 0; a < 2; ++a) {
    const json& e = items[std::min(a, items.size() - 1)];
    if (!e.is_number_integer() || e.get<std::int64_t>() < 1 || e.get<std::int64_t>() > (1 << 20))
      refuse(where, l, fmt::format("{} must be positive whole numbers", key));
    out[a] = static_cast<int>(e.get<std::int64_t>());
  }
  return out;
}

/// Keras's "valid" / "same" ("causal" for Conv1D) over an [N, C, H, W] input as the IR builds it: symmetric
/// padding and a crop of the input giving Keras's output size (conv_window.hpp). Axis 0 is H, axis 1 is W.
struct KerasWindow {
  Window w;
  std::int64_t crop_h = 0, crop_w = 0;
};
KerasWindow keras_window(const Shape& x, std::array<int, 2> k, std::array<int, 2> st, std::array<int, 2> dil, const std::string& padding,
                         const std::string& where, const Layer& l) {
  if (padding != "valid" && padding != "same" && padding != "causal") refuse(where, l, fmt::format("padding '{}' is not built", strings::printable(padding)));
  // Keras's own rules (base_conv.py, base_pooling.py): causal padding is Conv1D's alone, and a dilated
  // window does not stride. A file breaking them is not one Keras loads.
  if (padding == "causal" && l.cls != "Conv1D") refuse(where, l, "causal padding is for Conv1D");
  if (std::max(st[0], st[1]) > 1 && std::max(dil[0], dil[1]) > 1) {
    const bool one_d = l.cls.size() > 2 && l.cls.compare(l.cls.size() - 2, 2, "1D") == 0;  // built as 1 x k: its axis is the second
    refuse(where, l, one_d ? fmt::format("strides {} with dilation_rate {}: Keras does not stride a dilated window", st[1], dil[1])
                           : fmt::format("strides {}x{} with dilation_rate {}x{}: Keras does not stride a dilated window", st[0], st[1], dil[0], dil[1]));
  }
  KerasWindow out;
  std::array<AxisFit, 2> fit{};
  for (std::size_t a = 0; a < 2; ++a) {
    const std::int64_t in = x[2 + a], reach = static_cast<std::int64_t>(dil[a]) * (k[a] - 1) + 1;
    const std::int64_t want = padding == "valid" ? (in >= reach ? (in - reach) / st[a] + 1 : 0) : (in + st[a] - 1) / st[a];
    if (want < 1) refuse(where, l, fmt::format("the window spans {} of an input of {}", reach, in));
    const auto f = fit_axis(in, k[a], st[a], want);
    if (!f) refuse(where, l, fmt::format("{} outputs from {} inputs cannot be built", want, in));
    fit[a] = *f;
  }
  out.w = Window{k[0], k[1], st[0], st[1], fit[0].pad, fit[1].pad};
  out.crop_h = fit[0].crop;
  out.crop_w = fit[1].crop;
  return out;
}

NodeId cropped(Graph& g, const std::string& name, NodeId x, const KerasWindow& kw) {
  const Shape s = g.node(x).shape;
  if (kw.crop_h > 0) x = g.slice(g.unique_name(name + "/crop_h"), x, 2, 0, s[2] - kw.crop_h);
  if (kw.crop_w > 0) x = g.slice(g.unique_name(name + "/crop_w"), x, 3, 0, s[3] - kw.crop_w);
  return x;
}

Act act_of(const json& c, bool& softmax, const std::string& where, const Layer& l) {
  softmax = false;
  if (!c.contains("activation") || c["activation"].is_null()) return Act::none;
  if (!c["activation"].is_string()) refuse(where, l, "activation must be a name");
  const std::string a = c["activation"].get<std::string>();
  if (const auto act = keras_activation(a, softmax)) return *act;
  refuse(where, l, fmt::format("activation '{}' is not built", strings::printable(a)));
}

NodeId apply_act(Graph& g, const std::string& name, NodeId x, Act a, bool softmax) {
  if (softmax) {
    const Shape& s = g.node(x).shape;
    if (s.empty() || s.back() < 1) throw std::invalid_argument(name + ": a softmax needs a non-empty last axis");  // build() names the file
    if (s.size() != 2) x = g.reshape(name + "/flat", x, {numel(g.node(x).shape) / g.node(x).shape.back(), g.node(x).shape.back()});
    return g.softmax(name + "/softmax", x);
  }
  return a == Act::none ? x : g.activation(name + "/" + std::string(act_name(a)), x, a);
}

/// One layer's call as its builder sees it: the graph so far, the layer and its resolved inputs.
struct LayerCall {
  Graph& g;
  const Layer& l;
  const std::vector<NodeId>& in;
  const NetworkOptions& opt;
  const std::string& where;
  bool image_in;  // input 0 is held as NCHW (a Keras channels-last image)

  const json& c() const { return l.config; }
  const std::string& p() const { return l.name; }
  [[noreturn]] void fail(const std::string& what) const { refuse(where, l, what); }
  void need(std::size_t n) const {
    if (in.size() != n) fail(fmt::format("takes {} input(s), got {}", n, in.size()));
  }
  bool use_bias() const { return !c().contains("use_bias") || !c()["use_bias"].is_boolean() || c()["use_bias"].get<bool>(); }
  int whole(const char* key, int fallback) const { return int_of(c(), key, fallback, where, l); }
  std::array<int, 2> pair(const char* key, int fallback, std::size_t axes = 2) const { return pair_of(c(), key, fallback, where, l, axes); }
};

/// What a layer left: its output, whether that is an image, and, when it ends in a softmax, the logits before it.
struct Built {
  NodeId y = kNone;
  bool image = false;
  bool softmax = false;
  NodeId pre_softmax = kNone;
};

/// Settings that change a layer's size or work which the builders do not read: refused, not dropped.
void refuse_unread_settings(const Layer& l, const std::string& where) {
  const json& c = l.config;
  for (const char* key : {"output_shape", "attention_axes", "keepdims"})
    if (c.contains(key) && !c[key].is_null() && c[key] != false && (l.cls == "MultiHeadAttention" || l.cls.rfind("Global", 0) == 0))
      refuse(where, l, fmt::format("{} {} is not built", key, strings::printable(c[key].dump())));
  // Keras 3's LoRA / DoRA (lora_rank on Dense, EinsumDense, Embedding, convolutions) freezes the kernel and
  // trains adapters: other weights, other work.
  for (const char* key : {"lora_rank", "dora_rank"})
    if (c.contains(key) && !c[key].is_null() && c[key] != 0) refuse(where, l, fmt::format("{} {} is not built", key, strings::printable(c[key].dump())));
  if ((l.cls == "BatchNormalization" || l.cls == "LayerNormalization") && c.contains("axis") && !c["axis"].is_null() && c["axis"] != -1 &&
      c["axis"] != json::array({-1}))
    refuse(where, l, fmt::format("axis {} is not built (the last axis, -1, is)", strings::printable(c["axis"].dump())));
  // Images are read channels-last, Keras's default; the other layout would be priced with H and C swapped.
  if (c.contains("data_format") && !c["data_format"].is_null() && c["data_format"] != "channels_last")
    refuse(where, l, fmt::format("data_format {} is not built (channels_last is)", strings::printable(c["data_format"].dump())));
}

void build_input(const LayerCall& x, Built& b) {
  const json& c = x.c();
  const json* shape = c.contains("batch_shape") ? &c["batch_shape"] : c.contains("batch_input_shape") ? &c["batch_input_shape"] : nullptr;
  if (!shape || !shape->is_array() || shape->size() < 2) x.fail("needs batch_shape [null, ...]");
  const std::int64_t B = x.opt.batch;
  Shape dims{B};
  for (std::size_t i = 1; i < shape->size(); ++i) {
    if (!(*shape)[i].is_number_integer() || (*shape)[i].get<std::int64_t>() < 1 || (*shape)[i].get<std::int64_t>() > (1 << 20))
      x.fail(fmt::format("input shape {} needs whole positive sizes (a symbolic length: give it a size)", shape->dump()));
    dims.push_back((*shape)[i].get<std::int64_t>());
  }
  const std::string dtype = c.contains("dtype") && c["dtype"].is_string() ? c["dtype"].get<std::string>() : "float32";
  const bool ids = dtype.find("int") != std::string::npos;
  b.image = dims.size() == 4;
  b.y = b.image ? x.g.input(x.p(), {B, dims[3], dims[1], dims[2]}, x.opt.dtype)  // [B, H, W, C] -> NCHW
                : x.g.input(x.p(), dims, ids ? DType::i32 : x.opt.dtype);
}

void build_dense(const LayerCall& x, Built& b) {
  x.need(1);
  const json& c = x.c();
  Graph& g = x.g;
  const std::string& p = x.p();
  if (!c.contains("units") || !c["units"].is_number_integer() || c["units"].get<std::int64_t>() < 1 || c["units"].get<std::int64_t>() > (std::int64_t{1} << 31))
    x.fail("units must be a whole number in [1, 2^31]");
  const std::int64_t units = c["units"].get<std::int64_t>();
  const Shape s = g.node(x.in[0]).shape;
  if (s.size() == 4 || x.image_in) x.fail("a Dense over an image tensor (Flatten or pool it first)");
  if (s.size() < 2 || s.back() < 1) x.fail(fmt::format("needs an input [batch, ..., features] with features, got [{}]", fmt::join(s, ",")));
  const std::int64_t rows = numel(s) / s.back();
  const NodeId x2 = s.size() == 2 ? x.in[0] : g.reshape(p + "/rows", x.in[0], {rows, s.back()});
  const NodeId w = g.param(p + "/kernel", {s.back(), units}, x.opt.dtype);
  const NodeId bias = x.use_bias() ? g.param(p + "/bias", {units}, x.opt.dtype) : kNone;
  const Act a = act_of(c, b.softmax, x.where, x.l);
  NodeId y = g.matmul(p, x2, w, bias, act_grad_from_output(a) ? a : Act::none);
  if (!act_grad_from_output(a)) y = apply_act(g, p, y, a, false);
  if (s.size() != 2) {
    Shape o = s;
    o.back() = units;
    y = g.reshape(p + "/unrows", y, o);
  }
  if (b.softmax) {
    b.pre_softmax = y;
    y = apply_act(g, p, y, Act::none, true);
  }
  b.y = y;
}

/// Conv2D, and DepthwiseConv2D / SeparableConv2D: one k x k filter per input channel (depth_multiplier of them),
/// a grouped convolution with a group per channel; separable adds a 1 x 1 pointwise convolution to `filters`
/// (the bias is its).
void build_conv2d(const LayerCall& x, Built& b) {
  x.need(1);
  if (!x.image_in) x.fail("needs an image input [batch, height, width, channels]");
  const json& c = x.c();
  Graph& g = x.g;
  const std::string& p = x.p();
  const DType dt = x.opt.dtype;
  const auto k = x.pair("kernel_size", 1), st = x.pair("strides", 1), dil = x.pair("dilation_rate", 1);
  const std::int64_t C = g.node(x.in[0]).shape[1];
  const KerasWindow kw = keras_window(g.node(x.in[0]).shape, k, st, dil, c.value("padding", "valid"), x.where, x.l);
  const bool bias = x.use_bias();
  const Act a = act_of(c, b.softmax, x.where, x.l);
  if (b.softmax) x.fail("softmax over a feature map is not built");
  const Act fused = act_grad_from_output(a) ? a : Act::none;
  const NodeId in = cropped(g, p, x.in[0], kw);
  NodeId y = kNone;
  if (x.l.cls == "Conv2D") {
    const int groups = x.whole("groups", 1), filters = x.whole("filters", 1);
    if (C % groups != 0 || filters % groups != 0) x.fail(fmt::format("{} groups do not split {} channels", groups, C));
    const NodeId w = g.param(p + "/kernel", {filters, C / groups, k[0], k[1]}, dt);
    y = g.conv2d(p, in, w, bias ? g.param(p + "/bias", {filters}, dt) : kNone, kw.w, groups, fused);
  } else {
    const int dm = x.whole("depth_multiplier", 1);
    const std::int64_t mid = checked::mul(C, dm, fmt::format("{}: layer '{}' (DepthwiseConv2D): channels x depth_multiplier", x.where, strings::printable(p)));
    const bool separable = x.l.cls == "SeparableConv2D";
    const NodeId dw = g.param(p + "/depthwise_kernel", {mid, 1, k[0], k[1]}, dt);
    y = g.conv2d(p + (separable ? "/depthwise" : ""), in, dw, !separable && bias ? g.param(p + "/bias", {mid}, dt) : kNone, kw.w, static_cast<int>(C),
                 separable ? Act::none : fused);
    if (separable) {
      const int filters = x.whole("filters", 1);
      const NodeId pw = g.param(p + "/pointwise_kernel", {filters, mid, 1, 1}, dt);
      y = g.conv2d(p + "/pointwise", y, pw, bias ? g.param(p + "/bias", {filters}, dt) : kNone, Window{1, 1, 1, 1, 0, 0}, 1, fused);
    }
  }
  b.y = act_grad_from_output(a) ? y : apply_act(g, p, y, a, false);
}

void build_pool2d(const LayerCall& x, Built& b) {
  x.need(1);
  if (!x.image_in) x.fail("needs an image input");
  const auto k = x.pair("pool_size", 2);
  const auto st = x.c().contains("strides") && !x.c()["strides"].is_null() ? x.pair("strides", 1) : k;
  const KerasWindow kw = keras_window(x.g.node(x.in[0]).shape, k, st, {1, 1}, x.c().value("padding", "valid"), x.where, x.l);
  b.y = x.g.pool2d(x.p(), cropped(x.g, x.p(), x.in[0], kw), x.l.cls == "MaxPooling2D" ? PoolKind::max : PoolKind::avg, kw.w);
}

void build_global_pool2d(const LayerCall& x, Built& b) {
  x.need(1);
  if (!x.image_in) x.fail("needs an image input");
  const Shape s = x.g.node(x.in[0]).shape;
  const NodeId pooled = x.g.pool2d(x.p(), x.in[0], x.l.cls == "GlobalMaxPooling2D" ? PoolKind::max : PoolKind::avg,
                                   Window{static_cast<int>(s[2]), static_cast<int>(s[3]), 1, 1, 0, 0});
  b.y = x.g.reshape(x.p() + "/flat", pooled, {s[0], s[1]});
  b.image = false;
}

void build_global_pool1d(const LayerCall& x, Built& b) {
  x.need(1);
  Graph& g = x.g;
  const Shape s = g.node(x.in[0]).shape;
  if (s.size() != 3) x.fail("needs a sequence [batch, steps, features]");
  const NodeId grid = g.reshape(x.p() + "/grid", x.in[0], {s[0], 1, s[1], s[2]});
  const NodeId pooled = g.pool2d(x.p(), grid, x.l.cls == "GlobalMaxPooling1D" ? PoolKind::max : PoolKind::avg, Window{static_cast<int>(s[1]), 1, 1, 1, 0, 0});
  b.y = g.reshape(x.p() + "/flat", pooled, {s[0], s[2]});
}

/// Conv1D and the 1-D pools over a sequence [batch, steps, channels]: a 1 x k window over the steps of an
/// [N, C, 1, T] view (Keras and the frameworks run them as 2-D ones the same way), viewed back as
/// [batch, steps', channels].
void build_1d(const LayerCall& x, Built& b) {
  x.need(1);
  Graph& g = x.g;
  const std::string& p = x.p();
  const Shape s = g.node(x.in[0]).shape;
  if (s.size() != 3) x.fail("needs a sequence [batch, steps, channels]");
  const NodeId grid = g.reshape(p + "/grid", x.in[0], {s[0], s[2], 1, s[1]});
  const bool conv = x.l.cls == "Conv1D";
  const int k = x.pair(conv ? "kernel_size" : "pool_size", conv ? 1 : 2, 1)[0];
  const int st = x.c().contains("strides") && !x.c()["strides"].is_null() ? x.pair("strides", 1, 1)[0] : conv ? 1 : k;
  const int dil = conv ? x.pair("dilation_rate", 1, 1)[0] : 1;
  // Causal padding puts all k - 1 pads before the sequence: the same output length and work as "same".
  const KerasWindow kw = keras_window(g.node(grid).shape, {1, k}, {1, st}, {1, dil}, x.c().value("padding", "valid"), x.where, x.l);
  NodeId o = kNone;
  if (conv) {
    const int filters = x.whole("filters", 1), groups = x.whole("groups", 1);
    if (s[2] % groups != 0 || filters % groups != 0) x.fail(fmt::format("{} groups do not split {} channels", groups, s[2]));
    const NodeId w = g.param(p + "/kernel", {filters, s[2] / groups, 1, k}, x.opt.dtype);
    const NodeId bias = x.use_bias() ? g.param(p + "/bias", {filters}, x.opt.dtype) : kNone;
    const Act a = act_of(x.c(), b.softmax, x.where, x.l);
    if (b.softmax) x.fail("softmax over a feature map is not built");
    o = g.conv2d(p, cropped(g, p, grid, kw), w, bias, kw.w, groups, act_grad_from_output(a) ? a : Act::none);
    if (!act_grad_from_output(a)) o = apply_act(g, p, o, a, false);
  } else {
    o = g.pool2d(p, cropped(g, p, grid, kw), x.l.cls == "MaxPooling1D" ? PoolKind::max : PoolKind::avg, kw.w);
  }
  const Shape os = g.node(o).shape;
  b.y = g.reshape(p + "/steps", o, {os[0], os[3], os[1]});
}

void build_norm(const LayerCall& x, Built& b) {
  x.need(1);
  const json& c = x.c();
  Graph& g = x.g;
  const std::string& p = x.p();
  const Shape s = g.node(x.in[0]).shape;
  // A Reshape to [] leaves only the batch axis: there are no features to normalize (s[1] read past the end).
  if (s.size() < 2) x.fail("needs an input with features, not a batch of scalars");
  const bool batch = x.l.cls == "BatchNormalization";
  if (!batch && x.image_in) x.fail("LayerNormalization over an image's channels is not built");
  const std::int64_t ch = batch ? s[1] : s.back();
  if (batch && (s.size() == 3 || s.size() > 4 || (s.size() == 4 && !x.image_in))) x.fail("BatchNormalization over a sequence is not built");
  const bool scale = !c.contains("scale") || !c["scale"].is_boolean() || c["scale"].get<bool>();
  const bool center = !c.contains("center") || !c["center"].is_boolean() || c["center"].get<bool>();
  const NodeId gamma = g.param(p + "/gamma", {ch}, x.opt.dtype, scale);
  const NodeId beta = center ? g.param(p + "/beta", {ch}, x.opt.dtype) : kNone;
  if (batch) {  // the moving statistics: parameters Keras counts, not trained
    g.param(p + "/moving_mean", {ch}, x.opt.dtype, false);
    g.param(p + "/moving_variance", {ch}, x.opt.dtype, false);
  }
  b.y = g.normalize(p, x.in[0], gamma, beta, batch ? NormKind::batch : NormKind::layer);
}

void build_embedding(const LayerCall& x, Built& b) {
  x.need(1);
  if (x.g.node(x.in[0]).dtype != DType::i32) x.fail("needs integer token ids (an InputLayer with dtype int32)");
  const json& c = x.c();
  // A vocabulary of up to 2^31 rows, each of up to 2^20 features (an empty one left the next layer dividing by zero).
  auto size_of = [&](const char* key, std::int64_t most) {
    if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<std::int64_t>() < 1 || c[key].get<std::int64_t>() > most)
      x.fail(fmt::format("{} must be a whole number in [1, {}]", key, most));
    return c[key].get<std::int64_t>();
  };
  const std::int64_t rows = size_of("input_dim", std::int64_t{1} << 31), features = size_of("output_dim", std::int64_t{1} << 20);
  b.y = x.g.embedding(x.p(), x.in[0], x.g.param(x.p() + "/embeddings", {rows, features}, x.opt.dtype));
}

void build_attention(const LayerCall& x, Built& b) {
  const std::vector<NodeId>& in = x.in;
  if (in.size() < 2 || in.size() > 3) x.fail("needs query and value inputs");
  Graph& g = x.g;
  const std::string& p = x.p();
  const DType dt = x.opt.dtype;
  const int heads = x.whole("num_heads", 1), kd = x.whole("key_dim", 1);
  const int vd = x.c().contains("value_dim") && !x.c()["value_dim"].is_null() ? x.whole("value_dim", kd) : kd;
  const Shape qs = g.node(in[0]).shape, vs = g.node(in[1]).shape;
  if (qs.size() != 3 || vs.size() != 3) x.fail("query and value must be sequences [batch, steps, features]");
  const bool bias = x.use_bias();
  auto proj = [&](const std::string& n, NodeId input, const Shape& s, std::int64_t width) {
    const NodeId w = g.param(p + "/" + n + "/kernel", {s[2], width}, dt);
    const NodeId bn = bias ? g.param(p + "/" + n + "/bias", {width}, dt) : kNone;
    return g.matmul(p + "/" + n, g.reshape(p + "/" + n + "/rows", input, {s[0] * s[1], s[2]}), w, bn);
  };
  const NodeId key_in = in.size() == 3 ? in[2] : in[1];
  const Shape ks = g.node(key_in).shape;  // a copy: adding nodes moves the node table
  // The key gives the value's steps, as Keras requires: a longer value made the key's heads a reshape of more
  // elements than it holds (the count overflowed 64 bits), and a key that is no sequence was read past its end.
  if (ks.size() != 3 || ks[0] != vs[0] || ks[1] != vs[1]) x.fail(fmt::format("the key must be a sequence of the value's {} steps, not of shape {}", vs[1], shape_str(ks)));
  const NodeId q = g.reshape(p + "/q_heads", proj("query", in[0], qs, std::int64_t{heads} * kd), {qs[0] * heads, qs[1], kd}, true);
  const NodeId k = g.reshape(p + "/k_heads", proj("key", key_in, ks, std::int64_t{heads} * kd), {vs[0] * heads, vs[1], kd}, true);
  const NodeId v = g.reshape(p + "/v_heads", proj("value", in[1], vs, std::int64_t{heads} * vd), {vs[0] * heads, vs[1], vd}, true);
  const NodeId o = g.attention(p + "/attention", q, k, v, x.l.causal_call);
  const NodeId merged = g.reshape(p + "/merge_heads", o, {qs[0] * qs[1], std::int64_t{heads} * vd}, true);
  const NodeId wo = g.param(p + "/output/kernel", {std::int64_t{heads} * vd, qs[2]}, dt);
  const NodeId bo = bias ? g.param(p + "/output/bias", {qs[2]}, dt) : kNone;
  b.y = g.reshape(p + "/unrows", g.matmul(p + "/output", merged, wo, bo), qs);
}

void build_add(const LayerCall& x, Built& b) {
  if (x.in.size() < 2) x.fail("needs two inputs or more");
  NodeId y = x.in[0];
  for (std::size_t i = 1; i < x.in.size(); ++i) {
    if (x.g.node(x.in[i]).shape != x.g.node(y).shape) x.fail("inputs of different shapes");
    y = x.g.add(fmt::format("{}/{}", x.p(), i), y, x.in[i]);
  }
  b.y = y;
}

void build_concat(const LayerCall& x, Built& b) {
  if (x.in.size() < 2) x.fail("needs two inputs or more");
  const json& c = x.c();
  const auto rank = static_cast<std::int64_t>(x.g.node(x.in[0]).shape.size());
  if (c.contains("axis") && !c["axis"].is_null() && !c["axis"].is_number_integer()) x.fail("axis must be a whole number");
  std::int64_t axis = c.contains("axis") && !c["axis"].is_null() ? c["axis"].get<std::int64_t>() : -1;
  if (axis < -rank || axis >= rank) x.fail(fmt::format("axis {} is outside rank {}", axis, rank));
  if (axis < 0) axis += rank;
  if (x.image_in) axis = axis == 3 ? 1 : axis == 1 ? 2 : axis == 2 ? 3 : 0;  // Keras's [N, H, W, C] axes on NCHW
  if (axis <= 0) x.fail("a concatenation along the batch is not built");
  b.y = x.g.concat(x.p(), x.in, static_cast<int>(axis));
}

void build_flatten(const LayerCall& x, Built& b) {
  x.need(1);
  const Shape s = x.g.node(x.in[0]).shape;
  b.y = x.g.reshape(x.p(), x.in[0], {s[0], numel(s) / s[0]});
  b.image = false;
}

void build_reshape(const LayerCall& x, Built& b) {
  x.need(1);
  const json& c = x.c();
  if (!c.contains("target_shape") || !c["target_shape"].is_array()) x.fail("needs target_shape");
  const std::int64_t B = x.opt.batch;
  Shape t{B};
  for (const auto& d : c["target_shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 1 || d.get<std::int64_t>() > (std::int64_t{1} << 40))
      x.fail("target_shape needs whole sizes in [1, 2^40] (-1 is not built)");
    t.push_back(d.get<std::int64_t>());
  }
  if (checked::product(t, fmt::format("{}: layer '{}' (Reshape): target_shape", x.where, strings::printable(x.p()))) != numel(x.g.node(x.in[0]).shape))
    x.fail("target_shape holds a different number of elements");
  b.image = t.size() == 4;
  b.y = x.g.reshape(x.p(), x.in[0], b.image ? Shape{B, t[3], t[1], t[2]} : t);
}

void build_dropout(const LayerCall& x, Built& b) {
  x.need(1);
  const double rate = x.c().contains("rate") && x.c()["rate"].is_number() ? x.c()["rate"].get<double>() : -1;
  if (rate < 0 || rate >= 1) x.fail("rate must be in [0, 1)");
  b.y = x.opt.training && rate > 0 ? x.g.dropout(x.p(), x.in[0], rate) : x.in[0];
}

void build_activation(const LayerCall& x, Built& b) {
  x.need(1);
  const Act a = act_of(x.c(), b.softmax, x.where, x.l);
  // A softmax flattens its input to rows: over a feature map that would leave an image the next layer
  // reads as one (its height and width read past the rows' two axes).
  if (b.softmax && x.image_in) x.fail("softmax over a feature map is not built");
  if (b.softmax) b.pre_softmax = x.in[0];
  b.y = apply_act(x.g, x.p(), x.in[0], a, b.softmax);
}

/// The layer classes built, by Keras class name: the one list the reader dispatches on and names in its refusal.
using LayerBuilder = void (*)(const LayerCall&, Built&);
const std::map<std::string, LayerBuilder>& builders() {
  static const std::map<std::string, LayerBuilder> table = {
      {"InputLayer", build_input},
      {"Dense", build_dense},
      {"Conv2D", build_conv2d},
      {"SeparableConv2D", build_conv2d},
      {"DepthwiseConv2D", build_conv2d},
      {"MaxPooling2D", build_pool2d},
      {"AveragePooling2D", build_pool2d},
      {"GlobalAveragePooling2D", build_global_pool2d},
      {"GlobalMaxPooling2D", build_global_pool2d},
      {"GlobalAveragePooling1D", build_global_pool1d},
      {"GlobalMaxPooling1D", build_global_pool1d},
      {"Conv1D", build_1d},
      {"MaxPooling1D", build_1d},
      {"AveragePooling1D", build_1d},
      {"BatchNormalization", build_norm},
      {"LayerNormalization", build_norm},
      {"Embedding", build_embedding},
      {"MultiHeadAttention", build_attention},
      {"Add", build_add},
      {"Concatenate", build_concat},
      {"Flatten", build_flatten},
      {"Reshape", build_reshape},
      {"Dropout", build_dropout},
      {"Activation", build_activation},
  };
  return table;
}

/// The training head on the last layer: class scores over its last axis, the loss taking the logits before a
/// final softmax.
void add_head(Graph& g, const Built& last, const std::string& where, bool training) {
  NodeId logits = last.softmax && last.pre_softmax != kNone ? last.pre_softmax : last.y;
  const Shape s = g.node(logits).shape;
  if (s.size() == 4) throw InputError(fmt::format("{}: the model's output is an image; a class output is needed to price training", where));
  // The head's nodes take names the layers left free (a layer may be called "loss").
  if (s.size() == 3) logits = g.reshape(g.unique_name("output/rows"), logits, {s[0] * s[1], s[2]});
  g.set_output("logits", logits);
  const NodeId labels = g.input(g.unique_name("labels"), {g.node(logits).shape[0]}, DType::i32);
  g.set_output("loss", training ? g.softmax_xent_fp32(g.unique_name("loss"), logits, labels)
                                 : g.softmax_xent(g.unique_name("loss"), logits, labels));
}

/// Builds the model's forward graph on `opt`, with its training head.
Graph build_layers(const std::vector<Layer>& layers, const NetworkOptions& opt, const std::string& where) {
  Graph g;
  std::map<std::string, Built> built;  // by layer name
  Built last;
  for (const auto& l : layers) {
    refuse_unread_settings(l, where);
    std::vector<NodeId> in;
    for (const auto& n : l.inputs) {
      const auto it = built.find(n);
      if (it == built.end()) refuse(where, l, fmt::format("input '{}' is not an earlier layer", strings::printable(n)));
      in.push_back(it->second.y);
    }
    if (l.cls != "InputLayer" && in.empty()) refuse(where, l, "has no input (a Sequential model needs an InputLayer or an input shape first)");
    const auto builder = builders().find(l.cls);
    if (builder == builders().end()) {
      std::vector<std::string> names;
      for (const auto& [name, fn] : builders()) names.push_back(name);
      refuse(where, l, fmt::format("not built by gpuvs's Keras reader yet (built: {})", strings::join(names, ", ")));
    }
    const bool image_in = !in.empty() && built[l.inputs[0]].image;
    Built b;
    b.image = image_in;
    builder->second(LayerCall{g, l, in, opt, where, image_in}, b);
    built[l.name] = b;
    last = b;
  }
  if (std::none_of(layers.begin(), layers.end(), [](const Layer& l) { return l.cls != "InputLayer"; }))
    throw InputError(fmt::format("{}: the model has no layers after its input", where));
  add_head(g, last, where, opt.training);
  return g;
}

/// A value of the wrong JSON type deep in a layer's config is the file's fault: one line naming it.
Graph build(const std::vector<Layer>& layers, const NetworkOptions& opt, const std::string& where) {
  try {
    return build_layers(layers, opt, where);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a layer setting has the wrong type ({})", where, strings::printable(e.what())));
  } catch (const std::invalid_argument& e) {
    // The IR's own shape checks (a kernel larger than its input, mismatched channels): the file's shapes.
    throw InputError(fmt::format("{}: {}", where, strings::printable(e.what())));
  }
}

}  // namespace

bool keras_needs_graph(const json& j) {
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object() || !j["config"].contains("layers") || !j["config"]["layers"].is_array())
    return false;
  // Dense layers only, and each over flat features: Keras applies a Dense to the last axis of a [steps,
  // features] input, position by position, which the dense engine (one row of features a sample) does not.
  bool flat = true;
  for (const auto& l : j["config"]["layers"]) {
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string()) continue;
    const std::string cls = l["class_name"].get<std::string>();
    const auto& dense = keras_sequential_layers();
    if (std::find(dense.begin(), dense.end(), cls) == dense.end()) return true;
    if (l.contains("config") && l["config"].is_object())
      for (const char* k : {"batch_input_shape", "batch_shape"})
        if (l["config"].contains(k) && l["config"][k].is_array()) flat = l["config"][k].size() <= 2;
    if (cls == "Flatten") flat = true;
    else if (cls == "Dense" && !flat) return true;
  }
  return false;
}

NetworkInfo keras_network(const std::string& text, const std::string& where) { return keras_network_parsed(parse_json(text, where), where); }

NetworkInfo keras_network_parsed(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object() || !j["config"].contains("layers") || !j["config"]["layers"].is_array())
    throw InputError(fmt::format("{}: $.config.layers: missing", where));
  std::vector<Layer> layers;
  try {
    layers = read_layers(j, where);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: malformed Keras layer list ({})", where, strings::printable(e.what())));
  }
  // The training priced is Adam on sparse categorical cross-entropy: a model compiled for another is refused.
  try {
    ModelSpec compiled;
    keras_compile_config(j, where, compiled);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: $.compile_config: a setting has the wrong type ({})", where, strings::printable(e.what())));
  }
  // Build once now, so a model that cannot be built fails here, with its layer, not later.
  (void)build(layers, {2, DType::f32, 0, false, false}, where);
  NetworkInfo n;
  n.id = where;
  n.family = models::Family::keras;
  n.sample_unit = "samples";
  n.description = fmt::format("Keras {} from {} ({} layers)", j.contains("class_name") && j["class_name"].is_string() ? strings::printable(j["class_name"].get<std::string>()) : "model", where, layers.size());
  n.params_source = "the Keras model's shape";
  n.forward = [layers, where](const NetworkOptions& o) { return build(layers, o, where); };
  return n;
}

}  // namespace gpuvs::import
