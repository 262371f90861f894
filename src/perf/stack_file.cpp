// SPDX-License-Identifier: Apache-2.0
#include "perf/stack_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include <toml++/toml.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "models/networks.hpp"

namespace gpuvs::perf {

namespace {

constexpr const char* kFirstLine = "# A gpuvs stack calibration";
constexpr double kLowest = 0.05, kHighest = 20.0;  // the solver's bounds (perf/stack_calibration.cpp)
// A bench record's corrections are measured / modelled rates, clamped so no efficiency passes 98% of a peak; any
// positive finite ratio is a record's, so only the absurd is refused.
constexpr double kLowestCorrection = 1e-6, kHighestCorrection = 1e6;

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string where_at(const std::string& where, const toml::node& n) {
  return n.source().begin.line > 0 ? fmt::format("{}:{}", where, n.source().begin.line) : where;
}

void only_keys(const toml::table& t, const std::set<std::string>& keys, const std::string& where) {
  for (const auto& [k, v] : t)
    if (!keys.count(std::string(k.str())))
      throw InputError(fmt::format("{}: unknown key '{}' (expected {})", where_at(where, v), strings::printable(std::string(k.str())),
                                   strings::join(std::vector<std::string>(keys.begin(), keys.end()), ", ")));
}

std::string text(const toml::table& t, const char* key, const std::string& where, bool required = true) {
  const toml::node* n = t.get(key);
  if (!n) {
    if (required) throw InputError(fmt::format("{}: missing key '{}'", where_at(where, t), key));
    return "";
  }
  const auto v = n->value<std::string>();
  if (!v) throw InputError(fmt::format("{}: '{}' must be a string", where_at(where, *n), key));
  if (strings::has_control(*v)) throw InputError(fmt::format("{}: '{}' holds a control character", where_at(where, *n), key));
  return *v;
}

double number(const toml::table& t, const char* key, const std::string& where, double lo, double hi) {
  const toml::node* n = t.get(key);
  if (!n) throw InputError(fmt::format("{}: missing key '{}'", where_at(where, t), key));
  const auto v = n->value<double>();
  if (!v || !std::isfinite(*v) || *v < lo || *v > hi)
    throw InputError(fmt::format("{}: '{}' must be a number in [{:g}, {:g}]", where_at(where, *n), key, lo, hi));
  return *v;
}

// A [[figure]]: what one figure ran, as stack_toml writes it.
StackRun read_run(const toml::table& t, const std::string& where) {
  only_keys(t, {"source", "mode", "workload", "precision", "batch", "options"}, where);
  StackRun run;
  run.source = text(t, "source", where);
  run.mode = text(t, "mode", where);
  if (run.mode != "train" && run.mode != "infer" && run.mode != "prefill" && run.mode != "decode")
    throw InputError(fmt::format("{}: mode '{}' is not train, prefill, decode or infer", where_at(where, t), strings::printable(run.mode)));
  run.workload = text(t, "workload", where);
  if (run.workload.empty()) throw InputError(fmt::format("{}: 'workload' must name what the figure ran", where_at(where, t)));
  run.precision = text(t, "precision", where);
  const toml::node* batch = t.get("batch");
  const auto b = batch ? batch->value_exact<std::int64_t>() : std::nullopt;
  if (!b || *b < 0 || *b > models::kMaxBatch)
    throw InputError(fmt::format("{}: 'batch' must be a whole number in [0, {}] (0: none said)", where_at(where, batch ? *batch : static_cast<const toml::node&>(t)),
                                 models::kMaxBatch));
  run.batch = *b;
  const toml::node* options = t.get("options");
  const toml::table* o = options ? options->as_table() : nullptr;
  if (!o) throw InputError(fmt::format("{}: 'options' must be a table of name = \"value\"", where_at(where, options ? *options : static_cast<const toml::node&>(t))));
  for (const auto& [k, v] : *o) {
    const std::string key(k.str());
    const auto value = v.value_exact<std::string>();
    if (key.empty() || strings::has_control(key) || !value || strings::has_control(*value))
      throw InputError(fmt::format("{}: options '{}' must be a name = \"value\" with no control character", where_at(where, v), strings::printable(key)));
    run.options[key] = *value;
  }
  return run;
}

}  // namespace

std::string stack_toml(const StackCalibration& s) {
  std::string out = std::string(kFirstLine) +
                    ": what measured figures say about the software that ran them, carried to any card\n"
                    "# (gpuvs calibrate; applied with --stack FILE on predict, compare, advise and evaluate). Each ratio multiplies what the model\n"
                    "# assumes for that class of the engine's (or training framework's) kernels with this format: matrix kernels'\n"
                    "# fraction of the matrix peak, memory-bound kernels' fraction of DRAM bandwidth, fixed costs per kernel and\n"
                    "# step. Every card keeps its own peaks, bandwidth, clock, waves and launches (perf/stack.hpp).\n";
  out += fmt::format("schema = 1\nengine = {}\nformat = {}\nmatrix_ratio = {:.6g}\nmemory_ratio = {:.6g}\nfixed_cost_ratio = {:.6g}\n",
                     quoted(s.ratios.engine), quoted(s.ratios.format), s.ratios.gemm, s.ratios.memory, s.ratios.fixed);
  std::vector<std::string> open;
  for (const auto& o : s.open) open.push_back(quoted(o));
  out += fmt::format("open = [{}]\n", strings::join(open, ", "));
  if (const auto& cal = s.solved_with) {
    // What a card's benchmarks corrected while the ratios were solved (the stack applies with that record only).
    out += fmt::format("\n[calibration]\nmeasured_on = {}\nsource = {}\n", quoted(cal->gpu_id), quoted(cal->source));
    if (cal->memory_ratio) out += fmt::format("memory_ratio = {:.17g}\n", *cal->memory_ratio);
    std::vector<std::string> gemm;
    for (const auto& [p, r] : cal->gemm_ratio) gemm.push_back(fmt::format("{} = {:.17g}", precision_name(p), r));
    out += fmt::format("gemm_ratio = {{ {} }}\n", strings::join(gemm, ", "));
  }
  for (const auto& st : s.steps) {
    out += fmt::format(
        "\n[[step]]\nsource = {}\ngpu = {}\nmode = {}\nkernels = {}\nunit = {}\nmeasured = {:.10g}\npredicted_before = {:.10g}\n"
        "predicted_after = {:.10g}\nratio = {:.6g}\nnote = {}\n",
        quoted(st.source), quoted(st.gpu), quoted(st.mode), quoted(st.op_class), quoted(st.unit), st.measured, st.predicted_before,
        st.predicted_after, st.ratio, quoted(st.note));
  }
  // What each figure ran, so that --stack takes what a command leaves unsaid as the figures would.
  for (const auto& run : s.runs) {
    std::vector<std::string> options;
    for (const auto& [k, v] : run.options) options.push_back(fmt::format("{} = {}", quoted(k), quoted(v)));
    out += fmt::format("\n[[figure]]\nsource = {}\nmode = {}\nworkload = {}\nprecision = {}\nbatch = {}\noptions = {{ {} }}\n", quoted(run.source),
                       quoted(run.mode), quoted(run.workload), quoted(run.precision), run.batch, strings::join(options, ", "));
  }
  return out;
}

StackCalibration parse_stack(const std::string& text_in, const std::string& where) {
  const toml::table t = parse_toml(text_in, where);
  only_keys(t, {"schema", "engine", "format", "matrix_ratio", "memory_ratio", "fixed_cost_ratio", "open", "calibration", "step", "figure"}, where);
  const toml::node* schema = t.get("schema");
  if (!schema || schema->value<std::int64_t>() != 1) throw InputError(fmt::format("{}: schema must be 1 (a file gpuvs calibrate wrote)", where));
  StackCalibration s;
  s.ratios.engine = text(t, "engine", where);
  s.ratios.format = text(t, "format", where);
  if (s.ratios.engine.empty() || s.ratios.format.empty()) throw InputError(fmt::format("{}: engine and format must name what was measured", where));
  s.ratios.gemm = number(t, "matrix_ratio", where, kLowest, kHighest);
  s.ratios.memory = number(t, "memory_ratio", where, kLowest, kHighest);
  s.ratios.fixed = number(t, "fixed_cost_ratio", where, kLowest, kHighest);
  if (const toml::node* open = t.get("open")) {
    const toml::array* arr = open->as_array();
    if (!arr) throw InputError(fmt::format("{}: 'open' must be a list of strings", where_at(where, *open)));
    for (const auto& n : *arr) {
      const auto v = n.value<std::string>();
      if (!v || strings::has_control(*v)) throw InputError(fmt::format("{}: 'open' must be a list of strings", where_at(where, n)));
      s.open.push_back(*v);
    }
  }
  if (const toml::node* node = t.get("calibration")) {
    const toml::table* c = node->as_table();
    if (!c) throw InputError(fmt::format("{}: 'calibration' must be a table", where_at(where, *node)));
    only_keys(*c, {"measured_on", "source", "memory_ratio", "gemm_ratio"}, where);
    Calibration cal;
    cal.gpu_id = text(*c, "measured_on", where);
    cal.source = text(*c, "source", where);
    if (c->get("memory_ratio")) cal.memory_ratio = number(*c, "memory_ratio", where, kLowestCorrection, kHighestCorrection);
    const toml::node* gemm = c->get("gemm_ratio");
    if (!gemm || !gemm->as_table()) throw InputError(fmt::format("{}: 'gemm_ratio' must be a table of precision = ratio", where_at(where, *c)));
    for (const auto& [k, v] : *gemm->as_table()) {
      Precision p;
      try {
        p = parse_precision(k.str());
      } catch (const InputError&) {
        throw InputError(fmt::format("{}: gemm_ratio names '{}', not a precision", where_at(where, v), strings::printable(std::string(k.str()))));
      }
      if (cal.gemm_ratio.count(p))
        throw InputError(fmt::format("{}: gemm_ratio names {} twice ('{}' is another name for it)", where_at(where, v), precision_name(p),
                                     strings::printable(std::string(k.str()))));
      cal.gemm_ratio[p] = number(*gemm->as_table(), std::string(k.str()).c_str(), where, kLowestCorrection, kHighestCorrection);
    }
    if (cal.gpu_id.empty()) throw InputError(fmt::format("{}: 'measured_on' must name the card the calibration measured", where_at(where, *c)));
    s.solved_with = std::move(cal);
  }
  if (const toml::node* steps = t.get("step")) {
    const toml::array* arr = steps->as_array();
    if (!arr || !arr->is_array_of_tables()) throw InputError(fmt::format("{}: 'step' must be [[step]] tables", where_at(where, *steps)));
    for (const auto& n : *arr) {
      const toml::table& st = *n.as_table();
      only_keys(st, {"source", "gpu", "mode", "kernels", "unit", "measured", "predicted_before", "predicted_after", "ratio", "note"}, where);
      StackStep step;
      step.source = text(st, "source", where);
      step.gpu = text(st, "gpu", where);
      step.mode = text(st, "mode", where);
      step.op_class = text(st, "kernels", where);
      if (step.op_class != "matrix" && step.op_class != "memory" && step.op_class != "fixed-cost")
        throw InputError(fmt::format("{}: kernels '{}' is not matrix, memory or fixed-cost", where_at(where, st), strings::printable(step.op_class)));
      step.unit = text(st, "unit", where);
      step.measured = number(st, "measured", where, 1e-300, 1e300);
      step.predicted_before = number(st, "predicted_before", where, 0, 1e300);
      step.predicted_after = number(st, "predicted_after", where, 0, 1e300);
      step.ratio = number(st, "ratio", where, kLowest, kHighest);
      step.note = text(st, "note", where, false);
      s.steps.push_back(std::move(step));
    }
  }
  if (const toml::node* figures = t.get("figure")) {
    const toml::array* arr = figures->as_array();
    if (!arr || !arr->is_array_of_tables()) throw InputError(fmt::format("{}: 'figure' must be [[figure]] tables", where_at(where, *figures)));
    for (const auto& n : *arr) {
      s.runs.push_back(read_run(*n.as_table(), where));
      // A training framework's figures are training runs, a serving engine's served ones: what --stack takes depends on it.
      if ((s.runs.back().mode == "train") != s.trained())
        throw InputError(fmt::format("{}: a [[figure]] of mode {} in a stack of {}, which {}", where_at(where, n), s.runs.back().mode,
                                     strings::printable(s.ratios.engine), s.trained() ? "is a training framework" : "serves"));
    }
  }
  // The cards the figures ran on take the ratios whole (perf/stack.hpp carried_to): those the steps name.
  for (const auto& st : s.steps)
    if (std::find(s.ratios.measured_gpus.begin(), s.ratios.measured_gpus.end(), st.gpu) == s.ratios.measured_gpus.end())
      s.ratios.measured_gpus.push_back(st.gpu);
  // A calibration corrected a card a figure ran on, or it changed nothing the stack solved.
  if (s.solved_with && !measured_on(s, s.solved_with->gpu_id))
    throw InputError(fmt::format("{}: [calibration] measured_on '{}' is no card a [[step]] ran on", where,
                                 strings::printable(s.solved_with->gpu_id)));
  return s;
}

files::OutputSpec stack_output(const std::string& flag, bool force) { return {flag, "stack calibration", kFirstLine, force}; }

}  // namespace gpuvs::perf
