// SPDX-License-Identifier: Apache-2.0
#include "catalog/featured.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kFeaturedGpus;
}

namespace gpuvs::catalog {

Featured parse_featured(const std::string& text, const std::string& where, const Catalog& cat) {
  const toml::table t = parse_toml(text, where);
  Featured f;
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    const int line = static_cast<int>(v.source().begin.line);
    std::vector<std::string>* list = key == "seed_question" ? &f.seed_question
                                     : key == "scaling_chart" ? &f.scaling_chart
                                     : key == "serving_chart" ? &f.serving_chart
                                                              : nullptr;
    if (!list)
      throw InputError(fmt::format("{}:{}: unknown key '{}' (expected seed_question, scaling_chart, serving_chart)", where, line,
                                   strings::printable(key)));
    const auto* arr = v.as_array();
    if (!arr) throw InputError(fmt::format("{}:{}: {} must be a list of catalog ids", where, line, key));
    for (const auto& item : *arr) {
      const auto id = item.value<std::string>();
      if (!id) throw InputError(fmt::format("{}:{}: {} must hold catalog ids (strings)", where, line, key));
      try {
        list->push_back(cat.find(*id).id);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}:{}: {}: {}", where, line, key, e.what()));
      }
    }
  }
  if (f.seed_question.size() != 2) throw InputError(fmt::format("{}: seed_question must name two cards", where));
  for (const auto* l : {&f.scaling_chart, &f.serving_chart})
    if (l->empty() || l->size() > 8) throw InputError(fmt::format("{}: each chart lists one to eight cards", where));
  return f;
}

const Featured& featured() {
  static const Featured f = parse_featured(embedded::kFeaturedGpus, "built-in data/featured-gpus.toml", Catalog::builtin());
  return f;
}

}  // namespace gpuvs::catalog
