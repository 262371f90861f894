// SPDX-License-Identifier: Apache-2.0
#include "perf/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "ir/cost.hpp"
#include "perf/roofline.hpp"

namespace gpuvs::perf {

namespace {

constexpr double kMaxEfficiency = 0.98;

struct GemmKey {
  const char* key;
  Precision precision;
};
constexpr GemmKey kGemmKeys[] = {{"cuda.gemm.fp32", Precision::fp32},
                                 {"cuda.gemm.tf32", Precision::tf32},
                                 {"cuda.gemm.fp16", Precision::amp_fp16},
                                 {"cuda.gemm.bf16", Precision::amp_bf16},
                                 {"cuda.gemm.fp8", Precision::amp_fp8}};

// A measured figure this far from what a healthy card of its class reaches is a record gone wrong (a unit off by
// 1000, a failed run), not a card: a MIG 1g slice reaches about 1/7, a card throttled hard about a third.
constexpr double kPlausibleLow = 0.05, kPlausibleHigh = 1.5;

const MeasuredFigure* find(const std::vector<MeasuredFigure>& f, const std::string& key) {
  for (const auto& m : f)
    if (m.key == key && m.median > 0) return &m;
  return nullptr;
}

/// The figure's unit must be the one gpuvs measures the key in, and its size within reach of a real card.
void check_figure(const MeasuredFigure& m, const std::string& unit, double predicted, const std::string& gpu, const std::string& source) {
  if (m.unit != unit)
    throw InputError(fmt::format("{}: {} is recorded in '{}'; gpuvs measures it in {} (a record from another tool or edited?)", source,
                                 m.key, strings::printable(m.unit), unit));
  const double r = m.median / predicted;
  if (!(r >= kPlausibleLow && r <= kPlausibleHigh))
    throw InputError(fmt::format("{}: {} = {} {} is {} of what a healthy {} reaches in that benchmark ({} {}); outside {}-{}x, "
                                 "it is a failed or mis-recorded run, not a calibration",
                                 source, m.key, units::format_plain(m.median, 4), unit, fmt::format("{:.3g}x", r), gpu,
                                 units::format_plain(predicted, 4), unit, kPlausibleLow, kPlausibleHigh));
}

}  // namespace

Calibration calibrate(const catalog::Gpu& gpu, const std::vector<MeasuredFigure>& figures, double gemm_n,
                      double copy_bytes, const std::string& source) {
  Calibration c;
  c.gpu_id = gpu.id;
  c.source = source;
  for (const auto& gk : kGemmKeys) {
    const MeasuredFigure* m = find(figures, gk.key);
    if (!m) continue;
    PrecisionPlan plan;
    try {
      plan = plan_precision(gk.precision, gpu);
    } catch (const std::exception&) {
      continue;  // the catalog says the device lacks it; a figure for it would be someone else's
    }
    const EfficiencyParams p = efficiency_for(gpu, plan);
    const double eff = gemm_efficiency({gemm_n, gemm_n, gemm_n, 1}, p.bench_gemm_ref, p, gpu.sm_count);
    const double predicted = plan.matrix_tflops * eff;
    check_figure(*m, "TFLOP/s", predicted, gpu.id, source);
    const double ratio = std::min(m->median / predicted, kMaxEfficiency / p.gemm_max);
    c.gemm_ratio[gk.precision] = ratio;
    c.classes.push_back({fmt::format("gemm {}", precision_name(gk.precision)), gk.key, "TFLOP/s", m->median, predicted,
                         m->median / predicted, true,
                         fmt::format("{:.0f}^3 GEMM; scales the GEMM, convolution and attention efficiencies", gemm_n)});
  }
  const MeasuredFigure* mem = find(figures, "cuda.mem.copy");
  if (!mem) mem = find(figures, "cuda.memcpy.d2d");
  if (mem) {
    const EfficiencyParams p = efficiency_for(gpu, plan_precision(Precision::fp32, gpu));
    EfficiencyParams bench = p;
    bench.mem_max = p.bench_mem_ref;
    const double predicted = gpu.memory_bandwidth_gbs * memory_efficiency(copy_bytes, bench);
    check_figure(*mem, "GB/s", predicted, gpu.id, source);
    c.memory_ratio = std::min(mem->median / predicted, kMaxEfficiency / p.mem_max);
    c.classes.push_back({"memory", mem->key, "GB/s", mem->median, predicted, mem->median / predicted, true,
                         "streaming copy; scales the memory-bound efficiency"});
  }
  if (const MeasuredFigure* l = find(figures, "cuda.launch.async")) {
    const EfficiencyParams p;
    c.classes.push_back({"launch", l->key, "us", l->median, p.launch_s * 1e6, l->median / (p.launch_s * 1e6), false,
                         "reported only: the model's per-kernel cost also covers a kernel's ramp and a framework's "
                         "dispatch, which an empty-kernel launch does not"});
  }
  return c;
}

EfficiencyParams calibrated_params(const catalog::Gpu& gpu, const PrecisionPlan& plan, const Calibration* cal) {
  EfficiencyParams p = efficiency_for(gpu, plan);
  if (!cal || cal->gpu_id != gpu.id) return p;
  if (auto it = cal->gemm_ratio.find(plan.precision == Precision::bf16 ? Precision::amp_bf16
                                     : plan.precision == Precision::fp16 ? Precision::amp_fp16
                                                                         : plan.precision);
      it != cal->gemm_ratio.end()) {
    p.gemm_max = std::min(kMaxEfficiency, p.gemm_max * it->second);
    p.conv_max = std::min(kMaxEfficiency, p.conv_max * it->second);
    p.attention_max = std::min(kMaxEfficiency, p.attention_max * it->second);
  }
  if (cal->memory_ratio) p.mem_max = std::min(kMaxEfficiency, p.mem_max * *cal->memory_ratio);
  return p;
}

}  // namespace gpuvs::perf

namespace gpuvs::perf {

std::vector<ClassRatio> engine_op_ratios(const ir::Graph& g, const std::vector<double>& measured_s, const catalog::Gpu& gpu,
                                         const PrecisionPlan& plan) {
  const StepPrediction pred = predict_graph(g, gpu, plan);
  double meas[2] = {0, 0}, model[2] = {0, 0};
  int ops[2] = {0, 0};
  for (const OpTime& t : pred.ops) {
    const auto i = static_cast<std::size_t>(t.id);
    if (i >= measured_s.size() || measured_s[i] <= 0) continue;
    const int k = ir::op_cost(g, g.node(t.id)).matrix_flops > 0 ? 0 : 1;
    meas[k] += measured_s[i];
    model[k] += t.seconds;
    ++ops[k];
  }
  std::vector<ClassRatio> out;
  const char* names[] = {"gemm", "memory"};
  for (int k = 0; k < 2; ++k)
    if (ops[k] > 0 && model[k] > 0)
      out.push_back({fmt::format("engine {}", names[k]), fmt::format("{} ops of {}", ops[k], gpu.id), "us/step", meas[k] * 1e6,
                     model[k] * 1e6, meas[k] / model[k], false, "the CUDA engine's per-op CUDA-event timings against the model"});
  return out;
}

}  // namespace gpuvs::perf
