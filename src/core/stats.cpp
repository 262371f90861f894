// SPDX-License-Identifier: Apache-2.0
#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpuvs::stats {

namespace {
double sorted_quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}
}  // namespace

double quantile(std::span<const double> values, double q) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return sorted_quantile(v, q);
}

double median(std::span<const double> values) { return quantile(values, 0.5); }

Interval conformal_interval(std::span<const double> values, double alpha) {
  if (values.empty()) return {};
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const auto k = static_cast<std::size_t>(std::max(1.0, std::floor(alpha / 2 * (n + 1))));
  const std::size_t i = std::min(k, v.size()) - 1;
  return {v[i], v[v.size() - 1 - i]};
}

Summary summarize(std::span<const double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = sorted_quantile(v, 0.5);
  s.p10 = sorted_quantile(v, 0.1);
  s.p90 = sorted_quantile(v, 0.9);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  std::vector<double> dev(v.size());
  std::transform(v.begin(), v.end(), dev.begin(), [&](double x) { return std::fabs(x - s.median); });
  std::sort(dev.begin(), dev.end());
  s.rel_mad = s.median != 0.0 ? sorted_quantile(dev, 0.5) / std::fabs(s.median) : 0.0;
  return s;
}

}  // namespace gpuvs::stats
