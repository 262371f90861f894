// SPDX-License-Identifier: Apache-2.0
#include "perf/weight_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "perf/request_error.hpp"

namespace gpuvs::embedded {
extern const char* const kWeightFormats;
}

namespace gpuvs::perf {

namespace {

const std::vector<std::string> kMaths = {"fp16", "bf16", "fp8", "int8"};
const std::vector<std::string> kTensors = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

std::string need_string(const toml::node& v, const std::string& key, const std::string& where, int line) {
  const auto s = v.value<std::string>();
  if (!s || s->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
  return *s;
}

double need_number(const toml::node& v, const std::string& key, const std::string& where, int line, double lo, double hi) {
  const auto d = v.value<double>();
  if (!d || !std::isfinite(*d) || *d < lo || *d > hi)
    throw InputError(fmt::format("{}:{}: {} must be a number in [{}, {}]", where, line, key, lo, hi));
  return *d;
}

bool need_bool(const toml::node& v, const std::string& key, const std::string& where, int line) {
  const auto b = v.is_boolean() ? v.value<bool>() : std::nullopt;
  if (!b) throw InputError(fmt::format("{}:{}: {} must be true or false", where, line, key));
  return *b;
}

GgmlType parse_type(const toml::table& t, const std::string& where, int line) {
  GgmlType g;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "id") g.id = need_string(v, key, where, line);
    else if (key == "block_weights") g.block_weights = static_cast<int>(need_number(v, key, where, line, 1, 4096));
    else if (key == "block_bytes") g.block_bytes = static_cast<int>(need_number(v, key, where, line, 1, 65536));
    else throw InputError(fmt::format("{}:{}: [[type]] unknown key '{}' (expected id, block_weights, block_bytes)", where, line, strings::printable(key)));
  }
  if (g.id.empty() || g.block_weights == 0 || g.block_bytes == 0)
    throw InputError(fmt::format("{}:{}: a [[type]] needs id, block_weights and block_bytes", where, line));
  return g;
}

WeightFormat parse_format(const toml::table& t, const FormatData& data, const std::string& where, int line) {
  WeightFormat f;
  f.line = line;
  bool has_bits = false;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "id") f.id = strings::lower(need_string(v, key, where, line));
    else if (key == "name") f.name = need_string(v, key, where, line);
    else if (key == "source") f.source = need_string(v, key, where, line);
    else if (key == "math") f.math = need_string(v, key, where, line);
    else if (key == "weight_only") f.weight_only = need_bool(v, key, where, line);
    else if (key == "dequant_pass") f.dequant_pass = need_bool(v, key, where, line);
    else if (key == "embeddings_quantized") f.embeddings_quantized = need_bool(v, key, where, line);
    else if (key == "dequant_ops") f.dequant_ops = need_number(v, key, where, line, 0, 100);
    else if (key == "group_size") f.group_size = static_cast<int>(need_number(v, key, where, line, 1, 1 << 20));
    else if (key == "group_bits") f.group_bits = need_number(v, key, where, line, 1, 64);
    else if (key == "min_bits") f.min_bits = need_number(v, key, where, line, 1, 32);
    else if (key == "max_bits") f.max_bits = need_number(v, key, where, line, 1, 32);
    else if (key == "output_bits") f.output_bits = need_number(v, key, where, line, 1, 32);
    else if (key == "embedding_bits") f.embedding_bits = need_number(v, key, where, line, 1, 32);
    else if (key == "bits") {
      f.bits = need_number(v, key, where, line, 1, 32);
      has_bits = true;
    } else if (key == "base_type" || key == "more_bits_type" || key == "output_type") {
      const std::string s = need_string(v, key, where, line);
      if (!data.type(s)) throw InputError(fmt::format("{}:{}: {} '{}' is not a [[type]] above", where, line, key, strings::printable(s)));
      (key == "base_type" ? f.base_type : key == "more_bits_type" ? f.more_bits_type : f.output_type) = s;
    } else if (key == "more_bits_tensors") {
      const auto* list = v.as_array();
      if (!list) throw InputError(fmt::format("{}:{}: more_bits_tensors must be a list of tensor names", where, line));
      for (const auto& item : *list) {
        const auto s = item.value<std::string>();
        if (!s || std::find(kTensors.begin(), kTensors.end(), *s) == kTensors.end())
          throw InputError(fmt::format("{}:{}: more_bits_tensors: expected names from {}", where, line, strings::join(kTensors, ", ")));
        f.more_bits_tensors.push_back(*s);
      }
    } else {
      throw InputError(fmt::format("{}:{}: [[format]] unknown key '{}'", where, line, strings::printable(key)));
    }
  }
  if (f.id.empty() || f.math.empty() || f.source.empty())
    throw InputError(fmt::format("{}:{}: a [[format]] needs id, math and source", where, line));
  if (std::find(kMaths.begin(), kMaths.end(), f.math) == kMaths.end())
    throw InputError(fmt::format("{}:{}: math '{}' is not one of {}", where, line, strings::printable(f.math), strings::join(kMaths, ", ")));
  if ((f.group_size > 0) != (f.group_bits > 0))
    throw InputError(fmt::format("{}:{}: a grouped format needs both group_size and group_bits", where, line));
  if (f.group_size > 0 && f.bits <= f.group_bits / f.group_size)
    throw InputError(fmt::format("{}:{}: bits must exceed what the groups add (group_bits / group_size)", where, line));
  if (!f.base_type.empty() && has_bits) throw InputError(fmt::format("{}:{}: a format has bits or a base_type, not both", where, line));
  if (f.base_type.empty() && !has_bits) throw InputError(fmt::format("{}:{}: a format needs bits (uniform) or base_type (GGUF)", where, line));
  if (!f.base_type.empty()) {
    f.bits = data.type(f.base_type)->bits();
    if (f.output_type.empty()) f.output_type = f.base_type;
    if (f.more_bits_tensors.empty() != f.more_bits_type.empty())
      throw InputError(fmt::format("{}:{}: more_bits_type and more_bits_tensors go together", where, line));
  }
  if ((f.min_bits > 0) != (f.max_bits > 0) || (f.min_bits > 0 && (f.min_bits > f.bits || f.bits > f.max_bits)))
    throw InputError(fmt::format("{}:{}: min_bits and max_bits go together, around bits", where, line));
  if ((f.output_bits > 0 || f.embedding_bits > 0) && !f.base_type.empty())
    throw InputError(fmt::format("{}:{}: a GGUF format's head and embedding are its types, not output_bits or embedding_bits", where, line));
  if (f.min_bits > 0 && (!f.base_type.empty() || f.group_size > 0))
    throw InputError(fmt::format("{}:{}: min_bits and max_bits are for uniform formats without fixed groups", where, line));
  if ((f.dequant_pass || f.dequant_ops > 0) && !f.weight_only)
    throw InputError(fmt::format("{}:{}: dequant_pass and dequant_ops are for weight_only formats", where, line));
  return f;
}

}  // namespace

