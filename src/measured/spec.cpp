// SPDX-License-Identifier: Apache-2.0
#include "measured/spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "measured/llama_bench.hpp"
#include "measured/nvbandwidth.hpp"
#include "measured/tfevents.hpp"
#include "measured/nccl_tests.hpp"
#include "measured/trtllm_bench.hpp"
#include "measured/vllm_bench.hpp"

namespace gpuvs::measured {

namespace {

constexpr const char* kWhere = "--measured";

const std::vector<std::string> kKeys = {"gpu",   "workload", "mode", "value",     "precision", "prompt_len", "gen_len",
                                        "batch", "gpus",     "framework", "spread", "file"};
const std::vector<std::string> kModes = {"prefill", "decode", "prefill+decode", "infer", "train"};
// The rates a published or measured figure comes in; a prefix k or M scales it.
const std::vector<std::string> kUnits = {"tokens/s", "samples/s", "images/s", "sequences/s", "requests/s"};

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && s[a] == ' ') ++a;
  while (b > a && s[b - 1] == ' ') --b;
  return std::string(s.substr(a, b - a));
}

[[noreturn]] void refuse(const std::string& what) { throw InputError(fmt::format("{}: {}", kWhere, what)); }

double number(const std::string& s, const std::string& key) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v))
    refuse(fmt::format("{} '{}' is not a number", key, strings::printable(s)));
  return v;
}

int count(const std::string& s, const std::string& key, int lowest, int highest) {
  const double v = number(s, key);
  if (v != std::floor(v) || v < lowest || v > highest) refuse(fmt::format("{} {} is not a whole number in [{}, {}]", key, strings::printable(s), lowest, highest));
  return static_cast<int>(v);
}

}  // namespace

bool looks_like_spec(const std::string& text) { return text.find('=') != std::string::npos; }

Measurement read_measured_spec(const std::string& spec) {
  if (strings::has_control(spec)) refuse("the spec holds a control character");
  std::map<std::string, std::string> kv;
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t end = spec.find(';', start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = trim(std::string_view(spec).substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) refuse(fmt::format("'{}' is not key=value", strings::printable(item)));
    const std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
      refuse(fmt::format("unknown key '{}' (expected {})", strings::printable(key), strings::join(kKeys, ", ")));
    if (kv.count(key)) refuse(fmt::format("{} given twice", key));
    if (value.empty()) refuse(fmt::format("{} is empty", key));
    kv[key] = value;
  }
  Measurement m;
  m.tool = "spec";
  m.where = kWhere;
  if (kv.count("file")) {
    // The file holds the figures; the spec says what the file does not (the card, the model, ...).
    for (const char* held : {"mode", "value", "spread", "prompt_len", "gen_len"})
      if (kv.count(held)) refuse(fmt::format("{}= with file=: the file holds it", held));
    m.file = kv["file"];
    m.gpu = kv.count("gpu") ? kv["gpu"] : "";
    m.workload = kv.count("workload") ? kv["workload"] : "";
    if (kv.count("precision")) m.precision = kv["precision"];
    if (kv.count("framework")) m.framework = kv["framework"];
    if (kv.count("batch")) m.sequences = count(kv["batch"], "batch", 1, 1 << 24);
    m.gpus = kv.count("gpus") ? count(kv["gpus"], "gpus", 1, 65536) : 0;  // 0: as the file says
    return m;
  }
  for (const char* need : {"gpu", "workload", "mode", "value"})
    if (!kv.count(need)) refuse(fmt::format("no {}= (a spec needs gpu, workload, mode and value, or file= and what the file does not say)", need));
  m.gpu = kv["gpu"];
  m.workload = kv["workload"];
  m.mode = kv["mode"];
  if (std::find(kModes.begin(), kModes.end(), m.mode) == kModes.end())
    refuse(fmt::format("mode '{}' is not one gpuvs prices (expected {})", strings::printable(m.mode), strings::join(kModes, ", ")));
  if (kv.count("precision")) m.precision = kv["precision"];
  if (kv.count("framework")) m.framework = kv["framework"];
  if (kv.count("prompt_len")) m.prompt_tokens = count(kv["prompt_len"], "prompt_len", 1, 1 << 20);
  if (kv.count("gen_len")) m.gen_tokens = count(kv["gen_len"], "gen_len", 1, 1 << 20);
  if (kv.count("batch")) m.sequences = count(kv["batch"], "batch", 1, 1 << 24);
  if (kv.count("gpus")) m.gpus = count(kv["gpus"], "gpus", 1, 65536);
  // "112 tokens/s", "1.2 k tokens/s", "1.2k tokens/s".
  const std::string v = kv["value"];
  const std::size_t sp = v.find(' ');
  if (sp == std::string::npos) refuse(fmt::format("value '{}' has no unit (expected one of {})", strings::printable(v), strings::join(kUnits, ", ")));
  std::string num = v.substr(0, sp), unit = trim(v.substr(sp + 1));
  double scale = 1;
  auto prefix = [&](char c) { return c == 'k' ? 1e3 : c == 'M' ? 1e6 : 0.0; };
  if (!num.empty() && prefix(num.back()) > 0) {
    scale = prefix(num.back());
    num.pop_back();
  } else if (unit.size() > 2 && unit[1] == ' ' && prefix(unit[0]) > 0) {
    scale = prefix(unit[0]);
    unit = trim(unit.substr(2));
  }
  if (std::find(kUnits.begin(), kUnits.end(), unit) == kUnits.end())
    refuse(fmt::format("unit '{}' is not a rate gpuvs compares (expected {})", strings::printable(unit), strings::join(kUnits, ", ")));
  m.value = number(num, "value") * scale;
  m.unit = unit;
  if (!(m.value > 0)) refuse(fmt::format("value {} is not a positive rate", m.value));
  if (kv.count("spread")) {
    m.spread = number(kv["spread"], "spread") * scale;
    if (*m.spread < 0) refuse("spread is negative");
  }
  return m;
}

std::vector<Measurement> read_measured_output(const std::string& text, const std::string& where) {
  if (looks_like_tfevents(text)) return read_tfevents(text, where);
  if (looks_like_nccl_tests(text)) return read_nccl_tests(text, where);
  if (looks_like_nvbandwidth(text)) return read_nvbandwidth(text, where);
  if (looks_like_trtllm_bench(text)) return read_trtllm_bench(text, where);
  if (looks_like_vllm_bench(text)) return read_vllm_bench(text, where);
  return read_llama_bench(text, where);
}

void complete_from_spec(Measurement& m, const Measurement& spec) {
  const auto fill = [&](std::string& field, const std::string& said, const char* key) {
    if (said.empty()) return;
    if (!field.empty() && field != said)
      throw InputError(fmt::format("{}: the output says {} '{}'; {}= is for what it does not say", m.where, key, strings::printable(field), key));
    field = said;
  };
  fill(m.gpu, spec.gpu, "gpu");
  fill(m.workload, spec.workload, "workload");
  if (!spec.precision.empty()) {
    if (!m.quant.empty()) fill(m.quant, spec.precision, "precision");
    else fill(m.precision, spec.precision, "precision");
  }
  // The benchmark's client names no server when it talks to an OpenAI-compatible one: framework= says which.
  if (!spec.framework.empty()) m.framework = spec.framework;
  if (spec.gpus > 0) m.gpus = spec.gpus;
  if (spec.sequences > 0) m.sequences = spec.sequences;
}

}  // namespace gpuvs::measured
