// A parse callback that refuses JSON nested past kMaxJsonDepth as it is parsed: nlohmann parses and frees
// iteratively, but copies, dump() and the readers' walks recurse, and a file of a million '[' overflows the stack.
// Header-only: for the modules that parse JSON (they link nlohmann_json themselves).
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.hpp"

namespace gpuvs {

/// Deeper than any file or record gpuvs reads or writes.
inline constexpr int kMaxJsonDepth = 256;

/// For nlohmann::json::parse: throws InputError "WHAT: JSON nested more than 256 deep" at the first value past it.
inline nlohmann::json::parser_callback_t json_depth_guard(const std::string& what) {
  return [what](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (depth > kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start))
      throw InputError(fmt::format("{}: JSON nested more than {} deep", what, kMaxJsonDepth));
    return true;
  };
}

}  // namespace gpuvs
