// SPDX-License-Identifier: Apache-2.0
// Achievable peaks: what the best kernels measure on a device, beside the spec sheet's peak. Spec peaks
// are upper bounds (boost clocks the power limit does not sustain, tensor pipelines no real shape keeps
// full); published max-achievable figures are what a model should price against. data/achievable.toml
// (compiled in) holds the published figures with their sources; where a GPU has none, the figure is
// derived by a stated rule learned from the cards that have one:
//   1. published for this GPU;
//   2. spec x the median measured/spec of the other cards of its SM design (compute capability) and segment class
//      (data-centre vs GeForce/workstation) for the same kind of figure;
//   3. spec x the median measured/spec over every card with that kind of figure;
//   4. spec x a prior: what gpuvs's own microbenchmarks expect of a healthy card.
// Every figure says which rule gave it (`basis`). Figures from excluded files are ignored, so a
// leave-one-source-out check can hold out the file they were copied from.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"

namespace gpuvs::perf {

struct AchievableFigure {
  std::string gpu, key;
  double value = 0;
  std::string file;    // the validation file the same figure is in (held out together with it)
  std::string source;
  int line = 0;
};

struct AchievableData {
  std::vector<AchievableFigure> figures;
};

/// The compiled-in data/achievable.toml.
const AchievableData& builtin_achievable();
/// Parses achievable-peak TOML; InputError "WHERE:LINE: ..." for unknown keys, unknown GPUs, bad values.
AchievableData parse_achievable(const std::string& text, const std::string& where, const catalog::Catalog& cat);

/// The keys a figure can have, in display order.
const std::vector<std::string>& achievable_keys();
/// The unit of a key's value: TFLOP/s (TOPS for gemm-int8) or GB/s.
std::string achievable_unit(const std::string& key);
/// The spec figure a key is measured against on `gpu` (a dense peak, DRAM bandwidth, the PCIe or NVLink
/// rate per direction), or nullopt when the device lacks it. `what` says which spec it is.
std::optional<double> spec_for(const catalog::Gpu& gpu, const std::string& key, std::string* what = nullptr);

struct Achievable {
  double value = 0;         // in achievable_unit(key)
  double spec = 0;          // what it is a fraction of
  double fraction = 0;      // value / spec
  std::string basis;        // "published: SOURCE" or the rule with the cards it learned from
  bool published = false;
};

/// The achievable figure for `key` on `gpu` (nullopt when the device lacks the spec it derives from).
std::optional<Achievable> achievable(const catalog::Catalog& cat, const catalog::Gpu& gpu, const std::string& key,
                                     const AchievableData& data = builtin_achievable(),
                                     const std::set<std::string>& exclude_files = {});

}  // namespace gpuvs::perf
