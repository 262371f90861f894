// SPDX-License-Identifier: Apache-2.0
#include "import/gguf/ggml_types.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kGgmlTypes;
}

namespace gpuvs::import {

namespace {

std::vector<GgmlType> parse_table() {
  const std::string where = "built-in data/ggml-types.toml";
  const toml::table t = parse_toml(embedded::kGgmlTypes, where);
  std::vector<GgmlType> out;
  const auto* rows = t["type"].as_array();
  if (!rows) throw RuntimeFailure(where + ": no [[type]] tables");
  for (const auto& node : *rows) {
    const auto* row = node.as_table();
    const auto line = node.source().begin.line;
    GgmlType g;
    if (row) {
      g.id = static_cast<int>((*row)["id"].value_or(std::int64_t{-1}));
      g.name = (*row)["name"].value_or(std::string{});
      g.block_elements = static_cast<int>((*row)["block_elements"].value_or(std::int64_t{0}));
      g.block_bytes = static_cast<int>((*row)["block_bytes"].value_or(std::int64_t{0}));
    }
    if (!row || g.id < 0 || g.name.empty() || g.block_elements < 1 || g.block_bytes < 1)
      throw RuntimeFailure(fmt::format("{}:{}: a type needs id, name, block_elements and block_bytes", where, line));
    if ((!out.empty() && g.id <= out.back().id))
      throw RuntimeFailure(fmt::format("{}:{}: type ids must rise (id {})", where, line, g.id));
    out.push_back(g);
  }
  return out;
}

}  // namespace

const std::vector<GgmlType>& ggml_types() {
  static const std::vector<GgmlType> table = parse_table();
  return table;
}

const GgmlType* ggml_type(std::int64_t id) {
  for (const auto& t : ggml_types())
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType* ggml_type_named(const std::string& name) {
  const std::string want = strings::lower(name);
  for (const auto& t : ggml_types())
    if (strings::lower(t.name) == want) return &t;
  return nullptr;
}

}  // namespace gpuvs::import
