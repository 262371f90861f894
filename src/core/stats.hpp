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

/// An interval that holds a new value drawn like `values` with probability at least 1 - alpha (split conformal,
/// for exchangeable values): the k-th smallest and k-th largest of them, k = floor(alpha / 2 x (n + 1)). A new value's
/// rank among the n + 1 is uniform, so it falls below the k-th smallest with probability k / (n + 1) <= alpha / 2, and
/// likewise above. Interpolated quantiles hold less than 1 - alpha of even the values they came from. With too few
/// values for k >= 1, the smallest and largest (no guarantee). Empty input gives {0, 0}.
struct Interval {
  double low = 0, high = 0;
};
Interval conformal_interval(std::span<const double> values, double alpha);
Summary summarize(std::span<const double> values);

}  // namespace gpuvs::stats
