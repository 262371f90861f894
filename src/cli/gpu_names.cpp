// SPDX-License-Identifier: Apache-2.0
#include "cli/gpu_names.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "hw/match.hpp"

namespace gpuvs::cli {

std::string gpu_id(const catalog::Catalog& cat, const std::string& typed) {
  try {
    return cat.find(typed).id;
  } catch (const InputError&) {
    const auto ids = hw::catalog_names_matching(typed, cat);
    if (ids.empty()) throw;
    if (ids.size() > 1)
      throw InputError(fmt::format("'{}' could be {}: name one (gpuvs catalog lists them)", strings::printable(typed), strings::join(ids, ", ")));
    fmt::print(stderr, "gpuvs: read '{}' as {}\n", strings::escape_control(typed), ids.front());
    return ids.front();
  }
}

std::vector<std::string> gpu_ids(const catalog::Catalog& cat, const std::vector<std::string>& typed) {
  std::vector<std::string> out;
  for (const auto& t : typed) out.push_back(gpu_id(cat, t));
  return out;
}

}  // namespace gpuvs::cli
