// SPDX-License-Identifier: Apache-2.0
// Software maturity on a new architecture (issue 34 mechanism 3): a stack released before an architecture's native
// kernels existed runs that architecture's matrix or attention kernels below what the model prices (a native
// stack's). data/software-maturity.toml (compiled in) says, per kernel class and architecture, from when the kernels
// a stack links use that architecture's own instructions, and what share of a native stack's efficiency an older one
// keeps. A software profile (a framework in data/frameworks.toml, an engine in data/serving-engines.toml) says when it
// was released; a profile without a date is today's release.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/efficiency.hpp"

namespace gpuvs::perf {

/// A month as year x 12 + month - 1, from "YYYY-MM" (1990-2100); InputError "WHAT must be a month as YYYY-MM" otherwise.
int parse_month(std::string_view text, std::string_view what);
/// "YYYY-MM" again.
std::string month_text(int month);
/// The release a prediction prices: the `release` option ("YYYY-MM": the month of the framework or engine release
/// the user runs) when given, else the profile's `released` (0: undated, today's). InputError for a malformed option.
int release_of(const std::map<std::string, std::string>& options, int profile_released);

struct KernelMaturity {
  std::string kernels;                           // "matrix" (GEMMs and convolutions) or "attention" (fused attention)
  std::string architecture;                      // a name for messages: "Hopper"
  std::vector<std::string> compute_capabilities; // the SM designs it holds for
  int native_since = 0;                          // parse_month: the first release of the kernels with the native instructions
  std::string native_release;                    // what that release was: "CUDA 12.0 (cuBLAS 12.0)"
  double share_before = 1;                       // a stack released earlier: this share of the efficiency the model prices, (0, 1]
  std::string source;
  int line = 0;
};

/// The compiled-in table.
const std::vector<KernelMaturity>& kernel_maturity();
/// Parses the table; InputError "WHERE:LINE: ..." for unknown keys, missing fields, bad values, a class listed twice
/// for one compute capability.
std::vector<KernelMaturity> parse_kernel_maturity(const std::string& text, const std::string& where);

/// What a stack's release date does to its kernels on one card.
struct MaturityEffect {
  double matrix_share = 1, attention_share = 1;  // applied to gemm_max and conv_max, and to attention_max
  std::vector<std::string> notes;                // one line per class it moved: why, from what, by how much
  bool applies() const { return matrix_share < 1 || attention_share < 1; }
};

/// The effect on `gpu` of a stack named `stack` released in `released` (0: undated, today's release: no effect).
/// `fused_attention`: the stack's attention is a fused kernel (FlashAttention-style); an unfused one is matrix work.
MaturityEffect maturity_effect(const catalog::Gpu& gpu, const std::string& stack, int released, bool fused_attention);
/// Moves `eff` by `m`.
void apply_maturity(EfficiencyParams& eff, const MaturityEffect& m);

}  // namespace gpuvs::perf
