// The assumptions behind every cost gpuvs prints (electricity, PUE, service life, utilization, per-card
// prices): the same three flags on advise, compare and evaluate, applied in the same order (defaults, then
// a scenario file's [assumptions], then --assume, then --utilization and --electricity), so the same
// question priced by two commands gets the same figure.
#pragma once
#include <CLI/CLI.hpp>
#include <limits>
#include <string>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"

namespace gpuvs::cli {

struct AssumptionArgs {
  std::string assume;  // "key=value;key=value" (price.ID, rent.ID too)
  double utilization = std::numeric_limits<double>::quiet_NaN();  // NaN: not given (the flag refuses NaN)
  double electricity = std::numeric_limits<double>::quiet_NaN();
};

/// Adds --assume, --utilization and --electricity to `sub`.
void add_assumption_options(CLI::App* sub, AssumptionArgs& a);
/// Applies the flags over `assumptions` (already holding the defaults and any scenario file's).
/// InputError for unknown keys and impossible values.
void apply_assumption_options(const AssumptionArgs& a, advise::Assumptions& assumptions, const catalog::Catalog& cat);

}  // namespace gpuvs::cli
