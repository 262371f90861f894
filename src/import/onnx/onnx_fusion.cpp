// SPDX-License-Identifier: Apache-2.0
// Patterns exporters write for one operation, priced as the fused kernel a runtime runs (ONNX Runtime's
// GeluFusion, LayerNormFusion and attention fusion; TensorRT's Myelin does the same): GELU in its erf form,
// LayerNorm written out as ReduceMean/Sub/Pow/Sqrt/Div, and attention as MatMul -> scale -> mask -> Softmax
// -> MatMul (FlashAttention, when flash_attention is on). A pattern matches only when each inner tensor has
// the one reader the pattern expects; anything else is built op by op.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>

#include "core/strings.hpp"
#include "import/onnx/onnx_convert.hpp"

namespace gpuvs::import::onnx_detail {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {
using Node = onnx::NodeProto;
bool near(std::optional<double> v, double want) { return v && std::fabs(*v - want) <= 1e-3 * std::max(1.0, std::fabs(want)); }
}  // namespace

struct Fusions {
  Converter& c;

  const Node* next(const std::string& t, const char* op) const {
    const Node* u = c.sole_user(t);
    return u && u->domain().empty() && u->op_type() == op ? u : nullptr;
  }
  /// The input of a binary node that is not `t`, or "" when `t` is not one of them.
  static std::string other(const Node& u, const std::string& t) {
    if (u.input_size() != 2) return "";
    if (u.input(0) == t) return u.input(1);
    if (u.input(1) == t) return u.input(0);
    return "";
  }
  std::optional<double> scalar_of(const std::string& name) const {
    const Value* v = value(name);
    if (!v || !v->known || v->known->size() != 1) return std::nullopt;
    return v->known->at(0);
  }
  const Value* value(const std::string& name) const { return name.empty() ? nullptr : c.lookup(name); }
  /// True when `name` broadcasts into `main` without changing it, as a pattern's side operand must: a
  /// [1, 1, 1, 1] constant times a rank-2 x makes a rank-4 result, and a [B, 1, T, S] mask over [1, H, T, S]
  /// scores a batch of B, which the fused op would not.
  bool into(const std::string& name, const Shape& main) const {
    const Value* v = value(name);
    if (!v || v->shape.size() > main.size()) return false;
    for (std::size_t k = 1; k <= v->shape.size(); ++k) {
      const std::int64_t d = v->shape[v->shape.size() - k];
      if (d != 1 && d != main[main.size() - k]) return false;
    }
    return true;
  }
  bool computed(const std::string& name) const {
    const Value* v = value(name);
    return v && v->node != kNone && v->weight.empty() && !v->known;
  }
  void take(const std::vector<const Node*>& nodes) {
    for (const Node* u : nodes) {
      c.skip(*u);
      ++c.summary_.ops[u->op_type()];
    }
  }
  void set(const std::string& name, NodeId id, int elem) {
    Value v;
    v.shape = c.g_.node(id).shape;
    v.elem = elem;
    v.node = id;
    c.check_value_info(name, v);
    c.vals_[name] = std::move(v);
  }

  // x * 0.5 * (1 + erf(x / sqrt(2))), as torch.onnx writes nn.GELU() before opset 20.
  bool gelu(const Node& n) {
    if ((n.op_type() != "Div" && n.op_type() != "Mul") || n.input_size() != 2 || !computed(n.input(0))) return false;
    const std::optional<double> k = scalar_of(n.input(1));
    if (!(n.op_type() == "Div" ? near(k, std::sqrt(2.0)) : near(k, 1.0 / std::sqrt(2.0)))) return false;
    const std::string& x = n.input(0);
    const Shape xs = c.vals_.at(x).shape;
    if (!into(n.input(1), xs)) return false;
    const Node* erf = next(n.output(0), "Erf");
    const Node* one = erf ? next(erf->output(0), "Add") : nullptr;
    if (!one || !near(scalar_of(other(*one, erf->output(0))), 1.0) || !into(other(*one, erf->output(0)), xs)) return false;
    const Node* m1 = next(one->output(0), "Mul");
    const Node* m2 = m1 ? next(m1->output(0), "Mul") : nullptr;
    if (!m2) return false;
    const std::string a = other(*m1, one->output(0)), b = other(*m2, m1->output(0));
    if (!((a == x && near(scalar_of(b), 0.5) && into(b, xs)) || (near(scalar_of(a), 0.5) && into(a, xs) && b == x))) return false;
    take({erf, one, m1, m2});
    ++c.summary_.fused["GELU (erf form)"];
    set(m2->output(0), c.g_.activation(c.name_for(n, "/gelu"), c.tensor(x), Act::gelu), c.vals_.at(x).elem);
    return true;
  }

