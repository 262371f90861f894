// SPDX-License-Identifier: Apache-2.0
#include "cli/assumption_options.hpp"

#include <fmt/format.h>

#include <cmath>

#include "advise/user_config.hpp"
#include "cli/validators.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"

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

advise::Assumptions standing_assumptions(const catalog::Catalog& cat) {
  std::string path;
  std::vector<std::string> said;
  advise::Assumptions a = advise::standing_assumptions(cat, &path, &said);
  if (!path.empty())
    fmt::print(stderr, "assumptions from {}: {}\n", strings::escape_control(path), said.empty() ? "none set" : strings::join(said, "; "));
  return a;
}

std::unique_ptr<perf::ScopedServingEngine> install_preferred_engine() {
  std::string path;
  const std::string engine = advise::preferred_engine(&path);
  if (engine.empty()) return nullptr;
  fmt::print(stderr, "serving engine from {}: {} (framework=ENGINE names another)\n", strings::escape_control(path), engine);
  return std::make_unique<perf::ScopedServingEngine>(engine);
}

void apply_assumption_options(const AssumptionArgs& a, advise::Assumptions& assumptions, const catalog::Catalog& cat) {
  assumptions.set_all(a.assume, cat);
  if (!std::isnan(a.utilization)) assumptions.set("utilization", a.utilization, cat);
  if (!std::isnan(a.electricity)) assumptions.set("electricity_usd_per_kwh", a.electricity, cat);
}

std::optional<perf::Precision> named_precision(const std::string& flag) {
  if (flag.empty()) return std::nullopt;
  return perf::parse_precision(flag);
}

std::string precision_help(const std::string& what) { return fmt::format("{} (default: {})", what, perf::kDefaultPrecisionRule); }

void add_facts_option(CLI::App* sub, std::string& path) {
  sub->add_option("--facts", path, "A TOML file of the facts in data/system.toml to change for this run (each with value, unit and source)");
}

std::unique_ptr<perf::ScopedSystemFacts> install_facts(const std::string& path) {
  if (path.empty()) return nullptr;
  files::note_input(path);
  std::vector<std::string> changed;
  const perf::SystemFacts facts = perf::parse_system_facts_over(files::read_all(path, "--facts"), path, perf::builtin_system_facts(), &changed);
  fmt::print(stderr, "facts from {}: {}\n", strings::escape_control(path), changed.empty() ? "none changed" : strings::join(changed, "; "));
  return std::make_unique<perf::ScopedSystemFacts>(facts);
}

}  // namespace gpuvs::cli
