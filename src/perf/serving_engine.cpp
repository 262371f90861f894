// SPDX-License-Identifier: Apache-2.0
#include "perf/serving_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "perf/maturity.hpp"
#include "perf/request_error.hpp"
#include "perf/weight_format.hpp"

namespace gpuvs::embedded {
extern const char* const kServingEngines;
}

namespace gpuvs::perf {

std::vector<ServingEngine> parse_engines(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "engine" && k.str() != "front")
      throw InputError(fmt::format("{}: unknown table '{}' (expected [[engine]] or [[front]])", where, strings::printable(k.str())));
  const auto* arr = t["engine"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[engine]] tables", where));
  std::vector<ServingEngine> out;
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* e = node.as_table();
    if (!e) throw InputError(fmt::format("{}:{}: an [[engine]] must be a table", where, line));
    ServingEngine s;
    s.line = line;
    auto number = [&](const toml::node& v, const std::string& key, double lo, double hi) {
      const auto d = v.value<double>();
      if (!d || !std::isfinite(*d) || *d < lo || *d > hi)
        throw InputError(fmt::format("{}:{}: {} must be a number in [{}, {}]", where, line, key, lo, hi));
      return *d;
    };
    for (const auto& [k, v] : *e) {
      const std::string key(k.str());
      // The string and true/false fields, each to its member.
      static const std::map<std::string, std::string ServingEngine::*> words = {
          {"id", &ServingEngine::id},         {"name", &ServingEngine::name},
          {"source", &ServingEngine::source}, {"attention", &ServingEngine::attention},
          {"kernel_family", &ServingEngine::kernel_family}, {"dequant_gemv_family", &ServingEngine::dequant_gemv_family}};
      static const std::map<std::string, bool ServingEngine::*> flags = {
          {"fp16_accumulate", &ServingEngine::fp16_accumulate}, {"inflight_batching", &ServingEngine::inflight_batching},
          {"fp8_kv_cache", &ServingEngine::fp8_kv_cache},       {"cuda_graphs", &ServingEngine::cuda_graphs},
          {"layer_offload", &ServingEngine::layer_offload},     {"layer_split", &ServingEngine::layer_split}};
      if (const auto field = words.find(key); field != words.end()) {
        const auto str = v.value<std::string>();
        if (!str || str->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        if ((key == "kernel_family" || key == "dequant_gemv_family") && *str != "ggml")
          throw InputError(fmt::format("{}:{}: {} must be \"ggml\" (or left out), not '{}'", where, line, key, strings::printable(*str)));
        s.*(field->second) = *str;
      } else if (const auto flag = flags.find(key); flag != flags.end()) {
        const auto b = v.is_boolean() ? v.value<bool>() : std::nullopt;
        if (!b) throw InputError(fmt::format("{}:{}: {} must be true or false", where, line, key));
        s.*(flag->second) = *b;
      } else if (key == "released") {
        try {
          s.released = parse_month(v.value<std::string>().value_or(""), "released");
        } catch (const InputError& bad) {
          throw InputError(fmt::format("{}:{}: {}", where, line, bad.what()));
        }
      } else if (key == "kernels_per_layer") s.kernels_per_layer = number(v, key, 1, 1000);
      else if (key == "host_launch_s") s.host_launch_s = number(v, key, 0, 1e-3);
      else if (key == "graph_launches_per_layer") s.graph_launches_per_layer = number(v, key, 1, 1000);
      else if (key == "graph_max_tokens") s.graph_max_tokens = static_cast<int>(number(v, key, 1, 1 << 20));
      else if (key == "fused_quant_rows") s.fused_quant_rows = static_cast<int>(number(v, key, 1, 4096));
      else if (key == "step_overhead_s") s.step_overhead_s = number(v, key, 0, 1);
      else if (key == "activation_bytes") {
        s.activation_bytes = number(v, key, 2, 4);
        if (s.activation_bytes != 2 && s.activation_bytes != 4) throw InputError(fmt::format("{}:{}: activation_bytes must be 2 or 4", where, line));
      } else if (key == "kv_block_tokens") s.kv_block_tokens = static_cast<int>(number(v, key, 1, 65536));
      else if (key == "memory_utilization") s.memory_utilization = number(v, key, 0.05, 1);
      else if (key == "kv_free_fraction") s.kv_free_fraction = number(v, key, 0.05, 1);
      else if (key == "max_batch") s.max_batch = static_cast<int>(number(v, key, 1, 1 << 20));
      else if (key == "max_num_tokens") s.max_num_tokens = static_cast<int>(number(v, key, 1, 1 << 24));
      else if (key == "runtime_gb") s.runtime_bytes = number(v, key, 0, 1000) * 1e9;
      else if (key == "formats") {
        const auto* list = v.as_array();
        if (!list) throw InputError(fmt::format("{}:{}: formats must be a list of weight-format ids", where, line));
        for (const auto& item : *list) {
          const auto id = item.value<std::string>();
          if (!id || !builtin_formats().find(*id))
            throw InputError(fmt::format("{}:{}: formats: '{}' is not a weight format (known: {})", where, line,
                                         strings::printable(id.value_or("?")), strings::join(weight_format_ids(), ", ")));
          s.formats.push_back(*id);
        }
      } else {
        throw InputError(fmt::format("{}:{}: [[engine]] unknown key '{}'", where, line, strings::printable(key)));
      }
    }
    if (s.id.empty() || s.name.empty() || s.source.empty() || s.kernels_per_layer == 0 || s.max_num_tokens == 0 || s.formats.empty())
      throw InputError(fmt::format("{}:{}: an [[engine]] needs id, name, source, kernels_per_layer, max_num_tokens and formats", where, line));
    if (s.graph_launches_per_layer > 0 && (!s.cuda_graphs || s.graph_launches_per_layer > s.kernels_per_layer))
      throw InputError(fmt::format("{}:{}: graph_launches_per_layer is for cuda_graphs engines, at most kernels_per_layer", where, line));
    if (s.graph_max_tokens > 0 && !s.cuda_graphs)
      throw InputError(fmt::format("{}:{}: graph_max_tokens is for cuda_graphs engines", where, line));
    if (s.attention != "flash" && s.attention != "paged" && s.attention != "unfused")
      throw InputError(fmt::format("{}:{}: attention must be flash, paged or unfused", where, line));
    for (const auto& o : out)
      if (o.id == s.id) throw InputError(fmt::format("{}:{}: engine '{}' listed twice", where, line, s.id));
    out.push_back(s);
  }
  return out;
}

