#include "perf/stack_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"

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

StackCalibration calibrate_stack(const catalog::Catalog& cat, const std::vector<StackMeasurement>& ms) {
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
        const bool out_of_reach = which == &StackRatios::memory && step.ratio >= kHighest;
        out.steps.push_back(std::move(step));
        if (out_of_reach) {
          StackRatios held = out.ratios;
          held.memory = kHighest;
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
      all_beyond = all_beyond && step.ratio >= kHighest;
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
  if (req.stack) throw std::logic_error("calibrate_training: the request already carries a stack");
  const Prediction plain = predict(cat, w, req);
  // A training loop's samples are the workload's own (images, sequences): "samples/s" (a TensorBoard log's) reads
  // as the prediction's unit; a decoder's training is priced in tokens.
  const bool per_sample = unit == "samples/s" && plain.unit != "tokens/s";
  if (unit != plain.unit && !per_sample)
    throw InputError(fmt::format("{}: the figure is in {}, a prediction of {} in {}", source, unit, plain.workload, plain.unit));
  StackRatios base;
  base.engine = plain.framework;
  base.format = std::string(precision_name(plain.plan.precision));
  base.measured_gpus = {plain.gpu_id};
  // The run's figure is its total over its GPUs; the prediction is per GPU.
  const double gpus = static_cast<double>(req.gpus);
  StackCalibration out = calibrate_figure(
      [&](const StackRatios& r) {
        PredictRequest q = req;
        q.stack = &r;
        return predict(cat, w, q).throughput * gpus;
      },
      measured, plain.unit, base);
  for (auto& st : out.steps) {
    st.source = source;
    st.gpu = plain.gpu_id;
    st.mode = req.training ? "train" : "infer";
  }
  return out;
}

}  // namespace gpuvs::perf
