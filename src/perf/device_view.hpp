// SPDX-License-Identifier: Apache-2.0
// One description of a card for pricing: what the per-op graph roofline (perf/roofline.hpp) and the LLM
// serving model (perf/serving.hpp) both read — the sustained clock, the peaks at it, the memory bandwidth and
// capacity, and the fractions of those peaks kernels reach (fitted per device class, or calibrated from a
// measurement of this card). Assembled here and nowhere else, so the two pricers cannot disagree about a card.
#pragma once
#include "catalog/catalog.hpp"
#include "perf/calibration.hpp"
#include "perf/efficiency.hpp"
#include "perf/precision.hpp"

namespace gpuvs::perf {

struct DeviceView {
  const catalog::Gpu* gpu = nullptr;
  PrecisionPlan plan;
  EfficiencyParams eff;      // fractions of the peaks below that kernels reach
  double clock = 1.0;        // sustained fraction of the rated clock under the power limit (perf/clocks.hpp)
  double matrix_peak = 0;    // FLOP/s of the plan's matrix math at the sustained clock
  double vector_peak = 0;    // FLOP/s of the plan's vector units at the sustained clock, times eff.vector_max
  double bandwidth = 0;      // DRAM bytes/s (1e9 x the catalog's GB/s)
  double usable_bytes = 0;   // what a process can allocate (perf/memory.hpp)
};

/// The card under `plan` with the efficiency fractions given (a caller that fits or sweeps them).
DeviceView device_view(const catalog::Gpu& gpu, const PrecisionPlan& plan, const EfficiencyParams& eff);

/// The card under `plan` with the fractions fitted for its class, or calibrated when `calibration` measured this
/// card. Inference (`training` false) streams what the minimum byte counts say: the traffic the fitted training
/// memory fraction absorbs (multi-pass batch statistics, AMP master-weight casts, gradient reads) is not there,
/// so memory-bound kernels run at the fraction a streaming microbenchmark reaches (the constants' prior), scaled
/// by any calibration of this card.
DeviceView device_view(const catalog::Gpu& gpu, const PrecisionPlan& plan, const Calibration* calibration, bool training);

}  // namespace gpuvs::perf
