// SPDX-License-Identifier: Apache-2.0
#include "measured/vllm_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"
#include "measured/fields.hpp"

namespace gpuvs::measured {

namespace {

constexpr const char* kBlockTitle = "Serving Benchmark Result";
// A server that kept up with the pacing served about as many requests per second as were sent: its throughput
// is the pacing's. Below this share of the rate it was saturated, and the figure is the stack's.
constexpr double kPacedShare = 0.9;
// Past what a request's prompt or output can be (the serving model's limit, 2^22 tokens).
constexpr double kMaxRequestTokens = 4194304;

struct Run {
  std::string where;
  std::optional<double> completed, input_tokens, output_tokens, output_throughput, request_throughput;
  double request_rate = 0;  // 0: all at once ("inf")
  int concurrency = 0;      // 0: not capped
  std::string backend, model;
  std::string tool = "vllm-bench";  // "sglang-bench-serving" for SGLang's bench_serving, which counts retokenized output too
  std::map<std::string, double> latency_ms;
};

using fields::trim;

// "Median TTFT (ms)" -> "median_ttft"; "P99 ITL (ms)" -> "p99_itl"; empty for any other key.
std::string latency_name(const std::string& key) {
  const std::size_t sp = key.find(' ');
  if (sp == std::string::npos || key.size() < sp + 6 || key.compare(key.size() - 5, 5, " (ms)") != 0) return {};
  const std::string stat = strings::lower(key.substr(0, sp));
  std::string metric = strings::lower(key.substr(sp + 1, key.size() - 5 - sp - 1));
  if (metric == "e2e latency" || metric == "e2e_latency") metric = "e2el";  // SGLang's spelling of vLLM's E2EL
  if (metric != "ttft" && metric != "tpot" && metric != "itl" && metric != "e2el") return {};
  const bool percentile = stat.size() > 1 && stat[0] == 'p' && fields::number(stat.substr(1)).has_value();
  if (stat != "mean" && stat != "median" && stat != "std" && !percentile) return {};
  return stat + "_" + metric;
}

// What the benchmark's backend says about the server: its own server for "vllm" and the OpenAI-compatible
// clients (an unnamed server: vLLM's own, unless the spec names another); TensorRT-LLM in gpuvs's spelling;
// anything else as named (a server gpuvs does not price is refused when the figure is used).
std::string framework_of(const std::string& backend) {
  if (backend.empty() || backend == "vllm" || backend.rfind("openai", 0) == 0) return "vllm";
  if (backend == "tensorrt-llm") return "trt-llm";
  if (backend.rfind("sglang", 0) == 0) return "sglang";  // SGLang's native and OpenAI-compatible clients
  return strings::lower(backend);
}

Measurement measurement_of(const Run& r) {
  const auto need = [&](const std::optional<double>& v, const char* what) {
    if (!v) throw InputError(fmt::format("{}: no {} in the result", r.where, what));
    return *v;
  };
  const double completed = need(r.completed, "successful requests (completed)");
  const double input = need(r.input_tokens, "total input tokens"), output = need(r.output_tokens, "total generated tokens");
  const double throughput = need(r.output_throughput, "output token throughput");
  if (completed < 1 || completed != std::floor(completed) || completed > 1e9)
    throw InputError(fmt::format("{}: {} successful requests: nothing was served to measure", r.where, completed));
  if (input < 0 || output < completed || input / completed > kMaxRequestTokens || output / completed > kMaxRequestTokens)
    throw InputError(fmt::format("{}: {} input and {} generated tokens over {} requests are not a run (at most {} tokens a request)", r.where,
                                 input, output, completed, kMaxRequestTokens));
  if (!(throughput > 0)) throw InputError(fmt::format("{}: output throughput {} is not a positive rate", r.where, throughput));
  if (r.request_rate > 0 && r.request_throughput && *r.request_throughput >= kPacedShare * r.request_rate)
    throw InputError(fmt::format("{}: paced at {:g} requests/s and served {:g}: the throughput is the pacing's, not the stack's (a run with "
                                 "--request-rate inf, the default, or a rate the server could not keep up with measures the stack)",
                                 r.where, r.request_rate, *r.request_throughput));
  Measurement m;
  m.tool = r.tool;
  m.where = r.where;
  m.model = r.model;
  m.framework = framework_of(r.backend);
  m.mode = "infer";
  m.prompt_tokens = static_cast<int>(std::max(1.0, std::round(input / completed)));
  m.gen_tokens = static_cast<int>(std::max(1.0, std::round(output / completed)));
  m.sequences = static_cast<int>(r.concurrency > 0 ? std::min<double>(r.concurrency, completed) : completed);
  m.one_wave = r.request_rate == 0 && (r.concurrency == 0 || r.concurrency >= completed);
  m.request_rate = r.request_rate;
  m.latency_ms = r.latency_ms;
  m.value = throughput;
  m.unit = "tokens/s";
  return m;
}

std::vector<Measurement> read_printed(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  std::istringstream in(text);
  std::optional<Run> run;
  double pending_rate = 0;
  int pending_concurrency = 0, line_no = 0, block_line = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = trim(raw);
    const auto at = [&] { return fmt::format("{}:{}", where, line_no); };
    if (!run) {
      if (line.rfind("Traffic request rate:", 0) == 0) {
        const std::string v = trim(line.substr(21));
        const auto n = fields::number(v);
        if (v != "inf" && (!n || *n <= 0)) throw InputError(fmt::format("{}: request rate '{}' is not a positive number or inf", at(), strings::printable(v)));
        pending_rate = v == "inf" ? 0 : *n;
      } else if (line.rfind("Maximum request concurrency:", 0) == 0) {
        const std::string v = trim(line.substr(28));
        const auto n = fields::number(v);
        if (v != "None" && (!n || *n < 1 || *n != std::floor(*n) || *n > 1e7))
          throw InputError(fmt::format("{}: request concurrency '{}' is not a whole number or None", at(), strings::printable(v)));
        pending_concurrency = v == "None" ? 0 : static_cast<int>(*n);
      } else if (!line.empty() && line.front() == '=' && line.find(kBlockTitle) != std::string::npos) {
        run.emplace();
        run->where = at();
        run->request_rate = pending_rate;
        run->concurrency = pending_concurrency;
        block_line = line_no;
      }
      continue;
    }
    if (line.size() >= 10 && line.find_first_not_of('=') == std::string::npos) {
      out.push_back(measurement_of(*run));
      run.reset();
      pending_rate = 0;
      pending_concurrency = 0;
      continue;
    }
    if (line.empty() || line.front() == '-') continue;  // a section's title: "----Time to First Token----"
    const std::size_t colon = line.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    // Later vLLM releases, and SGLang's bench_serving ("Max request concurrency: not set"), print the
    // concurrency inside the block; SGLang prints its request rate and backend there too.
    // ("Max reqeuest concurrency" is how SGLang 0.4.0.post2 spelled it: sgl-project/sglang issue 2805.)
    if (key == "Maximum request concurrency" || key == "Max request concurrency" || key == "Max reqeuest concurrency") {
      const auto n = fields::number(value);
      const bool unset = value == "None" || value == "not set";
      if (!unset && (!n || *n < 1 || *n != std::floor(*n) || *n > 1e7))
        throw InputError(fmt::format("{}: request concurrency '{}' is not a whole number, None or 'not set'", at(), strings::printable(value)));
      run->concurrency = unset ? 0 : static_cast<int>(*n);
      continue;
    }
    if (key == "Traffic request rate") {
      const auto n = fields::number(value);
      if (value != "inf" && (!n || *n <= 0)) throw InputError(fmt::format("{}: request rate '{}' is not a positive number or inf", at(), strings::printable(value)));
      run->request_rate = value == "inf" ? 0 : *n;
      continue;
    }
    if (key == "Backend") {
      run->backend = strings::lower(value);
      continue;
    }
    if (key == "Total generated tokens (retokenized)") run->tool = "sglang-bench-serving";
    std::optional<double>* field = key == "Successful requests"               ? &run->completed
                                   : key == "Total input tokens"              ? &run->input_tokens
                                   : key == "Total generated tokens"          ? &run->output_tokens
                                   : key == "Output token throughput (tok/s)" ? &run->output_throughput
                                   : key == "Request throughput (req/s)"      ? &run->request_throughput
                                                                              : nullptr;
    const std::string latency = field ? std::string() : latency_name(key);
    if (!field && latency.empty()) continue;  // a figure gpuvs does not use (duration, goodput, total throughput, ...)
    const auto n = fields::number(value);
    if (!n || *n < 0) throw InputError(fmt::format("{}: {} '{}' is not a number", at(), key, strings::printable(value)));
    if (field) *field = *n;
    else run->latency_ms[latency] = *n;
  }
  if (run) throw InputError(fmt::format("{}:{}: the result block that starts here does not end (a line of '=')", where, block_line));
  if (out.empty()) throw InputError(fmt::format("{}: no '{}' block", where, kBlockTitle));
  return out;
}

// A saved result's text parsed (discarded when it is not JSON). vLLM before 0.6 and SGLang's bench_serving
// (json.dumps of float("inf")) write an infinite request rate as Python's bare Infinity, and an undefined statistic
// as NaN, which JSON has no words for.
nlohmann::json parse_saved(const std::string& text, const std::string& where) {
  nlohmann::json j = parse_json_or_discarded(text, where);
  if (!j.is_discarded()) return j;
  // Python's bare Infinity and NaN (json.dumps writes them) as "inf" and null, in one pass.
  std::string fixed;
  fixed.reserve(text.size());
  for (std::size_t p = 0; p < text.size();) {
    if (text.compare(p, 10, ": Infinity") == 0) {
      fixed += ": \"inf\"";
      p += 10;
    } else if (text.compare(p, 5, ": NaN") == 0) {
      fixed += ": null";
      p += 5;
    } else {
      fixed += text[p++];
    }
  }
  return parse_json_or_discarded(fixed, where);
}

// One saved run: vLLM's --save-result object, or one line of SGLang's --output-file.
Run run_of(const nlohmann::json& j, const std::string& where) {
  Run r;
  r.where = where;
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      throw InputError(fmt::format("{}: \"{}\" is not a finite number", where, key));
    return it->get<double>();
  };
  const auto text_of = [&](const char* key) -> std::string {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_string()) throw InputError(fmt::format("{}: \"{}\" is not a string", where, key));
    return it->get<std::string>();
  };
  r.completed = number("completed");
  r.input_tokens = number("total_input_tokens");
  r.output_tokens = number("total_output_tokens");
  r.output_throughput = number("output_throughput");
  r.request_throughput = number("request_throughput");
  r.backend = text_of("backend");
  r.model = text_of("model_id");
  if (const auto it = j.find("request_rate"); it != j.end() && !it->is_null()) {
    if (it->is_string() && (it->get<std::string>() == "inf" || it->get<std::string>() == "Infinity")) r.request_rate = 0;
    else if (const auto rate = number("request_rate"); rate && *rate > 0) r.request_rate = *rate;
    else throw InputError(fmt::format("{}: \"request_rate\" is not a positive number or \"inf\"", where));
  }
  if (const auto c = number("max_concurrency")) {
    if (*c < 1 || *c != std::floor(*c) || *c > 1e7) throw InputError(fmt::format("{}: \"max_concurrency\" {} is not a whole number", where, *c));
    r.concurrency = static_cast<int>(*c);
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key.size() < 4 || key.compare(key.size() - 3, 3, "_ms") != 0 || it->is_null()) continue;
    const std::size_t us = key.find('_');
    const std::string name = latency_name(strings::lower(key.substr(0, us)) + " " + key.substr(us + 1, key.size() - 3 - us - 1) + " (ms)");
    if (name.empty()) continue;
    const auto v = number(key.c_str());
    if (v && *v >= 0) r.latency_ms[name] = *v;
  }
  if (j.contains("total_output_tokens_retokenized")) r.tool = "sglang-bench-serving";
  return r;
}

