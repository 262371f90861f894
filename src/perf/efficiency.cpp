// SPDX-License-Identifier: Apache-2.0
#include "perf/efficiency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/stats.hpp"
#include "perf/achievable.hpp"
#include "perf/clocks.hpp"
#include "perf/constants.hpp"
#include "perf/system_facts.hpp"

namespace gpuvs::perf {

EfficiencyParams efficiency_for(const catalog::Gpu& gpu, const PrecisionPlan& plan) {
  // Two device classes by segment: data-centre boards and GeForce/workstation boards. The tensor-core GEMM and
  // convolution fractions are the model's fitted constants (data/model-constants.toml, perf/fit.hpp): the
  // achieved fractions of the catalog's peaks for eager PyTorch-style training (cuBLAS GEMMs, cuDNN
  // convolutions). Unfused elementwise kernels stream at the lesser of a fraction of the DRAM rate and what
  // the card's SMs keep in flight (perf/constants.hpp memory_fraction), one rule for every card.
  EfficiencyParams p;
  const bool gddr = gpu.segment != "datacenter";
  const FittedConstants& constants = active_constants();
  const ClassFractions& fitted = constants.of(device_class(gpu));
  p.mem_max = memory_fraction(gpu, constants.bytes_per_sm_cycle);
  // A streaming kernel's ramp and tail are time: at the card's DRAM rate they cost this many bytes' worth.
  p.mem_half_bytes = system_facts().stream_ramp_s * gpu.memory_bandwidth_gbs * 1e9;
  // Microbenchmark references (see the header), sourced in data/system.toml.
  const SystemFacts& facts = system_facts();
  p.bench_mem_ref = facts.bench_memory;
  p.bench_gemm_ref = !plan.tensor_cores ? facts.bench_gemm_cuda_cores : gddr ? facts.bench_gemm_tensor_geforce : facts.bench_gemm_tensor_datacenter;
  // Fused attention and CUDA-core math are not fitted: their fractions are data/system.toml's [kernels.*].
  if (plan.tensor_cores) {
    p.gemm_max = fitted.gemm * gemm_card_share(gpu) * (plan.precision == Precision::amp_fp8 ? fp8_gemm_share(gpu) : 1.0);
    p.conv_max = fitted.conv;
    p.attention_max = gddr ? facts.attention_geforce : facts.attention_datacenter;
  } else {
    p.gemm_max = facts.cuda_core_gemm;
    p.conv_max = facts.cuda_core_conv;
    p.attention_max = facts.cuda_core_attention;
  }
  // FP32 on CUDA cores where half the FP32 lanes also run INT32: integer instructions take FP32 issue slots.
  const double lanes = shared_lane_fp32_share(gpu);
  if (!plan.tensor_cores) {
    p.gemm_max *= lanes;
    p.conv_max *= lanes;
    p.attention_max *= lanes;
  }
  p.vector_max *= lanes;
  // The K ramp: a tile's fixed cost is SM cycles, not math, so a unit with fewer FMAs per SM-cycle (CUDA-core
  // FP32, TF32, a GeForce's half-rate FP32-accumulate path) amortises it over fewer K steps. The ceiling is
  // today's K = 48: faster units overlap one tile's epilogue with the next tile's main loop.
  if (const double rated = rated_clock_mhz(gpu); plan.matrix_tflops > 0 && gpu.sm_count > 0 && rated > 0) {
    const double fma_per_sm_cycle = plan.matrix_tflops * 1e12 / (2.0 * gpu.sm_count * rated * 1e6);
    p.k_half = std::min(p.k_half, facts.tile_fixed_cycles * fma_per_sm_cycle / (p.tile_m * p.tile_n));
  }
  return p;
}

double shared_lane_fp32_share(const catalog::Gpu& gpu) {
  const SystemFacts& facts = system_facts();
  const auto& ccs = facts.shared_lane_compute_capabilities;
  return std::find(ccs.begin(), ccs.end(), gpu.compute_capability) != ccs.end() ? facts.shared_lane_fp32 : 1.0;
}

double gemm_card_share(const catalog::Gpu& gpu) {
  static const catalog::Catalog builtin = catalog::Catalog::builtin();  // the cards the figures were measured on
  static std::mutex mutex;
  static std::map<std::string, double> memo;  // by what the share reads of the card, and the clock headroom
  const double headroom = active_constants().clock_headroom;
  const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", gpu.id, gpu.compute_capability, gpu.segment, gpu.chip, gpu.tdp_w, gpu.bf16.dense.value_or(0), gpu.fp16_fp32acc.dense.value_or(gpu.fp16.dense.value_or(0)), headroom);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  // The 16-bit tensor pipeline's figure: BF16 where the card has it, FP16 on cards before BF16 (Volta, Turing), whose
  // power caps show there (a T4 sustains 24 of 65 TFLOP/s).
  auto sixteen_bit = [](const catalog::Gpu& g) { return g.bf16.dense ? "gemm-bf16" : "gemm-fp16"; };
  // The best GEMM's fraction of the peak at the clock a card sustains: what its matrix units reach per cycle.
  auto per_clock = [&](const catalog::Gpu& g) -> std::optional<double> {
    const auto a = achievable(builtin, g, sixteen_bit(g));
    const double clock = sustained_clock_fraction(g, headroom);
    if (!a || a->fraction <= 0 || clock <= 0) return std::nullopt;
    return a->fraction / clock;
  };
  std::vector<double> reference;
  bool measured_kin = false;  // a card of this SM design (compute capability) and class has a published figure (or this one has):
                              // GA100 and GA102 are both "Ampere" but not one SM
  // The class's reference is its BF16 figures (today's pipelines); a card before BF16 compares its FP16 figure with it.
  for (const auto& f : builtin_achievable().figures) {
    if (f.key != "gemm-bf16" && f.key != "gemm-fp16") continue;
    const catalog::Gpu& other = builtin.find(f.gpu);
    if (f.key != sixteen_bit(other) || device_class(other) != device_class(gpu)) continue;
    if (const auto v = per_clock(other); v && f.key == "gemm-bf16") reference.push_back(*v);
    measured_kin = measured_kin || other.id == gpu.id || other.compute_capability == gpu.compute_capability;
  }
  const auto mine = per_clock(gpu);
  const double share = reference.empty() || !measured_kin || !mine ? 1.0 : *mine / stats::median(reference);
  const std::lock_guard<std::mutex> lock(mutex);
  memo.emplace(key, share);
  return share;
}

double fp8_gemm_share(const catalog::Gpu& gpu) {
  static const catalog::Catalog builtin = catalog::Catalog::builtin();  // the cards the figures were measured on
  static std::mutex mutex;
  static std::map<std::string, double> memo;  // by card and clock headroom (the derived rules read it)
  const std::string key = fmt::format("{}|{}|{}|{}", gpu.id, gpu.fp8_fp32acc.dense.value_or(gpu.fp8.dense.value_or(0)), gpu.bf16.dense.value_or(0), active_constants().clock_headroom);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  const auto fp8 = achievable(builtin, gpu, "gemm-fp8");
  const auto bf16 = achievable(builtin, gpu, "gemm-bf16");
  const double share = fp8 && bf16 && bf16->fraction > 0 ? std::min(1.0, fp8->fraction / bf16->fraction) : 1.0;
  const std::lock_guard<std::mutex> lock(mutex);
  memo.emplace(key, share);
  return share;
}

double memory_fraction(const catalog::Gpu& gpu, double bytes_per_sm_cycle) {
  const double stream = system_facts().bench_memory;
  const double spec = gpu.memory_bandwidth_gbs * 1e9;
  if (spec <= 0 || gpu.sm_count <= 0 || gpu.boost_mhz <= 0) return stream;  // a user's entry without SMs or clocks
  // Bytes in flight per SM-cycle at the clock the SMs run a training step at: the sustained one (perf/clocks.hpp), not
  // the boost. A board that sheds clock under its power limit keeps fewer bytes in flight per second too.
  const double clock_mhz = sustained_clock_fraction(gpu, active_constants().clock_headroom) * rated_clock_mhz(gpu);
  return std::min(stream, bytes_per_sm_cycle * gpu.sm_count * clock_mhz * 1e6 / spec);
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
