// SPDX-License-Identifier: Apache-2.0
// Calibration: the local device was measured (gpuvs bench --save), so the model's efficiency fractions
// for that device are corrected by measured / predicted per op class — GEMM per precision (the bench's
// cuBLASLt GEMM against what the model expects that same GEMM to reach on a healthy card of the class)
// and memory-bound kernels (the bench's copy kernel, likewise). A card that is power-capped, throttled
// or slower than its spec sheet thus gets proportionally lower predictions. Corrections apply only to
// predictions for the measured catalog device; every ratio is reported, applied or not.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "ir/ir.hpp"
#include "perf/efficiency.hpp"
#include "perf/precision.hpp"

namespace gpuvs::perf {

/// One benchmark figure, as the bench record stores it.
struct MeasuredFigure {
  std::string key, unit;
  double median = 0;
};

struct ClassRatio {
  std::string op_class;  // "gemm bf16", "memory", "launch"
  std::string key;       // the benchmark it comes from
  std::string unit;
  double measured = 0, predicted = 0, ratio = 0;
  bool applied = false;
  std::string note;
};

struct Calibration {
  std::string gpu_id;  // catalog device the figures were measured on
  std::string source;  // where they came from (file)
  std::map<Precision, double> gemm_ratio;  // by the precision whose matrix rate the bench GEMM used
  std::optional<double> memory_ratio;
  std::vector<ClassRatio> classes;
};

/// Builds the calibration for `gpu` from its benchmark figures. `gemm_n` is the benchmark's square GEMM
/// size and `copy_bytes` the bytes one copy-kernel pass counts. Ratios are clamped so no efficiency
/// exceeds 98% of a peak.
Calibration calibrate(const catalog::Gpu& gpu, const std::vector<MeasuredFigure>& figures, double gemm_n,
                      double copy_bytes, const std::string& source);

/// The efficiency parameters for a prediction on `gpu` under `plan`, corrected when `cal` was measured on
/// that device (unchanged otherwise).
EfficiencyParams calibrated_params(const catalog::Gpu& gpu, const PrecisionPlan& plan, const Calibration* cal);

}  // namespace gpuvs::perf

namespace gpuvs::perf {

/// Measured ÷ predicted per op class for a graph the engine ran on a catalog GPU: `measured_s` holds the
/// engine's seconds per step for each node (by node id; 0 for nodes that do no work), priced here with
/// the model for `gpu` under `plan`. Classes: "gemm" (matrix ops), "memory" (the rest, bound by bytes or
/// launches). Reported beside the benchmark ratios; not applied (a few small ops are launch-bound, and one
/// small workload should not move the model's curves for every size).
std::vector<ClassRatio> engine_op_ratios(const ir::Graph& g, const std::vector<double>& measured_s, const catalog::Gpu& gpu,
                                         const PrecisionPlan& plan);

}  // namespace gpuvs::perf
