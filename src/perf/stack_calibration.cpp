#include "perf/stack_calibration.hpp"

#include <fmt/format.h>

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

// The ratio of one class (`which` of `ratios`) that makes the model reproduce `m`: bisection in log space between
// `lowest` and `highest`. Kernel efficiencies raise the throughput with their ratio (until the efficiency meets its
// 98% cap); fixed costs lower it.
StackStep solve(const catalog::Catalog& cat, const StackMeasurement& m, StackRatios ratios, double StackRatios::*which, double lowest,
                double highest) {
  const bool rising = which != &StackRatios::fixed;
  StackStep step;
  step.source = m.source;
  step.gpu = m.request.gpu;
  step.mode = m.request.mode;
  step.op_class = class_name(which);
  step.measured = m.value;
  ratios.*which = rising ? highest : lowest;
  const double top = throughput(cat, m.request, ratios);
  ratios.*which = rising ? lowest : highest;
  const double bottom = throughput(cat, m.request, ratios);
  double lo = std::log(lowest), hi = std::log(highest);
  if (m.value >= top) {
    ratios.*which = rising ? highest : lowest;
    step.note = rising ? fmt::format("faster than the model allows with these kernels at their ceiling ({:.4g} tokens/s); held there", top)
                       : fmt::format("faster than the model allows with {}x the profile's fixed costs ({:.4g} tokens/s); held there", lowest, top);
  } else if (m.value <= bottom) {
    ratios.*which = rising ? lowest : highest;
    step.note = fmt::format("slower than the model gives at {}x its {} {} ({:.4g} tokens/s); held there", rising ? lowest : highest, step.op_class,
                            rising ? "efficiency" : "costs", bottom);
  } else {
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      ratios.*which = std::exp(mid);
      ((throughput(cat, m.request, ratios) < m.value) == rising ? lo : hi) = mid;
    }
    ratios.*which = std::exp(0.5 * (lo + hi));
  }
  step.ratio = ratios.*which;
  return step;  // predicted_before and predicted_after: set by the caller from the final ratios
}

}  // namespace

StackCalibration calibrate_stack(const catalog::Catalog& cat, const std::vector<StackMeasurement>& ms) {
  if (ms.empty()) throw InputError("no measurements to calibrate from");
  StackCalibration out;
  // The engine and format each measurement ran, as the serving model resolves them.
  for (const auto& m : ms) {
    if (!(m.value > 0) || !std::isfinite(m.value)) throw InputError(fmt::format("{}: the figure {} is not a positive rate", m.source, m.value));
    if (m.request.mode != "prefill" && m.request.mode != "decode")
      throw InputError(fmt::format("{}: mode {} calibrates nothing yet (prefill fixes the matrix kernels, decode the memory-bound ones)", m.source,
                                   m.request.mode));
    const ServingPrediction p = predict_serving(cat, m.request);
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

}  // namespace gpuvs::perf
