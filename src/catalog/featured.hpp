// SPDX-License-Identifier: Apache-2.0
// The catalog cards gpuvs names on its own (data/featured-gpus.toml, compiled in): the seed question's
// pair, and the cards the report charts first. Presentation, kept as data so no catalog id is in code.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"

namespace gpuvs::catalog {

struct Featured {
  std::vector<std::string> seed_question;  // two ids: the consumer card, then the data-centre card
  std::vector<std::string> scaling_chart;  // at most eight
  std::vector<std::string> serving_chart;  // at most eight
};

/// The compiled-in data/featured-gpus.toml, checked against the built-in catalog.
const Featured& featured();
/// Parses a featured-cards file: InputError "WHERE:LINE: ..." for unknown keys, ids not in `cat` (aliases
/// are resolved to ids), a seed question that is not two cards, a chart list of more than eight.
Featured parse_featured(const std::string& text, const std::string& where, const Catalog& cat);

}  // namespace gpuvs::catalog
