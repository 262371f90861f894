// SPDX-License-Identifier: Apache-2.0
// The model readers' JSON front door: parses `text`, or throws one InputError line naming `where`
// ("WHERE: malformed JSON at byte N", "WHERE: unreadable JSON (...)" for numbers past double's range,
// "WHERE: JSON nested more than 256 deep").
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.hpp"
#include "core/json_guard.hpp"
#include "core/strings.hpp"

namespace gpuvs {

/// `text` parsed, or a discarded value (is_discarded()) when it is not JSON, for readers that say themselves
/// where it goes wrong; InputError naming `where` when nested past kMaxJsonDepth.
inline nlohmann::json parse_json_or_discarded(const std::string& text, const std::string& where) {
  return nlohmann::json::parse(text, json_input_guard(where), false);
}

inline nlohmann::json parse_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text, json_input_guard(where));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}", where, e.byte));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: unreadable JSON ({})", where, strings::printable(e.what())));
  }
}

}  // namespace gpuvs