  bool last_axis(const Node& r, std::size_t rank) const {
    if (r.op_type() != "ReduceMean" || c.attr_int(r, "keepdims", 1) == 0) return false;
    std::optional<std::vector<std::int64_t>> axes;
    for (const auto& a : r.attribute())
      if (a.name() == "axes") axes = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    if (!axes && r.input_size() > 1 && !r.input(1).empty()) {
      const Value* v = value(r.input(1));
      if (!v || !v->known) return false;
      axes = v->known->ints(fmt::format("{}: {}", c.where_, c.node_label(r)));
    }
    return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == static_cast<std::int64_t>(rank) - 1);
  }

  // (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* gamma] [+ beta] over the last axis.
  bool layer_norm(const Node& n) {
    if (n.op_type() != "ReduceMean" || !computed(n.input(0))) return false;
    const std::string& x = n.input(0);
    const Shape xs = c.vals_.at(x).shape;
    if (xs.size() < 2 || !last_axis(n, xs.size())) return false;
    const Node* sub = next(n.output(0), "Sub");
    if (!sub || sub->input(0) != x || sub->input(1) != n.output(0)) return false;
    const std::string& d = sub->output(0);
    const auto uit = c.users_.find(d);
    if (uit == c.users_.end() || uit->second.size() != 2 || c.graph_outputs_.count(d)) return false;
    const Node* pw = nullptr;
    const Node* dv = nullptr;
    for (int i : uit->second) {
      const Node& u = c.gp_.node(i);
      if (u.input_size() != 2 || u.output_size() < 1) return false;
      if (u.op_type() == "Pow" && u.input(0) == d && near(scalar_of(u.input(1)), 2.0) && into(u.input(1), xs)) pw = &u;
      else if (u.op_type() == "Div" && u.input(0) == d) dv = &u;
    }
    if (!pw || !dv) return false;
    const Node* r2 = next(pw->output(0), "ReduceMean");
    if (!r2 || !last_axis(*r2, xs.size())) return false;
    const Node* eps = next(r2->output(0), "Add");
    Shape reduced = xs;
    reduced.back() = 1;
    if (!eps || !scalar_of(other(*eps, r2->output(0))) || !into(other(*eps, r2->output(0)), reduced)) return false;
    const Node* sq = next(eps->output(0), "Sqrt");
    if (!sq || dv->input(1) != sq->output(0) || c.sole_user(sq->output(0)) != dv) return false;
    std::vector<const Node*> nodes{sub, pw, r2, eps, sq, dv};
    const std::int64_t ch = xs.back();
    std::string out = dv->output(0), gamma, beta;
    auto per_channel = [&](const std::string& name) {
      const Value* v = value(name);
      return v && !v->weight.empty() && numel(v->shape) == ch && !v->shape.empty() && v->shape.back() == ch && v->shape.size() <= xs.size();
    };
    if (const Node* mul = next(out, "Mul"); mul && per_channel(other(*mul, out))) {
      gamma = other(*mul, out);
      nodes.push_back(mul);
      out = mul->output(0);
      if (const Node* add = next(out, "Add"); add && per_channel(other(*add, out))) {
        beta = other(*add, out);
        nodes.push_back(add);
        out = add->output(0);
      }
    }
    take(nodes);
    ++c.summary_.fused["LayerNorm (written out)"];
    const std::string base = c.name_for(n, "/layernorm");
    const NodeId scale = gamma.empty() ? c.g_.fill(c.g_.unique_name(base + "/ones"), {ch}, c.opt_.dtype, 1.0) : c.view(base + "/scale", c.tensor(gamma), {ch});
    const NodeId shift = beta.empty() ? kNone : c.view(base + "/shift", c.tensor(beta), {ch});
    const NodeId y = c.g_.normalize(base, c.view(base + "/rows", c.tensor(x), {numel(xs) / ch, ch}), scale, shift, NormKind::layer);
    set(out, c.view(base + "/out", y, xs), c.vals_.at(x).elem);
    return true;
  }