const std::vector<ServingEngine>& builtin_engines() {
  static const std::vector<ServingEngine> e = parse_engines(embedded::kServingEngines, "built-in data/serving-engines.toml");
  return e;
}

double host_launches(const ServingEngine& e, int layers, double tokens) {
  if (!e.cuda_graphs || (e.graph_max_tokens > 0 && tokens > e.graph_max_tokens)) return layers * e.kernels_per_layer + 4;
  return e.graph_launches_per_layer > 0 ? layers * e.graph_launches_per_layer + 4 : 1.0;
}

std::string engine_ids(const std::string& separator) {
  std::vector<std::string> ids;
  for (const auto& e : builtin_engines()) ids.push_back(e.id);
  for (const auto& f : builtin_fronts()) ids.push_back(f.id);
  return strings::join(ids, separator);
}

std::vector<ServingFront> parse_fronts(const std::string& text, const std::string& where, const std::vector<ServingEngine>& engines) {
  const toml::table t = parse_toml(text, where);
  std::vector<ServingFront> out;
  const auto* arr = t["front"].as_array();
  if (!arr) return out;
  const auto engine_named = [&](const std::string& id) {
    return std::any_of(engines.begin(), engines.end(), [&](const ServingEngine& e) { return e.id == id; });
  };
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* e = node.as_table();
    if (!e) throw InputError(fmt::format("{}:{}: a [[front]] must be a table", where, line));
    ServingFront f;
    f.line = line;
    for (const auto& [k, v] : *e) {
      const std::string key(k.str());
      if (key == "id" || key == "name" || key == "source" || key == "optimized" || key == "generic") {
        const auto s = v.value<std::string>();
        if (!s || s->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        if ((key == "optimized" || key == "generic") && !engine_named(*s))
          throw InputError(fmt::format("{}:{}: {}: '{}' is not an [[engine]]", where, line, key, strings::printable(*s)));
        (key == "id" ? f.id : key == "name" ? f.name : key == "source" ? f.source : key == "optimized" ? f.optimized : f.generic) = *s;
      } else if (key == "optimized_segments") {
        const auto* list = v.as_array();
        if (!list || list->empty()) throw InputError(fmt::format("{}:{}: optimized_segments must be a list of catalog segments", where, line));
        for (const auto& item : *list) {
          const auto s = item.value<std::string>();
          if (!s || (*s != "datacenter" && *s != "workstation" && *s != "geforce"))
            throw InputError(fmt::format("{}:{}: optimized_segments lists '{}', not datacenter, workstation or geforce", where, line,
                                         s ? strings::printable(*s) : std::string("a non-string")));
          f.optimized_segments.push_back(*s);
        }
      } else {
        throw InputError(fmt::format("{}:{}: [[front]] unknown key '{}'", where, line, strings::printable(key)));
      }
    }
    if (f.id.empty() || f.name.empty() || f.source.empty() || f.optimized.empty() || f.generic.empty() || f.optimized_segments.empty())
      throw InputError(fmt::format("{}:{}: a [[front]] needs id, name, source, optimized, generic and optimized_segments", where, line));
    if (engine_named(f.id)) throw InputError(fmt::format("{}:{}: front '{}' has an engine's id", where, line, f.id));
    for (const auto& o : out)
      if (o.id == f.id) throw InputError(fmt::format("{}:{}: front '{}' listed twice", where, line, f.id));
    out.push_back(std::move(f));
  }
  return out;
}

