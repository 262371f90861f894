// SPDX-License-Identifier: Apache-2.0
#include "advise/user_config.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "advise/assume_table.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "core/units.hpp"
#include "perf/serving_engine.hpp"

namespace gpuvs::advise {

std::string user_config_path() {
  namespace fs = std::filesystem;
  if (const char* named = std::getenv("GPUVS_CONFIG"); named != nullptr) {
    const std::string p = named;
    if (p.empty() || p == "none") return {};
    std::error_code ec;
    if (!fs::exists(p, ec)) throw InputError(fmt::format("GPUVS_CONFIG={}: no such file (\"none\" reads no config)", strings::printable(p)));
    return p;
  }
  fs::path dir;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && *x == '/') dir = x;  // relative: ignored, as the spec says
  else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') dir = fs::path(home) / ".config";
  else return {};
  const fs::path p = dir / "gpuvs" / "config.toml";
  std::error_code ec;
  return fs::exists(p, ec) ? p.string() : std::string();
}

namespace {

/// The config parsed, its top level checked: an [assume] table and a [serving] table, nothing else.
toml::table read_config(const std::string& path) {
  toml::table t = parse_toml(files::read_all(path, "config file"), path);
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key != "assume" && key != "serving")
      throw InputError(fmt::format("{}:{}: unknown key '{}' (a gpuvs config holds an [assume] table, the keys --assume takes, and a [serving] table)",
                                   path, node.source().begin.line, strings::printable(key)));
    if (!node.as_table()) throw InputError(fmt::format("{}:{}: '{}' must be a table", path, node.source().begin.line, key));
  }
  return t;
}

}  // namespace

std::string preferred_engine(std::string* path_out) {
  const std::string path = user_config_path();
  if (path_out) *path_out = path;
  if (path.empty()) return {};
  const toml::table t = read_config(path);
  const auto* serving = t["serving"].as_table();
  if (!serving) return {};
  std::string engine;
  for (const auto& [k, node] : *serving) {
    const auto line = node.source().begin.line;
    if (k.str() != "engine")
      throw InputError(fmt::format("{}:{}: [serving] holds engine only, not '{}'", path, line, strings::printable(std::string(k.str()))));
    const auto* v = node.as_string();
    if (!v) throw InputError(fmt::format("{}:{}: [serving] engine must be a string", path, line));
    engine = v->get();
    try {
      (void)perf::serving_engine(engine);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", path, line, e.what()));
    }
  }
  return engine;
}

Assumptions standing_assumptions(const catalog::Catalog& cat, std::string* path_out, std::vector<std::string>* said) {
  Assumptions a = Assumptions::defaults();
  const std::string path = user_config_path();
  if (path_out) *path_out = path;
  if (path.empty()) return a;
  const toml::table t = read_config(path);
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key != "assume") continue;
    const auto* tab = node.as_table();
    if (!tab) throw InputError(fmt::format("{}:{}: 'assume' must be a table", path, node.source().begin.line));
    for (const auto& [name, value] : read_assume_table(*tab, path, a, cat))
      if (said) said->push_back(fmt::format("{}={}", name, units::format_plain(value, 6)));
  }
  return a;
}

}  // namespace gpuvs::advise