  /// Whether an additive mask hides any position; worked out once per mask, as its pattern is.
  bool hides_any(const KnownPtr& k) const {
    const std::string key = fmt::format("hides:{}", static_cast<const void*>(k.operator->()));
    if (const auto it = c.mask_patterns_.find(key); it != c.mask_patterns_.end()) return it->second.second != 0;
    bool hides = false;
    for (std::int64_t e = 0; e < k->size() && !hides; ++e) hides = k->at(e) <= -1e4;
    c.mask_patterns_[key] = {k, hides ? 1 : 0};
    return hides;
  }

  /// Which positions [T, S] a known mask hides: 1 causal (future keys), 0 none, -1 another pattern.
  int mask_pattern(const KnownPtr& k, std::int64_t t, std::int64_t s, bool hidden_if_nonzero, bool additive) const {
    // Each block reads the same mask: its pattern is worked out once (the cache keeps the mask, so its address
    // is never another's).
    const std::string key = fmt::format("{}:{}:{}:{}:{}", static_cast<const void*>(k.operator->()), t, s, hidden_if_nonzero, additive);
    if (const auto it = c.mask_patterns_.find(key); it != c.mask_patterns_.end()) return it->second.second;
    auto hidden = [&](double v) { return additive ? v <= -1e4 : (v != 0) == hidden_if_nonzero; };
    const int p = pattern_of(*k, t, s, hidden);
    c.mask_patterns_[key] = {k, p};
    return p;
  }
  template <typename Hidden>
  static int pattern_of(const Known& k, std::int64_t t, std::int64_t s, const Hidden& hidden) {
    if (k.shape.size() < 2 || k.shape[k.shape.size() - 2] != t || k.shape.back() != s) return -1;
    for (std::size_t d = 0; d + 2 < k.shape.size(); ++d)
      if (k.shape[d] != 1) return -1;
    bool causal = true, none = true;
    for (std::int64_t i = 0; i < t; ++i)
      for (std::int64_t j = 0; j < s; ++j) {
        const bool h = hidden(k.at(i * s + j));
        causal = causal && h == (j > i + (s - t));
        none = none && !h;
      }
    return causal ? 1 : none ? 0 : -1;
  }

