// The model readers' JSON front door: parses `text`, or throws one InputError line naming `where`
// ("WHERE: malformed JSON at byte N", "WHERE: unreadable JSON (...)" for numbers past double's range).
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::graph {

inline nlohmann::json parse_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}", where, e.byte));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: unreadable JSON ({})", where, strings::printable(e.what())));
  }
}

}  // namespace gpuvs::graph
