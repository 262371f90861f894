#include "core/error.hpp"

namespace gpuvs {

ExitCode exit_code_for(const std::exception& e) noexcept {
  if (dynamic_cast<const InputError*>(&e) != nullptr) return ExitCode::bad_input;
  return ExitCode::runtime_failure;
}

}  // namespace gpuvs