const std::vector<ServingFront>& builtin_fronts() {
  static const std::vector<ServingFront> f = parse_fronts(embedded::kServingEngines, "built-in data/serving-engines.toml", builtin_engines());
  return f;
}

const ServingFront* serving_front(const std::string& id) {
  for (const auto& f : builtin_fronts())
    if (f.id == id) return &f;
  return nullptr;
}

std::pair<const ServingEngine*, std::string> front_engine(const ServingFront& front, const std::string& segment) {
  const bool optimized = std::find(front.optimized_segments.begin(), front.optimized_segments.end(), segment) != front.optimized_segments.end();
  const ServingEngine& e = serving_engine(optimized ? front.optimized : front.generic);
  const std::string segments = strings::join(front.optimized_segments, ", ");
  return {&e, optimized ? fmt::format("{} runs its optimized profile on this {} card: {} (NVIDIA builds them per model; where a model has "
                                      "none for the card, {} runs its generic {} profile: framework={} prices that)",
                                      front.id, segment, e.id, front.id, front.generic, front.generic)
                        : fmt::format("{} runs its generic profile on this {} card: {} (its optimized {} profiles are for {} cards)", front.id,
                                      segment, e.id, front.optimized, segments)};
}

bool is_serving_engine(const std::string& id) {
  const auto& e = builtin_engines();
  return std::any_of(e.begin(), e.end(), [&](const ServingEngine& x) { return x.id == id; }) || serving_front(id) != nullptr;
}

const ServingEngine& serving_engine(const std::string& id) {
  for (const auto& e : builtin_engines())
    if (e.id == id) return e;
  throw RequestError(fmt::format("serving engine '{}' is unknown (known: {})", strings::printable(id), engine_ids(", ")));
}

namespace {
// vLLM: the most used open serving engine, and the one whose published runs most rows here come from.
std::string g_default_engine = "vllm";
}  // namespace

std::string default_serving_engine() { return g_default_engine; }

ScopedServingEngine::ScopedServingEngine(const std::string& id) : previous_(g_default_engine) { g_default_engine = serving_engine(id).id; }
ScopedServingEngine::~ScopedServingEngine() { g_default_engine = previous_; }

}  // namespace gpuvs::perf
