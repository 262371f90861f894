// SPDX-License-Identifier: Apache-2.0
#include "perf/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "perf/calibrate_one.hpp"

namespace gpuvs::perf {

namespace {

// A weak pull towards the priors (in log space): a constant the rows do not pin down — the GEMM fraction
// when every row is a convolutional network — stays near its prior instead of drifting to a bound.
constexpr double kPriorWeight = 0.01;

// The mean |log(predicted / measured)| over `rows` priced with the constants `c`.
double mean_log_error(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                      const FittedConstants& c, workload::Workloads& workloads) {
  const ScopedConstants scope(c);
  const ValidationReport rep = validate(cat, rows, held_out, workloads);
  double sum = 0;
  int n = 0;
  for (const auto& v : rep.rows)
    if (v.ape) {
      sum += std::fabs(std::log(v.predicted / *v.row.value));
      ++n;
    }
  return n ? sum / n : 0.0;
}

double objective(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                 const FittedConstants& c, workload::Workloads& workloads) {
  double pull = 0;
  for (const auto& k : c.cls)
    for (auto [x, p] : {std::pair{k.gemm, c.prior.gemm}, {k.conv, c.prior.conv}}) pull += std::pow(std::log(x / p), 2);
  pull += std::pow(std::log(c.bytes_per_sm_cycle / c.bytes_per_sm_cycle_prior), 2);
  pull += std::pow(std::log(c.clock_headroom / c.clock_headroom_prior), 2);
  return mean_log_error(cat, rows, held_out, c, workloads) + kPriorWeight * pull;
}

// The serving rows' objective for one of serving's constants alone (the others are training's): the same error plus
// the same weak pull, towards `prior`.
double serving_objective(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                         const FittedConstants& c, double value, double prior, workload::Workloads& workloads) {
  return mean_log_error(cat, rows, held_out, c, workloads) + kPriorWeight * std::pow(std::log(value / prior), 2);
}

// One serving constant to fit: where it starts (and is pulled towards) and its bounds.
struct ServingParam {
  double* value;
  double prior, lowest, highest;
};

// Fits one serving constant (a kernel class's bytes per SM-cycle, or ggml's GEMM share) on the serving rows, starting
// where it stands (its prior at first): a coarse grid around it, then halving steps. Rows that cannot see it (every card on its DRAM side, no
// engine of the family) leave it there. Returns the evaluations spent.
int fit_serving_constant(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                         FittedConstants& c, const ServingParam& p, workload::Workloads& workloads) {
  double* value = p.value;
  const double start = *value;
  double best = serving_objective(cat, rows, held_out, c, *value, p.prior, workloads);
  double best_value = start;
  int evaluations = 1;
  const auto try_value = [&](double candidate) {
    *value = std::clamp(candidate, p.lowest, p.highest);
    if (*value == best_value) return false;
    const double obj = serving_objective(cat, rows, held_out, c, *value, p.prior, workloads);
    ++evaluations;
    if (obj < best - 1e-12) {
      best = obj;
      best_value = *value;
      return true;
    }
    return false;
  };
  for (int k = -2; k <= 4; ++k)
    if (k != 0) try_value(start * std::pow(2.0, k / 2.0));
  for (double step = 0.25; step > 0.004;) {
    const double from = best_value;
    if (!try_value(from * std::exp(step)) && !try_value(from * std::exp(-step))) step /= 2;
  }
  *value = best_value;
  return evaluations;
}

}  // namespace

FitResult fit_constants(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out) {
  workload::Workloads workloads;
  return fit_constants(cat, rows, held_out, workloads);
}

FitResult fit_constants(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                        workload::Workloads& workloads) {
  FitResult r;
  // The rows the constants move: priced training and inference rows with a measured value.
  std::vector<PublishedRow> fit_rows, serving_rows;
  {
    const ValidationReport rep = validate(cat, rows, held_out, workloads);
    for (const auto& v : rep.rows)
      if (v.ape && v.serving) {
        serving_rows.push_back(v.row);
      } else if (v.ape && v.row.mode != "micro") {
        fit_rows.push_back(v.row);
        r.classes_fitted[static_cast<int>(device_class(cat.find(v.row.gpu)))] = true;
      }
  }
  r.rows = static_cast<int>(fit_rows.size());
  FittedConstants c = builtin_constants();
  c.of(DeviceClass::datacenter) = c.prior;
  c.of(DeviceClass::geforce) = c.prior;
  c.bytes_per_sm_cycle = c.bytes_per_sm_cycle_prior;
  c.decode_bytes_per_sm_cycle = c.ggml_gemv_bytes_per_sm_cycle = c.ggml_bytes_per_sm_cycle = c.bytes_per_sm_cycle;
  c.clock_headroom = c.clock_headroom_prior;
  // Each parameter with its bounds: fractions in [0.05, 1], bytes per SM-cycle in [0.5, 256].
  struct Param {
    double* value;
    double lowest, highest;
  };
  std::vector<Param> params;
  if (r.classes_fitted[0] || r.classes_fitted[1]) {
    params.push_back({&c.clock_headroom, 0.05, 1.0});
    params.push_back({&c.bytes_per_sm_cycle, 0.5, 256.0});
  }
  for (int k = 0; k < 2; ++k)
    if (r.classes_fitted[k])
      for (double* f : {&c.cls[k].gemm, &c.cls[k].conv}) params.push_back({f, 0.05, 1.0});
  double best = objective(cat, fit_rows, held_out, c, workloads);
  r.evaluations = 1;
  // The memory constant first, on a coarse grid: where no card's SMs bind (a prior too high), the rows cannot
  // see it and a descent from there never finds the per-SM limit the HBM cards sit at.
  if (r.classes_fitted[0] || r.classes_fitted[1]) {
    const double start = c.bytes_per_sm_cycle;
    double best_bytes = start;
    for (int k = -3; k <= 3; ++k) {
      c.bytes_per_sm_cycle = start * std::pow(2.0, k / 2.0);
      const double obj = objective(cat, fit_rows, held_out, c, workloads);
      ++r.evaluations;
      if (obj < best - 1e-12) {
        best = obj;
        best_bytes = c.bytes_per_sm_cycle;
      }
    }
    c.bytes_per_sm_cycle = best_bytes;
  }
  // Coordinate descent on log(constant): try a step up and down for each, keep what helps, halve the step
  // when nothing does.
  for (double step = 0.25; step > 0.004 && !params.empty();) {
    bool improved = false;
    for (const Param& param : params)
      for (double dir : {1.0, -1.0}) {
        double* p = param.value;
        const double old = *p;
        *p = std::clamp(old * std::exp(dir * step), param.lowest, param.highest);
        if (*p == old) continue;
        const double obj = objective(cat, fit_rows, held_out, c, workloads);
        ++r.evaluations;
        if (obj < best - 1e-12) {
          best = obj;
          improved = true;
          break;
        }
        *p = old;
      }
    if (!improved) step /= 2;
  }
  // A class with no rows borrows the other class's fitted fractions: what frameworks reach on one kind of
  // card says more about the other than a microbenchmark prior does.
  for (int k = 0; k < 2; ++k)
    if (!r.classes_fitted[k] && r.classes_fitted[1 - k]) c.cls[k] = c.cls[1 - k];
  // Serving's own kernel classes, on the serving rows alone, once the rest is fitted, one at a time with the others
  // in place: the decode-attention kernels, ggml's matrix-vector kernels (decode rows), ggml's passes (prefill rows),
  // then ggml's matrix-vector kernels again with the passes settled.
  c.decode_bytes_per_sm_cycle = c.ggml_gemv_bytes_per_sm_cycle = c.ggml_bytes_per_sm_cycle = c.bytes_per_sm_cycle;
  if (!serving_rows.empty()) {
    // The kernel classes' bytes per SM-cycle from the framework kernels' figure and ggml's GEMM share from 1, one at a
    // time: decode attention, then ggml's matrix-vector class, GEMM share and passes, twice (each moves the others).
    const double b = c.bytes_per_sm_cycle;
    c.ggml_gemm_share = 1;
    const ServingParam decode{&c.decode_bytes_per_sm_cycle, b, 0.5, 256.0}, gemv{&c.ggml_gemv_bytes_per_sm_cycle, b, 0.5, 256.0},
        passes{&c.ggml_bytes_per_sm_cycle, b, 0.5, 256.0}, share{&c.ggml_gemm_share, 1.0, 0.05, 1.0};
    for (const ServingParam& p : {decode, gemv, share, passes, gemv, share, passes})
      r.evaluations += fit_serving_constant(cat, serving_rows, held_out, c, p, workloads);
    r.serving_rows = static_cast<int>(serving_rows.size());
  }
  // The share of a figure's error a calibration carries to other cards: the slope of one card's log error on
  // another's over the runs of one configuration on several cards, each file priced without its own figures.
  {
    const ScopedConstants scope(c);
    std::map<std::string, std::vector<PublishedRow>> by_file;
    for (const auto& row : rows)
      if (!held_out.count(row.file)) by_file[row.file].push_back(row);
    std::vector<ValidatedRow> priced;
    for (const auto& [file, of_file] : by_file) {
      std::set<std::string> withheld = held_out;
      withheld.insert(file);
      const ValidationReport rep = validate(cat, of_file, withheld, workloads);
      priced.insert(priced.end(), rep.rows.begin(), rep.rows.end());
    }
    if (const auto fit = error_slope(priced)) {
      c.transfer_share = std::clamp(fit->slope, 0.0, 1.0);
      r.transfer_pairs = fit->pairs;
    }
  }
  r.objective = best;
  r.constants = c;
  std::vector<std::string> files;
  for (const auto* set : {&fit_rows, &serving_rows})
    for (const auto& row : *set)
      if (std::find(files.begin(), files.end(), row.file) == files.end()) files.push_back(row.file);
  r.constants.fitted_on = files;
  r.constants.method = fmt::format(
      "coordinate descent on mean |log error| from the priors over {} training rows, the decode-attention, ggml memory and GEMM-share constants over {} serving rows "
      "({} evaluations); the transfer share over {} pairs of cards",
      r.rows, r.serving_rows, r.evaluations, r.transfer_pairs);
  return r;
}

std::vector<HeldOutSource> leave_one_source_out(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows) {
  std::vector<std::string> files;
  for (const auto& row : rows)
    if (std::find(files.begin(), files.end(), row.file) == files.end()) files.push_back(row.file);
  std::vector<HeldOutSource> out;
  workload::Workloads workloads;  // every fold prices the same rows' workloads
  for (const auto& f : files) {
    std::vector<PublishedRow> train, test;
    for (const auto& row : rows) (row.file == f ? test : train).push_back(row);
    HeldOutSource h;
    h.fit = fit_constants(cat, train, {f}, workloads);
    const ScopedConstants scope(h.fit.constants);
    ValidationReport rep = validate(cat, test, {f}, workloads);
    h.summary = rep.sources.front();
    h.rows = std::move(rep.rows);
    out.push_back(h);
  }
  return out;
}

ValidationReport held_out_report(const std::vector<HeldOutSource>& folds) {
  std::vector<ValidatedRow> unseen;
  for (const auto& f : folds) unseen.insert(unseen.end(), f.rows.begin(), f.rows.end());
  return report_of(std::move(unseen));
}

}  // namespace gpuvs::perf
