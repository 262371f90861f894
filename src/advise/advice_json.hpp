// SPDX-License-Identifier: Apache-2.0
// Advice as JSON (for `advise --json`, the stored run and the report) and as an aligned text table.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "advise/advisor.hpp"

namespace gpuvs::advise {

nlohmann::json advice_json(const Advice& a);
/// The ranked table (top `limit` rows), ruled-out GPUs, and every assumption, as plain text.
std::string advice_text(const Advice& a, std::size_t limit);

}  // namespace gpuvs::advise