  // softmax(Q K^T [* scale] [+ mask | where(mask)]) V, with Q [.., T, d], K^T [.., d, S], V [.., S, dv].
  bool attention(const Node& n) {
    if (!c.opt_.flash_attention || n.op_type() != "MatMul" || !computed(n.input(0)) || !computed(n.input(1))) return false;
    const Shape qs = c.vals_.at(n.input(0)).shape, ks = c.vals_.at(n.input(1)).shape;
    if (qs.size() < 3 || ks.size() != qs.size() || !std::equal(qs.begin(), qs.end() - 2, ks.begin())) return false;
    const std::int64_t t = qs[qs.size() - 2], d = qs.back(), s = ks.back();
    if (ks[ks.size() - 2] != d) return false;
    std::vector<const Node*> nodes;
    std::string cur = n.output(0);
    const Node* u = c.sole_user(cur);
    Shape scores(qs.begin(), qs.end() - 1);
    scores.push_back(s);
    int pattern = 0;  // mask: 0 none, 1 causal, -1 other
    bool scaled = false, masked = false;
    for (int step = 0; step < 3 && u && u->domain().empty(); ++step) {
      const std::string& op = u->op_type();
      if ((op == "Mul" || op == "Div") && !scaled && scalar_of(other(*u, cur)) && into(other(*u, cur), scores)) {
        scaled = true;
      } else if (op == "Add" && !masked && !other(*u, cur).empty() && into(other(*u, cur), scores)) {
        masked = true;
        const std::string mask = other(*u, cur);
        const bool known = value(mask) && c.values_of(mask);  // values_of keeps what it decodes in the value
        // A weight that hides no position is a trained additive bias (a learned position table), not a mask:
        // fused, its parameters went unpriced. Built unfused, as ONNX computes it.
        if (const Value* mv = value(mask); known && mv && !mv->weight.empty()) {
          if (!hides_any(c.vals_.at(mask).known)) return false;
        }
        pattern = known ? mask_pattern(c.vals_.at(mask).known, t, s, false, true) : -1;
      } else if (op == "Where" && !masked && u->input_size() == 3 && (u->input(1) == cur || u->input(2) == cur) && into(u->input(0), scores) &&
                 into(u->input(u->input(2) == cur ? 1 : 2), scores)) {
        masked = true;
        const bool scores_if_false = u->input(2) == cur;
        const std::optional<double> fill = scalar_of(u->input(scores_if_false ? 1 : 2));
        const Value* cond = value(u->input(0));
        if (!fill || *fill > -1e4) return false;  // not a mask
        pattern = cond && cond->known ? mask_pattern(cond->known, t, s, scores_if_false, false) : -1;
      } else {
        break;
      }
      nodes.push_back(u);
      cur = u->output(0);
      u = c.sole_user(cur);
    }
    if (!u || u->op_type() != "Softmax" || !u->domain().empty()) return false;
    const std::int64_t axis = c.attr_int(*u, "axis", c.opset_ >= 13 ? -1 : 1);
    if (axis != -1 && axis != static_cast<std::int64_t>(qs.size()) - 1) return false;
    nodes.push_back(u);
    cur = u->output(0);
    u = c.sole_user(cur);
    if (u && u->op_type() == "Dropout" && u->domain().empty()) {
      nodes.push_back(u);
      cur = u->output(0);
      u = c.sole_user(cur);
    }
    if (!u || u->op_type() != "MatMul" || !u->domain().empty() || u->input(0) != cur || !computed(u->input(1))) return false;
    const Shape vs = c.vals_.at(u->input(1)).shape;
    if (vs.size() != qs.size() || !std::equal(qs.begin(), qs.end() - 2, vs.begin()) || vs[vs.size() - 2] != s) return false;
    nodes.push_back(u);
    take(nodes);
    const bool causal = pattern == 1;
    ++c.summary_.fused[causal ? "attention as one FlashAttention kernel (causal)" : "attention as one FlashAttention kernel"];
    if (pattern == -1) c.summary_.notes.insert("an attention mask that is not causal is priced as unmasked attention (the kernel reads it)");
    const std::int64_t bh = numel(Shape(qs.begin(), qs.end() - 2)), dv = vs.back();
    const std::string base = c.name_for(n, "/attention");
    // K arrives transposed ([.., d, S]); the fused kernel reads it through strides: a view of the same bytes.
    const NodeId q = c.view(base + "/q", c.tensor(n.input(0)), {bh, t, d});
    const NodeId k = c.view(base + "/k", c.tensor(n.input(1)), {bh, s, d});
    const NodeId v = c.view(base + "/v", c.tensor(u->input(1)), {bh, s, dv});
    Shape out(qs.begin(), qs.end() - 2);
    out.push_back(t);
    out.push_back(dv);
    set(u->output(0), c.view(base + "/out", c.g_.attention(base, q, k, v, causal), out), c.vals_.at(n.input(0)).elem);
    return true;
  }
};

bool Converter::fuse(const onnx::NodeProto& n) {
  // A pattern starts only at a well-formed node, as it continues only through well-formed readers (a
  // MatMul with one input was read past its end; found by fuzz_model_onnx).
  if (!n.domain().empty() || !pattern_ready(n)) return false;
  Fusions f{*this};
  return f.attention(n) || f.layer_norm(n) || f.gelu(n);
}

}  // namespace gpuvs::import::onnx_detail
