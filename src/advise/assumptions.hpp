// SPDX-License-Identifier: Apache-2.0
// The advisor's assumptions: every number it uses that is not a measurement or a catalog figure, with
// its unit and basis, each overridable by name (--assume key=value or a scenario file). Per-device prices
// are overridable too: price.<gpu-id> (USD to buy) and rent.<gpu-id> (USD per GPU-hour).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/compare.hpp"

namespace gpuvs::advise {

struct Assumption {
  std::string key;
  double value = 0;
  std::string unit, basis;
  bool overridden = false;
};

class Assumptions {
 public:
  static Assumptions defaults();
  /// Sets a known key, or price.<id> / rent.<id>. InputError for unknown keys (with the closest) and
  /// impossible values (negative prices, PUE below 1, fractions outside (0, 1]).
  void set(const std::string& key, double value, const catalog::Catalog& cat);
  /// Parses "k=v;k=v".
  void set_all(const std::string& text, const catalog::Catalog& cat);
  double get(const std::string& key) const;
  std::optional<double> price(const catalog::Gpu& gpu) const;  // override, else MSRP, else price basis
  std::optional<double> rent(const catalog::Gpu& gpu) const;   // override, else cloud $/h
  /// TDP at the electricity price and PUE, USD per hour.
  double power_per_hour(const catalog::Gpu& gpu) const;
  /// Owning the card: its price over amortization_years at `utilization`, plus power; nullopt without a price.
  std::optional<double> own_per_hour(const catalog::Gpu& gpu, double utilization) const;
  /// A GPU-hour rented (rent) and owned (own_per_hour at the assumed utilization), as compare prices it:
  /// the same figures advise and evaluate use. Holds a copy of these assumptions.
  perf::GpuHourPrices hour_prices() const;
  std::vector<Assumption> list() const;

 private:
  std::vector<Assumption> items_;
  std::map<std::string, double> price_, rent_;
};

/// The unit a table of costs per many units is shown in: per million, or per billion where the largest figure the
/// table shows is under a cent per million (a small model's $0.0000370 per million reads $0.0370 per billion).
/// One rule for advise, compare and evaluate's summary (the report's cost chart applies the same).
struct CostScale {
  double factor = 1;              // multiplies a cost per million
  std::string per = "million";    // "million" or "billion"
};
CostScale cost_scale(double largest_usd_per_million);

}  // namespace gpuvs::advise
