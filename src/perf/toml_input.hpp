// The perf data files' TOML front door: parses `text`, or throws one InputError line "WHERE:LINE: what".
#pragma once
#include <fmt/format.h>

#include <toml++/toml.h>

#include <string>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::perf {

inline toml::table parse_toml(const std::string& text, const std::string& where) {
  try {
    return toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: {}", where, e.source().begin.line, strings::printable(std::string(e.description()))));
  }
}

}  // namespace gpuvs::perf
