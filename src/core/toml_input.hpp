// SPDX-License-Identifier: Apache-2.0
// The one TOML front door for every reader (model files, scenarios, catalogs, the data files): the nesting checked
// by check_toml_depth before toml++ sees the text, then parsed, or one InputError line "WHERE:LINE: malformed TOML: what".
// Header-only: for the modules that parse TOML (they link toml++ themselves).
#pragma once
#include <fmt/format.h>

#include <toml++/toml.h>

#include <string>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_depth.hpp"

namespace gpuvs {

inline toml::table parse_toml(const std::string& text, const std::string& where) {
  check_toml_depth(text, where);
  try {
    return toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: malformed TOML: {}", where, e.source().begin.line, strings::printable(std::string(e.description()), 200)));
  }
}

}  // namespace gpuvs
