// SPDX-License-Identifier: Apache-2.0
// Sustained clocks under dense math. Spec peaks assume the rated boost clock, but dense tensor math draws
// the most power a chip ever draws, and a board at its power limit lowers its clock until it fits: an
// RTX 6000 Ada (300 W for 364 dense TFLOP/s) runs far below its 2,505 MHz boost, an RTX 4090 (450 W for
// 165) hardly at all. The vendor's base clock is the clock the board guarantees at its power limit under
// a heavy load, so the sustained clock lies between base and boost:
//   sustained = base + headroom x (boost - base),
// with `headroom` one fitted constant shared by every card (perf/constants.hpp). data/clocks.toml
// (compiled in) holds each card's sourced base clock.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"

namespace gpuvs::perf {

struct BaseClock {
  std::string gpu;
  double base_mhz = 0;
  double peak_mhz = 0;  // the clock the tensor peaks are rated at, where below the boost (0: the boost)
  std::string source;
  int line = 0;
};

struct ClockData {
  std::vector<BaseClock> clocks;
  /// The entry for `gpu_id`, or nullptr.
  const BaseClock* find(const std::string& gpu_id) const;
};

/// The compiled-in data/clocks.toml.
const ClockData& builtin_clocks();
/// Parses clock TOML; InputError "WHERE:LINE: ..." for unknown keys or GPUs, duplicates, and base clocks
/// outside (0, boost].
ClockData parse_clocks(const std::string& text, const std::string& where, const catalog::Catalog& cat);

/// Sustained dense-math clock over the clock the peaks are rated at (peak_mhz, else the boost):
/// min(1, (base + headroom (boost - base)) / rated), in (0, 1]. A card with no entry of its own takes, as fractions
/// of its boost, the base and rated clocks of the built-in boards of its chip with the most power not above its own
/// (the median over ties: a GH200 the H100 SXM's and H200 SXM's); 1 where none exists (a user's entry of another
/// chip): its peaks are taken as rated.
double sustained_clock_fraction(const catalog::Gpu& gpu, double headroom, const ClockData& data = builtin_clocks());

/// The clock a card's matrix peaks are rated at: its peak_mhz in `data`, else its boost (MHz; 0 if unknown).
double rated_clock_mhz(const catalog::Gpu& gpu, const ClockData& data = builtin_clocks());

}  // namespace gpuvs::perf