const WeightFormat* FormatData::find(const std::string& id) const {
  const std::string want = strings::lower(id);
  for (const auto& f : formats)
    if (f.id == want) return &f;
  return nullptr;
}

const GgmlType* FormatData::type(const std::string& id) const {
  for (const auto& t : types)
    if (t.id == id) return &t;
  return nullptr;
}

FormatData parse_formats(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "type" && k.str() != "format")
      throw InputError(fmt::format("{}: unknown table '{}' (expected [[type]] and [[format]])", where, strings::printable(k.str())));
  FormatData out;
  for (const char* kind : {"type", "format"}) {
    const auto* arr = t[kind].as_array();
    if (!arr) throw InputError(fmt::format("{}: no [[{}]] tables", where, kind));
    for (const auto& node : *arr) {
      const int line = static_cast<int>(node.source().begin.line);
      const auto* tab = node.as_table();
      if (!tab) throw InputError(fmt::format("{}:{}: [[{}]] must be a table", where, line, kind));
      if (std::string(kind) == "type") {
        GgmlType g = parse_type(*tab, where, line);
        if (out.type(g.id)) throw InputError(fmt::format("{}:{}: type '{}' listed twice", where, line, g.id));
        out.types.push_back(g);
      } else {
        WeightFormat f = parse_format(*tab, out, where, line);
        if (out.find(f.id)) throw InputError(fmt::format("{}:{}: format '{}' listed twice", where, line, f.id));
        out.formats.push_back(f);
      }
    }
  }
  return out;
}

