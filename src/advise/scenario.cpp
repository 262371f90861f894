// SPDX-License-Identifier: Apache-2.0
// Scenario files: TOML with the scenario's fields and an optional [assume] table.
#include <fmt/format.h>

#include <toml++/toml.h>

#include <cmath>

#include "advise/advisor.hpp"
#include "advise/assume_table.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "models/networks.hpp"
#include "perf/predict.hpp"

namespace gpuvs::advise {

namespace {

std::string where(const std::string& path, const toml::node& n) {
  return fmt::format("{}:{}", path, n.source().begin.line);
}

/// A finite number: TOML's nan and inf are values no scenario key takes (they would read as "not given").
double number(const std::string& path, const std::string& key, const toml::node& n) {
  if (auto v = n.value<double>()) {
    if (!std::isfinite(*v)) throw InputError(fmt::format("{}: '{}' must be a finite number, got {}", where(path, n), key, *v));
    return *v;
  }
  throw InputError(fmt::format("{}: '{}' must be a number", where(path, n), key));
}

/// A finite number above 0: a quantity of work, a time, a rate, money.
double positive(const std::string& path, const std::string& key, const toml::node& n) {
  const double v = number(path, key, n);
  if (!(v > 0)) throw InputError(fmt::format("{}: '{}' must be above 0, got {}", where(path, n), key, v));
  return v;
}

/// A whole number in [lo, hi] (a count or a length): checked before it is converted.
std::int64_t whole(const std::string& path, const std::string& key, const toml::node& n, std::int64_t lo, std::int64_t hi) {
  const double v = number(path, key, n);
  if (!(v == std::floor(v) && v >= static_cast<double>(lo) && v <= static_cast<double>(hi)))
    throw InputError(fmt::format("{}: '{}' must be a whole number in [{}, {}], got {}", where(path, n), key, lo, hi, v));
  return static_cast<std::int64_t>(v);
}

std::string text(const std::string& path, const std::string& key, const toml::node& n) {
  if (auto v = n.value<std::string>()) {
    // Scenario text reaches the terminal in the advice: a control character is refused, as in every data file.
    if (strings::has_control(*v)) throw InputError(fmt::format("{}: '{}' holds a control character ('{}')", where(path, n), key, strings::printable(*v)));
    return *v;
  }
  throw InputError(fmt::format("{}: '{}' must be a string", where(path, n), key));
}

}  // namespace

std::vector<std::pair<std::string, double>> read_assume_table(const toml::table& tab, const std::string& path, Assumptions& assumptions,
                                                              const catalog::Catalog& cat) {
  std::vector<std::pair<std::string, double>> set_here;
  // Dotted keys (price.rtx-4090 = 1700) arrive as nested tables: flattened back to "price.rtx-4090".
  auto set = [&](const std::string& name, const toml::node& value) {
    try {
      const double v = number(path, name, value);
      assumptions.set(name, v, cat);
      set_here.emplace_back(name, v);
    } catch (const InputError& e) {
      const std::string what = e.what();
      throw InputError(what.rfind(path, 0) == 0 ? what : fmt::format("{}: {}", where(path, value), what));
    }
  };
  for (const auto& [ak, an] : tab) {
    if (const auto* inner = an.as_table()) {
      for (const auto& [ik, in] : *inner) set(std::string(ak.str()) + "." + std::string(ik.str()), in);
    } else {
      set(std::string(ak.str()), an);
    }
  }
  return set_here;
}

Scenario read_scenario(const std::string& path, Assumptions& assumptions, const catalog::Catalog& cat,
                       std::optional<workload::Workload>* resolved) {
  const toml::table t = parse_toml(files::read_all(path, "--scenario"), path);
  Scenario s;
  static const std::vector<std::string> keys = {"name", "workload", "task", "finetune", "precision", "tokens", "samples",
                                                "hours", "tenants", "sla_p99_ms", "requests_per_s", "budget_usd",
                                                "purchase", "gpu", "gpus", "seq_len", "gen_len", "assume", "sla_ttft_ms",
                                                "sla_tpot_ms", "engine", "options", "release", "network"};
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    const auto at = where(path, node);
    if (key == "name") s.name = text(path, key, node);
    else if (key == "workload") s.workload = text(path, key, node);
    else if (key == "task") s.task = text(path, key, node);
    else if (key == "finetune") s.finetune = text(path, key, node);
    else if (key == "precision") {
      s.precision = text(path, key, node);
      s.precision_named = true;
    }
    else if (key == "tokens" || key == "samples") s.work = positive(path, key, node);
    else if (key == "hours") s.hours = positive(path, key, node);
    else if (key == "tenants") s.tenants = static_cast<int>(whole(path, key, node, 1, 1 << 20));
    else if (key == "sla_p99_ms") s.sla_p99_ms = positive(path, key, node);
    else if (key == "sla_ttft_ms") s.sla_ttft_ms = positive(path, key, node);
    else if (key == "sla_tpot_ms") s.sla_tpot_ms = positive(path, key, node);
    else if (key == "engine") s.engine = text(path, key, node);
    else if (key == "release") s.release = text(path, key, node);
    else if (key == "network") s.network = text(path, key, node);
    else if (key == "options") s.workload_options = perf::parse_option_pairs(text(path, key, node));
    else if (key == "requests_per_s") s.requests_per_s = positive(path, key, node);
    else if (key == "budget_usd") s.budget_usd = positive(path, key, node);
    else if (key == "purchase") s.purchase = text(path, key, node);
    else if (key == "seq_len") s.seq_len = whole(path, key, node, 1, models::kMaxSeqLen);
    else if (key == "gen_len") s.gen_len = whole(path, key, node, 1, models::kMaxSeqLen);
    else if (key == "gpu") {
      const auto* arr = node.as_array();
      if (!arr) throw InputError(fmt::format("{}: 'gpu' must be an array of catalog ids (the cards to consider)", at));
      for (const auto& g : *arr) s.gpus.push_back(text(path, "gpu", g));
    } else if (key == "gpus") {
      // A count, as the flag is; the cards are `gpu`. A list here is the key's old meaning: said, not guessed.
      if (node.is_array())
        throw InputError(fmt::format("{}: 'gpus' is the most GPUs a plan may use (a count, as --gpus); name the cards with gpu = [...]", at));
      assumptions.set("max_gpus", static_cast<double>(whole(path, key, node, 1, 65536)), cat);
    } else if (key == "assume") {
      const auto* tab = node.as_table();
      if (!tab) throw InputError(fmt::format("{}: 'assume' must be a table", at));
      read_assume_table(*tab, path, assumptions, cat);
    } else {
      const auto near = strings::closest(key, keys, 1);
      throw InputError(fmt::format("{}: unknown key '{}'{}", at, strings::printable(key),
                                   near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near[0])));
    }
  }
  try {
    workload::Workload w = validated_workload(s, cat);
    if (resolved) resolved->emplace(std::move(w));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  return s;
}

}  // namespace gpuvs::advise
