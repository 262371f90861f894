#include "perf/efficiency.hpp"

#include "perf/constants.hpp"

#include <algorithm>
#include <cmath>

namespace gpuvs::perf {

EfficiencyParams efficiency_for(const catalog::Gpu& gpu, const PrecisionPlan& plan) {
  // Two device classes: HBM data-centre parts and GDDR GeForce/workstation boards. The tensor-core GEMM,
  // convolution and memory fractions are the model's fitted constants (data/model-constants.toml,
  // perf/fit.hpp): the achieved fractions of the catalog's peaks for eager PyTorch-style training
  // (cuBLAS GEMMs, cuDNN convolutions, unfused elementwise kernels). Memory fractions include the traffic
  // that minimum byte counts leave out (AMP casts, multi-pass normalisation), which is why they sit below
  // STREAM-style bandwidth.
  EfficiencyParams p;
  const bool gddr = gpu.segment != "datacenter";
  const ClassFractions& fitted = active_constants().of(device_class(gpu));
  p.mem_max = fitted.mem;
  // Microbenchmark references (see the header): an H200 ran a bf16 8192^3 GEMM at 788 TFLOP/s (0.80 of
  // its 989 peak) and a device copy at 4.3 TB/s (0.90 of 4.8) through PyTorch on the project's device
  // machine (.library/device/KINDS.md, 2026-10-28); GeForce boards boost past their rated clock and
  // get nearer their (half-rate FP32-accumulate) peak; CUDA-core SGEMM reaches about 85%.
  p.bench_mem_ref = 0.88;
  p.bench_gemm_ref = !plan.tensor_cores ? 0.85 : gddr ? 0.90 : 0.80;
  if (plan.tensor_cores) {
    p.gemm_max = fitted.gemm;
    p.conv_max = fitted.conv;
    p.attention_max = gddr ? 0.55 : 0.50;
  } else {
    // CUDA-core SGEMM: no tensor-core pipeline to fill; cuBLAS/cuDNN reach ~80% of FP32 peak.
    p.gemm_max = 0.80;
    p.conv_max = 0.70;
    p.attention_max = 0.50;
  }
  return p;
}

double wave_efficiency(const GemmDims& d, const EfficiencyParams& p, int sm_count) {
  double tiles = std::ceil(d.m / p.tile_m) * std::ceil(d.n / p.tile_n) * d.batch;
  if (tiles <= 0 || sm_count <= 0) return 1.0;
  // Too few output tiles to fill the GPU: libraries split K across SMs (split-K), each slice at least
  // 256 deep, and reduce the partial sums.
  if (tiles < sm_count) {
    const double split = std::max(1.0, std::min(std::floor(sm_count / tiles), std::floor(d.k / 256.0)));
    tiles *= split;
  }
  const double waves = std::ceil(tiles / sm_count);
  return tiles / (waves * sm_count);
}

double gemm_efficiency(const GemmDims& d, double max_efficiency, const EfficiencyParams& p, int sm_count) {
  const double ramp = d.k / (d.k + p.k_half);
  return std::max(1e-3, max_efficiency * wave_efficiency(d, p, sm_count) * ramp);
}

double memory_efficiency(double bytes, const EfficiencyParams& p) {
  return p.mem_max * bytes / (bytes + p.mem_half_bytes);
}

}  // namespace gpuvs::perf
