// SPDX-License-Identifier: Apache-2.0
#include "perf/stack_calibration.hpp"

#include "perf/serving_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::perf {

namespace {

constexpr double kLowest = 0.05, kHighest = 20.0;

// The throughput of `req` with `ratios` applied.
double throughput(const catalog::Catalog& cat, ServingRequest req, const StackRatios& ratios) {
  req.stack = &ratios;
  return predict_serving(cat, req).throughput;
}

const char* class_name(double StackRatios::*which) {
  return which == &StackRatios::gemm ? "matrix" : which == &StackRatios::memory ? "memory" : "fixed-cost";
}

// The ratio of one class (`which` of `ratios`) that makes `rate` reproduce `measured`: bisection in log space between
// `lowest` and `highest`. Kernel efficiencies raise the rate with their ratio (until the efficiency meets its 98% cap);
// fixed costs lower it.
StackStep solve(const StackRate& rate, double measured, const std::string& unit, StackRatios ratios, double StackRatios::*which,
                double lowest, double highest) {
  const bool rising = which != &StackRatios::fixed;
  StackStep step;
  step.op_class = class_name(which);
  step.unit = unit;
  step.measured = measured;
  ratios.*which = rising ? highest : lowest;
  const double top = rate(ratios);
  ratios.*which = rising ? lowest : highest;
  const double bottom = rate(ratios);
  double lo = std::log(lowest), hi = std::log(highest);
  if (measured >= top) {
    ratios.*which = rising ? highest : lowest;
    if (rising) {
      // Held at the ceiling: the least ratio that reaches it (an efficiency capped at 98% rises no further), not the
      // search's bound, so what is shown and carried is what the figure asks for, not twenty times the model.
      for (int i = 0; i < 48; ++i) {
        const double mid = 0.5 * (lo + hi);
        ratios.*which = std::exp(mid);
        (rate(ratios) >= top * (1 - 1e-9) ? hi : lo) = mid;
      }
      ratios.*which = std::exp(hi);
      step.held_at_ceiling = true;
    }
    step.note = rising ? fmt::format("faster than the model allows with these kernels at their ceiling ({:.4g} {}); held there", top, unit)
                       : fmt::format("faster than the model allows with {}x the profile's fixed costs ({:.4g} {}); held there", lowest, top, unit);
  } else if (measured <= bottom) {
    ratios.*which = rising ? lowest : highest;
    step.note = fmt::format("slower than the model gives at {}x its {} {} ({:.4g} {}); held there", rising ? lowest : highest, step.op_class,
                            rising ? "efficiency" : "costs", bottom, unit);
  } else {
    for (int i = 0; i < 48; ++i) {
      const double mid = 0.5 * (lo + hi);
      ratios.*which = std::exp(mid);
      ((rate(ratios) < measured) == rising ? lo : hi) = mid;
    }
    ratios.*which = std::exp(0.5 * (lo + hi));
  }
  step.ratio = ratios.*which;
  return step;  // predicted_before and predicted_after: set by the caller
}

// A serving measurement's step: solve() on its request, named by where it came from.
StackStep solve(const catalog::Catalog& cat, const StackMeasurement& m, const StackRatios& ratios, double StackRatios::*which, double lowest,
                double highest) {
  StackStep step = solve([&](const StackRatios& r) { return throughput(cat, m.request, r); }, m.value, "tokens/s", ratios, which, lowest,
                         highest);
  step.source = m.source;
  step.gpu = m.request.gpu;
  step.mode = m.request.mode;
  return step;
}

}  // namespace