const FormatData& builtin_formats() {
  static const FormatData d = parse_formats(embedded::kWeightFormats, "built-in data/weight-formats.toml");
  return d;
}

std::vector<std::string> weight_format_ids(const FormatData& data) {
  std::vector<std::string> ids;
  for (const auto& f : data.formats) ids.push_back(f.id);
  return ids;
}

const WeightFormat& weight_format(const std::string& id, const FormatData& data) {
  if (const WeightFormat* f = data.find(id)) return *f;
  throw RequestError(fmt::format("weight format '{}' is unknown (known: {})", strings::printable(id), strings::join(weight_format_ids(data), ", ")));
}

bool use_more_bits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

double tensor_bits(const WeightFormat& f, const std::string& tensor, int layer, int layers, const FormatData& data) {
  if (f.stored && layer >= 0 && layer < static_cast<int>(f.stored->layer_bits.size())) {
    const auto& bits = f.stored->layer_bits[static_cast<std::size_t>(layer)];
    if (const auto it = bits.find(tensor); it != bits.end()) return it->second;
  }
  if (f.base_type.empty()) return f.bits;
  const bool more = std::find(f.more_bits_tensors.begin(), f.more_bits_tensors.end(), tensor) != f.more_bits_tensors.end() &&
                    use_more_bits(layer, layers);
  return data.type(more ? f.more_bits_type : f.base_type)->bits();
}

WeightBytes weight_bytes(const models::DecoderConfig& d, const WeightFormat& f, const FormatData& data) {
  WeightBytes w;
  const double h = static_cast<double>(d.hidden), hd = static_cast<double>(d.head_size());
  const double q = d.heads * hd, kv = d.kv_heads * hd, ffn = static_cast<double>(d.ffn), vocab = static_cast<double>(d.vocab);
  const double experts = d.experts > 0 ? d.experts : 1.0;  // a mixture of experts holds every expert's MLP
  const std::vector<std::pair<std::string, double>> shapes = {
      {"attn_q", h * q}, {"attn_k", h * kv}, {"attn_v", h * kv}, {"attn_output", q * h},
      {"ffn_gate", d.swiglu ? experts * h * ffn : 0.0}, {"ffn_up", experts * h * ffn}, {"ffn_down", experts * ffn * h}};
  // Norms (and biases) stay in 32 bits in GGUF files, 16 bits elsewhere: under 0.01% of the bytes.
  const double small_elem = f.stored ? f.stored->small_bits / 8.0 : f.base_type.empty() ? 2.0 : 4.0;
  const double small_bytes = small_elem *
                             ((d.norm_bias ? 4.0 : 2.0) * h + (d.linear_bias ? q + 2 * kv + h + (d.swiglu ? 2 : 1) * ffn + h : 0.0));
  for (int l = 0; l < d.layers; ++l) {
    double bytes = small_bytes + (d.experts > 0 ? 2.0 * h * d.experts : 0.0);  // the router, kept in 16 bits
    for (const auto& [name, n] : shapes) bytes += n * tensor_bits(f, name, l, d.layers, data) / 8.0;
    w.per_layer.push_back(bytes);
    w.layers += bytes;
  }
  const double table = vocab * h;
  const double embed_bits = f.stored                ? f.stored->embedding_bits
                            : f.embeddings_quantized ? data.type(f.base_type)->bits()
                            : f.embedding_bits > 0   ? f.embedding_bits
                                                     : 16.0;
  const double output_bits = f.stored                ? f.stored->output_bits
                             : f.embeddings_quantized ? data.type(f.output_type)->bits()
                             : f.output_bits > 0      ? f.output_bits
                                                      : 16.0;
  w.embedding = table * embed_bits / 8.0 + (d.learned_positions ? static_cast<double>(d.seq_len) * h * 2.0 : 0.0);
  w.output = d.tied_embeddings ? 0.0 : table * output_bits / 8.0;
  w.embedding += (d.norm_bias ? 2.0 : 1.0) * h * small_elem;  // the final norm
  return w;
}

