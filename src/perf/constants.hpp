// SPDX-License-Identifier: Apache-2.0
// The performance model's fitted constants (data/model-constants.toml, compiled in): per device class, the
// fractions of a spec peak that framework GEMMs and convolutions reach; shared by every card, what an SM
// keeps streaming in memory-bound framework kernels and the clock dense math sustains. They are the only numbers fitted
// to training throughput; `perf/fit.hpp` refits them, and a ScopedConstants installs a candidate set for the
// calling thread while the fitter tries it.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "core/files.hpp"

namespace gpuvs::perf {

/// The two device classes the constants are shared by.
enum class DeviceClass { datacenter = 0, geforce = 1 };
DeviceClass device_class(const catalog::Gpu& gpu);
const char* class_name(DeviceClass c);

struct ClassFractions {
  double gemm = 0, conv = 0;
};

struct FittedConstants {
  ClassFractions cls[2];   // by DeviceClass
  ClassFractions prior;    // stands in for a class with no rows to fit
  // What one SM of any card keeps streaming per clock cycle in memory-bound framework kernels (eager
  // elementwise ops, normalisation, the optimizer): bytes in flight over the DRAM latency, Little's law
  // (perf/efficiency.hpp memory_fraction). Fitted, from a prior of one 4-byte load in flight per resident thread.
  double bytes_per_sm_cycle = 0;
  double bytes_per_sm_cycle_prior = 0;
  // The same for a serving engine's memory-bound decode kernels: its decode attention (the KV cache read once per
  // generated token) and its matrix-vector products over 16-bit weights (a few tokens through each weight),
  // another kernel class, with its own loads in flight. Fitted on LLM serving rows alone, pulled towards
  // bytes_per_sm_cycle (its prior: until serving rows on a card whose SMs bind say otherwise, it streams like
  // the framework kernels), so where no serving row sees it, it is exactly that.
  double decode_bytes_per_sm_cycle = 0;
  // The same for ggml's own CUDA kernels (llama.cpp), two classes: its matrix-vector kernels, which read the
  // weights for a few tokens (MMVQ with dp4a on quantized weights, its F16 sibling, the products over the KV cache
  // at decode), and its passes (dequantize a weight to FP16 for a batched GEMM, FP32<->FP16 conversions,
  // elementwise ops), whose threads each hold a few bytes. Fitted on the serving rows of engines that run them
  // (perf/serving_engine.hpp kernel_family, and dequant_gemv_family for the matrix-vector class: another engine's
  // weight-only kernels that unpack and scale each weight in registers before the dot), pulled towards
  // bytes_per_sm_cycle like the decode constant.
  double ggml_gemv_bytes_per_sm_cycle = 0;
  double ggml_bytes_per_sm_cycle = 0;
  // The share of a card's best GEMM rate (data/achievable.toml) that ggml's batched matrix products reach at prefill:
  // a weight dequantized to FP16 and multiplied by cuBLAS in FP16 compute, tile by tile of the micro-batch, or ggml's
  // own MMQ kernels. A property of the engine's kernels, the same on every card; fitted on the serving rows of engines
  // of that family, from 1 (the prior: as fast as the best GEMM).
  double ggml_gemm_share = 1;
  // Where the sustained dense-math clock sits between the base and boost clocks (perf/clocks.hpp), shared
  // by every card, and the value it starts from before a fit.
  double clock_headroom = 0.5;
  double clock_headroom_prior = 0.5;
  // The share of a measured figure's error that is its software stack's and carries to other cards (in log space):
  // a calibration moves the card it measured by its whole ratio and any other card by ratio^transfer_share. Fitted
  // as the slope of one card's model error on another's, over the published runs of one configuration on several
  // cards (perf/fit.hpp); the rest is the card's own.
  double transfer_share = 1;
  std::vector<std::string> fitted_on;
  std::string method;
  const ClassFractions& of(DeviceClass c) const { return cls[static_cast<int>(c)]; }
  ClassFractions& of(DeviceClass c) { return cls[static_cast<int>(c)]; }
};

/// The compiled-in constants.
const FittedConstants& builtin_constants();
/// Parses constants TOML; InputError "WHERE:LINE: ..." for missing or impossible values (fractions in (0, 1]).
FittedConstants parse_constants(const std::string& text, const std::string& where);
/// TOML text for `c` (what `validate --fit` writes).
std::string constants_toml(const FittedConstants& c);
/// The output policy's view of a constants file named by `flag`: one constants_toml wrote is replaced; anything
/// else needs `force`.
files::OutputSpec constants_output(const std::string& flag, bool force);

/// The constants predictions on this thread use: the built-in ones unless a ScopedConstants is active.
const FittedConstants& active_constants();

/// Installs `c` for the calling thread for its lifetime (the fitter's candidates).
class ScopedConstants {
 public:
  explicit ScopedConstants(const FittedConstants& c);
  ~ScopedConstants();
  ScopedConstants(const ScopedConstants&) = delete;
  ScopedConstants& operator=(const ScopedConstants&) = delete;

 private:
  const FittedConstants* previous_;
  FittedConstants mine_;
};

}  // namespace gpuvs::perf