namespace {

StackCalibration solve_serving_stack(const catalog::Catalog& cat, const std::vector<StackMeasurement>& ms) {
  if (ms.empty()) throw InputError("no measurements to calibrate from");
  StackCalibration out;
  // The engine and format each measurement ran, as the serving model resolves them.
  for (const auto& m : ms) {
    if (!(m.value > 0) || !std::isfinite(m.value)) throw InputError(fmt::format("{}: the figure {} is not a positive rate", m.source, m.value));
    if (m.request.mode == "infer") {
      // Whole requests mix prefill, decode and the engine's fixed costs in one figure: it fixes the class it is most
      // sensitive to (calibrate_figure), alone.
      if (ms.size() > 1)
        throw InputError(fmt::format("{}: a whole-requests figure (mode infer) calibrates on its own for now (one figure fixes one class); got {} "
                                     "measurements",
                                     m.source, ms.size()));
      const ServingPrediction p = predict_serving(cat, m.request);
      StackRatios base;
      base.engine = p.engine;
      base.format = p.format;
      base.measured_gpus = {m.request.gpu};
      StackCalibration one = calibrate_figure([&](const StackRatios& r) { return throughput(cat, m.request, r); }, m.value, p.unit, base);
      for (auto& st : one.steps) {
        st.source = m.source;
        st.gpu = m.request.gpu;
        st.mode = "infer";
      }
      return one;
    }
    if (m.request.mode != "prefill" && m.request.mode != "decode")
      throw InputError(fmt::format("{}: mode {} calibrates nothing yet (prefill fixes the matrix kernels, decode the memory-bound ones, "
                                   "infer the class a whole-requests figure is most sensitive to)",
                                   m.source, m.request.mode));
    const ServingPrediction p = predict_serving(cat, m.request);
    if (std::find(out.ratios.measured_gpus.begin(), out.ratios.measured_gpus.end(), m.request.gpu) == out.ratios.measured_gpus.end())
      out.ratios.measured_gpus.push_back(m.request.gpu);
    if (out.ratios.engine.empty()) {
      out.ratios.engine = p.engine;
      out.ratios.format = p.format;
    } else if (p.engine != out.ratios.engine || p.format != out.ratios.format) {
      throw InputError(fmt::format("{}: {} with {} weights, where the other measurements ran {} with {}: one stack at a time", m.source, p.engine,
                                   p.format, out.ratios.engine, out.ratios.format));
    }
  }
  // Matrix kernels from prefill (nearly all GEMM), memory-bound ones from decode; each class moves the other's
  // figures a little (a prefill's norms and dequantize pass are memory-bound), so the two are solved in turn
  // until both hold. Each round's figures of one class give the geometric mean of their ratios.
  const std::pair<const char*, double StackRatios::*> classes[] = {{"prefill", &StackRatios::gemm}, {"decode", &StackRatios::memory}};
  for (int round = 0; round < 6; ++round) {
    out.steps.clear();
    out.ratios.fixed = 1;  // fixed costs move only where a decode figure is out of its kernels' reach, found again each round
    for (auto [mode, which] : classes) {
      double log_sum = 0;
      int n = 0;
      double fixed_log_sum = 0;
      int fixed_n = 0;
      for (std::size_t i = 0; i < ms.size(); ++i) {
        const StackMeasurement& m = ms[i];
        if (m.request.mode != mode) continue;
        StackStep step = solve(cat, m, out.ratios, which, kLowest, kHighest);
        step.measurement = i;
        log_sum += std::log(step.ratio);
        ++n;
        // A decode faster than its memory-bound kernels at their ceiling allow: only lower fixed costs per token
        // (fewer gaps between kernels, a graph launched once) explain it, and the same figure fixes them.
        const bool out_of_reach = which == &StackRatios::memory && step.held_at_ceiling;
        const double ceiling = step.ratio;
        out.steps.push_back(std::move(step));
        if (out_of_reach) {
          StackRatios held = out.ratios;
          held.memory = ceiling;
          StackStep fixed = solve(cat, m, held, &StackRatios::fixed, kLowest, 1.0);
          fixed.measurement = i;
          fixed_log_sum += std::log(fixed.ratio);
          ++fixed_n;
          out.steps.push_back(std::move(fixed));
        }
      }
      if (n > 0) out.ratios.*which = std::exp(log_sum / n);
      if (fixed_n > 0) out.ratios.fixed = std::exp(fixed_log_sum / fixed_n);
    }
  }
  // A prefill figure beyond what the matrix kernels can reach at their ceiling names software the engine profile
  // does not price (a newer build's kernels): its ratio is not carried to other cards.
  bool any_prefill = false, all_beyond = true;
  for (const auto& step : out.steps)
    if (step.op_class == "matrix") {
      any_prefill = true;
      all_beyond = all_beyond && step.held_at_ceiling;
    }
  if (any_prefill && all_beyond) {
    out.ratios.gemm = 1;
    out.open.push_back("matrix kernels: the prefill figures are beyond what the profile's kernels reach at their ceiling, so the engine ran "
                       "kernels the profile does not price; not carried");
  }
  // Each step's figure as the model gave it before and gives it with the final ratios.
  StackRatios none = out.ratios;
  none.memory = none.gemm = none.fixed = 1;
  for (auto& step : out.steps) {
    step.predicted_before = throughput(cat, ms[step.measurement].request, none);
    step.predicted_after = throughput(cat, ms[step.measurement].request, out.ratios);
  }
  for (auto [mode, which] : classes) {
    bool any = false;
    for (const auto& m : ms) any = any || m.request.mode == mode;
    if (!any)
      out.open.push_back(which == &StackRatios::gemm ? "matrix kernels (no prefill figure): the model's assumption"
                                                     : "memory-bound kernels (no decode figure): the model's assumption");
  }
  return out;
}

// The calibration a figure's card was priced with while the stack was solved, if it measured that card.
const Calibration* applied_calibration(const catalog::Catalog& cat, const Calibration* cal, const std::string& gpu) {
  return cal && cal->gpu_id == cat.find(gpu).id ? cal : nullptr;
}

// The one calibration the figures were solved with (stored with the stack); two that differ are refused, as the stack
// would then reproduce its figures under neither.
void record_calibration(StackCalibration& out, const Calibration* cal, const std::string& source) {
  if (!cal) return;
  if (out.solved_with && (out.solved_with->gpu_id != cal->gpu_id || out.solved_with->source != cal->source))
    throw InputError(fmt::format("{}: priced with the calibration from {} (measured on {}), and another figure with the one from {} (measured on {}): "
                                 "one calibration per stack",
                                 source, strings::escape_control(cal->source), cal->gpu_id, strings::escape_control(out.solved_with->source),
                                 out.solved_with->gpu_id));
  if (!out.solved_with) out.solved_with = *cal;
}

}  // namespace

