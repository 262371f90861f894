// SPDX-License-Identifier: Apache-2.0
// Robust summary statistics for timings: median and spread, never a lone mean.
#pragma once
#include <span>
#include <vector>

namespace gpuvs::stats {

struct Summary {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0, mean = 0;
  /// Median absolute deviation relative to the median (0.02 = 2%).
  double rel_mad = 0;
  std::size_t count = 0;
};

/// Quantile q in [0,1] by linear interpolation; values need not be sorted. Empty input gives 0.
double quantile(std::span<const double> values, double q);
double median(std::span<const double> values);
Summary summarize(std::span<const double> values);

}  // namespace gpuvs::stats
