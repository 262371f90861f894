#include "cli/measured_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "cli/gpu_names.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "measured/llama_bench.hpp"
#include "measured/nccl_tests.hpp"
#include "measured/spec.hpp"
#include "models/networks.hpp"
#include "perf/predict.hpp"
#include "perf/stack_file.hpp"
#include "perf/weight_format.hpp"

namespace gpuvs::cli {

namespace {

// Parameter counts within this of a preset's name the same model (llama.cpp counts every tensor it loads).
constexpr double kParamsTolerance = 0.02;

// The built-in decoder a tool's model is: the one whose published parameters are within 2% of the count it
// printed, of the same architecture word where the preset's id starts with it. Presets of one shape (llama-7b and
// llama2-7b) are the same model to the pricer: the first is taken. `note` says what was read as what.
std::string decoder_of(const measured::Measurement& m, std::string& note) {
  if (!(m.model_params > 0))
    throw InputError(fmt::format("{}: the output gives no parameter count to tell the model by; name it in a --measured spec", m.where));
  const std::string arch = strings::lower(m.model.substr(0, m.model.find(' ')));
  std::vector<std::string> ids;
  for (const auto& n : models::networks())
    if (n.family == models::Family::decoder && n.published_params > 0 &&
        std::fabs(n.published_params - m.model_params) <= kParamsTolerance * m.model_params)
      ids.push_back(n.id);
  std::vector<std::string> same_arch;
  for (const auto& id : ids)
    if (!arch.empty() && id.rfind(arch, 0) == 0) same_arch.push_back(id);
  const auto& pick = same_arch.empty() ? ids : same_arch;
  if (!pick.empty()) {
    note = fmt::format("read '{}' ({:.3g} B parameters) as {}", m.model, m.model_params / 1e9, pick.front());
    return pick.front();
  }
  // No preset of its size: a LLaMA-style decoder built to it (decoder-<size>), said as such.
  const std::string built = fmt::format("decoder-{:.3g}b", m.model_params / 1e9);
  note = fmt::format("read '{}' ({:.3g} B parameters) as {}: no built-in decoder has its size, so a LLaMA-style decoder built to it "
                     "(its layer and head counts may differ; a --measured spec with workload= names another)",
                     m.model, m.model_params / 1e9, built);
  return built;
}

perf::StackMeasurement resolve(const catalog::Catalog& cat, const measured::Measurement& m, std::map<std::string, std::string>& cards) {
  perf::StackMeasurement s;
  s.source = m.where;
  s.value = m.value;
  if (m.gpu.empty())
    throw InputError(fmt::format("{}: the output does not name the GPU (llama-bench's md table does not: run it with -o json, or keep the "
                                 "devices it prints on stderr)", m.where));
  if (m.gpu.find(", ") != std::string::npos)
    throw InputError(fmt::format("{}: ran on several GPUs ({}): one card at a time for now", m.where, strings::printable(m.gpu)));
  const std::string backend = strings::lower(m.backend);
  if (backend == "cpu" || backend == "blas")
    throw InputError(fmt::format("{}: ran on the CPU (backend {}): gpuvs calibrates GPU stacks", m.where, strings::printable(m.backend)));
  try {
    // One card named by many rows is read (and said) once.
    auto it = cards.find(m.gpu);
    if (it == cards.end()) it = cards.emplace(m.gpu, gpu_id(cat, m.gpu)).first;
    s.request.gpu = it->second;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", m.where, e.what()));
  }
  s.request.workload = m.workload.empty() ? decoder_of(m, s.note) : m.workload;
  const std::string format = !m.quant.empty() ? m.quant : perf::serving_format_for(m.precision.empty() ? "bf16" : m.precision);
  (void)perf::weight_format(format);  // a format gpuvs does not price is named with the ones it does
  s.request.format = format;
  s.request.gpus = m.gpus;
  s.request.batch = m.sequences > 0 ? m.sequences : 1;
  if (!m.framework.empty()) s.request.options["framework"] = m.framework;
  if (m.gpu_layers >= 0) s.request.options["ngl"] = std::to_string(m.gpu_layers);
  s.request.mode = m.mode;
  if (m.mode == "prefill") {
    if (m.depth > 0) throw InputError(fmt::format("{}: a prefill after {} cached tokens is not priced yet", m.where, m.depth));
    if (m.prompt_tokens > 0) s.request.options["prompt_len"] = std::to_string(m.prompt_tokens);
  } else if (m.mode == "decode") {
    s.request.options["prompt_len"] = std::to_string(std::max(1, m.depth > 0 ? m.depth : m.prompt_tokens));
    if (m.gen_tokens > 0) s.request.options["gen_len"] = std::to_string(m.gen_tokens);
  } else if (m.mode == "infer") {
    // Whole requests under the engine's batching (a vLLM or TensorRT-LLM throughput run): output tokens/s at the
    // concurrency given (batch=), else the most the engine and the KV cache allow.
    if (m.prompt_tokens > 0) s.request.options["prompt_len"] = std::to_string(m.prompt_tokens);
    if (m.gen_tokens > 0) s.request.options["gen_len"] = std::to_string(m.gen_tokens);
    s.request.batch = m.sequences;
  } else if (m.mode == "prefill+decode") {
    throw InputError(fmt::format("{}: a combined test (pp+tg) leaves the split open: measure prompt and generation apart (-p and -n)", m.where));
  } else {
    throw InputError(fmt::format("{}: mode {} calibrates nothing yet (prefill, decode and infer figures do)", m.where, m.mode));
  }
  return s;
}

}  // namespace

std::optional<TrainingMeasured> training_measured(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<measured::Measurement> train;
  for (const auto& a : args)
    if (measured::looks_like_spec(a)) {
      measured::Measurement m = measured::read_measured_spec(a);
      if (m.mode == "train") train.push_back(std::move(m));
    }
  if (train.empty()) return std::nullopt;
  if (args.size() > 1)
    throw InputError(fmt::format("--measured: a training figure calibrates on its own for now (one figure fixes one class); got {} measurements",
                                 args.size()));
  const measured::Measurement& m = train.front();
  TrainingMeasured t;
  t.source = m.where;
  t.value = m.value;
  t.unit = m.unit;
  t.request.gpu = gpu_id(cat, m.gpu);
  t.request.workload = m.workload;
  t.request.gpus = m.gpus;
  t.request.batch = m.sequences;  // a spec's batch=: per GPU for training
  if (!m.precision.empty()) t.request.precision = perf::parse_precision(m.precision);
  if (!m.framework.empty()) t.request.options["framework"] = m.framework;
  if (m.prompt_tokens > 0 || m.gen_tokens > 0)
    throw InputError("--measured: prompt_len and gen_len describe serving figures, not a training run (mode train)");
  t.request.training = true;
  return t;
}

std::vector<perf::StackMeasurement> measured_inputs(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<perf::StackMeasurement> out;
  std::map<std::string, std::string> cards;
  for (const auto& a : args) {
    std::vector<measured::Measurement> ms;
    if (measured::looks_like_spec(a)) ms.push_back(measured::read_measured_spec(a));
    else {
      const std::string text = files::read_all(a, "--measured");
      if (measured::looks_like_nccl_tests(text))
        throw InputError(fmt::format("--measured {}: collective figures (nccl-tests) calibrate no stack yet; `gpuvs validate --measured {}` "
                                     "compares them with the model",
                                     a, a));
      ms = measured::read_llama_bench(text, a);
    }
    for (const auto& m : ms) out.push_back(resolve(cat, m, cards));
  }
  return out;
}

namespace {

std::string stem_of(const std::string& where) {
  const std::string file = where.substr(0, where.rfind(':'));
  return file == "--measured" ? "measured" : std::filesystem::path(file).stem().string();
}

// A serving figure as a published row: the request as it ran, the figure per system.
perf::PublishedRow row_of(const perf::StackMeasurement& m) {
  perf::PublishedRow r;
  r.id = m.source;
  r.gpu = m.request.gpu;
  r.n_gpus = m.request.gpus;
  r.workload = m.request.workload;
  r.mode = m.request.mode;
  r.precision = m.request.format;
  r.batch = m.request.batch;
  r.options = perf::option_pairs_text(m.request.options);
  r.value = m.value;
  r.unit = m.request.mode == "infer" ? "output tokens/s" : "tokens/s";
  r.per = "system";
  r.source = m.note.empty() ? m.source : m.note;
  r.file = stem_of(m.source);
  return r;
}

}  // namespace

std::vector<perf::PublishedRow> measured_rows(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<perf::PublishedRow> out;
  std::map<std::string, std::string> cards;
  for (const auto& a : args) {
    if (measured::looks_like_spec(a)) {
      const measured::Measurement m = measured::read_measured_spec(a);
      if (m.mode == "train") {
        const auto t = training_measured(cat, {a});
        perf::PublishedRow r;
        r.id = t->source;
        r.gpu = t->request.gpu;
        r.n_gpus = t->request.gpus;
        r.workload = t->request.workload;
        r.mode = "train";
        r.precision = t->request.precision ? std::string(perf::precision_name(*t->request.precision)) : "";
        r.batch = t->request.batch;
        r.options = perf::option_pairs_text(t->request.options);
        r.value = t->value;
        r.unit = t->unit;
        r.per = "system";
        r.source = "--measured";
        r.file = "measured";
        out.push_back(std::move(r));
      } else {
        out.push_back(row_of(resolve(cat, m, cards)));
      }
      continue;
    }
    files::note_input(a);
    const std::string text = files::read_all(a, "--measured");
    if (!measured::looks_like_nccl_tests(text)) {
      for (const auto& m : measured::read_llama_bench(text, a)) out.push_back(row_of(resolve(cat, m, cards)));
      continue;
    }
    // A collective at each message size: the micro row validate prices on the group's link.
    for (const auto& m : measured::read_nccl_tests(text, a)) {
      perf::PublishedRow r;
      r.id = m.where;
      try {
        auto it = cards.find(m.gpu);
        if (it == cards.end()) it = cards.emplace(m.gpu, gpu_id(cat, m.gpu)).first;
        r.gpu = it->second;
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: {}", m.where, e.what()));
      }
      r.n_gpus = m.gpus;
      r.workload = m.workload;
      r.mode = "micro";
      r.options = fmt::format("msg_bytes={:.0f}", m.message_bytes);
      r.value = m.value;
      r.unit = m.unit;
      r.source = fmt::format("nccl-tests{}, {} rank(s) on {} host(s), {}", m.library_version.empty() ? "" : " (NCCL " + m.library_version + ")",
                             m.gpus, m.nodes, m.precision);
      r.file = stem_of(m.where);
      out.push_back(std::move(r));
    }
  }
  return out;
}

perf::StackCalibration calibrate_measured(const catalog::Catalog& cat, const std::vector<std::string>& args, std::vector<std::string>* read_as) {
  if (const auto t = training_measured(cat, args)) {
    const workload::Workload w(t->request.workload, t->request.options);
    return perf::calibrate_training(cat, w, t->request, t->value, t->unit, t->source);
  }
  const auto ms = measured_inputs(cat, args);
  if (read_as)
    for (const auto& m : ms)
      if (!m.note.empty() && std::find(read_as->begin(), read_as->end(), m.note) == read_as->end()) read_as->push_back(m.note);
  return perf::calibrate_stack(cat, ms);
}

perf::StackCalibration load_stack(const std::string& path) {
  files::note_input(path);
  return perf::parse_stack(files::read_all(path, "--stack"), path);
}

std::optional<perf::StackCalibration> measured_stack(const catalog::Catalog& cat, const std::vector<std::string>& measured,
                                                     const std::string& stack_file, std::vector<std::string>* read_as) {
  if (!measured.empty()) return calibrate_measured(cat, measured, read_as);
  if (!stack_file.empty()) return load_stack(stack_file);
  return std::nullopt;
}

void add_measured_options(CLI::App* sub, std::vector<std::string>& measured, std::string& stack_file) {
  sub->add_option("--measured", measured,
                  "Your measurement of your stack, carried to every card (and option) that runs it: a llama-bench output file (md, csv, "
                  "json, jsonl, sql), 'gpu=ID;workload=ID;mode=prefill|decode|infer;precision=FORMAT;value=N tokens/s' (repeatable), or "
                  "a training run 'gpu=ID;workload=ID;mode=train;precision=P;batch=PER_GPU;value=N images/s' (its total over gpus=)");
  sub->add_option("--stack", stack_file, "A stored calibration (gpuvs calibrate --save FILE): applied where its engine or framework and format match")
      ->excludes("--measured");
}

nlohmann::json stack_json(const perf::StackCalibration& s) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : s.steps)
    steps.push_back({{"source", st.source}, {"gpu", st.gpu}, {"mode", st.mode}, {"kernels", st.op_class}, {"measured", st.measured},
                     {"predicted_before", st.predicted_before}, {"predicted_after", st.predicted_after}, {"ratio", st.ratio}, {"note", st.note}});
  return {{"engine", s.ratios.engine}, {"format", s.ratios.format},      {"memory_ratio", s.ratios.memory}, {"matrix_ratio", s.ratios.gemm},
          {"fixed_cost_ratio", s.ratios.fixed}, {"steps", steps}, {"open", s.open}};
}

std::string stack_step_line(const perf::StackStep& st) {
  const std::string what = st.op_class != "fixed-cost" ? st.op_class + " kernels"
                           : st.mode == "decode"      ? std::string("fixed costs per token")
                                                      : std::string("fixed costs per kernel");
  return fmt::format("{}: {} {} {} on {}; the model gave {}: {} x{:.3f}{}", strings::escape_control(st.source), st.mode,
                     units::format_plain(st.measured, 4), st.unit, st.gpu, units::format_plain(st.predicted_before, 4), what, st.ratio,
                     st.note.empty() ? "" : " (" + st.note + ")");
}

}  // namespace gpuvs::cli
