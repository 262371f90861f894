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

// The ratio of one class (`which` of `ratios`) that makes the model reproduce `m`: bisection in log space, the
// throughput rising with the ratio until the efficiency it moves meets its 98% cap.
StackStep solve(const catalog::Catalog& cat, const StackMeasurement& m, StackRatios ratios, double StackRatios::*which) {
  StackStep step;
  step.source = m.source;
  step.gpu = m.request.gpu;
  step.mode = m.request.mode;
  step.op_class = which == &StackRatios::gemm ? "matrix" : "memory";
  step.measured = m.value;
  step.predicted_before = throughput(cat, m.request, ratios);
  double lo = std::log(kLowest), hi = std::log(kHighest);
  ratios.*which = kHighest;
  const double top = throughput(cat, m.request, ratios);
  ratios.*which = kLowest;
  const double bottom = throughput(cat, m.request, ratios);
  if (m.value >= top) {
    ratios.*which = kHighest;
    step.note = fmt::format("faster than the model allows with these kernels at their ceiling ({:.4g} {}); held there", top, "tokens/s");
  } else if (m.value <= bottom) {
    ratios.*which = kLowest;
    step.note = fmt::format("slower than the model gives at {}x its {} efficiency ({:.4g} tokens/s); held there", kLowest, step.op_class, bottom);
  } else {
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      ratios.*which = std::exp(mid);
      (throughput(cat, m.request, ratios) < m.value ? lo : hi) = mid;
    }
    ratios.*which = std::exp(0.5 * (lo + hi));
  }
  step.ratio = ratios.*which;
  step.predicted_after = throughput(cat, m.request, ratios);
  return step;
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
    for (auto [mode, which] : classes) {
      double log_sum = 0;
      int n = 0;
      for (std::size_t i = 0; i < ms.size(); ++i) {
        const StackMeasurement& m = ms[i];
        if (m.request.mode != mode) continue;
        StackStep step = solve(cat, m, out.ratios, which);
        step.measurement = i;
        log_sum += std::log(step.ratio);
        ++n;
        out.steps.push_back(std::move(step));
      }
      if (n > 0) out.ratios.*which = std::exp(log_sum / n);
    }
  }
  // Each step's figure as the model gave it before and gives it with the final ratios.
  StackRatios none = out.ratios;
  none.memory = none.gemm = 1;
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
