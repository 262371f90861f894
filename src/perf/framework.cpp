// SPDX-License-Identifier: Apache-2.0
#include "perf/framework.hpp"

#include <fmt/format.h>


#include <algorithm>

#include "core/error.hpp"
#include "core/toml_input.hpp"
#include "core/strings.hpp"
#include "perf/maturity.hpp"

namespace gpuvs::embedded {
extern const char* const kFrameworks;
}

namespace gpuvs::perf {

namespace {

const std::map<std::string, std::vector<std::string>> kDefaults = {{"flash_attention", {"model", "0", "1"}},
                                                                   {"sharding", {"none", "zero1", "zero2", "full"}},
                                                                   {"memory_format", {"nhwc", "nchw"}},
                                                                   {"sequence_parallel", {"0", "1"}},
                                                                   {"tp_overlap", {"0", "1"}},
                                                                   {"pp_overlap", {"0", "1"}},
                                                                   {"nvls", {"0", "1"}},
                                                                   {"param_gather_overlap", {"0", "1"}},
                                                                   {"lora_targets", {"all", "qkv", "attention", "mlp"}}};

}  // namespace

const std::vector<std::pair<std::string, std::string>>& framework_fusions() {
  static const std::vector<std::pair<std::string, std::string>> f = {
      {"fp8-shared-input-cast", "GEMMs that read one input (a fused QKV or gate/up GEMM) cast it to FP8 once"},
      {"fp8-norm-cast", "a norm writes the FP8 input of the GEMMs it feeds (no cast kernel)"},
      {"fp8-activation-cast", "an activation between two GEMMs writes the next one's FP8 input, and its gradient kernel the FP8 output gradients"},
      {"attention-views", "attention reads q, k, v and writes its output in the projections' layout (no permute copies)"},
      {"scale-mask-softmax", "attention's scale and mask run inside the softmax kernel, forward and backward"},
      {"dropout-add", "a dropout and the residual add after it are one kernel"},
      {"add-norm", "a residual add and the norm after it are one kernel, the sum not written (inference)"},
      {"gemm-activation", "an activation after a GEMM runs in the GEMM's epilogue, the pre-activation not written (inference)"},
      {"fused-qkv", "the query, key and value projections are one GEMM over their concatenated weights"}};
  return f;
}

bool fuses(const FrameworkProfile& f, const std::string& fusion) {
  return std::find(f.fuses.begin(), f.fuses.end(), fusion) != f.fuses.end();
}

std::vector<FrameworkProfile> parse_frameworks(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "framework") throw InputError(fmt::format("{}: unknown table '{}' (expected [[framework]])", where, strings::printable(k.str())));
  const auto* arr = t["framework"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[framework]] tables", where));
  std::vector<FrameworkProfile> out;
  for (const auto& node : *arr) {
    const auto* f = node.as_table();
    const int line = static_cast<int>(node.source().begin.line);
    if (!f) throw InputError(fmt::format("{}:{}: a framework must be a table", where, line));
    FrameworkProfile p;
    p.line = line;
    for (const auto& [k, v] : *f) {
      const std::string key(k.str());
      if (key == "id" || key == "name" || key == "source") {
        const auto s = v.value<std::string>();
        if (!s || s->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        (key == "id" ? p.id : key == "name" ? p.name : p.source) = *s;
      } else if (kDefaults.count(key)) {
        const auto s = v.value<std::string>();
        const auto& allowed = kDefaults.at(key);
        if (!s || std::find(allowed.begin(), allowed.end(), *s) == allowed.end())
          throw InputError(fmt::format("{}:{}: {} must be one of {}", where, line, key, strings::join(allowed, ", ")));
        if (*s != "model") p.defaults[key] = *s;
      } else if (key == "lora_rank") {
        // The adapters' rank when a run fine-tunes with LoRA and names none (a whole number, as the option takes).
        const auto r = v.value<std::int64_t>();
        if (!r || *r < 1 || *r > 4096) throw InputError(fmt::format("{}:{}: lora_rank must be a whole number from 1 to 4096", where, line));
        p.defaults[key] = std::to_string(*r);
      } else if (key == "fuses") {
        const auto* list = v.as_array();
        std::vector<std::string> known;
        for (const auto& [name, what] : framework_fusions()) known.push_back(name);
        if (!list) throw InputError(fmt::format("{}:{}: fuses must be a list of strings", where, line));
        for (const auto& item : *list) {
          const auto s = item.value<std::string>();
          if (!s || std::find(known.begin(), known.end(), *s) == known.end())
            throw InputError(fmt::format("{}:{}: fuses lists '{}', not a known fusion ({})", where, line,
                                         s ? strings::printable(*s) : std::string("a non-string"), strings::join(known, ", ")));
          p.fuses.push_back(*s);
        }
      } else if (key == "released") {
        const auto s = v.value<std::string>();
        try {
          p.released = parse_month(s.value_or(""), "released");
        } catch (const InputError& bad) {
          throw InputError(fmt::format("{}:{}: {}", where, line, bad.what()));
        }
      } else if (key == "inference_only") {
        const auto b = v.is_boolean() ? v.value<bool>() : std::nullopt;
        if (!b) throw InputError(fmt::format("{}:{}: inference_only must be true or false", where, line));
        p.inference_only = *b;
      } else if (key == "gemms") {
        const auto s = v.value<std::string>();
        if (!s || (*s != "framework" && *s != "tuned"))
          throw InputError(fmt::format("{}:{}: gemms must be framework (the fitted fraction eager frameworks reach) or tuned (the card's "
                                       "achievable rate)",
                                       where, line));
        p.tuned_gemms = *s == "tuned";
      } else if (key == "unmodelled") {
        const auto* list = v.as_array();
        if (!list) throw InputError(fmt::format("{}:{}: unmodelled must be a list of strings", where, line));
        for (const auto& item : *list) {
          const auto s = item.value<std::string>();
          if (!s) throw InputError(fmt::format("{}:{}: unmodelled must be a list of strings", where, line));
          p.unmodelled.push_back(*s);
        }
      } else {
        throw InputError(fmt::format("{}:{}: unknown key '{}'", where, line, strings::printable(key)));
      }
    }
    if (p.id.empty() || p.name.empty() || p.source.empty())
      throw InputError(fmt::format("{}:{}: a framework needs id, name and source", where, line));
    for (const auto& other : out)
      if (other.id == p.id) throw InputError(fmt::format("{}:{}: framework '{}' is defined twice", where, line, p.id));
    out.push_back(std::move(p));
  }
  return out;
}

const std::vector<FrameworkProfile>& frameworks() {
  static const std::vector<FrameworkProfile> f = parse_frameworks(embedded::kFrameworks, "built-in data/frameworks.toml");
  return f;
}

const FrameworkProfile& framework(const std::string& id) {
  std::vector<std::string> ids;
  for (const auto& f : frameworks()) {
    if (f.id == id) return f;
    ids.push_back(f.id);
  }
  throw InputError(fmt::format("framework '{}' has no profile (known: {})", strings::printable(id), strings::join(ids, ", ")));
}

std::map<std::string, std::string> with_framework_defaults(const FrameworkProfile& f, std::map<std::string, std::string> options,
                                                           models::Family family, int gpus, bool training) {
  for (const auto& [k, v] : f.defaults) {
    if (k == "memory_format" && family != models::Family::cnn && family != models::Family::unet) continue;
    if ((k == "sharding" || k == "nvls" || k == "param_gather_overlap") && (gpus < 2 || !training)) continue;
    if ((k == "sequence_parallel" || k == "tp_overlap" || k == "pp_overlap") && (family != models::Family::decoder || gpus < 2 || !training))
      continue;
    if (k.rfind("lora_", 0) == 0) {
      const auto ft = options.find("finetune");
      if (ft == options.end() || (ft->second != "lora" && ft->second != "qlora")) continue;
    }
    options.emplace(k, v);
  }
  return options;
}

}  // namespace gpuvs::perf
