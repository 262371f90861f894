// SPDX-License-Identifier: Apache-2.0
#include "core/error.hpp"

#include "core/strings.hpp"

namespace gpuvs {

InputError::InputError(const std::string& what) : std::runtime_error(strings::escape_control(what)) {}

ExitCode exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const InputError*>(&e) != nullptr) return ExitCode::bad_input;
  return ExitCode::runtime_failure;
}

}  // namespace gpuvs
