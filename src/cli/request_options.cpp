// SPDX-License-Identifier: Apache-2.0
#include "cli/request_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "perf/framework.hpp"
#include "perf/maturity.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/serving_engine.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {

bool among(const std::string& key, const std::vector<std::string>& keys) { return std::find(keys.begin(), keys.end(), key) != keys.end(); }

std::int64_t length_of(const std::string& key, const std::string& value) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > models::kMaxSeqLen)
    throw InputError(fmt::format("--options: {}={} is not a whole number of tokens from 1 to {}", key, strings::printable(value), models::kMaxSeqLen));
  return n;
}

}  // namespace

void apply_request_options(const std::map<std::string, std::string>& options, const RequestFlags& flags, advise::Scenario& s) {
  // What advise chooses for each option it ranks (predict prices the one plan its request names).
  static const std::vector<std::string> searched = {"tp", "pp", "vp", "cp", "sharding", "recompute", "global_batch", "sequence_parallel"};
  static const std::vector<std::string> request = {"framework", "seq_len", "prompt_len", "gen_len", "release", "network"};
  const bool gpt = s.workload == models::kGptWorkload;
  const auto predicts = [](const std::string& key) {
    return among(key, perf::prediction_option_keys()) || among(key, perf::serving_option_keys());
  };
  const auto gpt_shape = [&](const std::string& key) { return gpt && (key == "seq_len" || among(key, models::gpt_shape_keys())); };
  // The workload's shape as these options say it, else as the scenario has it (a file's); resolved only when a key's
  // meaning depends on the workload (an ONNX file's dims may be named seq_len; framework means an engine when served).
  std::map<std::string, std::string> shape;
  for (const auto& [key, value] : options)
    if (gpt_shape(key) || !predicts(key)) shape[key] = value;
  std::map<std::string, std::string> resolve_with = s.workload_options;  // the scenario's (a file's), each key said over
  for (const auto& [key, value] : shape) resolve_with[key] = value;
  std::optional<models::NetworkInfo> net;
  const auto resolved = [&]() -> const models::NetworkInfo& {
    if (!net) net = workload::Workload(s.workload, resolve_with).network();
    return *net;
  };
  // A decoder served alone (one tenant) goes to the serving model, as the advisor prices it.
  const auto served = [&] {
    return s.task == "infer" && s.tenants == 1 && workload::pricer_for("infer", resolved().family) == workload::Pricer::serving;
  };
  std::int64_t seq_len = 0;
  for (const auto& [key, value] : options) {
    if (gpt_shape(key) || (among(key, request) && among(key, resolved().shape_options))) {
      shape[key] = value;  // the workload's shape
    } else if (key == "framework") {
      try {
        if (served()) {
          if (!flags.engine.empty() && flags.engine != value)
            throw InputError(fmt::format("--engine says {}; give one", strings::printable(flags.engine)));
          (void)perf::serving_engine(value);  // InputError listing the engines
          s.engine = value;
        } else {
          if (perf::is_serving_engine(value))
            throw InputError(fmt::format("a serving engine serves a decoder alone (task infer, one tenant); {} {} is priced under a "
                                         "framework profile (pytorch, nemo, tensorrt, ...)",
                                         s.task, strings::printable(s.workload)));
          if (perf::framework(value).inference_only && s.task != "infer")  // InputError listing the profiles first
            throw InputError(fmt::format("the {} profile prices inference only; the task is {}", strings::printable(value), s.task));
          s.framework = value;
        }
      } catch (const InputError& e) {
        throw InputError(fmt::format("--options framework={}: {}", strings::printable(value), e.what()));
      }
    } else if (key == "seq_len" || key == "prompt_len") {
      if (key == "prompt_len" && !served())
        throw InputError(fmt::format("--options prompt_len: the prompt of a decoder served alone (task infer, one tenant); {} {} takes seq_len",
                                     s.task, strings::printable(s.workload)));
      const std::int64_t n = length_of(key, value);
      if (seq_len != 0 && seq_len != n) throw InputError("--options seq_len and prompt_len say two lengths; give one");
      if (flags.seq_len > 0 && flags.seq_len != n)
        throw InputError(fmt::format("--options {}={} and --seq-len {} say two lengths; give one", key, n, flags.seq_len));
      seq_len = n;
      s.seq_len = n;
    } else if (key == "gen_len") {
      if (!served())
        throw InputError(fmt::format("--options gen_len: the tokens a decoder served alone generates (task infer, one tenant); {} {} "
                                     "generates none here",
                                     s.task, strings::printable(s.workload)));
      const std::int64_t n = length_of(key, value);
      if (flags.gen_len > 0 && flags.gen_len != n)
        throw InputError(fmt::format("--options gen_len={} and --gen-len {} say two lengths; give one", n, flags.gen_len));
      s.gen_len = n;
    } else if (key == "release") {
      if (!flags.release.empty() && flags.release != value)
        throw InputError(fmt::format("--options release={} and --release {} say two things; give one", strings::printable(value),
                                     strings::printable(flags.release)));
      (void)perf::parse_month(value, "--options release");
      s.release = value;
    } else if (key == "network") {
      s.network = value;  // the advisor checks it: a known fabric, and a scenario with plans past one server
    } else if (among(key, searched)) {
      throw InputError(fmt::format("--options {}: advise chooses {} for each option it ranks (predict prices the one you name)", key, key));
    } else if (key == "finetune") {
      throw InputError(fmt::format("--options finetune={}: say it with --task finetune --finetune {}", strings::printable(value), strings::printable(value)));
    } else if (predicts(key)) {
      throw InputError(fmt::format("--options {}: one of predict's keys for the one request it prices; advise and evaluate take framework, "
                                   "seq_len, prompt_len, gen_len, release, network and the workload's shape keys",
                                   key));
    }
  }
  // Shape keys said here are said over the scenario's (a file's), key by key; the others stay.
  for (const auto& [key, value] : shape) s.workload_options[key] = value;
}

}  // namespace gpuvs::cli
