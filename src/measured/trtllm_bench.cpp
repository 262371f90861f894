// SPDX-License-Identifier: Apache-2.0
#include "measured/trtllm_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "measured/fields.hpp"

namespace gpuvs::measured {

namespace {

// An engine that served about as many requests per second as were issued kept up with the rate: its throughput is
// the rate's. Offline runs issue at once (the report prints a rate of 1e15 and more).
constexpr double kPacedShare = 0.9;
// Past what a request's prompt or output can be (the serving model's limit, 2^22 tokens).
constexpr double kMaxRequestTokens = 4194304;

struct Run {
  int line = 0;
  std::map<std::string, std::string> text;   // the report's fields by key, as printed
  std::map<std::string, double> latency_ms;
  std::string throughput_key;                // which line gave the output throughput
};

// The weight format a run's quantization and dtype name, in gpuvs's spelling; empty for one gpuvs does not price.
std::string format_of(const std::string& quantization, const std::string& dtype) {
  const std::string q = strings::lower(quantization), d = strings::lower(dtype);
  if (q.empty() || q == "none") return d == "bfloat16" ? "bf16" : d == "float16" ? "fp16" : "";
  if (q == "fp8") return "fp8";
  if (q == "w4a16_awq") return "int4-awq";
  if (q == "w4a16_gptq") return "int4-gptq";
  if (q == "w8a16" || q == "int8_weight_only") return "int8-w8a16";
  if (q == "int8" || q == "w8a8_sq_per_channel" || q == "w8a8") return "int8";
  return "";
}

// "[TPOT] P50" -> "p50_tpot", "Average time-to-first-token [TTFT] (ms)" -> "mean_ttft"; empty otherwise.
std::string latency_name(const std::string& key) {
  for (const char* metric : {"TTFT", "TPOT"}) {
    const std::string tag = fmt::format("[{}]", metric);
    const std::string lower = strings::lower(metric);
    if (key.rfind(tag + " ", 0) == 0) {
      const std::string stat = strings::lower(fields::trim(key.substr(tag.size())));
      if (stat == "average") return "mean_" + lower;
      if (stat == "minimum" || stat == "maximum") return {};
      if (stat.size() > 1 && stat[0] == 'p' && fields::number(stat.substr(1))) return stat + "_" + lower;
      return {};
    }
    if (key.rfind("Average time-", 0) == 0 && key.find(tag) != std::string::npos && strings::ends_with(key, "(ms)")) return "mean_" + lower;
  }
  return {};
}

Measurement measurement_of(const Run& r, const std::string& where) {
  const std::string at = fmt::format("{}:{}", where, r.line);
  const auto value = [&](const char* key) -> std::optional<double> {
    const auto it = r.text.find(key);
    if (it == r.text.end()) return std::nullopt;
    const auto n = fields::number(it->second);
    if (!n || *n < 0) throw InputError(fmt::format("{}: {} '{}' is not a number", at, key, strings::printable(it->second)));
    return n;
  };
  const auto need = [&](const char* key) {
    const auto v = value(key);
    if (!v) throw InputError(fmt::format("{}: no '{}' in the report", at, key));
    return *v;
  };
  const auto said = [&](const char* key) { return r.text.count(key) ? r.text.at(key) : std::string(); };
  if (r.throughput_key.empty()) throw InputError(fmt::format("{}: no output throughput in the report (Total Output Throughput, or Token Throughput)", at));
  const double requests = need("Number of requests");
  const double prompt = need("Average Input Length (tokens)"), output = need("Average Output Length (tokens)");
  const double throughput = need(r.throughput_key.c_str());
  if (requests < 1 || requests != std::floor(requests) || requests > 1e9)
    throw InputError(fmt::format("{}: {} requests: nothing was served to measure", at, requests));
  if (output < 1 || prompt > kMaxRequestTokens || output > kMaxRequestTokens)
    throw InputError(fmt::format("{}: requests of {} + {} tokens are not a run (at most {} tokens each)", at, prompt, output, kMaxRequestTokens));
  if (!(throughput > 0)) throw InputError(fmt::format("{}: output throughput {} is not a positive rate", at, throughput));
  const double tp = value("TP Size").value_or(1), pp = r.text.count("PP Size") && said("PP Size") != "None" ? need("PP Size") : 1;
  if (tp < 1 || tp > 4096 || tp != std::floor(tp)) throw InputError(fmt::format("{}: TP Size {} is not a whole number of GPUs", at, tp));
  if (pp != 1) throw InputError(fmt::format("{}: pipeline parallel ({} stages) serving is not priced yet", at, pp));
  if (const auto rate = value("Issue Rate (req/sec)"); rate && *rate > 0 && *rate < 1e12)
    if (const auto served = value("Request Throughput (req/sec)"); served && *served >= kPacedShare * *rate)
      throw InputError(fmt::format("{}: issued at {:g} requests/s and served {:g}: the throughput is the rate's, not the stack's", at, *rate, *served));
  Measurement m;
  m.tool = "trtllm-bench";
  m.where = at;
  m.model = said("Model");
  m.framework = "trt-llm";
  m.library_version = said("TensorRT-LLM Version");
  m.quant = format_of(said("Quantization"), said("Dtype"));
  if (m.quant.empty()) m.precision = strings::lower(said("Quantization").empty() ? said("Dtype") : said("Quantization"));
  m.mode = "infer";
  m.gpus = static_cast<int>(tp);
  m.tensor_parallel = static_cast<int>(tp);
  m.prompt_tokens = static_cast<int>(std::max(1.0, std::round(prompt)));
  m.gen_tokens = static_cast<int>(std::max(1.0, std::round(output)));
  // In flight: the average concurrency later releases print; else an offline run's every request at once, as many
  // as the runtime's batch limit takes.
  if (const auto c = value("Number of concurrent requests"); c && *c >= 0.5) {
    m.sequences = static_cast<int>(std::min(requests, std::round(*c)));
  } else {
    const double cap = value("Max Runtime Batch Size").value_or(requests);
    m.sequences = static_cast<int>(std::max(1.0, std::min(requests, cap)));
    m.one_wave = true;  // offline: the whole dataset issued at once
  }
  m.latency_ms = r.latency_ms;
  m.value = throughput;
  m.unit = "tokens/s";
  return m;
}

}  // namespace

bool looks_like_trtllm_bench(const std::string& text) {
  return (text.find("= ENGINE DETAILS") != std::string::npos || text.find("= PYTORCH BACKEND") != std::string::npos) &&
         (text.find("Total Output Throughput (tokens/sec):") != std::string::npos ||
          text.find("Token Throughput (tokens/sec):") != std::string::npos);
}

std::vector<Measurement> read_trtllm_bench(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  std::istringstream in(text);
  std::optional<Run> run;
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = fields::trim(raw);
    if (line.rfind("= ENGINE DETAILS", 0) == 0 || line.rfind("= PYTORCH BACKEND", 0) == 0) {  // a run's report starts
      if (run) out.push_back(measurement_of(*run, where));
      run.emplace();
      run->line = line_no;
      continue;
    }
    if (!run || line.empty() || line.front() == '=' || line.front() == '-') continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = fields::trim(line.substr(0, colon)), value = fields::trim(line.substr(colon + 1));
    if (const std::string latency = latency_name(key); !latency.empty()) {
      const auto n = fields::number(value);
      if (!n || *n < 0) throw InputError(fmt::format("{}:{}: {} '{}' is not a number", where, line_no, key, strings::printable(value)));
      run->latency_ms[latency] = *n;
      continue;
    }
    if (run->text.count(key)) continue;  // a section printed twice (the overview repeated) keeps its first figure
    run->text[key] = value;
    if (key == "Total Output Throughput (tokens/sec)" || (key == "Token Throughput (tokens/sec)" && run->throughput_key.empty()))
      run->throughput_key = key;
  }
  if (run) out.push_back(measurement_of(*run, where));
  if (out.empty()) throw InputError(fmt::format("{}: no trtllm-bench report (its '= ENGINE DETAILS' or '= PYTORCH BACKEND' section)", where));
  return out;
}

}  // namespace gpuvs::measured
