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

/// The command's flag said `flag_value` (empty: nothing); --options saying another is refused, naming both.
void agree(const std::string& key, const std::string& value, const std::string& flag, const std::string& flag_value) {
  if (!flag_value.empty() && flag_value != value)
    throw InputError(fmt::format("--options {}={} and {} {} say two things; give one", key, strings::printable(value), flag,
                                 strings::printable(flag_value)));
}

}  // namespace

void apply_request_options(const std::map<std::string, std::string>& options, const RequestFlags& flags, advise::Scenario& s) {
  // What advise chooses for each option it ranks (predict prices the one plan its request names).
  static const std::vector<std::string> searched = {"tp", "pp", "vp", "cp", "sharding", "recompute", "global_batch", "sequence_parallel"};
  static const std::vector<std::string> request = {"framework", "seq_len", "prompt_len", "gen_len", "release"};
  const bool gpt = s.workload == models::kGptWorkload;
  // The workload's own keys first: an ONNX file's dims may be named seq_len; the gpt workload's shape keys.
  std::map<std::string, std::string> shape;
  for (const auto& [key, value] : options)
    if (!among(key, request) || (gpt && key == "seq_len")) shape[key] = value;
  std::optional<models::NetworkInfo> net;
  const auto resolved = [&]() -> const models::NetworkInfo& {
    if (!net) net = workload::Workload(s.workload, shape).network();
    return *net;
  };
  const auto served = [&] { return s.task == "infer" && workload::pricer_for("infer", resolved().family) == workload::Pricer::serving; };
  std::int64_t seq_len = 0;
  for (const auto& [key, value] : options) {
    if ((gpt && (key == "seq_len" || among(key, models::gpt_shape_keys()))) ||
        (among(key, request) && among(key, resolved().shape_options))) {
      shape[key] = value;  // the workload's shape
    } else if (key == "framework") {
      if (served()) {
        agree(key, value, "--engine", flags.engine);
        (void)perf::serving_engine(value);  // InputError listing the engines
        s.engine = value;
      } else {
        if (perf::is_serving_engine(value))
          throw InputError(fmt::format("--options framework={}: a serving engine serves a decoder (task infer); {} {} is priced under a "
                                       "framework profile (pytorch, nemo, tensorrt, ...)",
                                       strings::printable(value), s.task, strings::printable(s.workload)));
        (void)perf::framework(value);  // InputError listing the profiles
        s.framework = value;
      }
    } else if (key == "seq_len" || key == "prompt_len") {
      if (key == "prompt_len" && !served())
        throw InputError(fmt::format("--options prompt_len: the prompt of a served decoder (task infer); {} {} takes seq_len",
                                     s.task, strings::printable(s.workload)));
      const std::int64_t n = length_of(key, value);
      if (seq_len != 0 && seq_len != n) throw InputError("--options seq_len and prompt_len say two lengths; give one");
      agree(key, value, "--seq-len", flags.seq_len > 0 ? std::to_string(flags.seq_len) : "");
      seq_len = n;
      s.seq_len = n;
    } else if (key == "gen_len") {
      if (!served())
        throw InputError(fmt::format("--options gen_len: the tokens a served decoder generates (task infer); {} {} generates none",
                                     s.task, strings::printable(s.workload)));
      agree(key, value, "--gen-len", flags.gen_len > 0 ? std::to_string(flags.gen_len) : "");
      s.gen_len = length_of(key, value);
    } else if (key == "release") {
      agree(key, value, "--release", flags.release);
      (void)perf::parse_month(value, "--options release");
      s.release = value;
    } else if (among(key, searched)) {
      throw InputError(fmt::format("--options {}: advise chooses {} for each option it ranks (predict prices the one you name)", key, key));
    } else if (key == "finetune") {
      throw InputError(fmt::format("--options finetune={}: say it with --task finetune --finetune {}", strings::printable(value), strings::printable(value)));
    } else if (key != "network" && (among(key, perf::prediction_option_keys()) || among(key, perf::serving_option_keys()))) {
      throw InputError(fmt::format("--options {}: one of predict's keys for the one request it prices; advise and evaluate take framework, "
                                   "seq_len, prompt_len, gen_len, release and the workload's shape keys",
                                   key));
    } else {
      shape[key] = value;  // the workload's shape: advise checks it against the workload's own keys
    }
  }
  s.workload_options = shape;
}

}  // namespace gpuvs::cli