StackCalibration calibrate_stack(const catalog::Catalog& cat, const std::vector<StackMeasurement>& ms) {
  StackCalibration out = solve_serving_stack(cat, ms);
  for (const auto& m : ms) {
    record_calibration(out, applied_calibration(cat, m.request.calibration, m.request.gpu), m.source);
    out.runs.push_back({m.source, m.request.mode, m.request.workload, m.request.format, m.request.batch, m.request.options});
  }
  return out;
}

StackCalibration calibrate_figure(const StackRate& rate, double measured, const std::string& unit, StackRatios base) {
  if (!(measured > 0) || !std::isfinite(measured)) throw InputError(fmt::format("the figure {} is not a positive rate", measured));
  StackCalibration out;
  out.ratios = base;
  // How much each class moves this figure towards the measurement: the share of its time that class takes, as the
  // model prices it here, in the direction the figure asks for (a kernel class already near its peak cannot speed
  // a figure up however much of the time it takes).
  const double at_base = rate(base);
  const bool faster = measured > at_base;
  std::array<std::pair<double, double StackRatios::*>, 3> sensitivity{
      {{0, &StackRatios::gemm}, {0, &StackRatios::memory}, {0, &StackRatios::fixed}}};
  for (auto& [share, which] : sensitivity) {
    StackRatios moved = base;
    const bool speeds_up_with_ratio = which != &StackRatios::fixed;
    moved.*which *= faster == speeds_up_with_ratio ? 1.25 : 0.8;
    share = std::fabs(std::log(rate(moved) / at_base)) / std::log(1.25);
  }
  std::sort(sensitivity.begin(), sensitivity.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  constexpr double kNegligible = 0.05;  // a class moving the figure less than this cannot be read from it
  for (const auto& [share, which] : sensitivity) {
    if (share < kNegligible) break;
    StackStep step = solve(rate, measured, unit, out.ratios, which, kLowest, kHighest);
    step.predicted_before = at_base;
    out.ratios.*which = step.ratio;
    step.predicted_after = rate(out.ratios);
    const bool held = !step.note.empty();
    out.steps.push_back(std::move(step));
    if (!held) break;
  }
  // Every class that moves the figure at its bound and the figure still out of reach: it names something the model
  // does not price (another algorithm, another card's behaviour), and a bound carried to other cards would put their
  // kernels at it too. Nothing is carried; the steps say why.
  if (!out.steps.empty() && !out.steps.back().note.empty()) {
    out.ratios = base;
    out.open.push_back("the figure is beyond what any class reaches at its bound: not carried to other cards");
  }
  for (const auto& [share, which] : sensitivity) {
    bool solved = false;
    for (const auto& st : out.steps) solved = solved || st.op_class == class_name(which);
    if (!solved)
      out.open.push_back(fmt::format("{} (the figure moves {:.2f}% per 1% change in them here): the model's assumption",
                                     which == &StackRatios::gemm     ? "matrix kernels"
                                     : which == &StackRatios::memory ? "memory-bound kernels"
                                                                     : "fixed costs",
                                     share));
  }
  return out;
}

StackCalibration calibrate_training(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& req, double measured,
                                    const std::string& unit, const std::string& source) {
  return calibrate_training(cat, {TrainingFigure{&w, req, measured, unit, source}});
}

namespace {

// A training figure's prediction without a stack, its unit checked, and its rate under a stack.
struct PricedFigure {
  Prediction plain;
  StackRate rate;
};

PricedFigure priced_figure(const catalog::Catalog& cat, const TrainingFigure& f) {
  const workload::Workload& w = *f.workload;
  const PredictRequest& req = f.request;
  const std::string& unit = f.unit;
  const std::string& source = f.source;
  if (req.stack) throw std::logic_error("calibrate_training: the request already carries a stack");
  const Prediction plain = predict(cat, w, req);
  // A training loop's samples are the workload's own (images, sequences): "samples/s" (a TensorBoard log's) reads
  // as the prediction's unit; a decoder's training is priced in tokens.
  const bool per_sample = unit == "samples/s" && plain.unit != "tokens/s";
  if (unit != plain.unit && !per_sample)
    throw InputError(fmt::format("{}: the figure is in {}, a prediction of {} in {}", source, unit, plain.workload, plain.unit));
  // The run's figure is its total over its GPUs; the prediction is per GPU.
  const double gpus = static_cast<double>(req.gpus);
  return {plain, [&cat, &w, req, gpus](const StackRatios& r) {
            PredictRequest q = req;
            q.stack = &r;
            return predict(cat, w, q).throughput * gpus;
          }};
}

StackCalibration solve_training_stack(const catalog::Catalog& cat, const std::vector<TrainingFigure>& figures) {
  if (figures.empty()) throw InputError("no training figure to calibrate from");
  std::vector<PricedFigure> priced;
  for (const TrainingFigure& f : figures) priced.push_back(priced_figure(cat, f));
  StackRatios base;
  base.engine = priced[0].plain.framework;
  base.format = std::string(precision_name(priced[0].plain.plan.precision));
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const Prediction& p = priced[i].plain;
    if (p.framework != base.engine || precision_name(p.plan.precision) != base.format)
      throw InputError(fmt::format("{}: ran {} {}, and {} ran {} {}: one stack at a time (its framework and precision)", figures[i].source,
                                   p.framework, precision_name(p.plan.precision), figures[0].source, base.engine, base.format));
    if (std::find(base.measured_gpus.begin(), base.measured_gpus.end(), p.gpu_id) == base.measured_gpus.end()) base.measured_gpus.push_back(p.gpu_id);
  }
  const auto name_steps = [&](StackCalibration& out) {
    for (auto& st : out.steps) {
      const TrainingFigure& f = figures[st.measurement];
      st.source = f.source;
      st.gpu = priced[st.measurement].plain.gpu_id;
      st.mode = f.request.training ? "train" : "infer";
    }
  };
  if (figures.size() == 1) {
    StackCalibration out = calibrate_figure(priced[0].rate, figures[0].measured, priced[0].plain.unit, base);
    name_steps(out);
    return out;
  }
  // Each figure's most sensitive class at the model's assumption, in the direction it asks for.
  constexpr double kNegligible = 0.05;
  const std::array<double StackRatios::*, 3> classes{&StackRatios::gemm, &StackRatios::memory, &StackRatios::fixed};
  std::vector<int> assigned(figures.size(), -1);
  std::vector<double> at_base(figures.size());
  for (std::size_t i = 0; i < figures.size(); ++i) {
    at_base[i] = priced[i].rate(base);
    const bool faster = figures[i].measured > at_base[i];
    double best = kNegligible;
    for (int c = 0; c < 3; ++c) {
      StackRatios moved = base;
      moved.*classes[static_cast<std::size_t>(c)] *= faster == (c != 2) ? 1.25 : 0.8;
      const double share = std::fabs(std::log(priced[i].rate(moved) / at_base[i])) / std::log(1.25);
      if (share > best) best = share, assigned[i] = c;
    }
  }
  // The classes solved in turn, matrix first, each given the others as they stand; a class moves the other classes'
  // figures too (a large batch still spends some of its time in memory-bound kernels), so the rounds repeat until
  // the ratios settle (block Gauss-Seidel: a few rounds where each figure leans mostly on its own class).
  StackCalibration out;
  out.ratios = base;
  constexpr int kRounds = 30;
  for (int round = 0; round < kRounds; ++round) {
    out.steps.clear();
    double moved = 0;
    for (int c = 0; c < 3; ++c) {
      double log_sum = 0;
      int n = 0;
      for (std::size_t i = 0; i < figures.size(); ++i) {
        if (assigned[i] != c) continue;
        StackStep step = solve(priced[i].rate, figures[i].measured, priced[i].plain.unit, out.ratios, classes[static_cast<std::size_t>(c)], kLowest,
                               kHighest);
        step.measurement = i;
        step.predicted_before = at_base[i];
        log_sum += std::log(step.ratio);
        ++n;
        out.steps.push_back(std::move(step));
      }
      if (n == 0) continue;
      double& ratio = out.ratios.*classes[static_cast<std::size_t>(c)];
      moved = std::max(moved, std::fabs(log_sum / n - std::log(ratio)));
      ratio = std::exp(log_sum / n);
    }
    if (moved < 1e-6) break;
  }
  for (int c = 0; c < 3; ++c)
    if (std::find(assigned.begin(), assigned.end(), c) == assigned.end())
      out.open.push_back(fmt::format("{}: no figure given is most sensitive to them here: the model's assumption",
                                     c == 0 ? "matrix kernels" : c == 1 ? "memory-bound kernels" : "fixed costs"));
  for (std::size_t i = 0; i < figures.size(); ++i)
    if (assigned[i] < 0) out.open.push_back(fmt::format("{}: moves with no class here (each moves it under {:.0f}%): it fixes nothing", figures[i].source, kNegligible * 100));
  for (auto& st : out.steps) st.predicted_after = priced[st.measurement].rate(out.ratios);
  name_steps(out);
  return out;
}

}  // namespace

