// The model readers' JSON front door: parses `text`, or throws one InputError line naming `where`
// ("WHERE: malformed JSON at byte N", "WHERE: unreadable JSON (...)" for numbers past double's range,
// "WHERE: JSON nested more than 256 deep").
#pragma once
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::graph {

/// Deeper nesting than any model file has: the readers copy, dump and walk configs recursively, and a file of a
/// million '[' would overflow the stack (nlohmann parses and frees iteratively; copies recurse).
inline constexpr int kMaxJsonDepth = 256;

namespace json_detail {
inline nlohmann::json::parser_callback_t depth_guard(const std::string& where) {
  return [where](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (depth > kMaxJsonDepth && (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start))
      throw InputError(fmt::format("{}: JSON nested more than {} deep", where, kMaxJsonDepth));
    return true;
  };
}
}  // namespace json_detail

/// `text` parsed, or a discarded value (is_discarded()) when it is not JSON, for readers that say themselves
/// where it goes wrong; InputError naming `where` when nested past kMaxJsonDepth.
inline nlohmann::json parse_json_or_discarded(const std::string& text, const std::string& where) {
  return nlohmann::json::parse(text, json_detail::depth_guard(where), false);
}

inline nlohmann::json parse_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text, json_detail::depth_guard(where));
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}", where, e.byte));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: unreadable JSON ({})", where, strings::printable(e.what())));
  }
}

}  // namespace gpuvs::graph
