#include "cli/assumption_options.hpp"

#include <fmt/format.h>

#include <cmath>

#include "cli/validators.hpp"

namespace gpuvs::cli {

void add_assumption_options(CLI::App* sub, AssumptionArgs& a) {
  const advise::Assumptions d = advise::Assumptions::defaults();
  sub->add_option("--utilization", a.utilization,
                  fmt::format("Share of hours an owned card does useful work (0-1]; default {:g}", d.get("utilization")))
      ->check(fraction());
  sub->add_option("--electricity", a.electricity, fmt::format("Electricity price, USD/kWh; default {:g}", d.get("electricity_usd_per_kwh")))
      ->check(non_negative());
  sub->add_option("--assume", a.assume, "Override cost and advisor assumptions: 'key=value;key=value' (price.ID, rent.ID too)");
}

void apply_assumption_options(const AssumptionArgs& a, advise::Assumptions& assumptions, const catalog::Catalog& cat) {
  assumptions.set_all(a.assume, cat);
  if (!std::isnan(a.utilization)) assumptions.set("utilization", a.utilization, cat);
  if (!std::isnan(a.electricity)) assumptions.set("electricity_usd_per_kwh", a.electricity, cat);
}

}  // namespace gpuvs::cli
