// SPDX-License-Identifier: Apache-2.0
#include "perf/device_view.hpp"

#include <algorithm>

#include "perf/clocks.hpp"
#include "perf/constants.hpp"
#include "perf/memory.hpp"

namespace gpuvs::perf {

namespace {
constexpr double kMaxStreamingFraction = 0.98;  // no DRAM stream reaches its pin rate
}  // namespace

DeviceView device_view(const catalog::Gpu& gpu, const PrecisionPlan& plan, const EfficiencyParams& eff) {
  DeviceView d;
  d.gpu = &gpu;
  d.plan = plan;
  d.eff = eff;
  // Dense math runs at the clock the power limit sustains, not the rated boost the peaks assume.
  d.clock = sustained_clock_fraction(gpu, active_constants().clock_headroom);
  d.matrix_peak = plan.matrix_tflops * 1e12 * d.clock;
  d.vector_peak = plan.vector_tflops * 1e12 * eff.vector_max * d.clock;
  d.bandwidth = gpu.memory_bandwidth_gbs * 1e9;
  d.usable_bytes = usable_device_bytes(gpu.memory_bytes());
  return d;
}

DeviceView device_view(const catalog::Gpu& gpu, const PrecisionPlan& plan, const Calibration* calibration, bool training) {
  EfficiencyParams eff = calibrated_params(gpu, plan, calibration);
  if (!training)
    eff.mem_max = std::min(kMaxStreamingFraction, eff.bench_mem_ref * eff.mem_max / efficiency_for(gpu, plan).mem_max);
  return device_view(gpu, plan, eff);
}

}  // namespace gpuvs::perf