StackCalibration calibrate_training(const catalog::Catalog& cat, const std::vector<TrainingFigure>& figures) {
  StackCalibration out = solve_training_stack(cat, figures);
  for (const auto& f : figures) {
    record_calibration(out, applied_calibration(cat, f.request.calibration, f.request.gpu), f.source);
    out.runs.push_back({f.source, f.request.training ? "train" : "infer", f.request.workload,
                        f.request.precision ? std::string(precision_name(*f.request.precision)) : "", f.request.batch, f.request.options});
  }
  return out;
}

namespace {

bool same_ratio(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

bool same_corrections(const Calibration& a, const Calibration& b) {
  if (a.gpu_id != b.gpu_id || a.gemm_ratio.size() != b.gemm_ratio.size() || a.memory_ratio.has_value() != b.memory_ratio.has_value()) return false;
  if (a.memory_ratio && !same_ratio(*a.memory_ratio, *b.memory_ratio)) return false;
  for (const auto& [p, r] : a.gemm_ratio) {
    const auto it = b.gemm_ratio.find(p);
    if (it == b.gemm_ratio.end() || !same_ratio(r, it->second)) return false;
  }
  return true;
}

}  // namespace

bool StackCalibration::trained() const { return !is_serving_engine(ratios.engine); }

bool measured_on(const StackCalibration& s, const std::string& gpu) {
  return std::find(s.ratios.measured_gpus.begin(), s.ratios.measured_gpus.end(), gpu) != s.ratios.measured_gpus.end();
}

void check_stack_calibration(const StackCalibration& s, const Calibration* cal, const std::string& where) {
  const Calibration* used = cal && measured_on(s, cal->gpu_id) ? cal : nullptr;
  const Calibration* solved = s.solved_with ? &*s.solved_with : nullptr;
  if (!used && !solved) return;
  if (used && !solved)
    throw InputError(fmt::format("{}: this stack was solved without a calibration of {}, which the calibration from {} corrects: its ratios would "
                                 "correct {} twice; solve it with that record (gpuvs calibrate ... --calibration {})",
                                 where, used->gpu_id, strings::escape_control(used->source), used->gpu_id, strings::escape_control(used->source)));
  if (!used)
    throw InputError(fmt::format("{}: this stack was solved with {} corrected by the calibration from {}; name that record with --calibration (without "
                                 "it {}'s figure no longer reproduces its measurement), or solve the stack without it",
                                 where, solved->gpu_id, strings::escape_control(solved->source), solved->gpu_id));
  if (!same_corrections(*used, *solved))
    throw InputError(fmt::format("{}: this stack was solved with {} corrected by the calibration from {}, and the calibration from {} corrects it "
                                 "differently: solve the stack with the record you apply (gpuvs calibrate ... --calibration {})",
                                 where, solved->gpu_id, strings::escape_control(solved->source), strings::escape_control(used->source),
                                 strings::escape_control(used->source)));
}

}  // namespace gpuvs::perf
