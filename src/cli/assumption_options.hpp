// SPDX-License-Identifier: Apache-2.0
// The assumptions behind every cost gpuvs prints (electricity, PUE, service life, utilization, per-card
// prices): the same three flags on advise, compare and evaluate, applied in the same order (defaults, then the
// user's config file, then a scenario file's [assume], then --assume, then --utilization and --electricity), so the same
// question priced by two commands gets the same figure.
#pragma once
#include <CLI/CLI.hpp>
#include <limits>
#include <memory>
#include <string>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"
#include "perf/precision.hpp"
#include "perf/serving_engine.hpp"
#include "perf/system_facts.hpp"

namespace gpuvs::cli {

struct AssumptionArgs {
  std::string assume;  // "key=value;key=value" (price.ID, rent.ID too)
  double utilization = std::numeric_limits<double>::quiet_NaN();  // NaN: not given (the flag refuses NaN)
  double electricity = std::numeric_limits<double>::quiet_NaN();
};

/// Adds --assume, --utilization and --electricity to `sub`.
void add_assumption_options(CLI::App* sub, AssumptionArgs& a);
/// The built-in assumptions with the user's standing ones applied (advise/user_config.hpp: GPUVS_CONFIG, else
/// $XDG_CONFIG_HOME/gpuvs/config.toml), saying on stderr which file set what: what advise, compare and evaluate
/// start from, before a scenario file and the flags.
advise::Assumptions standing_assumptions(const catalog::Catalog& cat);
/// The user's preferred serving engine (the config's [serving] engine) installed as the default for the command's
/// life and said on stderr; nullptr when the config names none. Predict, compare, advise and evaluate install it;
/// validate never does (its rows are what their sources ran).
std::unique_ptr<perf::ScopedServingEngine> install_preferred_engine();
/// Applies the flags over `assumptions` (already holding the defaults and any scenario file's).
/// InputError for unknown keys and impossible values.
void apply_assumption_options(const AssumptionArgs& a, advise::Assumptions& assumptions, const catalog::Catalog& cat);

/// A --precision flag's value: none ("") leaves the precision to the rule every command shares
/// (perf::default_precision: amp-bf16, amp-fp16 on a card without BF16); a name is parsed (InputError if unknown).
std::optional<perf::Precision> named_precision(const std::string& flag);
/// The --precision flag's help, with that default.
std::string precision_help(const std::string& what);

/// Adds --facts FILE: data/system.toml's facts (runtime memory, link fractions, GPUs per server, default
/// batches, ...) changed for this run; the file holds only the facts to change, each with value, unit and source.
void add_facts_option(CLI::App* sub, std::string& path);
/// Reads --facts (an input: no output of the run may land on it) and installs it for the run, saying on stderr
/// what it changed; null when no file was named. Call it before anything is priced.
std::unique_ptr<perf::ScopedSystemFacts> install_facts(const std::string& path);

}  // namespace gpuvs::cli