std::vector<Measurement> read_saved(const std::string& text, const std::string& where) {
  const nlohmann::json j = parse_saved(text, where);
  if (!j.is_discarded()) {
    if (!j.is_object()) throw InputError(fmt::format("{}: a saved result is one JSON object (or one a line)", where));
    return {measurement_of(run_of(j, where))};
  }
  // SGLang's bench_serving appends one JSON object a line to its --output-file (JSONL), a run each.
  std::vector<Measurement> out;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::string at = fmt::format("{}:{}", where, line_no);
    const nlohmann::json o = parse_saved(line, at);
    if (o.is_discarded()) throw InputError(fmt::format("{}: not JSON (a saved result is one JSON object, or one a line)", at));
    if (!o.is_object()) throw InputError(fmt::format("{}: a saved result line is one JSON object", at));
    out.push_back(measurement_of(run_of(o, at)));
  }
  if (out.empty()) throw InputError(fmt::format("{}: no saved result", where));
  return out;
}

}  // namespace

bool looks_like_vllm_bench(const std::string& text) {
  if (text.find(kBlockTitle) != std::string::npos) return true;
  const std::string head = text.substr(0, 1 << 16);
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string::npos && head[first] == '{' && text.find("\"output_throughput\"") != std::string::npos &&
         text.find("\"total_output_tokens\"") != std::string::npos;
}

std::vector<Measurement> read_vllm_bench(const std::string& text, const std::string& where) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) return read_saved(text, where);
  return read_printed(text, where);
}

}  // namespace gpuvs::measured
