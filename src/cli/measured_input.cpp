// SPDX-License-Identifier: Apache-2.0
#include "cli/measured_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include "cli/gpu_names.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "import/hf/hf_checkpoint.hpp"
#include "import/model_files.hpp"
#include "measured/spec.hpp"
#include "measured/tfevents.hpp"
#include "models/networks.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/stack_file.hpp"
#include "perf/weight_format.hpp"

namespace gpuvs::cli {

namespace {

// Parameter counts within this of a preset's name the same model (llama.cpp counts every tensor it loads).
constexpr double kParamsTolerance = 0.02;

// The built-in decoder a tool's model is: the one whose published parameters are within 2% of the count it
// printed, of the same architecture word where the preset's id starts with it. Presets of one shape (llama-7b and
// llama2-7b) are the same model to the pricer: the first is taken. `note` says what was read as what.
// A model named the Hugging Face way ("meta-llama/Llama-3.1-8B-Instruct"): the built-in decoder whose id, in letters
// and digits only, is the longest found in the name's ("llama318b" in "llama318binstruct"); empty when none is.
std::string decoder_by_name(const std::string& model) {
  const auto squash = [](std::string_view s) {
    std::string o;
    for (const char c : s)
      if (std::isalnum(static_cast<unsigned char>(c))) o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  const std::string name = squash(model.substr(model.rfind('/') == std::string::npos ? 0 : model.rfind('/') + 1));
  std::string best, best_squashed;
  for (const auto& n : models::networks()) {
    if (n.family != models::Family::decoder || !(n.published_params > 0)) continue;
    const std::string id = squash(n.id);
    if (id.size() > best_squashed.size() && name.find(id) != std::string::npos) {
      best = n.id;
      best_squashed = id;
    }
  }
  return best;
}

std::string decoder_of(const measured::Measurement& m, std::string& note) {
  if (!(m.model_params > 0) && !m.model.empty()) {
    if (std::string by_name = decoder_by_name(m.model); !by_name.empty()) {
      note = fmt::format("read '{}' as {}", strings::printable(m.model), by_name);
      return by_name;
    }
  }
  if (!(m.model_params > 0))
    throw InputError(fmt::format("{}: the output gives no parameter count to tell the model by{}: name it with --measured "
                                 "'file={};workload=ID'",
                                 m.where, m.model.empty() ? "" : fmt::format(" ('{}')", strings::printable(m.model)),
                                 m.where.substr(0, m.where.rfind(':'))));
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

std::string file_of(const std::string& where) { return where.substr(0, where.rfind(':')); }

// One --measured argument's measurements: a spec, a tool's output file, or a spec whose file= names the output
// and whose keys say what the output does not.
std::vector<measured::Measurement> read_measured_arg(const std::string& a) {
  if (!measured::looks_like_spec(a)) return measured::read_measured_output(files::read_all(a, "--measured"), a);
  measured::Measurement spec = measured::read_measured_spec(a);
  if (spec.file.empty()) return {spec};
  files::note_input(spec.file);
  auto ms = measured::read_measured_output(files::read_all(spec.file, "--measured"), spec.file);
  for (auto& m : ms) measured::complete_from_spec(m, spec);
  return ms;
}

perf::StackMeasurement resolve(const catalog::Catalog& cat, const measured::Measurement& m, std::map<std::string, std::string>& cards) {
  perf::StackMeasurement s;
  s.source = m.where;
  s.value = m.value;
  if (m.gpu.empty())
    throw InputError(fmt::format("{}: the output does not name the GPU (vLLM's benchmark never does; llama-bench's md table does not): "
                                 "say it with --measured 'file={};gpu=ID'",
                                 m.where, file_of(m.where)));
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
  if (m.tensor_parallel > 1) s.request.options["tp"] = std::to_string(m.tensor_parallel);
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
    if (m.sequences > 0) {
      // Requests sent at once (a benchmark's whole prompt set): the engine holds at most what its batch limit
      // and the KV cache allow, the rest wait.
      perf::ServingRequest most = s.request;
      most.batch = 0;
      const auto top = perf::predict_serving(cat, most);
      if (top.batch < m.sequences) {
        s.request.batch = top.batch;
        s.note += fmt::format("{}{} requests at once: {} holds at most {} in flight on {} ({})", s.note.empty() ? "" : "; ", m.sequences,
                              top.engine, top.batch, top.gpu_id, top.batch_limit);
      } else if (m.one_wave) {
        // Every request sent at once and none after: one prefill of them all, then they decode together to the end.
        s.request.options["arrival"] = "wave";
      }
    }
  } else if (m.mode == "prefill+decode") {
    throw InputError(fmt::format("{}: a combined test (pp+tg) leaves the split open: measure prompt and generation apart (-p and -n)", m.where));
  } else {
    throw InputError(fmt::format("{}: mode {} calibrates nothing yet (prefill, decode and infer figures do)", m.where, m.mode));
  }
  return s;
}

}  // namespace

std::vector<TrainingMeasured> training_figures(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<measured::Measurement> train;
  for (const auto& a : args) {
    if (measured::looks_like_spec(a) && measured::read_measured_spec(a).file.empty()) {
      measured::Measurement m = measured::read_measured_spec(a);
      if (m.mode == "train") train.push_back(std::move(m));
      continue;
    }
    // A training run's own log (a TensorBoard event file), with what it does not say in the spec.
    const bool spec = measured::looks_like_spec(a);
    const std::string file = spec ? measured::read_measured_spec(a).file : a;
    const std::string text = files::read_all(file, "--measured");  // read once: told apart and read from the same bytes
    if (!measured::looks_like_tfevents(text)) continue;
    files::note_input(file);
    for (auto& m : measured::read_tfevents(text, file)) {
      if (spec) measured::complete_from_spec(m, measured::read_measured_spec(a));
      train.push_back(std::move(m));
    }
  }
  if (train.empty()) return {};
  if (args.size() > train.size())
    throw InputError(fmt::format("--measured: training figures calibrate training, served figures serving: got {} training figure(s) among {} "
                                 "measurements",
                                 train.size(), args.size()));
  std::vector<TrainingMeasured> out;
  for (const measured::Measurement& m : train) {
    // A training log names neither (TensorBoard never does): the spec says them.
    for (const auto& [value, key, what] : {std::tuple{&m.gpu, "gpu", "the GPU"}, std::tuple{&m.workload, "workload", "the model"}})
      if (value->empty())
        throw InputError(fmt::format("{}: the log does not name {}: say it with --measured 'file={};gpu=ID;workload=ID;batch=PER_GPU'", m.where, what,
                                     file_of(m.where)));
    TrainingMeasured t;
    t.source = m.where;
    t.value = m.value;
    t.unit = m.unit;
    if (m.unit == "steps/s") {
      // Steps become samples with the batch the run trained at: per GPU, over its data-parallel GPUs.
      if (m.sequences < 1)
        throw InputError(fmt::format("{}: {} is a step rate ({:.4g} steps/s): say the batch per GPU with batch= (and gpus=) to make it samples/s",
                                     m.where, strings::printable(m.metric), m.value));
      t.value = m.value * m.sequences * m.gpus;
      t.unit = "samples/s";
    }
    if (!std::isfinite(t.value) || !(t.value > 0))
      throw InputError(fmt::format("{}: {} x batch {} x {} GPU(s) is not a rate ({:g})", m.where, strings::printable(m.metric), m.sequences, m.gpus, t.value));
    if (!m.metric.empty()) t.source += " (" + strings::printable(m.metric) + ")";
    t.request.gpu = gpu_id(cat, m.gpu);
    t.request.workload = m.workload;
    t.request.gpus = m.gpus;
    t.request.batch = m.sequences;  // a spec's batch=: per GPU for training
    if (!m.precision.empty()) t.request.precision = perf::parse_precision(m.precision);
    if (!m.framework.empty()) t.request.options["framework"] = m.framework;
    if (m.prompt_tokens > 0 || m.gen_tokens > 0)
      throw InputError("--measured: prompt_len and gen_len describe serving figures, not a training run (mode train)");
    t.request.training = true;
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<TrainingMeasured> training_measured(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<TrainingMeasured> all = training_figures(cat, args);
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

perf::StackCalibration calibrate_trained(const catalog::Catalog& cat, const std::vector<TrainingMeasured>& figures, const perf::Calibration* cal) {
  std::vector<workload::Workload> workloads;
  workloads.reserve(figures.size());  // the figures point into it
  for (const auto& t : figures) workloads.emplace_back(t.request.workload, t.request.options);
  std::vector<perf::TrainingFigure> fs;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    fs.push_back({&workloads[i], figures[i].request, figures[i].value, figures[i].unit, figures[i].source});
    fs.back().request.calibration = cal;
  }
  return perf::calibrate_training(cat, fs);
}


std::vector<perf::StackMeasurement> measured_inputs(const catalog::Catalog& cat, const std::vector<std::string>& args) {
  std::vector<perf::StackMeasurement> out;
  std::map<std::string, std::string> cards;
  for (const auto& a : args)
    for (const auto& m : read_measured_arg(a)) {
      if (m.mode == "micro")
        throw InputError(fmt::format("--measured {}: {} figures (collectives, links) calibrate no stack yet; `gpuvs validate --measured {}` "
                                     "compares them with the model",
                                     a, m.tool, a));
      out.push_back(resolve(cat, m, cards));
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
  // A training run as a published row: the run's total, per system; a log's samples in the workload's own unit.
  const auto train_rows = [&](const std::string& a, const std::string& file) {
    for (const TrainingMeasured& t : training_figures(cat, {a})) {
      perf::PublishedRow r;
      r.id = t.source;
      r.gpu = t.request.gpu;
      r.n_gpus = t.request.gpus;
      r.workload = t.request.workload;
      r.mode = "train";
      r.precision = t.request.precision ? std::string(perf::precision_name(*t.request.precision)) : "";
      r.batch = t.request.batch;
      r.options = perf::option_pairs_text(t.request.options);
      r.value = t.value;
      r.unit = t.unit;
      if (r.unit == "samples/s")
        if (const workload::Workload w(t.request.workload, t.request.options); w.family() != models::Family::decoder)
          r.unit = w.network().sample_unit + "/s";
      r.per = "system";
      r.source = file.empty() ? "--measured" : file;
      r.file = file.empty() ? "measured" : std::filesystem::path(file).stem().string();
      out.push_back(std::move(r));
    }
  };
  for (const auto& a : args) {
    if (measured::looks_like_spec(a) && measured::read_measured_spec(a).file.empty()) {
      const measured::Measurement m = measured::read_measured_spec(a);
      if (m.mode == "train") train_rows(a, "");
      else out.push_back(row_of(resolve(cat, m, cards)));
      continue;
    }
    if (const std::string file = measured::looks_like_spec(a) ? measured::read_measured_spec(a).file : a;
        measured::looks_like_tfevents(files::read_all(file, "--measured"))) {
      train_rows(a, file);
      continue;
    }
    if (!measured::looks_like_spec(a)) files::note_input(a);
    for (const auto& m : read_measured_arg(a)) {
      if (m.mode != "micro") {
        out.push_back(row_of(resolve(cat, m, cards)));
        continue;
      }
      // A collective at each message size: the micro row validate prices on the group's link.
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
      r.value = m.value;
      r.unit = m.unit;
      if (m.tool == "nvbandwidth") {
        // A copy over a link, as micro.csv's published nvbandwidth rows are priced.
        r.options = "tool=nvbandwidth;engine=ce";
        r.source = fmt::format("nvbandwidth{} {}", m.library_version.empty() ? "" : " " + strings::printable(m.library_version), m.metric);
      } else {
        r.options = fmt::format("msg_bytes={:.0f}", m.message_bytes);
        r.source = fmt::format("nccl-tests{}, {} rank(s) on {} host(s), {}",
                               m.library_version.empty() ? "" : " (NCCL " + strings::printable(m.library_version) + ")", m.gpus, m.nodes,
                               strings::printable(m.precision));
      }
      r.file = stem_of(m.where);
      out.push_back(std::move(r));
    }
  }
  return out;
}

namespace {

/// A served decoder's figures priced with `cal` (the calibration the command applies), how their names were read added
/// to `read_as` (each once).
std::vector<perf::StackMeasurement> served_figures(const catalog::Catalog& cat, const std::vector<std::string>& args, const perf::Calibration* cal,
                                                   std::vector<std::string>* read_as) {
  auto ms = measured_inputs(cat, args);
  for (auto& m : ms) {
    m.request.calibration = cal;
    if (read_as && !m.note.empty() && std::find(read_as->begin(), read_as->end(), m.note) == read_as->end()) read_as->push_back(m.note);
  }
  return ms;
}

}  // namespace

perf::StackCalibration calibrate_measured(const catalog::Catalog& cat, const std::vector<std::string>& args, std::vector<std::string>* read_as,
                                          const perf::Calibration* cal) {
  if (const auto figures = training_figures(cat, args); !figures.empty()) return calibrate_trained(cat, figures, cal);
  return perf::calibrate_stack(cat, served_figures(cat, args, cal, read_as));
}

void note_measured_inputs(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (!measured::looks_like_spec(a)) files::note_input(a);
    else if (const std::string file = measured::read_measured_spec(a).file; !file.empty()) files::note_input(file);
  }
}

perf::StackCalibration read_stack(const std::string& path) {
  files::note_input(path);
  return perf::parse_stack(files::read_all(path, "--stack"), path);
}

perf::StackCalibration load_stack(const std::string& path, const perf::Calibration* cal) {
  perf::StackCalibration s = read_stack(path);
  perf::check_stack_calibration(s, cal, "--stack " + path);
  return s;
}

std::optional<perf::StackCalibration> measured_stack(const catalog::Catalog& cat, const std::vector<std::string>& measured,
                                                     const std::string& stack_file, const perf::Calibration* cal,
                                                     std::vector<std::string>* read_as) {
  if (!measured.empty()) return calibrate_measured(cat, measured, read_as, cal);
  if (!stack_file.empty()) return load_stack(stack_file, cal);
  return std::nullopt;
}

namespace {

// The figure a command takes what it leaves unsaid from, from the figures given or a stored stack's steps.
struct Reference {
  bool trained = false;
  std::string mode;    // a served figure's: prefill or decode
  perf::StackRun run;  // what it ran
  std::string origin;  // where it came from, said beside the workload taken ("" for a training figure given)
};

// measured_request's rule, one for the figures and a stored stack: a training run's workload, precision and framework
// (mode train), its batch where the request is of its workload; a served figure's workload, weights and mode, its
// engine and system, and where the request is of its mode its lengths and batch.
void take_unsaid(const Reference& ref, FlagRequest& r, std::vector<std::string>& said) {
  r.trained = ref.trained;
  const auto takes = [&r](const std::string& key) {
    return !r.takes_options || std::find(r.takes_options->begin(), r.takes_options->end(), key) != r.takes_options->end();
  };
  if (!r.workload_given) {
    r.workload = ref.run.workload;
    said.push_back(fmt::format("workload {} (your measurement's{})", r.workload, ref.origin.empty() ? "" : ", " + ref.origin));
  }
  auto options = perf::parse_option_pairs(r.options);
  std::vector<std::string> taken;
  if (ref.trained) {
    if (!r.mode_given) r.mode = "train";
    if (r.precision.empty() && r.takes_precision && !ref.run.precision.empty()) {
      r.precision = ref.run.precision;
      said.push_back(fmt::format("precision {} (your measurement's)", r.precision));
    }
    if (r.takes_batch && r.batch == 0 && ref.run.batch > 0 && r.workload == ref.run.workload) {  // another model's batch means nothing here
      r.batch = ref.run.batch;
      said.push_back(fmt::format("batch {} per GPU (your measurement's)", r.batch));
    }
    if (takes("framework") && ref.run.options.count("framework") && !options.count("framework")) {
      options["framework"] = ref.run.options.at("framework");
      said.push_back(fmt::format("framework {} (your measurement's)", options["framework"]));
    }
    r.options = perf::option_pairs_text(options);
    return;
  }
  if (!r.mode_given) {
    r.mode = r.served_as.empty() ? ref.mode : r.served_as;
    said.push_back(r.served_as.empty() ? fmt::format("mode {} (your measurement's)", r.mode)
                                       : fmt::format("task {} (your measurement's: a served decoder)", r.mode));
  }
  if (r.precision.empty() && r.takes_precision) {
    r.precision = ref.run.precision;
    said.push_back(fmt::format("weights {} (your measurement's)", r.precision));
  }
  // Another test than the figure's takes its engine and system (framework, tp, ngl), not its lengths or batch.
  const bool same_test = r.mode == ref.mode;
  for (const auto& [k, v] : ref.run.options)
    if (takes(k) && !options.count(k) && (same_test || (k != "prompt_len" && k != "gen_len"))) {
      options[k] = v;
      taken.push_back(k + "=" + v);
    }
  if (!taken.empty()) said.push_back(fmt::format("{} (your measurement's)", strings::join(taken, ", ")));
  r.options = perf::option_pairs_text(options);
  if (r.takes_batch && same_test && r.batch == 0 && ref.run.batch > 0) {
    r.batch = ref.run.batch;
    said.push_back(fmt::format("batch {} (your measurement's)", r.batch));
  }
}

// A stored stack's reference, as the figures' would be: its first figure where they were training runs, else its first
// decode figure, else its first; none where the file does not say what they ran (written before gpuvs kept it).
std::optional<Reference> stack_reference(const perf::StackCalibration& s, const std::string& path) {
  if (s.runs.empty()) return std::nullopt;
  const bool trained = s.trained();
  const perf::StackRun* ref = &s.runs.front();
  if (!trained)
    for (const auto& run : s.runs)
      if (run.mode == "decode") {
        ref = &run;
        break;
      }
  const std::string source = strings::escape_control(ref->source) + ", stored in " + strings::escape_control(path);
  return Reference{trained, ref->mode, *ref, source};
}

}  // namespace

std::optional<perf::StackCalibration> measured_request(const catalog::Catalog& cat, const std::vector<std::string>& measured,
                                                       const std::string& stack_file, const perf::Calibration* cal, FlagRequest& r,
                                                       std::vector<std::string>& said, std::vector<std::string>* read_as) {
  if (measured.empty()) {
    if (stack_file.empty()) return std::nullopt;
    perf::StackCalibration stack = load_stack(stack_file, cal);
    if (const auto ref = stack_reference(stack, stack_file)) {
      // What a figure ran by path is stored absolute (names_local_model): gone, it is no id to fall back on.
      const std::filesystem::path ran(ref->run.workload);
      std::error_code ec;
      if (!r.workload_given && (import::is_model_file(ref->run.workload) || ran.is_absolute()) && !std::filesystem::exists(ran, ec))
        throw InputError(fmt::format("--stack {}: its figure ran the model {}, which is not here: name the workload (--workload)",
                                     strings::escape_control(stack_file), strings::escape_control(ref->run.workload)));
      take_unsaid(*ref, r, said);
      r.figures_from = "--stack " + strings::escape_control(stack_file);
    } else if (!stack.steps.empty())
      said.push_back(fmt::format("nothing from --stack {} (it does not say what its figures ran: gpuvs calibrate --save keeps it)",
                                 strings::escape_control(stack_file)));
    return stack;
  }
  if (const std::vector<TrainingMeasured> figures = training_figures(cat, measured); !figures.empty()) {  // read once: names said once
    const perf::PredictRequest& m = figures.front().request;
    take_unsaid({true, "train", {figures.front().source, "train", m.workload, m.precision ? std::string(perf::precision_name(*m.precision)) : "", m.batch, m.options}, ""},
                r, said);
    r.figures_from = "--measured";
    return calibrate_trained(cat, figures, cal);
  }
  const auto ms = served_figures(cat, measured, cal, read_as ? read_as : &said);
  perf::StackCalibration stack = perf::calibrate_stack(cat, ms);
  const perf::StackMeasurement* ref = &ms.front();
  for (const auto& m : ms)
    if (m.request.mode == "decode") {
      ref = &m;
      break;
    }
  take_unsaid({false, ref->request.mode, {ref->source, ref->request.mode, ref->request.workload, ref->request.format, ref->request.batch, ref->request.options},
               strings::escape_control(ref->source)},
              r, said);
  r.figures_from = "--measured";
  return stack;
}

bool names_local_model(const std::string& workload) {
  std::error_code ec;
  return import::is_model_file(workload) || (std::filesystem::is_directory(workload, ec) && import::is_checkpoint(workload));
}

void check_measured_request(const FlagRequest& r, const workload::Workload& w) {
  if (r.figures_from.empty()) return;
  const std::string& request = r.said_as.empty() ? r.mode : r.said_as;
  const bool served = workload::pricer_for(r.mode, w.family()) == workload::Pricer::serving;
  if (r.trained && served)
    throw InputError(fmt::format("{}: these are figures of a training run, and {} {} is served: a served decoder's figures "
                                 "(prefill, decode, infer) calibrate serving",
                                 r.figures_from, r.workload, request));
  if (!r.trained && (w.family() != models::Family::decoder || !served))
    throw InputError(fmt::format("{}: these are figures of a served decoder (prefill, decode, infer), and {} {}: a training run "
                                 "calibrates training (mode=train in a spec)",
                                 r.figures_from, r.workload, w.family() != models::Family::decoder ? std::string("is not a decoder") : request + " is not served"));
}

void add_measured_options(CLI::App* sub, std::vector<std::string>& measured, std::string& stack_file) {
  sub->add_option("--measured", measured,
                  "Your measurement of your stack, carried to every card (and option) that runs it: a llama-bench output file (md, csv, "
                  "json, jsonl, sql); a vLLM or SGLang serving-benchmark or trtllm-bench output with what it does not say, "
                  "'file=OUT;gpu=ID[;workload=ID;precision=FORMAT;framework=ENGINE]'; 'gpu=ID;workload=ID;mode=prefill|decode|infer;"
                  "precision=FORMAT;value=N tokens/s' (repeatable); or a training run 'gpu=ID;workload=ID;mode=train;precision=P;"
                  "batch=PER_GPU;value=N images/s' (its total over gpus=), or its TensorBoard log 'file=EVENTS;gpu=ID;workload=ID;"
                  "precision=P;batch=PER_GPU'");
  sub->add_option("--stack", stack_file, "A stored calibration (gpuvs calibrate --save FILE): applied where its engine or framework and format match")
      ->excludes("--measured");
}

nlohmann::json stack_json(const perf::StackCalibration& s) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : s.steps)
    steps.push_back({{"source", st.source}, {"gpu", st.gpu}, {"mode", st.mode}, {"kernels", st.op_class}, {"measured", st.measured},
                     {"predicted_before", st.predicted_before}, {"predicted_after", st.predicted_after}, {"ratio", st.ratio}, {"note", st.note}});
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& run : s.runs)
    figures.push_back({{"source", run.source}, {"mode", run.mode}, {"workload", run.workload}, {"precision", run.precision}, {"batch", run.batch},
                       {"options", run.options}});
  return {{"engine", s.ratios.engine}, {"format", s.ratios.format},      {"memory_ratio", s.ratios.memory}, {"matrix_ratio", s.ratios.gemm},
          {"fixed_cost_ratio", s.ratios.fixed}, {"steps", steps}, {"open", s.open}, {"figures", figures},
          {"solved_with", s.solved_with ? nlohmann::json{{"measured_on", s.solved_with->gpu_id}, {"source", s.solved_with->source}} : nlohmann::json(nullptr)}};
}

std::string stack_solved_with_line(const perf::StackCalibration& s) {
  if (!s.solved_with) return "";
  return fmt::format("the stack was solved with {}'s figures corrected by the calibration from {}, as --calibration prices that card",
                     s.solved_with->gpu_id, strings::escape_control(s.solved_with->source));
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
