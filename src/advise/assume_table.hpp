// SPDX-License-Identifier: Apache-2.0
// The [assume] table a scenario file and a config file share (advise/scenario.cpp, advise/user_config.cpp).
// Kept apart from advisor.hpp so that only the two readers include toml++.
#pragma once
#include <toml++/toml.h>

#include <string>
#include <utility>
#include <vector>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"

namespace gpuvs::advise {

/// Applies an [assume] table: each key as --assume takes it, dotted keys (price.rtx-4090 = 1700) flattened back.
/// Returns what it set, in order. InputError "PATH:LINE: ..." for unknown keys, non-numbers and impossible values.
std::vector<std::pair<std::string, double>> read_assume_table(const toml::table& tab, const std::string& path, Assumptions& assumptions,
                                                              const catalog::Catalog& cat);

}  // namespace gpuvs::advise
