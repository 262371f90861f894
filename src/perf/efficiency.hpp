// SPDX-License-Identifier: Apache-2.0
// How close real kernels get to the catalog's peaks. Every parameter is physical (a fraction of a peak, a
// tile size, a latency) and shared by all devices of a class; nothing here is fitted per device or per
// workload. Calibration on the local device multiplies these by measured / predicted per op class.
#pragma once
#include <cstdint>

#include "catalog/catalog.hpp"
#include "perf/precision.hpp"

namespace gpuvs::perf {

struct EfficiencyParams {
  double gemm_max = 0.75;       // fraction of the dense peak a large, well-shaped GEMM reaches
  double conv_max = 0.45;       // the same for implicit-GEMM convolutions (im2col overheads, small C)
  double attention_max = 0.50;  // fused attention kernels (softmax between two GEMMs)
  double tile_m = 128, tile_n = 128;  // output tile one SM computes at a time: wave quantization
  double k_half = 48;           // K at which the GEMM main loop reaches half its efficiency (a tile's fixed cost):
                                // at most 48; data/system.toml's tile_fixed_cycles x FMAs per SM-cycle / tile area
  double vector_max = 0.5;      // fraction of CUDA-core FP32 peak elementwise math reaches
  double mem_max = 0.60;        // fraction of DRAM bandwidth a large memory-bound kernel reaches
  double mem_half_bytes = 4e6;  // bytes at which a streaming kernel reaches half of mem_max (ramp, tail): data/system.toml's
                                // kernels.stream_ramp at the card's DRAM rate
  double launch_s = 4e-6;       // fixed cost per kernel (launch and ramp), seconds
  // What a healthy card of the class reaches in gpuvs's own microbenchmarks (a large cuBLASLt GEMM; a
  // streaming copy kernel), as fractions of the catalog's peaks. Calibration compares a measured card
  // with these, not with the framework-level fractions above, which include overheads a microbenchmark
  // does not have.
  double bench_gemm_ref = 0.80;
  double bench_mem_ref = 0.88;
};

/// The shared parameters for a device class and precision (tensor-core vs CUDA-core matrix work). FP8 GEMMs
/// reach the fitted fraction times fp8_gemm_share(gpu).
EfficiencyParams efficiency_for(const catalog::Gpu& gpu, const PrecisionPlan& plan);

/// The share of the CUDA-core fractions FP32 kernels keep on `gpu`'s SMs: data/system.toml's kernels.shared_lane_fp32 where
/// its second FP32 datapath also runs INT32 (the compute capabilities that fact lists: GA10x, AD10x, GB20x), else 1.
double shared_lane_fp32_share(const catalog::Gpu& gpu);
/// How a card's best GEMMs compare per clock with its device class's: its 16-bit achievable fraction (perf/achievable.hpp;
/// BF16, or FP16 on a card without BF16)
/// at the clock it sustains (perf/clocks.hpp) over the median of the class's cards with a published figure
/// (mamf-finder: A100 SXM 0.93, H100 SXM 0.85 of the peak at their sustained clocks). 1 where neither this card
/// nor one of its SM design (compute capability) and class has a published figure: the A10 (GA102) learns nothing from
/// the A100s (GA100). Framework GEMMs run the same libraries' kernels.
double gemm_card_share(const catalog::Gpu& gpu);
/// How much of its FP8 peak a card's best GEMMs reach against how much of its 16-bit peak they reach, at most 1:
/// the ratio of the two achievable fractions (perf/achievable.hpp, the built-in figures and rules: mamf-finder's
/// H100 SXM 1,403 of 1,979 TFLOP/s FP8 against 795 of 989 BF16, 0.88). Twice the math per cycle draws more
/// power and needs operands twice as fast; the fitted GEMM fraction is a 16-bit framework's.
double fp8_gemm_share(const catalog::Gpu& gpu);

struct GemmDims {
  double m = 0, n = 0, k = 0, batch = 1;
};

/// Fraction of full waves: tiles / (ceil(tiles / SMs) * SMs).
double wave_efficiency(const GemmDims& d, const EfficiencyParams& p, int sm_count);
/// Achieved fraction of the matrix peak for one GEMM-like op: max * waves * K ramp.
double gemm_efficiency(const GemmDims& d, double max_efficiency, const EfficiencyParams& p, int sm_count);
/// The fraction of `gpu`'s DRAM bandwidth memory-bound framework kernels reach, in (0, 1]. A kernel keeps a
/// bounded number of bytes in flight per SM, so by Little's law its bandwidth is at most bytes in flight
/// over the DRAM latency per SM: min(a streaming microbenchmark's fraction (data/system.toml
/// [microbench.memory]), bytes_per_sm_cycle x SMs x the sustained clock / bandwidth), the clock the power limit
/// sustains (perf/clocks.hpp sustained_clock_fraction x the rated clock), as the matrix peaks are priced. GDDR boards
/// with many fast SMs for their bandwidth sit on the first side, wide-HBM data-centre parts on the second, and a
/// power-limited PCIe part further down the second than its SXM sibling.
double memory_fraction(const catalog::Gpu& gpu, double bytes_per_sm_cycle);
/// Achieved fraction of DRAM bandwidth for a kernel moving `bytes`.
double memory_efficiency(double bytes, const EfficiencyParams& p);

}  // namespace gpuvs::perf
