// SPDX-License-Identifier: Apache-2.0
// A parse callback every JSON reader hands nlohmann::json::parse: it refuses, as the text is parsed,
//  - JSON nested past kMaxJsonDepth: nlohmann parses and frees iteratively, but copies, dump() and the readers' walks
//    recurse, and a file of a million '[' overflows the stack;
//  - a key repeated within one object: nlohmann keeps the first, Python's json (and so Keras and Hugging Face) the
//    last, so the same file would mean two models.
// Header-only: for the modules that parse JSON (they link nlohmann_json themselves).
#pragma once
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs {

/// Deeper than any file or record gpuvs reads or writes.
inline constexpr int kMaxJsonDepth = 256;

/// For nlohmann::json::parse: throws InputError "WHAT: JSON nested more than 256 deep" at the first value past it,
/// and "WHAT: key 'K' appears twice in one object" at the second copy of a key.
inline nlohmann::json::parser_callback_t json_input_guard(const std::string& what) {
  using event = nlohmann::json::parse_event_t;
  // One set of keys per open object; arrays hold none (nullptr), so the stack mirrors the nesting.
  auto open = std::make_shared<std::vector<std::unique_ptr<std::set<std::string>>>>();
  return [what, open](int depth, event e, nlohmann::json& parsed) {
    switch (e) {
      case event::object_start:
      case event::array_start:
        if (depth > kMaxJsonDepth) throw InputError(fmt::format("{}: JSON nested more than {} deep", what, kMaxJsonDepth));
        open->push_back(e == event::object_start ? std::make_unique<std::set<std::string>>() : nullptr);
        break;
      case event::object_end:
      case event::array_end:
        if (!open->empty()) open->pop_back();
        break;
      case event::key:
        if (!open->empty() && open->back() && parsed.is_string() && !open->back()->insert(parsed.get<std::string>()).second)
          throw InputError(fmt::format("{}: key '{}' appears twice in one object (JSON readers disagree on which copy counts)", what,
                                       strings::printable(parsed.get<std::string>())));
        break;
      case event::value:
        break;
    }
    return true;
  };
}

}  // namespace gpuvs