WeightFormat stored_weight_format(const models::StoredWeights& w, const FormatData& data) {
  const WeightFormat* base = nullptr;
  if (w.main_type == "f16") base = data.find("fp16");
  else if (w.main_type == "bf16") base = data.find("bf16");
  else
    for (const auto& f : data.formats)
      if (f.base_type == w.main_type) base = &f;
  if (!base) {
    std::vector<std::string> types = {"f16", "bf16"};
    for (const auto& f : data.formats)
      if (!f.base_type.empty()) types.push_back(f.base_type);
    std::string known = strings::join(types, ", "), main = w.main_type;
    for (auto* text : {&known, &main})
      std::transform(text->begin(), text->end(), text->begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    throw InputError(fmt::format("{}: most of its weights are {}, a type gpuvs does not price (it prices files mostly in {})", w.source, main, known));
  }
  WeightFormat f = *base;
  f.stored = &w;
  f.name = fmt::format("{} kernels on the weights as stored in {} ({})", base->name, w.source, w.summary);
  return f;
}

WeightFormat with_group_size(const WeightFormat& f, std::int64_t group_size) {
  if (f.group_size <= 0) throw RequestError(fmt::format("option group_size: the {} format is not quantized in groups", f.id));
  if (group_size < 16 || group_size > 1024 || (group_size & (group_size - 1)) != 0)
    throw RequestError(fmt::format("option group_size={}: expected a power of two from 16 to 1024 (AWQ and GPTQ use 32, 64 or 128)", group_size));
  WeightFormat g = f;
  g.bits = f.bits - f.group_bits / f.group_size + f.group_bits / static_cast<double>(group_size);
  g.group_size = static_cast<int>(group_size);
  if (group_size != f.group_size) g.name = fmt::format("{}, in groups of {} ({:.3f} bits a weight)", f.name, group_size, g.bits);
  return g;
}

WeightFormat with_bits_per_weight(const WeightFormat& f, double bpw) {
  if (f.min_bits <= 0) throw RequestError(fmt::format("option bpw: the {} format has fixed bits ({:.3g} a weight)", f.id, f.bits));
  if (!std::isfinite(bpw) || bpw < f.min_bits || bpw > f.max_bits)
    throw RequestError(fmt::format("option bpw={}: the {} format runs {:.3g} to {:.3g} bits a weight", bpw, f.id, f.min_bits, f.max_bits));
  WeightFormat g = f;
  g.bits = bpw;
  if (bpw != f.bits) g.name = fmt::format("{}, at {:.3g} bits a weight", f.name, bpw);
  return g;
}

double format_matrix_peak(const WeightFormat& f, const catalog::Gpu& gpu, bool fp16_accumulate) {
  auto need = [&](const catalog::Peak& p, const char* what) {
    if (!p.present())
      throw InputError(fmt::format("{} ({}) has no {} tensor math, so the {} format cannot run on it", gpu.id, gpu.arch, what, f.id));
    return *p.dense;
  };
  if (f.math == "bf16") return need(gpu.bf16, "BF16");
  if (f.math == "fp8") return need(gpu.fp8_fp32acc, "FP8");
  if (f.math == "int8") return need(gpu.int8, "INT8");
  if (fp16_accumulate && gpu.fp16.present()) return *gpu.fp16.dense;
  return need(gpu.fp16_fp32acc, "FP16");
}

}  // namespace gpuvs::perf
